"""The diagnostic projections a run asked for (``--agentbench-projection``).

A world that can present one scenario in several projections (the operations
world: full lifecycle, static, boundary-only, ordered snapshots) reads the
selection here; a world that cannot ignores it. The selection is process-wide
for the length of one pytest session: the plugin sets it when the session is
configured (in every xdist worker, from the same options) and restores the
previous one when it ends.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_agentbench.sdk.errors import UsageError

PROJECTIONS = ("full", "static", "boundary_only", "ordered_snapshot")
"""In the order reports show them."""

_SELECTED: list[tuple[str, ...]] = [()]
"""The selection, in a box so that setting it needs no ``global``."""


def select_projections(names: Sequence[str]) -> tuple[str, ...]:
    """Make ``names`` the run's projections (each given once, in report order); return the old.

    Each item may be a comma-separated list. An unknown name is refused.
    """
    wanted: set[str] = set()
    for item in names:
        for name in item.split(","):
            if name not in PROJECTIONS:
                raise UsageError(
                    "invalid_projection",
                    f"{name!r} is not a projection ({', '.join(PROJECTIONS)})",
                    field="--agentbench-projection",
                )
            wanted.add(name)
    previous = _SELECTED[0]
    _SELECTED[0] = tuple(name for name in PROJECTIONS if name in wanted)
    return previous


def restore_projections(previous: tuple[str, ...]) -> None:
    _SELECTED[0] = previous


def selected_projections() -> tuple[str, ...]:
    """The projections this run asked for; empty when it asked for none."""
    return _SELECTED[0]

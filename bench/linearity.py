"""The machine-readable last line of a world's linearity bench (target 5 of issue 16).

Each world bench measures per-unit costs at growing sizes (sizes taking turns
within each round) and ends with one line, ``LINEARITY <json>``: a list of
series, each naming the world, what was timed, the unit, the sizes and the
median per-unit cost at each. ``overhead.py`` runs the benches as
subprocesses and judges every series the same way: per-unit cost at the
largest size over per-unit cost at the smallest, at most ``LIMIT``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

MARKER = "LINEARITY "
LIMIT = 2.0


@dataclass(frozen=True)
class Series:
    """Median per-unit cost (microseconds) of one measurement at each size, smallest first."""

    world: str
    measure: str
    unit: str
    sizes: tuple[int, ...]
    per_unit_us: tuple[float, ...]

    @property
    def ratio(self) -> float:
        return self.per_unit_us[-1] / self.per_unit_us[0]

    @property
    def met(self) -> bool:
        return self.ratio <= LIMIT


def line(series: Sequence[Series]) -> str:
    return MARKER + json.dumps([asdict(one) for one in series], sort_keys=True)


def parse(output: str) -> list[Series]:
    """The series of the last ``LINEARITY`` line of a bench's output."""
    lines = [text for text in output.splitlines() if text.startswith(MARKER)]
    if not lines:
        raise ValueError("no LINEARITY line in the bench's output")
    return [
        Series(
            world=raw["world"],
            measure=raw["measure"],
            unit=raw["unit"],
            sizes=tuple(raw["sizes"]),
            per_unit_us=tuple(raw["per_unit_us"]),
        )
        for raw in json.loads(lines[-1][len(MARKER) :])
    ]

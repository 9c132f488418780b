"""What an adapter implements to run ``authority`` suites, importable without the world.

The plugin checks an ``--agentbench-adapter`` against every kind's protocol at
configure time; this module imports nothing of the world at runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pytest_agentbench.worlds.authority.models import PublicBundle


@runtime_checkable
class AuthorityAdapter(Protocol):
    """What an adapter implements to run ``authority`` suites."""

    def trace_action(self, bundle: PublicBundle, event_id: str) -> Any:
        """One observed-action row (a mapping or an ObservedActionTrace) for ``event_id``."""

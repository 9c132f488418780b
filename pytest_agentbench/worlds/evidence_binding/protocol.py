"""What an adapter implements to run ``evidence-binding`` suites, importable without the world.

The plugin checks an ``--agentbench-adapter`` against every kind's protocol at
configure time; this module imports nothing of the world.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class EvidenceBindingAdapter(Protocol):
    """What an adapter implements to run ``evidence-binding`` suites."""

    def select_evidence(self, public: Any, action_id: str) -> Any:
        """Asteria: the retained observation ids; Enterprise: observation rows."""

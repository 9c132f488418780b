"""The generic adapter protocol of interactive worlds, importable on its own.

Kept apart from :mod:`pytest_agentbench.sdk.tools` (schemas, receipts, pydantic)
so that checking an ``--agentbench-adapter`` against every world kind's
protocol at configure time imports none of that; :mod:`pytest_agentbench.sdk.tools`
re-exports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pytest_agentbench.sdk.tools.session import ToolSession


@runtime_checkable
class ToolAgent(Protocol):
    def solve(self, task: dict[str, Any], session: ToolSession) -> Any:
        """Work on ``task`` through ``session``; return the world's final answer object."""

"""``BaseWorld``: the :class:`~pytest_agentbench.sdk.world.World` protocol with sensible defaults.

Subclass it and write the methods that make your world: ``load_suite``,
``cases``, ``public_view``, ``reference_agent``, ``run``, ``load_oracle``,
``evaluate``, ``metrics``, ``dimensions`` and ``control_agents``. What a
small world rarely needs has a default here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.suite import Suite


class BaseWorld:
    """Defaults: no leak canaries, and a named refusal for predictions files."""

    kind: str
    adapter_protocol: type

    def leak_canaries(self, suite: Suite, oracle: Any) -> Sequence[str]:
        """None: override with strings found only in the oracle to have the core watch for them."""
        return ()

    def predictions_adapter(self, suite: Suite, path: Path) -> Any:
        """Refused as ``predictions_unsupported``: this world reads no predictions file."""
        raise AgentbenchError(
            "predictions_unsupported",
            f"world kind {self.kind!r} does not read predictions files",
            file=str(path),
            field="--agentbench-predictions",
        )

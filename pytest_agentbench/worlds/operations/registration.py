"""Registers the ``operations`` world kind (entry point ``pytest_agentbench.worlds``)."""

from __future__ import annotations

from pytest_agentbench.hookspecs import hookimpl
from pytest_agentbench.registry import LazyWorld

# Spelt out rather than imported from ``world``: importing the registration must
# stay free (a test checks the two agree).
WORLD = LazyWorld(
    "operations",
    "pytest_agentbench.worlds.operations.world:WORLD",
    layout_markers=(("*.yaml",),),
    adapter_protocols=("pytest_agentbench.tool_agent:ToolAgent",),
)


@hookimpl
def pytest_agentbench_world_kinds() -> list[LazyWorld]:
    return [WORLD]

"""Registers the ``operations`` world kind (entry point ``pytest_agentbench.worlds``)."""

from __future__ import annotations

from pytest_agentbench.sdk import LazyWorld, hookimpl, packaged_suite_roots

# Spelt out rather than imported from ``world``: importing the registration must
# stay free (a test checks the two agree).
WORLD = LazyWorld(
    "operations",
    "pytest_agentbench.worlds.operations.world:WORLD",
    layout_markers=(("maintenance_v0_1.yaml",),),
    adapter_protocols=("pytest_agentbench.sdk.tool_agent:ToolAgent",),
    suite_roots=packaged_suite_roots(),
)


@hookimpl
def pytest_agentbench_world_kinds() -> list[LazyWorld]:
    return [WORLD]

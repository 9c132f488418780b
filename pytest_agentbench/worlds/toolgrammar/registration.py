"""Registers the ``toolgrammar`` world kind (entry point ``pytest_agentbench.worlds``)."""

from __future__ import annotations

from pytest_agentbench.sdk import LazyWorld, hookimpl, packaged_suite_roots

WORLD = LazyWorld(
    "toolgrammar",
    "pytest_agentbench.worlds.toolgrammar.world:WORLD",
    adapter_protocols=("pytest_agentbench.sdk.tool_agent:ToolAgent",),
    suite_roots=packaged_suite_roots(),
)


@hookimpl
def pytest_agentbench_world_kinds() -> list[LazyWorld]:
    return [WORLD]

"""Registers the ``operations`` world kind (entry point ``pytest_agentbench.worlds``)."""

from __future__ import annotations

from pathlib import Path

from pytest_agentbench.sdk import LazyWorld, hookimpl, packaged_suite_roots

# Spelt out rather than imported from ``world``: importing the registration must
# stay free (a test checks the two agree).
WORLD = LazyWorld(
    "operations",
    "pytest_agentbench.worlds.operations.world:WORLD",
    # Any YAML file whose top-level lines name an OperationSpec's keys; the
    # world then parses it (a data file elsewhere imports nothing).
    layout_markers=(("*.yaml containing schema_version: operation_type: scenarios:",),),
    adapter_protocols=("pytest_agentbench.sdk.tool_agent:ToolAgent",),
    suite_roots=packaged_suite_roots(),
    rubric_roots=[Path(__file__).parent / "rubrics"],
)


@hookimpl
def pytest_agentbench_world_kinds() -> list[LazyWorld]:
    return [WORLD]

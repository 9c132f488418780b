"""Registers the ``retrieval`` world kind (entry point ``pytest_agentbench.worlds``)."""

from __future__ import annotations

from pathlib import Path

from pytest_agentbench.sdk import LazyWorld, hookimpl, packaged_suite_roots

# A published fixture folder holds manifest.json beside tasks/, corpus/ and
# oracles/; recognise() then checks the manifest's schema before claiming it.
WORLD = LazyWorld(
    "retrieval",
    "pytest_agentbench.worlds.retrieval.world:WORLD",
    layout_markers=(("manifest.json",),),
    adapter_protocols=(
        "pytest_agentbench.sdk.tool_agent:ToolAgent",
        "pytest_agentbench.worlds.retrieval.protocol:RetrievalBackend",
    ),
    suite_roots=packaged_suite_roots(),
    rubric_roots=[Path(__file__).parent / "rubrics"],
)


@hookimpl
def pytest_agentbench_world_kinds() -> list[LazyWorld]:
    return [WORLD]

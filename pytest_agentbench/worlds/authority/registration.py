"""Registers the ``authority`` world kind (entry point ``pytest_agentbench.worlds``)."""

from __future__ import annotations

from pytest_agentbench.sdk import LazyWorld, hookimpl, packaged_suite_roots

# Spelt out rather than imported from ``layout``: importing the registration
# must stay free (tests check the two agree).
WORLD = LazyWorld(
    "authority",
    "pytest_agentbench.worlds.authority.world:WORLD",
    layout_markers=(("public/manifest.json", "evaluator/checksums.json"),),
    adapter_protocols=("pytest_agentbench.worlds.authority.protocol:AuthorityAdapter",),
    suite_roots=packaged_suite_roots(),
)


@hookimpl
def pytest_agentbench_world_kinds() -> list[LazyWorld]:
    return [WORLD]

"""Registers the ``evidence-binding`` world kind (entry point ``pytest_agentbench.worlds``)."""

from __future__ import annotations

from pytest_agentbench.sdk import LazyWorld, hookimpl, packaged_suite_roots

# Spelt out rather than imported, so that registering imports nothing of the
# world: the root manifest beside the public manifest (Asteria) or beside
# SHA256SUMS (Enterprise). ``recognise`` then checks the manifest's content.
LAYOUT_MARKERS = (("manifest.json", "public/manifest.json"), ("manifest.json", "SHA256SUMS"))

WORLD = LazyWorld(
    "evidence-binding",
    "pytest_agentbench.worlds.evidence_binding.world:WORLD",
    layout_markers=LAYOUT_MARKERS,
    adapter_protocols=(
        "pytest_agentbench.worlds.evidence_binding.protocol:EvidenceBindingAdapter",
    ),
    suite_roots=packaged_suite_roots(),
)


@hookimpl
def pytest_agentbench_world_kinds() -> list[LazyWorld]:
    return [WORLD]

"""Registers the ``evidence-binding`` world kind (entry point ``pytest_agentbench.worlds``)."""

from __future__ import annotations

from pytest_agentbench.hookspecs import hookimpl
from pytest_agentbench.registry import LazyWorld

WORLD = LazyWorld("evidence-binding", "pytest_agentbench.worlds.evidence_binding.world:WORLD")


@hookimpl
def pytest_agentbench_world_kinds() -> list[LazyWorld]:
    return [WORLD]

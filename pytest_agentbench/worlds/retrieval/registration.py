"""Registers the ``retrieval`` world kind (entry point ``pytest_agentbench.worlds``)."""

from __future__ import annotations

from pytest_agentbench.hookspecs import hookimpl
from pytest_agentbench.registry import LazyWorld

WORLD = LazyWorld("retrieval", "pytest_agentbench.worlds.retrieval.world:WORLD")


@hookimpl
def pytest_agentbench_world_kinds() -> list[LazyWorld]:
    return [WORLD]

"""Registers the ``operations`` world kind (entry point ``pytest_agentbench.worlds``)."""

from __future__ import annotations

from pytest_agentbench.hookspecs import hookimpl
from pytest_agentbench.registry import LazyWorld

WORLD = LazyWorld("operations", "pytest_agentbench.worlds.operations.world:WORLD")


@hookimpl
def pytest_agentbench_world_kinds() -> list[LazyWorld]:
    return [WORLD]

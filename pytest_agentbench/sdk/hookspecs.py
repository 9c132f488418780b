"""Hooks through which world kinds register themselves.

A world kind is any pluggy plugin implementing ``pytest_agentbench_world_kinds``:
a pytest plugin, a ``conftest.py``, or a module named under the
``pytest_agentbench.worlds`` entry-point group (which the plugin and the
``agentbench`` command both load).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from pytest_agentbench.sdk.registry import LazyWorld
    from pytest_agentbench.sdk.world import World

hookspec = pluggy.HookspecMarker("pytest")
hookimpl = pluggy.HookimplMarker("pytest")

ENTRY_POINT_GROUP = "pytest_agentbench.worlds"

PLUGIN_PREFIX = "agentbench-world-"
"""The name each entry point's world module is registered under, before the entry point's."""


# pluggy reads a hookspec's signature only; its body is the docstring, which mypy
# would otherwise report as a function that returns nothing.
@hookspec
def pytest_agentbench_world_kinds() -> Sequence[World | LazyWorld]:  # type: ignore[empty-body]
    """Return the world kinds this plugin provides.

    A :class:`~pytest_agentbench.sdk.registry.LazyWorld` names a kind without
    importing it: every pytest run in an environment where the world is installed
    would otherwise pay for its import.
    """

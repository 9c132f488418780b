"""The world kinds known to this process, gathered through the pluggy hook."""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import entry_points

import pluggy

from pytest_agentbench import hookspecs
from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.world import World


def load_entry_point_worlds(pluginmanager: pluggy.PluginManager) -> None:
    """Register every module named under the ``pytest_agentbench.worlds`` entry-point group."""
    for entry_point in sorted(
        entry_points(group=hookspecs.ENTRY_POINT_GROUP), key=lambda ep: ep.name
    ):
        name = f"agentbench-world-{entry_point.name}"
        if pluginmanager.get_plugin(name) is None and not pluginmanager.is_blocked(name):
            pluginmanager.register(entry_point.load(), name=name)


class WorldRegistry:
    """World kinds by name; a kind registered twice is refused."""

    def __init__(self, worlds: Iterable[World]) -> None:
        self._worlds: dict[str, World] = {}
        for world in worlds:
            if world.kind in self._worlds and self._worlds[world.kind] is not world:
                raise AgentbenchError(
                    "duplicate_world_kind", f"world kind {world.kind!r} is registered twice"
                )
            self._worlds[world.kind] = world

    @classmethod
    def from_hook(cls, pluginmanager: pluggy.PluginManager) -> WorldRegistry:
        results = pluginmanager.hook.pytest_agentbench_world_kinds()
        return cls(world for provided in results for world in provided)

    def get(self, kind: str, *, file: str | None = None) -> World:
        try:
            return self._worlds[kind]
        except KeyError:
            known = ", ".join(sorted(self._worlds)) or "none"
            raise AgentbenchError(
                "unknown_world_kind",
                f"world kind {kind!r} is not registered (known: {known})",
                file=file,
                field="world",
            ) from None

    def kinds(self) -> list[str]:
        return sorted(self._worlds)

    def worlds(self) -> list[World]:
        return [self._worlds[kind] for kind in self.kinds()]

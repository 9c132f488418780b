"""The world kinds known to this process, gathered through the pluggy hook."""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points

import pluggy

from pytest_agentbench import hookspecs
from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.runner import describe_exception
from pytest_agentbench.world import World


def load_entry_point_worlds(pluginmanager: pluggy.PluginManager) -> None:
    """Register every module named under the ``pytest_agentbench.worlds`` entry-point group."""
    for entry_point in sorted(
        entry_points(group=hookspecs.ENTRY_POINT_GROUP), key=lambda ep: ep.name
    ):
        name = f"agentbench-world-{entry_point.name}"
        if pluginmanager.get_plugin(name) is None and not pluginmanager.is_blocked(name):
            pluginmanager.register(entry_point.load(), name=name)


class LazyWorld:
    """A world kind registered by name, its module imported when first needed.

    ``target`` is ``"module:attribute"`` naming the World object. A session
    that runs no suite of the kind (and names no adapter, whose protocol would
    be checked against every kind) never imports it.
    """

    def __init__(self, kind: str, target: str) -> None:
        self.kind = kind
        self.target = target
        self._world: World | None = None

    def resolve(self, *, file: str | None = None) -> World:
        """The World object; ``world_load_failed`` if it does not import as registered."""
        if self._world is None:
            # The entry-point machinery already parses and imports "module:attr".
            target = EntryPoint(
                name=self.kind, value=self.target, group=hookspecs.ENTRY_POINT_GROUP
            )
            try:
                world: World = target.load()
            except Exception as exc:
                raise AgentbenchError(
                    "world_load_failed",
                    f"world kind {self.kind!r}: importing {self.target} raised "
                    f"{describe_exception(exc)}",
                    file=file,
                    field="world",
                ) from None
            if getattr(world, "kind", None) != self.kind:
                raise AgentbenchError(
                    "world_load_failed",
                    f"{self.target} is not world kind {self.kind!r}, which it is registered as",
                    file=file,
                    field="world",
                )
            self._world = world
        return self._world


class WorldRegistry:
    """World kinds by name; a kind registered twice is refused."""

    def __init__(self, worlds: Iterable[World | LazyWorld]) -> None:
        self._worlds: dict[str, World | LazyWorld] = {}
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
            world = self._worlds[kind]
        except KeyError:
            known = ", ".join(sorted(self._worlds)) or "none"
            raise AgentbenchError(
                "unknown_world_kind",
                f"world kind {kind!r} is not registered (known: {known})",
                file=file,
                field="world",
            ) from None
        return world.resolve(file=file) if isinstance(world, LazyWorld) else world

    def kinds(self) -> list[str]:
        return sorted(self._worlds)

    def worlds(self) -> list[World]:
        return [self.get(kind) for kind in self.kinds()]

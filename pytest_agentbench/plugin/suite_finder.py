"""Whether a collected file lies in a suite folder, decided without loading a suite or a world.

Until a run turns out to have benchmarks, the plugin asks this of every file
pytest collects: is there, at or above the file, a folder holding
``suite.yaml`` or every marker file of a layout a registered world declares?
A layout's content is not checked (that would import its world), so a folder
that merely looks like one turns the plugin on, and the world then declines
it exactly as it would have.

The installed worlds' marker sets are remembered between processes beside the
entry points (:meth:`~pytest_agentbench.sdk.entry_point_cache.InstalledReading.kept_layouts`):
an idle process then imports no world registration. Worlds registered by a
``conftest.py`` are asked each time.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pluggy

from pytest_agentbench.sdk.entry_point_cache import Layouts
from pytest_agentbench.sdk.hookspecs import ENTRY_POINT_GROUP
from pytest_agentbench.sdk.layout import SUITE_FILE
from pytest_agentbench.sdk.registry import (
    PLUGIN_PREFIX,
    MarkerSets,
    WorldRegistry,
    checked_kinds,
    installed_reading,
    load_entry_point_worlds,
    marker_files,
)


class SuiteFinder:
    """Answers per file; each folder is looked at once."""

    def __init__(self, pluginmanager: pluggy.PluginManager) -> None:
        self._pluginmanager = pluginmanager
        self._marker_sets: MarkerSets | None = None
        self._verdicts: dict[Path, bool] = {}

    def forget_worlds(self) -> None:
        """A plugin registered since (a deeper ``conftest.py``) may declare a world kind."""
        self._marker_sets = None
        self._verdicts.clear()

    def world_markers(self) -> MarkerSets:
        """Every world's layout marker sets (raises the registry's refusals)."""
        if self._marker_sets is None:
            self._marker_sets = self._kept_markers()
        if self._marker_sets is None:
            load_entry_point_worlds(self._pluginmanager)
            registry = WorldRegistry.from_hook(self._pluginmanager)
            self._marker_sets = _markers(registry)
            self._keep(registry)
        return self._marker_sets

    def _kept_markers(self) -> MarkerSets | None:
        """The remembered installed worlds' marker sets and the other plugins' own, or None
        when anything calls for the full registry (which then says what is wrong)."""
        manager = self._pluginmanager
        if any(
            name.startswith(PLUGIN_PREFIX) and plugin is not None  # None: a blocked name
            for name, plugin in manager.list_name_plugin()
        ):
            return None  # the entry points are loaded already: their registry is at hand
        kept = installed_reading(manager).kept_layouts(ENTRY_POINT_GROUP)
        if kept is None:
            return None
        installed = {
            kind: tuple(tuple(markers) for markers in sets)
            for name, kinds in kept.items()
            if not manager.is_blocked(f"{PLUGIN_PREFIX}{name}")
            for kind, sets in kinds.items()
        }
        # The other plugins' worlds (a conftest.py's) are checked among themselves here;
        # one that names an installed kind again is left to the full registry to refuse.
        others = WorldRegistry.from_hook(manager)
        if others.broken or set(others.kinds()) & set(installed):
            return None
        return _markers(others) + tuple(m for sets in installed.values() for m in sets)

    def _keep(self, registry: WorldRegistry) -> None:
        """Remember the installed worlds' marker sets, when every one of them loaded."""
        if registry.broken:
            return
        layouts: Layouts = {}
        modules: list[ModuleType] = []
        for hookimpl in self._pluginmanager.hook.pytest_agentbench_world_kinds.get_hookimpls():
            name = hookimpl.plugin_name
            if not name.startswith(PLUGIN_PREFIX):
                continue
            if not isinstance(hookimpl.plugin, ModuleType):
                return  # an entry point naming an object: no file to tell a change by
            modules.append(hookimpl.plugin)
            layouts[name.removeprefix(PLUGIN_PREFIX)] = {
                world.kind: [list(markers) for markers in registry.marker_sets(world.kind)]
                for world in checked_kinds(hookimpl.function())
            }
        installed_reading(self._pluginmanager).keep_layouts(ENTRY_POINT_GROUP, layouts, modules)

    def _is_suite_folder(self, folder: Path) -> bool:
        if (folder / SUITE_FILE).is_file():
            return True
        return any(
            all(marker_files(folder, marker) for marker in markers)
            for markers in self.world_markers()
        )

    def in_suite(self, file_path: Path) -> bool:
        """Whether ``file_path`` is ``suite.yaml`` or lies in a suite folder (or a look-alike)."""
        if file_path.name == SUITE_FILE:
            return True
        chain: list[Path] = []
        current = file_path.parent
        found = False
        while True:
            known = self._verdicts.get(current)
            if known is not None:
                found = known
                break
            chain.append(current)
            if self._is_suite_folder(current):
                found = True
                break
            if current.parent == current:
                break
            current = current.parent
        for folder in chain:
            self._verdicts[folder] = found
        return found


def _markers(registry: WorldRegistry) -> MarkerSets:
    return tuple(markers for kind in registry.kinds() for markers in registry.marker_sets(kind))

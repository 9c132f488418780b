"""Whether a collected file lies in a suite folder, decided without loading a suite or a world.

Until a run turns out to have benchmarks, the plugin asks this of every file
pytest collects: is there, at or above the file, a folder holding
``suite.yaml`` or every marker file of a layout a registered world declares?
A layout's content is not checked (that would import its world), so a folder
that merely looks like one turns the plugin on, and the world then declines
it exactly as it would have.

The installed worlds' marker sets are remembered between processes beside the
entry points (:meth:`~pytest_agentbench.sdk.entry_point_cache.InstalledReading.kept_layouts`):
an idle process then imports no world registration, nor the registry itself
unless a folder holds a marker's first name or a ``conftest.py`` registers a
world. Worlds registered by a ``conftest.py`` are asked each time.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pluggy

from pytest_agentbench.sdk.entry_point_cache import Layouts, installed_reading
from pytest_agentbench.sdk.hookspecs import ENTRY_POINT_GROUP, PLUGIN_PREFIX
from pytest_agentbench.sdk.layout import CONTAINING, SUITE_FILE

if TYPE_CHECKING:
    from pytest_agentbench.sdk.registry import MarkerSets, WorldRegistry


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
            from pytest_agentbench.sdk.registry import WorldRegistry, load_entry_point_worlds

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
        installed_markers = tuple(m for sets in installed.values() for m in sets)
        if not manager.hook.pytest_agentbench_world_kinds.get_hookimpls():
            return installed_markers  # no other plugin registers a world
        from pytest_agentbench.sdk.registry import WorldRegistry

        # The other plugins' worlds (a conftest.py's) are checked among themselves here;
        # one that names an installed kind again is left to the full registry to refuse.
        others = WorldRegistry.from_hook(manager)
        if others.broken or set(others.kinds()) & set(installed):
            return None
        return _markers(others) + installed_markers

    def _keep(self, registry: WorldRegistry) -> None:
        """Remember the installed worlds' marker sets, when every one of them loaded."""
        if registry.broken:
            return
        from pytest_agentbench.sdk.registry import checked_kinds

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
        try:
            # One listing rather than a stat per marker and a glob per pattern: most
            # folders hold none of the names, and the listing says so.
            names = os.listdir(folder)
        except OSError:
            names = None  # unlistable: asked file by file, as before the listing
        folded = None if names is None else {name.casefold() for name in names}
        if _may_hold(names, folded, SUITE_FILE) and (folder / SUITE_FILE).is_file():
            return True
        candidates = [
            markers
            for markers in self.world_markers()
            if all(_may_hold(names, folded, marker) for marker in markers)
        ]
        if not candidates:
            return False
        from pytest_agentbench.sdk.registry import marker_files

        return any(
            all(marker_files(folder, marker) for marker in markers) for markers in candidates
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


def _may_hold(names: list[str] | None, folded: set[str] | None, marker: str) -> bool:
    """Whether a folder listing ``names`` (``folded``: casefolded) may hold what ``marker``
    names; ``None``: the folder could not be listed, so it may.

    Never wrong the other way: the marker's first path part is looked for ignoring case (a
    case-insensitive file system finds ``Manifest.json`` for ``manifest.json``), a file-name
    pattern as :meth:`pathlib.Path.glob` matches it. ``marker_files`` has the last word.
    """
    if names is None or folded is None:
        return True
    first = marker.partition(CONTAINING)[0].partition("/")[0]
    if any(char in first for char in "*?["):
        return any(fnmatch.fnmatchcase(name, first) for name in names)
    return first.casefold() in folded


def _markers(registry: WorldRegistry) -> MarkerSets:
    return tuple(markers for kind in registry.kinds() for markers in registry.marker_sets(kind))

"""Whether a collected file lies in a suite folder, decided without loading a suite or a world.

Until a run turns out to have benchmarks, the plugin asks this of every file
pytest collects: is there, at or above the file, a folder holding
``suite.yaml`` or every marker file of a layout a registered world declares?
A layout's content is not checked (that would import its world), so a folder
that merely looks like one turns the plugin on, and the world then declines
it exactly as it would have.
"""

from __future__ import annotations

from pathlib import Path

import pluggy

from pytest_agentbench.sdk.layout import SUITE_FILE
from pytest_agentbench.sdk.registry import MarkerSets, WorldRegistry, load_entry_point_worlds


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
            load_entry_point_worlds(self._pluginmanager)
            registry = WorldRegistry.from_hook(self._pluginmanager)
            self._marker_sets = tuple(
                markers for kind in registry.kinds() for markers in registry.marker_sets(kind)
            )
        return self._marker_sets

    def _is_suite_folder(self, folder: Path) -> bool:
        if (folder / SUITE_FILE).is_file():
            return True
        return any(
            all((folder / marker).is_file() for marker in markers)
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

"""The suite finder's folder verdicts: a folder listing only passes over folders that the
markers' own look-up would pass over too."""

from __future__ import annotations

from pathlib import Path

import pluggy
import pytest

from pytest_agentbench.plugin.suite_finder import SuiteFinder
from pytest_agentbench.sdk.registry import MarkerSets, marker_files

MARKERS: MarkerSets = (
    ("public/manifest.json", "evaluator/checksums.json"),
    ("manifest.json", "SHA256SUMS"),
    ("*.yaml containing schema_version: scenarios:",),
)

FOLDERS: dict[str, dict[str, str]] = {
    "empty": {},
    "unrelated": {"README.md": "", "notes.yml": "schema_version: 1\nscenarios: []\n"},
    "nested layout": {"public/manifest.json": "{}", "evaluator/checksums.json": "{}"},
    "nested half": {"public/manifest.json": "{}"},
    "folder named like a marker file": {"manifest.json/inside": "", "SHA256SUMS": ""},
    "two flat markers": {"manifest.json": "{}", "SHA256SUMS": ""},
    "pattern with its lines": {"ops.yaml": "schema_version: 1\nscenarios: []\n"},
    "pattern without its lines": {"ops.yaml": "kind: other\n"},
    "hidden file the pattern matches": {".ops.yaml": "schema_version: 1\nscenarios: []\n"},
    "suite declaration": {"suite.yaml": "id: x\n"},
    "suite declaration is a folder": {"suite.yaml/x": ""},
}


def _finder_with(markers: MarkerSets) -> SuiteFinder:
    finder = SuiteFinder(pluggy.PluginManager("pytest"))
    finder._marker_sets = markers  # the worlds' markers, as the registry would give them
    return finder


def _by_markers(folder: Path, markers: MarkerSets) -> bool:
    if (folder / "suite.yaml").is_file():
        return True
    return any(all(marker_files(folder, marker) for marker in each) for each in markers)


@pytest.mark.parametrize("files", FOLDERS.values(), ids=FOLDERS.keys())
def test_a_folder_is_a_suite_folder_exactly_when_its_markers_name_files(
    tmp_path: Path, files: dict[str, str]
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    verdict = _finder_with(MARKERS)._is_suite_folder(tmp_path)
    assert verdict == _by_markers(tmp_path, MARKERS)


def test_the_verdicts_above_are_not_all_alike(tmp_path: Path) -> None:
    verdicts = set()
    for index, files in enumerate(FOLDERS.values()):
        folder = tmp_path / str(index)
        for name, text in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
        folder.mkdir(exist_ok=True)
        verdicts.add(_finder_with(MARKERS)._is_suite_folder(folder))
    assert verdicts == {True, False}


def test_a_folder_that_cannot_be_listed_is_asked_file_by_file(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    assert _finder_with(MARKERS)._is_suite_folder(missing) is False

"""The pytest11 entry point's own distribution (entry/): in step with the project, and
harmless once pytest-agentbench is uninstalled."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import pytest_agentbench_entry

from pytest_agentbench.plugin import facade

ROOT = Path(__file__).resolve().parent.parent
ENTRY = ROOT / "entry"


def _project(folder: Path) -> dict[str, Any]:
    with (folder / "pyproject.toml").open("rb") as pyproject:
        project: dict[str, Any] = tomllib.load(pyproject)["project"]
    return project


def test_only_the_entry_distribution_declares_the_plugin_at_the_projects_version() -> None:
    project, entry = _project(ROOT), _project(ENTRY)
    assert "pytest11" not in project["entry-points"]
    assert entry["entry-points"] == {"pytest11": {"agentbench": "pytest_agentbench_entry:plugin"}}
    assert entry["version"] == project["version"]
    assert f"pytest-agentbench-entry=={project['version']}" in project["dependencies"]
    # Nothing of ours for pip to install from an index, and no circle.
    assert "dependencies" not in entry


def test_the_entry_point_hands_pytest_the_facade() -> None:
    assert pytest_agentbench_entry.plugin is facade


@pytest.mark.parametrize("leftover", [False, True], ids=["absent", "bytecode-left-behind"])
def test_without_pytest_agentbench_the_entry_point_is_an_empty_plugin(
    tmp_path: Path, leftover: bool
) -> None:
    # No site-packages (-S) and an isolated path (-I): only the entry module is importable,
    # as after `pip uninstall pytest-agentbench`, which leaves behind the bytecode pytest
    # wrote at run time (a rewritten module's): a namespace package of the name.
    if leftover:
        cache = tmp_path / "pytest_agentbench" / "testing" / "__pycache__"
        cache.mkdir(parents=True)
        (cache / "__init__.cpython-311-pytest-9.2.0.pyc").write_bytes(b"")
    probe = (
        "import sys; sys.path[:0] = sys.argv[1:]; import pytest_agentbench_entry as entry; "
        "print(entry.plugin is entry, sorted(n for n in vars(entry) if n.startswith('pytest_')))"
    )
    shown = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe, str(ENTRY), str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert shown.split() == ["True", "[]"]

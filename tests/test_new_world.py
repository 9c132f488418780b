"""``agentbench new-world``: the package it writes installs, registers and passes its own tests.

Installing with pip in a test would need the ``wheel`` package for setuptools'
editable build, which this offline environment does not have; the package is
"installed" instead as pip would leave it: its folder on ``PYTHONPATH`` and a
``*.dist-info`` folder holding the entry points its ``pyproject.toml`` declares.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_agentbench.cli.main import main
from pytest_agentbench.cli.new_world import scaffold_files, write_scaffold
from pytest_agentbench.sdk.canonical import tree_files
from pytest_agentbench.sdk.errors import AgentbenchError


def test_the_command_writes_every_scaffold_file(tmp_path: Path) -> None:
    assert main(["new-world", "arith", "-C", str(tmp_path)]) == 0
    written = {
        rel: path.read_text(encoding="utf-8")
        for rel, path in tree_files(tmp_path / "arith").items()
    }
    assert written == scaffold_files("arith")
    # A second run refuses to write over the first.
    with pytest.raises(AgentbenchError) as refused:
        write_scaffold("arith", tmp_path)
    assert refused.value.code == "target_exists"


@pytest.mark.parametrize("name", ["Arith", "1arith", "ar ith", "arith-", "../arith", ""])
def test_a_name_that_is_no_world_kind_is_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(AgentbenchError) as refused:
        write_scaffold(name, tmp_path)
    assert refused.value.code == "invalid_world_name"
    assert not any(tmp_path.iterdir())


def test_a_hyphenated_name_is_the_kind_and_an_underscored_package() -> None:
    files = scaffold_files("sum-world")
    assert "sum_world/world.py" in files
    assert 'kind = "sum-world"' in files["sum_world/world.py"]
    assert "sum_world/suites/sum-world-v1/suite.yaml" in files


def _install_as_pip_would(project: Path, site: Path) -> None:
    metadata = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    declared = metadata["project"]
    dist_info = site / f"{declared['name'].replace('-', '_')}-{declared['version']}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {declared['name']}\nVersion: {declared['version']}\n",
        encoding="utf-8",
    )
    lines = [
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items())
        for group, points in declared["entry-points"].items()
    ]
    (dist_info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")


@pytest.mark.slow
def test_the_scaffold_passes_its_own_tests_under_xdist(
    tmp_path: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    project = write_scaffold("arith", tmp_path)
    site = tmp_path / "site"
    _install_as_pip_would(project, site)
    # Listed in process, both folders on sys.path as PYTHONPATH puts them there below
    # (pytester restores sys.path and drops the modules the listing imports).
    pytester.syspathinsert(site)
    pytester.syspathinsert(project)
    capsys.readouterr()
    assert main(["list"]) == 0
    assert "arith-v1\tarith\t3 cases\tSums of two integers" in capsys.readouterr().out
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(project), str(site), *sys.path]))
    # One xdist worker: the scaffold's tests run away from the controller that collected
    # them, which is what xdist changes for them; a second worker would show nothing more
    # (the kit's own xdist check, among those tests, runs its suite on two).
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "1", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        capture_output=True,
        text=True,
        env=environment,
        check=False,
        timeout=1500,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "7 passed" in done.stdout


DOC = Path(__file__).resolve().parent.parent / "docs" / "writing-a-world.md"
SCAFFOLD_BLOCK = re.compile(r"<!-- scaffold: (\S+) -->\n```[a-z]+\n(.*?)```\n", re.DOTALL)


def test_the_writing_a_world_guide_shows_exactly_the_scaffold() -> None:
    shown = dict(SCAFFOLD_BLOCK.findall(DOC.read_text(encoding="utf-8")))
    assert shown == scaffold_files("arith")

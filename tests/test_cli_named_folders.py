"""Published files by path from any folder: a folder named on the command line holds its oracle.

Every by-path command of ``docs/worlds/*.md`` runs here from a working folder
that is a sibling of the published folders (never their ancestor): the
authority bundle, the two C08 candidates, GNO's fixture and an OperateBench
spec with its oracle. An oracle outside the named folder still needs the roots
setting, which the ``agentbench`` command reads from the ini it finds and from
``--oracle-root``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pytest_agentbench.cli.common import ini_oracle_roots
from pytest_agentbench.sdk.errors import AgentbenchError
from tests.test_cli import run
from tests.worlds.authority.test_original_layout import write_original
from tests.worlds.evidence_binding import candidates
from tests.worlds.operations.helpers import ROOT as OPERATIONS_ROOT
from tests.worlds.operations.helpers import SPEC_PATH
from tests.worlds.retrieval.helpers import write_small

OPERATIONS_ORACLE = (
    OPERATIONS_ROOT
    / "oracles"
    / "operations-maintenance-v1"
    / "maintenance_negative_controls_v0_5.yaml"
)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of published layouts, none holding a ``suite.yaml``."""
    base = tmp_path_factory.mktemp("published")
    write_original(base)  # base / asteria-agentic-v1
    candidates.write(candidates.asteria_files(actions=6), base / "asteria-c08")
    candidates.write(candidates.enterprise_files(), base / "enterprise-c08")
    write_small(base / "agentic-retrieval")
    operations = base / "operatebench"
    operations.mkdir()
    shutil.copyfile(SPEC_PATH, operations / "maintenance_v0_1.yaml")
    shutil.copyfile(OPERATIONS_ORACLE, operations / "maintenance_negative_controls_v0_5.yaml")
    return base


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, published: Path) -> Path:
    """A working folder that is no ancestor of the published folders."""
    assert not published.is_relative_to(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_documented_by_path_command_runs_from_a_folder_that_is_no_ancestor(
    elsewhere: Path, published: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_agentbench.worlds.evidence_binding import baselines
    from pytest_agentbench.worlds.evidence_binding.agents import EvidenceAgent
    from pytest_agentbench.worlds.retrieval import fixture
    from pytest_agentbench.worlds.retrieval.agent import gno_cues
    from pytest_agentbench.worlds.retrieval.backends import LexicalBackend
    from pytest_agentbench.worlds.retrieval.report import run_matrix

    authority = str(published / "asteria-agentic-v1")
    asteria = str(published / "asteria-c08")
    enterprise = str(published / "enterprise-c08")
    gno = published / "agentic-retrieval"
    operations = str(published / "operatebench")
    failed: dict[str, tuple[int, str]] = {}

    def check(*argv: str) -> str:
        status, out, err = run(capsys, *argv)
        if status != 0:
            failed[" ".join(argv)] = (status, err)
        return out

    # docs/worlds/authority.md
    check("verify", authority)
    check("derive", authority)
    check("evaluate", authority, "--agent", "always_deny")
    check("evaluate", authority, "--agent", "current_state")
    # docs/worlds/evidence-binding.md
    check("verify", enterprise)
    check("verify", asteria)
    loaded = cli_load(asteria)
    submission = baselines.asteria_submission(
        loaded.public, loaded.public_input_digest, EvidenceAgent()
    )
    answers = elsewhere / "c08-asteria-submission.json"
    answers.write_text(submission.model_dump_json())
    check("validate", asteria, "--predictions", str(answers))
    check("evaluate", asteria, "--predictions", str(answers))
    check("baselines", asteria, "-o", str(elsewhere / "baseline-records.json"))
    # docs/worlds/retrieval.md
    check("verify", str(gno))
    public = fixture.load_public(gno, "agentic-retrieval")
    oracles = fixture.load_hidden(public, gno / "oracles", "agentic-retrieval/oracles")
    report = elsewhere / "report.json"
    report.write_text(json.dumps(run_matrix(public, oracles, gno_cues(), [LexicalBackend()])))
    check("rescore", str(report), "--suite", str(gno), "--json")
    # docs/worlds/operations.md and docs/worlds/index.md
    check("check", operations)
    check("evaluate", operations, "--agent", "reference")
    assert failed == {}


def cli_load(folder: str) -> object:
    from pytest_agentbench.cli.common import load
    from pytest_agentbench.sdk.registry import installed_registry

    return load(folder, installed_registry()).suite.data


def outside_oracle_suite(base: Path) -> Path:
    """A copy of the built-in authority suite whose ``oracle:`` lies beside its folder."""
    from tests.test_cli import SHIPPED_ORACLE, SHIPPED_SUITE

    suite = base / "suite"
    shutil.copytree(SHIPPED_SUITE, suite)
    shutil.copytree(SHIPPED_ORACLE, base / "kept-oracle")
    text = (suite / "suite.yaml").read_text()
    (suite / "suite.yaml").write_text(text + "oracle: ../kept-oracle\n")
    return suite


def test_an_oracle_outside_the_named_folder_needs_an_oracle_root(
    elsewhere: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path_factory.mktemp("outside")
    suite = outside_oracle_suite(base)
    status, _, err = run(capsys, "verify", str(suite))
    assert status == 1
    assert err.startswith(f"agentbench: [oracle_outside_project] {suite}/suite.yaml: oracle: ")
    assert "agentbench_oracle_roots or give --oracle-root" in err
    status, out, _ = run(capsys, "verify", str(suite), "--oracle-root", str(base / "kept-oracle"))
    assert status == 0, out
    # The ini the command finds (pytest's, from the working folder up) is read too,
    # its folders relative to the ini file.
    kept = os.path.relpath(base / "kept-oracle", elsewhere)
    (elsewhere / "tox.ini").write_text(f"[pytest]\nagentbench_oracle_roots = {kept}\n")
    (elsewhere / "deeper").mkdir()
    assert ini_oracle_roots(elsewhere / "deeper") == [elsewhere / kept]
    assert run(capsys, "verify", str(suite))[0] == 0
    (elsewhere / "pytest.ini").write_text("[pytest]\n")  # pytest.ini wins over tox.ini
    assert run(capsys, "verify", str(suite))[0] == 1


def test_a_layouts_evaluator_linked_outside_is_refused_naming_its_anchor(
    elsewhere: Path,
    published: Path,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = tmp_path_factory.mktemp("linked")
    shutil.copytree(published / "asteria-agentic-v1" / "public", base / "bundle" / "public")
    shutil.copytree(published / "asteria-agentic-v1" / "evaluator", base / "kept")
    (base / "bundle" / "evaluator").symlink_to(base / "kept", target_is_directory=True)
    status, _, err = run(capsys, "verify", str(base / "bundle"))
    assert status == 1
    # The layout has no suite.yaml: the refusal names the file that anchors it.
    assert err.startswith(
        f"agentbench: [oracle_outside_project] {base}/bundle/public/manifest.json: oracle: "
    )
    assert run(capsys, "verify", str(base / "bundle"), "--oracle-root", str(base / "kept"))[0] == 0


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("pytest.ini", "[pytest]\nagentbench_oracle_roots = a 'b c'\n", ["a", "b c"]),
        ("pytest.ini", "", []),
        ("setup.cfg", "[tool:pytest]\nagentbench_oracle_roots = s\n", ["s"]),
        ("setup.cfg", "[metadata]\nname = x\n", None),
        (
            "pyproject.toml",
            '[tool.pytest.ini_options]\nagentbench_oracle_roots = ["p"]\n',
            ["p"],
        ),
        ("pyproject.toml", '[tool.pytest]\nagentbench_oracle_roots = ["n"]\n', ["n"]),
        ("pyproject.toml", "[project]\nname = 'x'\n", None),
        ("pytest.toml", '[pytest]\nagentbench_oracle_roots = ["t"]\n', ["t"]),
    ],
)
def test_the_ini_is_found_as_pytest_finds_it(
    tmp_path: Path, name: str, text: str, expected: list[str] | None
) -> None:
    (tmp_path / name).write_text(text)
    below = tmp_path / "below"
    below.mkdir()
    found = ini_oracle_roots(below)
    if expected is None:  # no pytest section here: the search goes on upward
        assert all(not root.is_relative_to(tmp_path) for root in found)
    else:
        assert found == [tmp_path / entry for entry in expected]


def test_an_unreadable_ini_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.pytest\n")
    with pytest.raises(AgentbenchError) as info:
        ini_oracle_roots(tmp_path)
    assert (info.value.code, info.value.location.file) == (
        "invalid_ini",
        str(tmp_path / "pyproject.toml"),
    )
    (tmp_path / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\nagentbench_oracle_roots = 3\n"
    )
    with pytest.raises(AgentbenchError) as info:
        ini_oracle_roots(tmp_path)
    assert info.value.location.field == "agentbench_oracle_roots"


def test_pytest_takes_published_folders_named_from_a_project_that_does_not_hold_them(
    pytester: pytest.Pytester, published: Path
) -> None:
    """With the rootdir set to the working folder, it holds neither named folder."""
    result = pytester.runpytest(
        "--rootdir",
        str(pytester.path),
        str(published / "asteria-agentic-v1"),
        "--agentbench-suite",
        str(published / "asteria-c08"),
        "-m",
        "not agentbench_control",
        "-q",
        "-p",
        "no:cacheprovider",
    )
    assert "oracle_outside_project" not in result.stdout.str()
    result.assert_outcomes(passed=11 + 6)

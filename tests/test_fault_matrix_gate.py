"""Issue 43's gate: a CI run cannot go green by mistake, nor fall over on odd input.

The faults whose handling could depend on distribution sit side by side in one
project, run once per mode (serially, under ``-n 2``, isolated, and isolated with a
pool of adapter processes) as subprocesses with a generous limit of the test's own,
all four at once: lone surrogates in an adapter's exception, its printed output and
its answer, and in a case id; a world plugin whose entry point no longer imports
(its suite alone is refused); an operations spec its reader refuses. Each mode must
classify every case alike and end without an INTERNALERROR.

What needs a session of its own (an exit status, a refusal before any case runs)
runs serially in-process further down, and, where the xdist controller decides
alone (the refusals before any case is sent), under ``-n 1`` as well.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli.main import main as agentbench_main
from tests.conftest import DEMO_SOURCE
from tests.demo_world import write_demo_suite
from tests.shared_sessions import run_session

REPO = Path(__file__).resolve().parents[1]
OUTER_LIMIT = 120.0
"""The test's own limit on each session: generous, never what is tested."""

ADAPTER = r"""
import sys


class Agent:
    def answer(self, question):
        left, right = question.split("+")
        if question == "1+1":
            raise ValueError("bad \udc80 text")
        if question == "1+2":
            print("printed \udc80")
            sys.stderr.write("written \ud800\n")
            raise KeyError("k\udc80")
        if question == "1+3":
            return "x\udc80"
        if left in ("5", "6"):
            return "text \udc80"
        if left == "7":
            return 0
        return int(left) + int(right)
"""
"""One adapter for every scenario, misbehaving on each suite's own questions."""

TEXT_WORLD = """
from demo_world import DemoWorld, pytest_agentbench_world_kinds as demo_kinds
from pytest_agentbench.sdk import Outcome, call_adapter
from pytest_agentbench.sdk.canonical import canonical_bytes, sha256_hex
from pytest_agentbench.sdk.hookspecs import hookimpl


class TextWorld(DemoWorld):
    '''Keeps the adapter's text in its output; on questions "5+..." digests it first.'''

    kind = "text"

    def run(self, suite, case, view, adapter):
        value = call_adapter(adapter.answer, view["question"])
        if view["question"].startswith("5+"):
            sha256_hex(canonical_bytes({"text": value}))
        return Outcome(output={"answer": 0, "text": value})


@hookimpl
def pytest_agentbench_world_kinds():
    return [*demo_kinds(), TextWorld()]
"""

BROKEN_ENTRY_POINT = "broken"
"""The name of an installed world plugin whose module no longer imports."""


def install_broken_world(site: Path) -> None:
    """A distribution in ``site`` whose world entry point raises on import."""
    info = site / "brokenworld-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenworld\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[pytest_agentbench.worlds]\n{BROKEN_ENTRY_POINT} = brokenworld_registration\n"
    )
    (site / "brokenworld_registration.py").write_text("import a_module_that_is_gone\n")


def report_of(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return report


def classes_of(report: dict[str, Any], suite_id: str) -> dict[str, tuple[str, Any, Any]]:
    (suite,) = [suite for suite in report["suites"] if suite["id"] == suite_id]
    return {
        entry["result"]["case_id"]: (
            entry["result"]["outcome"],
            entry["result"]["failure_class"],
            entry["result"]["failure_reason"],
        )
        for entry in suite["cases"]
    }


def _build(base: Path) -> None:
    base.mkdir(parents=True)
    (base / "demo_world.py").write_text(DEMO_SOURCE.read_text(encoding="utf-8"))
    (base / "conftest.py").write_text(TEXT_WORLD)
    (base / "gate_agent.py").write_text(ADAPTER)
    write_demo_suite(
        base, "surrogates", questions={"c1": "1+1", "c2": "1+2", "c3": "1+3", "c4": "4+4"}
    )
    write_demo_suite(base, "surrogate-text", questions={"c1": "5+1", "c2": "6+1"}, world="text")
    # The JSON escape makes a lone surrogate of the id as the case file is read.
    write_demo_suite(base, "surrogate-id", questions={"c\\udc80": "1+4", "c2": "2+2"})
    write_demo_suite(base, "broken-kind", world=BROKEN_ENTRY_POINT)
    write_demo_suite(base, "sound", questions={"c1": "2+2"})
    spec = (REPO / "suites" / "operations-commerce-v1" / "operation.yaml").read_text()
    (base / "ops-dup").mkdir()
    (base / "ops-dup" / "operation.yaml").write_text(
        spec.replace("operation_version: 0.1.0\n", "operation_version: 0.1.0\nschema_version: 2\n")
    )


MODES = {
    "serial": [],
    "n2": ["-n", "2"],
    "isolated": ["--agentbench-isolate"],
    "isolated-pool": ["--agentbench-isolate", "--agentbench-concurrency=2"],
}


class Run:
    def __init__(self, base: Path, result: pytest.RunResult) -> None:
        self.base, self.result = base, result
        self.output = "\n".join([*result.outlines, *result.errlines])
        self.report = report_of(base / "run.json")
        self.junit = ET.parse(base / "junit.xml").getroot()


def _run(base: Path, mode: str) -> Run:
    result = run_session(
        base,
        "suites",
        "ops-dup",
        "--agentbench-adapter=gate_agent:Agent",
        "--agentbench-timeout=60",
        "--agentbench-report=run.json",
        "--junitxml=junit.xml",
        "-m",
        "not agentbench_control",
        "-rA",
        *MODES[mode],
        timeout=OUTER_LIMIT,
    )
    return Run(base, result)


def check_no_internal_error(run: Run) -> None:
    assert "INTERNALERROR" not in run.output
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED, run.output[-3000:]


def check_lone_surrogates_are_escaped_and_classified_alike(run: Run) -> None:
    assert classes_of(run.report, "surrogates") == {
        "c1": ("failed", "agent_error", "adapter raised ValueError: bad \\udc80 text"),
        "c2": ("failed", "agent_error", "adapter raised KeyError: 'k\\udc80'"),
        "c3": ("failed", "product_error", "answer must be an integer, got str"),
        "c4": ("passed", None, None),
    }
    malformed = "malformed output: {} holds a lone surrogate, which is not Unicode text"
    assert classes_of(run.report, "surrogate-text") == {
        # The world met the text as it digested it; or the outcome check did.
        "c1": ("failed", "agent_error", malformed.format("it")),
        "c2": ("failed", "agent_error", malformed.format("text")),
    }
    # Escaped on the terminal and in the JUnit file too.
    assert "agent_error: adapter raised ValueError: bad \\udc80 text" in run.output
    messages = [failure.get("message") for failure in run.junit.iter("failure")]
    assert "agent_error: adapter raised KeyError: 'k\\udc80'" in messages


def check_a_case_id_holding_a_lone_surrogate_is_refused_by_name(run: Run) -> None:
    refusals = [p for p in run.report["problems"] if p.startswith("[invalid_case_id]")]
    assert refusals == [
        "[invalid_case_id] suites/surrogate-id/cases.jsonl:1: case id 'c\\udc80' holds a lone "
        "surrogate, which is not Unicode text (no report, file name or terminal takes it)"
    ]


def check_a_broken_world_plugin_refuses_its_suites_alone(run: Run) -> None:
    (refusal,) = [p for p in run.report["problems"] if p.startswith("[world_broken]")]
    assert refusal.startswith(
        "[world_broken] suites/broken-kind/suite.yaml: world: world kind 'broken' did not load: "
        "entry point brokenworld_registration raised ModuleNotFoundError: "
    )
    assert "agentbench: world 'broken' is broken: entry point brokenworld_registration" in (
        run.output
    )
    assert classes_of(run.report, "sound") == {"c1": ("passed", None, None)}


def check_an_operations_spec_its_reader_refuses_is_a_collection_error(run: Run) -> None:
    refusals = [p for p in run.report["problems"] if p.startswith("[duplicate_key]")]
    assert refusals == ["[duplicate_key] ops-dup/operation.yaml:7: duplicate key 'schema_version'"]
    assert "ERROR ops-dup/operation.yaml" in run.output


CHECKS = [
    check_no_internal_error,
    check_lone_surrogates_are_escaped_and_classified_alike,
    check_a_case_id_holding_a_lone_surrogate_is_refused_by_name,
    check_a_broken_world_plugin_refuses_its_suites_alone,
    check_an_operations_spec_its_reader_refuses_is_a_collection_error,
]


def test_the_gate_matrix_in_every_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    # As tox runs it: an encoding without an error handler, which the isolated adapter
    # process once inherited as strict (a print of a lone surrogate then raised there).
    monkeypatch.setenv("PYTHONIOENCODING", "utf-8")
    site = tmp_path / "site"
    install_broken_world(site)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    )
    for mode in MODES:
        _build(tmp_path / mode)
    # The four sessions share nothing but the broken installation: they run at once.
    with ThreadPoolExecutor(len(MODES)) as pool:
        runs = dict(zip(MODES, pool.map(lambda m: _run(tmp_path / m, m), MODES), strict=True))
    failed = []
    for mode, run in runs.items():
        for check in CHECKS:
            try:
                check(run)
            except AssertionError as exc:
                failed.append(f"{mode}: {check.__name__}: {exc}")
    assert not failed, "\n".join(failed)


# --- Sessions of their own: exit statuses and refusals before any case runs ---


@pytest.fixture
def project(demo: pytest.Pytester) -> pytest.Pytester:
    write_demo_suite(demo.path, "demo-suite")
    write_demo_suite(demo.path, "other", questions={"c1": "3+3"})
    demo.makeini("[pytest]\n")
    return demo


NOT_CONTROLS = ("-m", "not agentbench_control")


def test_a_misspelt_key_or_variable_is_a_usage_error_naming_the_nearest(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makeini("[pytest]\nagentbench_adaptr = demo_world:AlwaysZero\n")
    result = project.runpytest("suites", *NOT_CONTROLS)
    # It ran the built-in reference agents and passed.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: [[]unknown_ini_key[]] */tox.ini: agentbench_adaptr: nothing reads it; "
            "did you mean agentbench_adapter?"
        ]
    )
    assert "passed" not in result.stdout.str()
    project.makeini("[pytest]\n")
    monkeypatch.setenv("AGENTBENCH_LLM_MODLE", "gpt-x")
    monkeypatch.setenv("AGENTBENCH_LLM_API_KEY_ENV", "AGENTBENCH_OUR_KEY")
    monkeypatch.setenv("AGENTBENCH_OUR_KEY", "a variable named as the key's is read")
    result = project.runpytest("suites", *NOT_CONTROLS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.errlines[0] == (
        "ERROR: [unknown_environment_variable] environment: AGENTBENCH_LLM_MODLE: "
        "nothing reads it; did you mean AGENTBENCH_LLM_MODEL?"
    )
    assert "AGENTBENCH_OUR_KEY" not in result.stderr.str()


def test_a_run_without_an_adapter_says_so_first_and_can_be_refused(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("suites", "-q", *NOT_CONTROLS)
    assert result.ret == pytest.ExitCode.OK
    ours = [line for line in result.outlines if line.startswith("agentbench")]
    assert ours[0].startswith(
        "agentbench: NO ADAPTER: the built-in reference agents answered every case"
    )
    named = project.runpytest("suites", "-q", "--agentbench-adapter=demo_world:Reference")
    assert "NO ADAPTER" not in named.stdout.str()
    for args, field in (
        (["--agentbench-require-adapter"], "--agentbench-require-adapter"),
        (["-o", "agentbench_require_adapter=true"], "agentbench_require_adapter"),
    ):
        refused = project.runpytest("suites", *args)
        assert refused.ret == pytest.ExitCode.USAGE_ERROR
        refused.stderr.fnmatch_lines([f"ERROR: [[]adapter_required[]] {field}: the run names no*"])
        assert "passed" not in refused.stdout.str()
    required = project.runpytest(
        "suites",
        "--agentbench-require-adapter",
        "--agentbench-adapter=demo_world:Reference",
        *NOT_CONTROLS,
    )
    assert required.ret == pytest.ExitCode.OK


def test_resuming_counts_the_failures_it_takes(project: pytest.Pytester) -> None:
    wrong = ("--agentbench-adapter=demo_world:AlwaysZero", *NOT_CONTROLS)
    first = project.runpytest("suites/demo-suite", *wrong, "--agentbench-report=first.json")
    assert first.ret == pytest.ExitCode.TESTS_FAILED
    resuming = (
        "suites/demo-suite",
        *wrong,
        "--agentbench-resume=first.json",
        "--agentbench-report=resumed.json",
        "--junitxml=resumed.xml",
    )
    serial = project.runpytest(*resuming)
    _assert_resumed_failures_count(project.path, serial)
    # Under xdist the controller, which collects nothing, writes the reports.
    (project.path / "resumed.json").unlink()
    distributed = run_session(project.path, *resuming, "-n", "1", timeout=OUTER_LIMIT)
    _assert_resumed_failures_count(project.path, distributed)
    right = ("--agentbench-adapter=demo_world:Reference", *NOT_CONTROLS)
    project.runpytest("suites/demo-suite", *right, "--agentbench-report=good.json")
    again = project.runpytest("suites/demo-suite", *right, "--agentbench-resume=good.json")
    assert again.ret == pytest.ExitCode.OK  # not 5: every case passed, taken or run


def _assert_resumed_failures_count(folder: Path, result: pytest.RunResult) -> None:
    # It exited 5 (nothing left to run), with exit_status 0 and no failure in JUnit.
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    report = report_of(folder / "resumed.json")
    assert report["exit_status"] == 1
    assert report["suites"][0]["counts"]["failed"] == 3
    suite = ET.parse(folder / "resumed.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("3", "3")
    resumed_from = [
        prop.get("value")
        for prop in suite.iter("property")
        if prop.get("name") == "agentbench.resumed_from"
    ]
    assert resumed_from == ["first.json"] * 3


def test_a_gate_on_an_unknown_metric_or_a_baseline_sharing_no_suite_is_refused_first(
    project: pytest.Pytester,
) -> None:
    baseline = project.runpytest("suites/other", *NOT_CONTROLS, "--agentbench-report=base.json")
    assert baseline.ret == pytest.ExitCode.OK
    args = (
        "suites/demo-suite",
        *NOT_CONTROLS,
        "--agentbench-baseline=base.json",
        "--agentbench-gate=demo-suite:acuracy>=0.5",
        "--agentbench-report=after.json",
    )
    expected = [
        "ERROR: [[]gate_unknown_metric[]] --agentbench-gate: 'demo-suite:acuracy>=0.5': "
        "suite 'demo-suite' reports no metric 'acuracy' (it reports: accuracy, zero_rate)",
        "[[]baseline_no_shared_suite[]] base.json: --agentbench-baseline: the baseline holds "
        "suites other and this run demo-suite: there is nothing to compare",
    ]
    serial = project.runpytest(*args)
    # Under -n 1 the controller, which collects nothing, refuses once the worker's
    # collection arrives, before it sends a case.
    distributed = run_session(project.path, *args, "-n", "1", timeout=OUTER_LIMIT)
    for result in (serial, distributed):
        # Both ran every case first, then failed the gate and passed the comparison.
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
        result.stderr.fnmatch_lines(expected)
        assert "passed" not in result.stdout.str()
        assert not (project.path / "after.json").exists()


def test_a_broken_world_plugin_leaves_other_projects_and_commands_alone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    site = pytester.path / "site"
    install_broken_world(site)
    monkeypatch.syspath_prepend(str(site))
    pytester.makepyfile(test_x="def test_x():\n    assert True\n")
    # It failed every pytest session of the environment with the import's error.
    result = pytester.runpytest("test_x.py")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)
    capsys.readouterr()
    assert agentbench_main(["list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert "asteria-authored-v1" in [line.split("\t")[0] for line in listed]
    assert listed[-1].startswith(
        "broken\t(broken world)\tentry point brokenworld_registration raised ModuleNotFoundError"
    )


def test_every_agentbench_variable_the_package_reads_is_known() -> None:
    """A variable the package reads but the unknown-variable check does not list would
    refuse every run that sets it (AGENTBENCH_SANDBOX was, once)."""
    from pytest_agentbench.plugin.options import OTHER_ENVIRONMENT, SOURCES

    package = Path(__file__).resolve().parents[1] / "pytest_agentbench"
    named = {
        name
        for path in package.rglob("*.py")
        for name in re.findall(r'"(AGENTBENCH_[A-Z0-9_]+)"', path.read_text(encoding="utf-8"))
    }
    known = {env_key for _, env_key in SOURCES.values()} | set(OTHER_ENVIRONMENT)
    assert named, "the search finds the variables"
    assert named - known == set()

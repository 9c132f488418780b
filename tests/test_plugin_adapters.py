"""Loading the system under test: specs, ini, protocol checks and fixture overrides."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.demo_world import REGISTERING_CONFTEST, write_demo_suite
from tests.shared_sessions import run_session

AGENTS = """
class OffByOne:
    def answer(self, question):
        left, right = question.split("+")
        return int(left) + int(right) + 1


def make():
    return OffByOne()


instance = OffByOne()


class Mute:
    def speak(self):
        return "hello"
"""

EXPLAIN_WORLD = """
from typing import Protocol, runtime_checkable

from demo_world import WORLD, DemoWorld
from pytest_agentbench.sdk.hookspecs import hookimpl


@runtime_checkable
class Explainer(Protocol):
    def explain(self, question: str) -> str: ...


class ExplainWorld(DemoWorld):
    kind = "explain"
    adapter_protocol = Explainer


@hookimpl
def pytest_agentbench_world_kinds():
    return [WORLD, ExplainWorld()]
"""


def run_report(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / "run.json"
    result = pytester.runpytest(f"--agentbench-report={path}", *args)
    return result, json.loads(path.read_text())


def answers(report: dict[str, Any]) -> dict[str, Any]:
    """Case id -> the answer the adapter gave, from the JSON run report."""
    (suite,) = [suite for suite in report["suites"] if suite["id"] == "demo-suite"]
    given: dict[str, Any] = {}
    for entry in suite["cases"]:
        result = entry["result"]
        (correct,) = [check for check in result["checks"] if check["name"] == "answer_correct"]
        given[result["case_id"]] = correct["actual"]
    return given


@pytest.fixture
def project(demo: pytest.Pytester) -> pytest.Pytester:
    write_demo_suite(demo.path)
    demo.makepyfile(agents=AGENTS)
    return demo


@pytest.mark.parametrize("attr", ["OffByOne", "make", "instance"])
def test_adapter_spec_accepts_class_factory_and_instance(
    project: pytest.Pytester, attr: str
) -> None:
    result, report = run_report(
        project, f"--agentbench-adapter=agents:{attr}", "-m", "not agentbench_control"
    )
    result.assert_outcomes(failed=3, deselected=1)
    assert answers(report) == {"c1": 3, "c2": 6, "c3": 16}
    assert report["adapter"] == {
        "spec": f"agents:{attr}",
        "description": f"agents:{attr} (agents.OffByOne)",
    }
    result.stdout.fnmatch_lines(
        [f"agentbench: adapter agents:{attr} (agents.OffByOne); world kinds: *"]
    )


def test_adapter_from_ini(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nagentbench_adapter = agents:make\n")
    result, report = run_report(project, "-m", "not agentbench_control")
    result.assert_outcomes(failed=3, deselected=1)
    assert answers(report) == {"c1": 3, "c2": 6, "c3": 16}
    assert report["adapter"]["spec"] == "agents:make"


def test_default_adapter_is_the_reference_and_the_header_says_so(project: pytest.Pytester) -> None:
    result, report = run_report(project)
    result.assert_outcomes(passed=3, failed=1)
    assert answers(report) == {"c1": 2, "c2": 5, "c3": 15}
    assert report["adapter"] == {"spec": None, "description": "built-in reference agents"}
    result.stdout.fnmatch_lines(["agentbench: adapter built-in reference agents; world kinds: *"])


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            "nowhere_to_be_found:Agent",
            "[adapter_import] --agentbench-adapter: cannot import module 'nowhere_to_be_found' of "
            "adapter 'nowhere_to_be_found:Agent': ModuleNotFoundError: No module named "
            "'nowhere_to_be_found'",
            id="module-missing",
        ),
        pytest.param(
            "exploding:Agent",
            "[adapter_import] --agentbench-adapter: cannot import module 'exploding' of adapter "
            "'exploding:Agent': RuntimeError: no GPU here",
            id="module-raises",
        ),
        pytest.param(
            "agents:Nobody",
            "[adapter_attribute] --agentbench-adapter: module 'agents' has no attribute 'Nobody' "
            "(adapter 'agents:Nobody')",
            id="attribute-missing",
        ),
        pytest.param(
            "agents:Mute",
            "[adapter_protocol] --agentbench-adapter: adapter 'agents:Mute' (Mute) implements no "
            "known protocol; expected one of: ",
            id="no-protocol",
        ),
        pytest.param(
            "agents",
            "[adapter_spec] --agentbench-adapter: 'agents' is not 'module:attr'",
            id="not-a-spec",
        ),
    ],
)
def test_unusable_adapter_is_a_usage_error_in_one_line(
    project: pytest.Pytester, spec: str, expected: str
) -> None:
    project.makepyfile(exploding="raise RuntimeError('no GPU here')\n")
    result = project.runpytest(f"--agentbench-adapter={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (error,) = [line for line in result.errlines if line.strip()]
    assert error.startswith(f"ERROR: {expected}")
    if spec == "agents:Mute":
        assert "DemoAdapter (demo)" in error
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_adapter_lacking_a_suites_protocol_skips_that_suite_only(demo: pytest.Pytester) -> None:
    demo.makeconftest(EXPLAIN_WORLD)
    demo.makepyfile(agents=AGENTS)
    write_demo_suite(demo.path, "adding-suite")
    explain_dir = write_demo_suite(demo.path, "explain-suite")
    yaml_text = (explain_dir / "suite.yaml").read_text()
    (explain_dir / "suite.yaml").write_text(yaml_text.replace("world: demo", "world: explain"))
    result, report = run_report(
        demo, "--agentbench-adapter=agents:OffByOne", "-rs", "-m", "not agentbench_control"
    )
    result.assert_outcomes(failed=3, skipped=3, deselected=2)
    result.stdout.fnmatch_lines(
        ["SKIPPED ?3? *adapter OffByOne lacks the Explainer protocol of world kind 'explain'"]
    )
    counts = {suite["id"]: suite["counts"] for suite in report["suites"]}
    assert counts["explain-suite"]["skipped"] == 3
    assert counts["adding-suite"]["failed"] == 3


# Without xdist: a worker imports conftests and resolves fixtures as this process does.
def test_conftest_override_built_from_another_fixture_reaches_every_case(
    demo: pytest.Pytester,
) -> None:
    write_demo_suite(demo.path)
    demo.makeconftest(
        REGISTERING_CONFTEST
        + """
import pytest


@pytest.fixture(scope="session")
def offset():
    return 100


@pytest.fixture(scope="session")
def agentbench_adapter(offset):
    class Shifted:
        def answer(self, question):
            left, right = question.split("+")
            return int(left) + int(right) + offset

    return Shifted()
"""
    )
    result, report = run_report(demo, "-m", "not agentbench_control")
    result.assert_outcomes(failed=3)
    assert answers(report) == {"c1": 102, "c2": 105, "c3": 115}
    # The header cannot know about the override; the report and the section name it.
    shifted = "conftest.agentbench_adapter.<locals>.Shifted"
    assert report["suites"][0]["answered_by"] == [shifted]
    result.stdout.fnmatch_lines(
        [f"adapter: built-in reference agents (cases answered by {shifted})"]
    )


def test_an_adapter_fixture_of_each_test_is_resolved_for_each_case(demo: pytest.Pytester) -> None:
    # The adapter a suite's cases resolve to is kept for its next case only while the
    # fixture gives the same object: a new one is checked and used anew, case by case.
    write_demo_suite(demo.path)
    demo.makeconftest(
        REGISTERING_CONFTEST
        + """
import pytest


class Shifted:
    def __init__(self, by):
        self.by = by

    def answer(self, question):
        left, right = question.split("+")
        return int(left) + int(right) + self.by


class Mute:
    def speak(self):
        return "hello"


@pytest.fixture
def agentbench_adapter(request):
    case = request.node.name
    return Mute() if case == "c2" else Shifted(0 if case == "c1" else 7)
"""
    )
    result, report = run_report(demo, "-rs", "-m", "not agentbench_control")
    result.assert_outcomes(passed=1, failed=1, skipped=1, deselected=1)
    result.stdout.fnmatch_lines(["SKIPPED ?1? *adapter Mute lacks the DemoAdapter protocol*"])
    (suite,) = report["suites"]
    results = {entry["result"]["case_id"]: entry["result"] for entry in suite["cases"]}
    assert {case: result["outcome"] for case, result in results.items()} == {
        "c1": "passed",
        "c2": "skipped",
        "c3": "failed",
    }
    assert results["c3"]["checks"][1] == {**results["c3"]["checks"][1], "actual": 22}


def test_autouse_fixtures_of_the_user_run_for_every_case_item(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path)
    demo.makeconftest(
        REGISTERING_CONFTEST
        + """
import os

import pytest


@pytest.fixture(autouse=True)
def shift_answers(monkeypatch):
    monkeypatch.setenv("ANSWER_SHIFT", "7")
"""
    )
    demo.makepyfile(
        shifting="""
import os


class Shifting:
    def answer(self, question):
        left, right = question.split("+")
        return int(left) + int(right) + int(os.environ.get("ANSWER_SHIFT", "0"))
"""
    )
    result, report = run_report(
        demo, "-m", "not agentbench_control", "--agentbench-adapter=shifting:Shifting"
    )
    result.assert_outcomes(failed=3)
    assert answers(report) == {"c1": 9, "c2": 12, "c3": 22}


def test_an_overridden_world_fixture_is_what_the_adapter_sees(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path)
    demo.makeconftest(
        REGISTERING_CONFTEST
        + """
import pytest


@pytest.fixture
def agentbench_world():
    return {"question": "40+2"}
"""
    )
    result, report = run_report(demo, "-m", "not agentbench_control")
    result.assert_outcomes(passed=0, failed=3)
    assert answers(report) == {"c1": 42, "c2": 42, "c3": 42}


def test_users_own_tests_can_request_the_fixtures(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_mine="""
import pytest


def test_adapter(agentbench_adapter):
    assert agentbench_adapter.answer("2+2") == 5


@pytest.mark.agentbench(suite="demo-suite", case="c2")
def test_case_view(agentbench_case, agentbench_world, agentbench_adapter):
    assert agentbench_case.case_id == "c2"
    assert agentbench_world == {"question": "2+3"}
    assert agentbench_adapter.answer(agentbench_world["question"]) == 6


def test_world_needs_a_case(agentbench_world):
    pass
"""
    )
    # The suite is collected too (so its cases are known) but deselected.
    result = project.runpytest("--agentbench-adapter=agents:OffByOne", "-k", "test_")
    result.assert_outcomes(passed=2, errors=1, deselected=4)
    result.stdout.fnmatch_lines(
        [
            "agentbench_case/agentbench_world outside a benchmark item need "
            "@pytest.mark.agentbench(suite=..., case=...)",
            "ERROR test_mine.py::test_world_needs_a_case - *",
        ]
    )


def test_adapter_spec_resolves_packages_and_nested_attributes(project: pytest.Pytester) -> None:
    package = project.mkpydir("mypkg")
    Path(package, "agent.py").write_text(
        "class Outer:\n"
        "    class Inner:\n"
        "        def answer(self, question):\n"
        "            return 0\n"
    )
    result, report = run_report(
        project, "--agentbench-adapter=mypkg.agent:Outer.Inner", "-m", "not agentbench_control"
    )
    result.assert_outcomes(failed=3)
    assert answers(report) == {"c1": 0, "c2": 0, "c3": 0}


TOOLGRAMMAR_AGENT = """
import re

from agent_helper import PATTERN


class {name}:
    def solve(self, task, session):
        match = re.search(PATTERN, task["prompt"])
        if {declines} or task["world"] != "ops" or match is None:
            return {{"answer": "I cannot answer that.", "citations": []}}
        order = match.group(1)
        status = session.call("get_order", {{"order_id": order}})["data"]["status"]
        return {{"answer": f"The status of order {{order}} is {{status}}.", "citations": []}}


Agent = {name}
"""
ANSWERED = "ops-T1-00004 or ops-T1-00006"
"""Two order-status questions the agent answers right, and the other agent declines."""


def test_the_adapter_module_is_found_in_the_invocation_folder_and_the_rootdir(
    tmp_path: Path,
) -> None:
    """Run by the ``pytest`` command (``python -P``: no folder of the project on
    ``sys.path``) from a folder below the rootdir: a module there is found first,
    serially and by xdist's workers, with the neighbour it imports; an isolated
    adapter's module is found in the rootdir, where its process sees only a copy."""
    rootdir, invocation = tmp_path / "project", tmp_path / "project" / "work"
    invocation.mkdir(parents=True)
    (rootdir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    helper = "PATTERN = r'status of order (ORD-\\d+)'\n"
    for folder, name, declines in (
        (invocation, "InvocationAgent", "False"),
        (rootdir, "RootdirAgent", "True"),
    ):
        (folder / "agent_helper.py").write_text(helper, encoding="utf-8")
        (folder / "my_agent.py").write_text(
            TOOLGRAMMAR_AGENT.format(name=name, declines=declines), encoding="utf-8"
        )
    (rootdir / "root_agent.py").write_text(
        TOOLGRAMMAR_AGENT.format(name="OnlyInRootdir", declines="False"), encoding="utf-8"
    )
    common = ("--agentbench-suite=toolgrammar-mini-v1", "-k", ANSWERED)
    modes = {
        "serial, from the ini file": ("-o", "agentbench_adapter=my_agent:Agent"),
        "-n 2": ("--agentbench-adapter=my_agent:Agent", "-n", "2"),
        "isolated, in the rootdir": (
            "--agentbench-adapter=root_agent:Agent",
            "--agentbench-isolate",
        ),
        "missing": ("--agentbench-adapter=nowhere_agent:Agent",),
    }
    with ThreadPoolExecutor(len(modes)) as pool:
        results = dict(
            zip(
                modes,
                pool.map(
                    lambda args: run_session(
                        invocation, *common, *args, timeout=300, safe_path=True
                    ),
                    modes.values(),
                ),
                strict=True,
            )
        )
    failures = []
    for mode in ("serial, from the ini file", "-n 2", "isolated, in the rootdir"):
        result = results[mode]
        if result.ret != 0 or {**result.parseoutcomes(), "deselected": 0} != {
            "passed": 2,
            "deselected": 0,
        }:
            failures.append(f"{mode}: {(result.stdout.str() + result.stderr.str())[-1500:]}")
    header = "agentbench: adapter my_agent:Agent (my_agent.InvocationAgent); world kinds: "
    if header not in results["serial, from the ini file"].stdout.str():
        failures.append(f"serial: no header {header!r}")
    missing = results["missing"]
    if (
        missing.ret != pytest.ExitCode.USAGE_ERROR
        or (
            "[adapter_import] --agentbench-adapter: cannot import module 'nowhere_agent' of "
            "adapter 'nowhere_agent:Agent': ModuleNotFoundError: No module named 'nowhere_agent'; "
            "searched "
            f"the invocation folder {invocation.resolve()}, the rootdir {rootdir.resolve()} and "
            "sys.path"
        )
        not in missing.stderr.str()
    ):
        failures.append(f"missing: {missing.stderr.str()[-1500:]}")
    assert not failures, "\n".join(failures)

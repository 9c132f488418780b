"""Faulty adapters and crashed workers are classified and counted; the session goes on.

Serially, each in a run of its own. The same faults on xdist workers (a raise under
``--tb=long``, a sleep the timeout ends, a crash inside the adapter call, a JUnit message)
are checked in test_fault_matrix's matrix, one ``-n 2`` session holding them side by side.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.demo_world import write_demo_suite

FAULTY = """
import os
import time


def _sum(question):
    left, right = question.split("+")
    return int(left) + int(right)


class Raises:
    def answer(self, question):
        if question == "2+3":
            raise ValueError("cannot add today\\nsecond line of detail")
        return _sum(question)


class Exits:
    def answer(self, question):
        if question == "2+3":
            raise SystemExit(3)
        return _sum(question)


class ReturnsText:
    def answer(self, question):
        return str(_sum(question)) if question == "2+3" else _sum(question)


class ReturnsNothing:
    def answer(self, question):
        return None


class Sleeps:
    def answer(self, question):
        if question == "2+3":
            time.sleep(60)
        return _sum(question)


class Spins:
    def answer(self, question):
        if question == "2+3":
            while True:
                pass
        return _sum(question)


class SwallowsEverything:
    def answer(self, question):
        if question == "2+3":
            while True:
                try:
                    time.sleep(60)
                except Exception:
                    pass
        return _sum(question)


class Crashes:
    def answer(self, question):
        if question == "2+3":
            os._exit(1)
        return _sum(question)

"""


def run_with(
    pytester: pytest.Pytester, agent: str, *args: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    """Run the demo suite's cases (controls deselected) with an adapter from ``FAULTY``."""
    path = pytester.path / "run.json"
    result = pytester.runpytest(
        f"--agentbench-adapter=faulty:{agent}",
        f"--agentbench-report={path}",
        "-m",
        "not agentbench_control",
        *args,
    )
    return result, json.loads(path.read_text())


def case_results(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (suite,) = report["suites"]
    return {entry["result"]["case_id"]: entry["result"] for entry in suite["cases"]}


@pytest.fixture
def project(demo: pytest.Pytester) -> pytest.Pytester:
    write_demo_suite(demo.path)
    demo.makepyfile(faulty=FAULTY)
    return demo


HARNESS_FRAMES = re.compile(r'File ".*(pytest_agentbench|_pytest|pluggy)[/\\]')


def test_adapter_exception_is_an_agent_error_of_that_case_only(project: pytest.Pytester) -> None:
    junit = project.path / "junit.xml"
    result, report = run_with(project, "Raises", f"--junitxml={junit}")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ demo-suite::c2 _*",
            "agent_error: adapter raised ValueError: cannot add today",
            "what the adapter raised (its own frames; --tb=long shows all):",
            "  Traceback (most recent call last):",
            '    File "*faulty.py", line *, in answer',
            "  ValueError: cannot add today",
            "  second line of detail",
        ]
    )
    cases = case_results(report)
    assert cases["c2"]["failure_class"] == "agent_error"
    assert cases["c2"]["failure_reason"] == "adapter raised ValueError: cannot add today"
    raised = cases["c2"]["failure_traceback"]
    assert 'faulty.py", line' in raised
    assert "in answer" in raised
    assert not HARNESS_FRAMES.search(raised), raised
    assert cases["c1"]["failure_traceback"] is None
    assert [cases[cid]["outcome"] for cid in ("c1", "c2", "c3")] == ["passed", "failed", "passed"]
    assert report["suites"][0]["failure_classes"]["agent_error"] == 1
    (failure,) = ET.parse(junit).getroot().iter("failure")
    assert failure.get("message") == "agent_error: adapter raised ValueError: cannot add today"
    assert failure.text is not None
    assert 'faulty.py", line' in failure.text


def test_tb_long_keeps_the_harness_frames_of_an_adapter_traceback(
    project: pytest.Pytester,
) -> None:
    result, report = run_with(project, "Raises", "--tb=long")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "agent_error: adapter raised ValueError: cannot add today",
            "what the adapter raised:",
            '    File "*faulty.py", line *, in answer',
        ]
    )
    raised = case_results(report)["c2"]["failure_traceback"]
    assert HARNESS_FRAMES.search(raised), raised
    assert 'faulty.py", line' in raised


def test_adapter_calling_sys_exit_is_an_agent_error(project: pytest.Pytester) -> None:
    result, report = run_with(project, "Exits")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*_ demo-suite::c2 _*", "agent_error: adapter raised SystemExit: 3"]
    )
    assert case_results(report)["c2"]["failure_class"] == "agent_error"


def test_wrong_output_type_is_a_product_error(project: pytest.Pytester) -> None:
    result, report = run_with(project, "ReturnsText")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*_ demo-suite::c2 _*", "product_error: answer must be an integer, got str"]
    )
    assert case_results(report)["c2"]["failure_class"] == "product_error"


@pytest.mark.parametrize("agent", ["Sleeps", "Spins", "SwallowsEverything"])
def test_hanging_adapter_is_interrupted_and_the_session_goes_on(
    project: pytest.Pytester, agent: str
) -> None:
    # No wall-clock bound: had the timeout not fired, ``Sleeps`` would pass after 60 s
    # and the other two would never return; c2 failing as a timeout is the evidence. The
    # limit is short: c1 and c3, which must answer inside it, only add two numbers.
    result, report = run_with(project, agent, "--agentbench-timeout=0.5")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*_ demo-suite::c2 _*", "agent_error: timed out after *s (--agentbench-timeout=0.5)"]
    )
    cases = case_results(report)
    assert cases["c2"]["failure_class"] == "agent_error"
    assert cases["c2"]["failure_reason"].startswith("timed out after")


def test_timeout_from_ini(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nagentbench_timeout = 0.5\n")
    result, _ = run_with(project, "Sleeps")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*timed out after 0.5s (--agentbench-timeout=0.5)*"])


def test_evaluation_failure_is_a_harness_error_of_that_case(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path)
    answers = demo.path / "oracles" / "demo-suite" / "answers.jsonl"
    answers.write_text("".join(answers.read_text().splitlines(keepends=True)[:2]))
    path = demo.path / "run.json"
    result = demo.runpytest(f"--agentbench-report={path}", "-m", "not agentbench_control")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*_ demo-suite::c3 _*", "harness_error: evaluation raised KeyError: 'c3'"]
    )
    report = json.loads(path.read_text())
    assert report["suites"][0]["counts"] == {
        "passed": 2,
        "failed": 0,
        "error": 1,
        "skipped": 0,
        "excluded": 0,
    }
    assert case_results(report)["c3"]["failure_class"] == "harness_error"


BROKEN_WORLD = """
from demo_world import DemoWorld
from pytest_agentbench.sdk.hookspecs import hookimpl


class BrokenRunWorld(DemoWorld):
    def run(self, suite, case, view, adapter):
        if case.case_id == "c1":
            raise RuntimeError("replay state corrupt")
        return super().run(suite, case, view, adapter)


@hookimpl
def pytest_agentbench_world_kinds():
    return [BrokenRunWorld()]
"""


def test_world_failing_to_run_a_case_is_a_harness_error(demo: pytest.Pytester) -> None:
    demo.makeconftest(BROKEN_WORLD)
    write_demo_suite(demo.path)
    result = demo.runpytest("-m", "not agentbench_control")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ demo-suite::c1 _*",
            "harness_error: world 'demo' failed to run the case: "
            "RuntimeError: replay state corrupt",
        ]
    )
    result.stdout.fnmatch_lines(["cases: 2 passed, 0 failed, 1 error, 0 skipped | *"])


def test_failure_text_has_a_short_first_line_and_every_failed_check(
    project: pytest.Pytester,
) -> None:
    junit = project.path / "junit.xml"
    result, _ = run_with(project, "ReturnsNothing", f"--junitxml={junit}")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*_ demo-suite::c1 _*",
            "product_error: answer must be an integer, got NoneType",
            "2 of 2 checks failed:",
            "  answer_present: not graded: the output was refused (product_error)"
            ' (expected "an integer")',
            "  answer_correct: not graded: the output was refused (product_error) (expected 2)",
        ]
    )
    failures = {
        case.get("name", ""): case.find("failure")
        for case in ET.parse(junit).getroot().iter("testcase")
    }
    assert sorted(failures) == ["c1", "c2", "c3"]
    c3 = failures["c3"]
    assert c3 is not None
    assert c3.get("message") == "product_error: answer must be an integer, got NoneType"
    assert "answer_correct: not graded: the output was refused (product_error) (expected 15)" in (
        c3.text or ""
    )
    assert "got null" not in (c3.text or "")


def _first_case_failure(junit: Path, classname: str) -> ET.Element:
    (case,) = [
        case
        for case in ET.parse(junit).getroot().iter("testcase")
        if (case.get("classname"), case.get("name")) == (classname, "c1")
    ]
    failure = case.find("failure")
    assert failure is not None
    return failure


def test_junit_message_is_the_first_line(project: pytest.Pytester) -> None:
    project.makepyfile(wrong="class Agent:\n    def answer(self, question):\n        return 7\n")
    junit = project.path / "junit.xml"
    result = project.runpytest(
        "--agentbench-adapter=wrong:Agent", f"--junitxml={junit}", "-m", "not agentbench_control"
    )
    result.assert_outcomes(failed=3)
    failure = _first_case_failure(junit, "suites.demo-suite.cases.jsonl")
    assert failure.get("message") == "1 of 2 checks failed: answer_correct"
    assert "answer_correct [fail]: expected 2, got 7" in (failure.text or "")


def test_isolated_adapter_traceback_crosses_from_its_process(project: pytest.Pytester) -> None:
    result, report = run_with(project, "Raises", "--agentbench-isolate")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "agent_error: adapter raised ValueError: cannot add today",
            '    File "*faulty.py", line *, in answer',
        ]
    )
    raised = case_results(report)["c2"]["failure_traceback"]
    assert 'faulty.py", line' in raised
    assert not HARNESS_FRAMES.search(raised), raised

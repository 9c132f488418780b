"""Aggregation happens where reports arrive: identical with and without xdist."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import DEMO_SOURCE
from tests.demo_world import write_demo_suite

QUESTIONS = {f"q{index}": f"{index}+{index % 3}" for index in range(1, 9)}

# Right on q1..q4, wrong on q5 and q6, zero on q7 and q8: accuracy 4/8, zero_rate 2/8.
MIXED = """
class Agent:
    def answer(self, question):
        left, right = question.split("+")
        left = int(left)
        if left >= 7:
            return 0
        return left + int(right) + (1 if left >= 5 else 0)
"""


NULLABLE_WORLD = """
import demo_world
from demo_world import DemoWorld
from pytest_agentbench.sdk.contracts import MetricSpec
from pytest_agentbench.sdk.hookspecs import hookimpl


class EscalatingWorld(DemoWorld):
    kind = "escalating"

    def metrics(self, suite):
        return [
            *super().metrics(suite),
            MetricSpec(
                name="escalation_accuracy",
                family="escalations",
                numerator="escalated_correctly",
                denominator="escalated",
                support_meaning="cases that escalated",
            ),
        ]


@hookimpl
def pytest_agentbench_world_kinds():
    return [*demo_world.pytest_agentbench_world_kinds(), EscalatingWorld()]
"""

NULLABLE_SUITE = "escalating-suite"
# Questions the mixed agent answers right: the nullable suite passes every case.
NULLABLE_QUESTIONS = {"e1": "1+1", "e2": "2+3", "e3": "3+4"}
NULL_GATE = f"{NULLABLE_SUITE}:escalation_accuracy>=0.5"
EXPECTED_METRICS = {"accuracy": (0.5, 4, 8), "zero_rate": (0.25, 2, 8)}
NO_CONTROLS = ("-m", "not agentbench_control")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """The mixed agent's demo suite beside a suite whose world adds a metric nothing counts."""
    pytester.makepyfile(demo_world=DEMO_SOURCE.read_text(encoding="utf-8"), mixed=MIXED)
    pytester.makeconftest(NULLABLE_WORLD)
    pytester.syspathinsert()
    write_demo_suite(pytester.path, questions=QUESTIONS)
    write_demo_suite(
        pytester.path, NULLABLE_SUITE, questions=NULLABLE_QUESTIONS, world="escalating"
    )
    return pytester


def run_project(
    project: pytest.Pytester, name: str, *args: str
) -> tuple[pytest.RunResult, dict[str, Any], str]:
    """One run of the project: its result, its JSON report and its JUnit XML."""
    report, junit = project.path / f"{name}.json", project.path / f"{name}.xml"
    result = project.runpytest(
        "--agentbench-adapter=mixed:Agent",
        f"--agentbench-report={report}",
        f"--junitxml={junit}",
        f"--agentbench-gate={NULL_GATE}",
        *args,
    )
    return result, json.loads(report.read_text()), junit.read_text()


def summary_of(report: dict[str, Any], suite_id: str) -> dict[str, Any]:
    (suite,) = [suite for suite in report["suites"] if suite["id"] == suite_id]
    return {
        "metrics": suite["metrics"],
        "counts": suite["counts"],
        "cases": sorted(entry["result"]["case_id"] for entry in suite["cases"]),
    }


def check_mixed_suite(summary: dict[str, Any], result: pytest.RunResult, mode: str) -> None:
    assert summary["counts"] == {
        "passed": 4,
        "failed": 4,
        "error": 0,
        "skipped": 0,
        "excluded": 0,
    }, mode
    assert summary["cases"] == sorted(QUESTIONS), mode
    by_name = {
        metric["name"]: (metric["value"], metric["numerator"], metric["denominator"])
        for metric in summary["metrics"]
    }
    assert by_name == EXPECTED_METRICS, mode
    result.stdout.fnmatch_lines(["cases: 4 passed, 4 failed, 0 error, 0 skipped"])


def check_null_metric(
    report: dict[str, Any], result: pytest.RunResult, junit: str, mode: str
) -> None:
    """A metric with an empty denominator is null in every report, and a gate on it fails."""
    metrics = {metric["name"]: metric for metric in summary_of(report, NULLABLE_SUITE)["metrics"]}
    assert metrics["escalation_accuracy"]["value"] is None, mode
    assert metrics["escalation_accuracy"]["support"] == 0, mode
    assert metrics["escalation_accuracy"]["interval"] is None, mode
    assert metrics["accuracy"]["value"] == 1.0, mode
    (gate,) = report["gates"]
    assert (gate["passed"], gate["value"], gate["reason"]) == (
        False,
        None,
        "not computable (null)",
    ), mode
    result.stdout.fnmatch_lines(
        [
            "escalations:",
            "  escalation_accuracy    null  support 0 *",
            f"  FAIL {NULL_GATE} (--agentbench-gate): not computable (null)",
        ]
    )
    assert f'name="agentbench.{NULLABLE_SUITE}.escalation_accuracy" value="null"' in junit, mode


def test_metrics_are_identical_for_every_distribution(project: pytest.Pytester) -> None:
    """One serial run is the baseline; every distribution of the same project must equal it.

    ``--dist each`` runs every case on both workers; it runs without controls, and since a
    suite's metrics, counts and cases are its cases' alone, the serial run with its
    controls is its baseline as well.
    No ``-n`` and ``-n 0`` take the same path, so the serial run stands for both. Every
    ``--dist`` mode the docs name runs.
    """
    serial_result, serial, serial_junit = run_project(project, "serial")
    check_mixed_suite(summary_of(serial, "demo-suite"), serial_result, "serial")
    check_null_metric(serial, serial_result, serial_junit, "serial")
    distributions = {
        "load": ["-n", "2", "--dist", "load"],
        "loadfile": ["-n", "2", "--dist", "loadfile"],
        "loadgroup": ["-n", "2", "--dist", "loadgroup"],
        "each": ["-n", "2", "--dist", "each", *NO_CONTROLS],
    }
    for mode, args in distributions.items():
        result, report, junit = run_project(project, mode, *args)
        for suite_id in ("demo-suite", NULLABLE_SUITE):
            assert summary_of(report, suite_id) == summary_of(serial, suite_id), (mode, suite_id)
        check_mixed_suite(summary_of(report, "demo-suite"), result, mode)
        check_null_metric(report, result, junit, mode)
        if mode == "each":
            # pytest's own tally sees both workers' runs; the benchmark counts each case once.
            result.assert_outcomes(passed=2 * (4 + 3), failed=2 * 4)


def test_a_gate_on_a_null_metric_alone_fails_the_session(project: pytest.Pytester) -> None:
    # Every case of the nullable suite passes: the failed gate is the only failure.
    result, report, junit = run_project(project, "alone", f"suites/{NULLABLE_SUITE}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    check_null_metric(report, result, junit, "alone")

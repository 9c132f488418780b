"""Aggregation happens where reports arrive: identical with and without xdist."""

from __future__ import annotations

import json
from typing import Any

import pytest

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


def metrics_and_counts(
    pytester: pytest.Pytester, *args: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / "run.json"
    result = pytester.runpytest(
        "--agentbench-adapter=mixed:Agent", f"--agentbench-report={path}", *args
    )
    (suite,) = json.loads(path.read_text())["suites"]
    return result, {
        "metrics": suite["metrics"],
        "counts": suite["counts"],
        "cases": sorted(entry["result"]["case_id"] for entry in suite["cases"]),
    }


@pytest.fixture
def project(demo: pytest.Pytester) -> pytest.Pytester:
    write_demo_suite(demo.path, questions=QUESTIONS)
    demo.makepyfile(mixed=MIXED)
    return demo


EXPECTED_METRICS = {"accuracy": (0.5, 4, 8), "zero_rate": (0.25, 2, 8)}


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="no-xdist"),
        pytest.param(["-n", "0"], id="n0"),
        pytest.param(["-n", "2", "--dist", "load"], id="load"),
        pytest.param(["-n", "2", "--dist", "loadfile"], id="loadfile"),
        pytest.param(["-n", "2", "--dist", "loadgroup"], id="loadgroup"),
    ],
)
def test_metrics_are_identical_for_every_distribution(
    project: pytest.Pytester, args: list[str]
) -> None:
    _, baseline = metrics_and_counts(project)
    result, summary = metrics_and_counts(project, *args)
    assert summary == baseline
    assert summary["counts"] == {"passed": 4, "failed": 4, "error": 0, "skipped": 0, "excluded": 0}
    assert summary["cases"] == sorted(QUESTIONS)
    by_name = {
        metric["name"]: (metric["value"], metric["numerator"], metric["denominator"])
        for metric in summary["metrics"]
    }
    assert by_name == EXPECTED_METRICS
    result.stdout.fnmatch_lines(["cases: 4 passed, 4 failed, 0 error, 0 skipped"])


def test_dist_each_runs_every_case_per_worker_but_counts_it_once(
    project: pytest.Pytester,
) -> None:
    _, baseline = metrics_and_counts(project, "-m", "not agentbench_control")
    result, summary = metrics_and_counts(
        project, "-n", "2", "--dist", "each", "-m", "not agentbench_control"
    )
    # pytest's own tally sees both workers' runs; the benchmark counts each case once.
    result.assert_outcomes(passed=8, failed=8)
    assert summary == baseline
    assert summary["counts"] == {"passed": 4, "failed": 4, "error": 0, "skipped": 0, "excluded": 0}


NULLABLE_WORLD = """
from demo_world import DemoWorld
from pytest_agentbench.sdk.contracts import MetricSpec
from pytest_agentbench.sdk.hookspecs import hookimpl


class EscalatingWorld(DemoWorld):
    kind = "demo"

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
    return [EscalatingWorld()]
"""


def test_metric_with_an_empty_denominator_is_null_everywhere(
    demo: pytest.Pytester, xdist_args: list[str]
) -> None:
    demo.makeconftest(NULLABLE_WORLD)
    write_demo_suite(demo.path)
    path = demo.path / "run.json"
    junit = demo.path / "junit.xml"
    result = demo.runpytest(
        f"--agentbench-report={path}",
        f"--junitxml={junit}",
        "--agentbench-gate=demo-suite:escalation_accuracy>=0.5",
        *xdist_args,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = json.loads(path.read_text())
    metrics = {metric["name"]: metric for metric in report["suites"][0]["metrics"]}
    assert metrics["escalation_accuracy"]["value"] is None
    assert metrics["escalation_accuracy"]["support"] == 0
    assert metrics["escalation_accuracy"]["interval"] is None
    assert metrics["accuracy"]["value"] == 1.0
    (gate,) = report["gates"]
    assert (gate["passed"], gate["value"], gate["reason"]) == (False, None, "not computable (null)")
    result.stdout.fnmatch_lines(
        [
            "escalations:",
            "  escalation_accuracy    null  support 0 *",
            "  FAIL demo-suite:escalation_accuracy>=0.5 (--agentbench-gate): not computable (null)",
        ]
    )
    assert 'name="agentbench.demo-suite.escalation_accuracy" value="null"' in junit.read_text()

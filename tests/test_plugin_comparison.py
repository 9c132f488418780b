"""Comparison against a baseline run: the gate, the report section, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.demo_runs import demo_project, run_cases
from tests.demo_world import write_demo_suite
from tests.reports import assert_valid_report

QUESTIONS = {f"q{i:02d}": f"{i}+{i}" for i in range(20)}

ADAPTERS = '''
class WrongOnMost:
    """Right on the first five questions only: a seeded regression."""

    def answer(self, question):
        left, right = question.split("+")
        return int(left) + int(right) if int(left) < 5 else -1


class FlakyOnOne:
    """Wrong on one question: a difference no test can call real."""

    def answer(self, question):
        left, right = question.split("+")
        return -1 if left == "7" else int(left) + int(right)
'''


@pytest.fixture
def project(demo: pytest.Pytester) -> pytest.Pytester:
    return demo_project(demo, QUESTIONS, ADAPTERS)


def test_one_baseline_against_itself_a_regression_a_flaky_difference_and_a_changed_suite(
    project: pytest.Pytester,
) -> None:
    """Runs against one baseline run: itself again (noise free), a seeded regression under
    -n 2 (which pairs every case exactly: its zero_rate row is unchanged and its discordant
    pairs are exactly the cases the adapter got wrong), a flaky difference, and last, once
    the suite has changed, a refusal by name unless allowed."""
    run_cases(project, "before.json")
    noise_free(project)
    seeded_regression(project)
    flaky_difference(project)
    changed_suite_refused_unless_allowed(project)


def noise_free(project: pytest.Pytester) -> None:
    result, report = run_cases(project, "after.json", "--agentbench-baseline=before.json")
    assert result.ret == pytest.ExitCode.OK
    comparison = report["comparison"]
    assert_valid_report(report)
    assert report["schema_version"] == "agentbench-run-report/3"
    assert comparison["passed"] is True
    assert comparison["regressions"] == 0
    (suite,) = comparison["suites"]
    assert suite["pairs"] == 20
    assert suite["units"] == 20
    rows = {row["metric"]: row for row in suite["rows"]}
    assert set(rows) == {"passed", "accuracy", "zero_rate"}
    for row in rows.values():
        assert row["difference"] == 0.0
        assert row["verdict"] == "no_significant_change"
        assert row["p_value"] == 1.0
    assert rows["passed"]["test"] == "mcnemar_exact"
    assert rows["passed"]["discordant"] == {"before_better": 0, "after_better": 0}
    result.stdout.fnmatch_lines(
        ["comparison passed: 0 regressions, 0 improvements over 3 tested rows"]
    )


def seeded_regression(project: pytest.Pytester) -> None:
    junit = project.path / "junit.xml"
    result, report = run_cases(
        project,
        "bad.json",
        "--agentbench-baseline=before.json",
        "--agentbench-adapter=my_adapters:WrongOnMost",
        f"--junitxml={junit}",
        "-n",
        "2",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    comparison = report["comparison"]
    assert comparison["passed"] is False
    (suite,) = comparison["suites"]
    rows = {row["metric"]: row for row in suite["rows"]}
    assert rows["passed"]["verdict"] == "regression"
    assert rows["passed"]["discordant"] == {"before_better": 15, "after_better": 0}
    assert rows["passed"]["difference"] == pytest.approx(-0.75)
    assert rows["accuracy"]["verdict"] == "regression"
    low, high = rows["accuracy"]["interval"]
    assert low < -0.75 < high < 0
    assert rows["zero_rate"]["verdict"] == "no_significant_change"
    assert rows["zero_rate"]["difference"] == 0.0
    assert rows["zero_rate"]["p_value"] == 1.0
    assert (suite["pairs"], suite["units"]) == (20, 20)
    assert len(suite["passed_only_before"]) == 15
    result.stdout.fnmatch_lines(
        [
            "FAILED regression demo-suite:passed 1.0000 -> 0.2500 (-0.7500), Holm p = *",
            "comparison FAILED: 2 regressions, 0 improvements over 3 tested rows",
        ]
    )
    xml = junit.read_text()
    assert 'name="agentbench.comparison.result" value="fail"' in xml
    assert 'name="agentbench.demo-suite.comparison.accuracy" value="regression: ' in xml


def flaky_difference(project: pytest.Pytester) -> None:
    result, report = run_cases(
        project,
        "flaky.json",
        "--agentbench-baseline=before.json",
        "--agentbench-adapter=my_adapters:FlakyOnOne",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the one wrong case fails its item
    comparison = report["comparison"]
    assert comparison["passed"] is True
    rows = {row["metric"]: row for row in comparison["suites"][0]["rows"]}
    assert rows["passed"]["discordant"] == {"before_better": 1, "after_better": 0}
    assert rows["passed"]["p_value"] == 1.0
    assert rows["passed"]["verdict"] == "no_significant_change"
    assert comparison["suites"][0]["passed_only_before"] == ["q07"]


def changed_suite_refused_unless_allowed(project: pytest.Pytester) -> None:
    changed = dict(QUESTIONS, q20="20+20")
    write_demo_suite(project.path, questions=changed)
    result, report = run_cases(project, "after.json", "--agentbench-baseline=before.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (suite,) = report["comparison"]["suites"]
    assert suite["status"] == "refused"
    assert suite["refusal"].startswith("[baseline_mismatch] suite 'demo-suite': oracle digest")
    assert suite["rows"] == []
    result.stdout.fnmatch_lines(["*FAILED comparison [[]baseline_mismatch[]] suite 'demo-suite'*"])

    result, report = run_cases(
        project,
        "after.json",
        "--agentbench-baseline=before.json",
        "--agentbench-baseline-allow-changed",
    )
    assert result.ret == pytest.ExitCode.OK
    (suite,) = report["comparison"]["suites"]
    assert suite["status"] == "compared"
    assert suite["mismatches"]
    assert suite["only_after"] == ["q20"]
    assert suite["pairs"] == 20


def test_an_unreadable_baseline_is_a_usage_error(project: pytest.Pytester) -> None:
    Path(project.path / "broken.json").write_text('{"schema_version": 3}', encoding="utf-8")
    result = project.runpytest("--agentbench-baseline=broken.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = project.runpytest("--agentbench-baseline=missing.json")
    result.stderr.fnmatch_lines(["*[[]invalid_baseline[]]*missing.json*"])
    result = project.runpytest("--agentbench-baseline=broken.json", "--agentbench-alpha=2")
    result.stderr.fnmatch_lines(["*[[]invalid_comparison_option[]]*--agentbench-alpha*"])

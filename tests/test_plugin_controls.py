"""Negative controls as items, and scoring a predictions file."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.demo_world import DEMO_CONTROLS, write_demo_suite


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / "run.json"
    result = pytester.runpytest(f"--agentbench-report={path}", *args)
    return result, json.loads(path.read_text())


def controls_of(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (suite,) = report["suites"]
    return {control["control_id"]: control for control in suite["controls"]}


def test_declared_control_passes_when_the_agent_fails_exactly_as_declared(
    demo: pytest.Pytester,
) -> None:
    # Serially. Under xdist a control item runs its agent over the suite inside one item, in
    # a worker, and the controller reports its verdict: tests/test_plugin_reports.py's -n 2
    # run, whose report (this control's verdict in it) equals a serial run's.
    write_demo_suite(demo.path, controls=DEMO_CONTROLS)
    result, report = run(demo)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "controls: 1/1 behaved as declared",
            "  ok   control-always-zero: control 'always-zero' failed exactly as declared "
            "(answer_correct)",
        ]
    )
    control = controls_of(report)["control-always-zero"]
    assert control["passed"] is True
    assert control["verdict"]["failing_dimensions"] == ["answer_correct"]


WRONG_DECLARATIONS = {
    "claims-answer-present-fails": (
        "must_fail: [answer_correct]\n    required_findings: [wrong_answer]\n"
        "    must_pass: [answer_present]\n",
        "must_fail: [answer_correct, answer_present]\n    required_findings: [wrong_answer]\n"
        "    must_pass: []\n",
        "must-fail dimensions passed: answer_present",
    ),
    "sets-swapped": (
        "must_fail: [answer_correct]\n    required_findings: [wrong_answer]\n"
        "    must_pass: [answer_present]\n",
        "must_fail: [answer_present]\n    must_pass: [answer_correct]\n",
        "must-pass dimensions failed: answer_correct | must-fail dimensions passed: answer_present",
    ),
    "missing-finding": (
        "required_findings: [wrong_answer]",
        "required_findings: [wrong_answer, constant_answer]",
        "required findings absent: constant_answer",
    ),
    "wrong-metric": (
        "expected_metrics: {accuracy: 0.0, zero_rate: 1.0}",
        "expected_metrics: {accuracy: 0.5, zero_rate: 1.0}",
        "metrics off: accuracy: expected 0.5000, got 0.0000",
    ),
}
"""A control's declaration, wrong each way (the manifest's text replaced), and the reason
its control item gives."""


def test_control_fails_when_its_declaration_is_wrong(demo: pytest.Pytester) -> None:
    # One session, a suite (named after the way its declaration is wrong) each.
    for suite_id, (replace, by, _) in WRONG_DECLARATIONS.items():
        assert replace in DEMO_CONTROLS, suite_id
        manifest = DEMO_CONTROLS.replace(replace, by).replace("demo-suite", suite_id)
        write_demo_suite(demo.path, suite_id, controls=manifest)
    path = demo.path / "run.json"
    result = demo.runpytest(f"--agentbench-report={path}", "--agentbench-controls")
    result.assert_outcomes(failed=4, deselected=3 * 4)
    suites = {suite["id"]: suite for suite in json.loads(path.read_text())["suites"]}
    for suite_id, (_, _, reason) in WRONG_DECLARATIONS.items():
        expected = f"control 'always-zero' did not fail as declared: {reason}"
        result.stdout.fnmatch_lines([f"*_ {suite_id}::control-always-zero _*", expected])
        (control,) = suites[suite_id]["controls"]
        assert control["control_id"] == "control-always-zero", suite_id
        assert (control["passed"], control["summary"]) == (False, expected), suite_id


INVALID_MANIFESTS = {
    "uncovered-dimension": (
        "    must_pass: [answer_present]\n",
        "    must_pass: []\n",
        "[control_coverage] oracles/demo-suite/controls.yaml: controls[0]: control "
        "'always-zero': dimensions in neither set: answer_present",
    ),
    "unknown-dimension": (
        "must_pass: [answer_present]",
        "must_pass: [answer_present, answer_polite]",
        "[control_coverage] oracles/demo-suite/controls.yaml: controls[0]: control "
        "'always-zero': unknown dimensions answer_polite",
    ),
    "unknown-agent": (
        "agent: always_zero",
        "agent: always_one",
        "[unknown_control_agent] oracles/demo-suite/controls.yaml: controls[0].agent: "
        "control 'always-zero' names agent 'always_one', which world 'demo' does not offer "
        "(offers: always_zero, reference)",
    ),
    "unknown-case": (
        "    agent: always_zero\n",
        "    agent: always_zero\n    cases: [c1, c9]\n",
        "[unknown_control_case] oracles/demo-suite/controls.yaml: controls[0].cases: "
        "control 'always-zero' names unknown cases c9",
    ),
    "mismatched-suite": (
        "suite: demo-suite",
        "suite: other-suite",
        "[control_suite_mismatch] oracles/demo-suite/controls.yaml: suite: manifest is for "
        "suite 'other-suite', not 'demo-suite'",
    ),
    "missing-field": (
        "    guarantee: answers are computed, not constant\n",
        "",
        "[missing_field] oracles/demo-suite/controls.yaml: controls[0].guarantee: "
        "required field is missing",
    ),
}
"""A controls manifest, invalid each way (its text replaced; ``demo-suite`` then stands for
the suite's own id), and how it is refused."""


def test_invalid_manifest_is_a_collection_error_and_cases_still_run(
    demo: pytest.Pytester,
) -> None:
    # One session, a suite (named after the way its manifest is invalid) each.
    refusals = {}
    for suite_id, (replace, by, refusal) in INVALID_MANIFESTS.items():
        assert replace in DEMO_CONTROLS, suite_id
        manifest = DEMO_CONTROLS.replace(replace, by).replace("demo-suite", suite_id)
        write_demo_suite(demo.path, suite_id, controls=manifest)
        refusals[suite_id] = refusal.replace("demo-suite", suite_id)
    result = demo.runpytest()
    result.assert_outcomes(passed=3 * 6, errors=6)
    output = result.stdout.str()
    for suite_id, refusal in refusals.items():
        assert refusal in output, suite_id
    assert "Traceback" not in output


def test_negative_agent_without_a_declared_control_is_an_ungraded_failure(
    demo: pytest.Pytester,
) -> None:
    write_demo_suite(demo.path)
    result, report = run(demo)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ demo-suite::ungraded-always_zero _*",
            "ungraded: negative agent 'always_zero' has no control declared in controls.yaml",
        ]
    )
    assert controls_of(report)["ungraded-always_zero"]["passed"] is False


def test_control_on_a_subset_of_cases(demo: pytest.Pytester) -> None:
    manifest = DEMO_CONTROLS.replace(
        "    agent: always_zero\n", "    agent: always_zero\n    cases: [c2]\n"
    )
    write_demo_suite(demo.path, controls=manifest)
    result = demo.runpytest("--agentbench-controls")
    result.assert_outcomes(passed=1, deselected=3)


@pytest.mark.parametrize(
    "selection",
    [["--agentbench-controls"], ["-m", "agentbench_control"]],
    ids=["option", "marker"],
)
def test_controls_only_selection(demo: pytest.Pytester, selection: list[str]) -> None:
    write_demo_suite(demo.path, controls=DEMO_CONTROLS)
    result, report = run(demo, *selection, "--strict-markers")
    result.assert_outcomes(passed=1, deselected=3)
    (suite,) = report["suites"]
    assert suite["cases"] == []
    assert [control["control_id"] for control in suite["controls"]] == ["control-always-zero"]


def test_predictions_file_is_scored_instead_of_an_adapter(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path, controls=DEMO_CONTROLS)
    predictions = demo.path / "preds.jsonl"
    predictions.write_text('{"id": "c1", "answer": 2}\n{"id": "c2", "answer": 6}\n')
    result, report = run(demo, f"--agentbench-predictions=demo-suite={predictions}")
    result.assert_outcomes(passed=2, failed=2)
    (suite,) = report["suites"]
    outcomes = {
        entry["result"]["case_id"]: (entry["result"]["outcome"], entry["result"]["failure_class"])
        for entry in suite["cases"]
    }
    assert outcomes == {
        "c1": ("passed", None),
        "c2": ("failed", None),
        "c3": ("failed", "product_error"),
    }
    assert controls_of(report)["control-always-zero"]["passed"] is True


def test_malformed_predictions_option_is_a_usage_error(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path)
    result = demo.runpytest("--agentbench-predictions=preds.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: ?invalid_predictions? --agentbench-predictions: 'preds.jsonl' is not SUITE=PATH"]
    )


def test_a_missing_predictions_file_is_a_usage_error(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path)
    result = demo.runpytest("--agentbench-predictions=demo-suite=absent.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: ?invalid_predictions? --agentbench-predictions: "
            "*absent.jsonl is not a readable file"
        ]
    )
    assert "Traceback" not in result.stderr.str()


def test_a_predictions_file_the_world_refuses_fails_its_cases_in_one_line(
    demo: pytest.Pytester,
) -> None:
    write_demo_suite(demo.path)
    predictions = demo.path / "preds.jsonl"
    predictions.write_text('{"id": "c1", "answer": 2, "id": "c9"}\n')
    result = demo.runpytest(f"--agentbench-predictions=demo-suite={predictions}")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["*[[]duplicate_key[]]*preds.jsonl:1: id: *"])
    assert "Traceback" not in result.stdout.str()


def test_predictions_for_a_suite_that_did_not_run_fail_the_session(
    demo: pytest.Pytester,
) -> None:
    write_demo_suite(demo.path, controls=DEMO_CONTROLS)
    predictions = demo.path / "preds.jsonl"
    predictions.write_text('{"id": "c1", "answer": 2}\n')
    result, report = run(demo, f"--agentbench-predictions=demo-suit={predictions}")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*[[]unscored_predictions[]]*'demo-suit' did not run*"])
    assert any("unscored_predictions" in problem for problem in report["problems"])

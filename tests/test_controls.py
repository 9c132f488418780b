from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pytest_agentbench.sdk.contracts import (
    CaseOutcome,
    CaseResult,
    Check,
    CheckStatus,
    FailureClass,
    MetricValue,
)
from pytest_agentbench.sdk.controls import (
    ControlManifest,
    ControlSpec,
    judge_control,
    load_manifest,
)
from pytest_agentbench.sdk.errors import AgentbenchError

DIMENSIONS = ("answer_present", "answer_correct", "format")

MANIFEST_HEAD = """\
schema_version: 1
suite: demo-suite
controls:
"""

GOOD_CONTROL = """\
  - id: always-zero
    agent: always_zero
    intervention: answers 0
    guarantee: answers are computed
    must_fail: [answer_correct]
    required_findings: [wrong_answer]
    must_pass: [answer_present, format]
"""


def load(tmp_path: Path, text: str) -> ControlManifest:
    path = tmp_path / "controls.yaml"
    path.write_text(text, encoding="utf-8")
    return load_manifest(
        path, "oracles/demo-suite/controls.yaml", suite_id="demo-suite", dimensions=DIMENSIONS
    )


def refusal(tmp_path: Path, text: str) -> AgentbenchError:
    with pytest.raises(AgentbenchError) as caught:
        load(tmp_path, text)
    assert caught.value.location.file == "oracles/demo-suite/controls.yaml"
    return caught.value


# --- manifest loading ----------------------------------------------------------


def test_a_manifest_covering_every_dimension_loads(tmp_path: Path) -> None:
    manifest = load(tmp_path, MANIFEST_HEAD + GOOD_CONTROL)
    (control,) = manifest.controls
    assert control.must_fail == ("answer_correct",)
    assert control.must_pass == ("answer_present", "format")
    assert control.cases is None
    assert control.tolerance == 5e-5


def test_a_dimension_in_both_sets_is_refused(tmp_path: Path) -> None:
    text = MANIFEST_HEAD + GOOD_CONTROL.replace(
        "must_pass: [answer_present, format]", "must_pass: [answer_present, format, answer_correct]"
    )
    error = refusal(tmp_path, text)
    assert error.code == "invalid_field"
    assert error.location.field == "controls[0]"
    assert "answer_correct" in error.reason


def test_a_dimension_left_out_of_both_sets_is_refused(tmp_path: Path) -> None:
    text = MANIFEST_HEAD + GOOD_CONTROL.replace(
        "must_pass: [answer_present, format]", "must_pass: [answer_present]"
    )
    error = refusal(tmp_path, text)
    assert error.code == "control_coverage"
    assert error.location.field == "controls[0]"
    assert "dimensions in neither set: format" in error.reason
    assert "'always-zero'" in error.reason


def test_an_unknown_dimension_is_refused(tmp_path: Path) -> None:
    text = MANIFEST_HEAD + GOOD_CONTROL.replace(
        "must_fail: [answer_correct]", "must_fail: [answer_correct, speling]"
    )
    error = refusal(tmp_path, text)
    assert error.code == "control_coverage"
    assert "unknown dimensions speling" in error.reason
    assert "neither set" not in error.reason


def test_coverage_refusal_names_the_offending_control_index(tmp_path: Path) -> None:
    second = GOOD_CONTROL.replace("always-zero", "second").replace(
        "must_pass: [answer_present, format]", "must_pass: [format]"
    )
    error = refusal(tmp_path, MANIFEST_HEAD + GOOD_CONTROL + second)
    assert error.code == "control_coverage"
    assert error.location.field == "controls[1]"
    assert "answer_present" in error.reason


def test_a_manifest_for_another_suite_is_refused(tmp_path: Path) -> None:
    error = refusal(tmp_path, MANIFEST_HEAD.replace("demo-suite", "other") + GOOD_CONTROL)
    assert error.code == "control_suite_mismatch"
    assert error.location.field == "suite"


def test_duplicate_control_ids_are_refused(tmp_path: Path) -> None:
    error = refusal(tmp_path, MANIFEST_HEAD + GOOD_CONTROL + GOOD_CONTROL)
    assert error.code == "invalid_field"
    assert "duplicate control ids: always-zero" in error.reason


def test_an_unknown_field_in_a_control_is_refused(tmp_path: Path) -> None:
    error = refusal(tmp_path, MANIFEST_HEAD + GOOD_CONTROL + "    must_maybe: [x]\n")
    assert error.code == "unknown_field"
    assert error.location.field == "controls[0].must_maybe"


def test_a_missing_must_fail_is_refused(tmp_path: Path) -> None:
    text = MANIFEST_HEAD + GOOD_CONTROL.replace("    must_fail: [answer_correct]\n", "")
    error = refusal(tmp_path, text)
    assert error.code == "missing_field"
    assert error.location.field == "controls[0].must_fail"


def test_a_duplicate_yaml_key_in_the_manifest_is_refused_with_its_line(tmp_path: Path) -> None:
    error = refusal(tmp_path, MANIFEST_HEAD + GOOD_CONTROL + "    agent: twice\n")
    assert error.code == "duplicate_key"
    assert error.location.line == 11


# --- verdicts ------------------------------------------------------------------


def spec(**changes: object) -> ControlSpec:
    fields: dict[str, object] = {
        "id": "always-zero",
        "agent": "always_zero",
        "intervention": "answers 0",
        "guarantee": "answers are computed",
        "must_fail": ("answer_correct",),
        "required_findings": ("wrong_answer",),
        "must_pass": ("answer_present", "format"),
        "expected_metrics": {"accuracy": 0.0},
    }
    fields.update(changes)
    return ControlSpec.model_validate(fields)


def result(
    case_id: str,
    failing: tuple[str, ...] = ("answer_correct",),
    findings: tuple[str, ...] = ("wrong_answer",),
    outcome: CaseOutcome = CaseOutcome.FAILED,
) -> CaseResult:
    checks = tuple(
        Check(name=dim, status=CheckStatus.FAIL if dim in failing else CheckStatus.PASS)
        for dim in DIMENSIONS
    )
    return CaseResult(
        suite_id="demo-suite",
        case_id=case_id,
        outcome=outcome,
        checks=checks,
        findings=findings,
    )


def metrics(accuracy: float | None) -> dict[str, MetricValue]:
    value = MetricValue(
        name="accuracy",
        family="answers",
        direction="higher_is_better",
        value=accuracy,
        support=2,
        support_meaning="scored cases",
    )
    return {"accuracy": value}


def test_a_control_failing_exactly_as_declared_passes() -> None:
    verdict = judge_control(spec(), [result("c1"), result("c2")], metrics(0.0))
    assert verdict.passed is True
    assert verdict.failing_dimensions == ("answer_correct",)
    assert "failed exactly as declared (answer_correct)" in verdict.summary()


def test_a_must_pass_dimension_failing_fails_the_control() -> None:
    results = [result("c1"), result("c2", failing=("answer_correct", "format"))]
    verdict = judge_control(spec(), results, metrics(0.0))
    assert verdict.passed is False
    assert verdict.unexpected_failures == ("format",)
    assert "must-pass dimensions failed: format" in verdict.summary()


def test_a_must_fail_dimension_passing_fails_the_control() -> None:
    results = [result("c1", failing=(), findings=("wrong_answer",))]
    verdict = judge_control(spec(), results, metrics(0.0))
    assert verdict.passed is False
    assert verdict.unexpected_passes == ("answer_correct",)
    assert "must-fail dimensions passed: answer_correct" in verdict.summary()


def test_failing_for_the_wrong_reason_fails_the_control() -> None:
    results = [result("c1", findings=("timeout",))]
    verdict = judge_control(spec(), results, metrics(0.0))
    assert verdict.passed is False
    assert verdict.missing_findings == ("wrong_answer",)
    assert "required findings absent: wrong_answer" in verdict.summary()


def test_a_finding_raised_on_any_case_satisfies_the_requirement() -> None:
    results = [result("c1", findings=()), result("c2")]
    assert judge_control(spec(), results, metrics(0.0)).passed is True


def test_a_harness_error_fails_the_control_naming_the_case() -> None:
    broken = CaseResult(
        suite_id="demo-suite",
        case_id="c2",
        outcome=CaseOutcome.ERROR,
        failure_class=FailureClass.HARNESS_ERROR,
        failure_reason="oracle missing",
    )
    verdict = judge_control(spec(), [result("c1"), broken], metrics(0.0))
    assert verdict.passed is False
    assert verdict.harness_errors == ("c2",)
    assert "harness errors on c2" in verdict.summary()


def test_a_metric_off_by_more_than_the_tolerance_fails_the_control() -> None:
    verdict = judge_control(spec(), [result("c1")], metrics(0.0001))
    assert verdict.passed is False
    assert verdict.metric_mismatches == ("accuracy: expected 0.0000, got 0.0001",)


def test_a_metric_within_the_tolerance_passes() -> None:
    assert judge_control(spec(), [result("c1")], metrics(0.00004)).passed is True


def test_a_declared_tolerance_is_honoured() -> None:
    loose = spec(tolerance=0.01)
    assert judge_control(loose, [result("c1")], metrics(0.009)).passed is True
    assert judge_control(loose, [result("c1")], metrics(0.011)).passed is False


def test_a_metric_expected_null_must_be_null() -> None:
    control = spec(expected_metrics={"accuracy": None})
    assert judge_control(control, [result("c1")], metrics(None)).passed is True
    verdict = judge_control(control, [result("c1")], metrics(0.0))
    assert verdict.passed is False
    assert verdict.metric_mismatches == ("accuracy: expected None, got 0.0",)


def test_a_null_metric_where_a_value_was_expected_fails() -> None:
    verdict = judge_control(spec(), [result("c1")], metrics(None))
    assert verdict.metric_mismatches == ("accuracy: expected 0.0, got None",)


def test_an_expected_metric_the_world_did_not_report_fails() -> None:
    verdict = judge_control(spec(expected_metrics={"recall": 1.0}), [result("c1")], metrics(0.0))
    assert verdict.passed is False
    assert verdict.metric_mismatches == ("recall: not reported",)


def test_every_reason_is_listed_when_several_apply() -> None:
    results = [result("c1", failing=("format",), findings=())]
    verdict = judge_control(spec(), results, metrics(1.0))
    summary = verdict.summary()
    assert verdict.passed is False
    for part in ("must-pass", "must-fail", "required findings", "metrics off"):
        assert part in summary


def test_a_non_finite_expected_metric_is_refused(tmp_path: Path) -> None:
    # NaN compares false with everything, so such a control could never fail on metrics.
    text = MANIFEST_HEAD + GOOD_CONTROL + "    expected_metrics: {accuracy: .nan}\n"
    error = refusal(tmp_path, text)
    assert error.code == "non_finite_number"
    assert error.location.line == 11


@pytest.mark.parametrize(
    "changes",
    [
        {"expected_metrics": {"accuracy": float("nan")}},
        {"expected_metrics": {"accuracy": float("inf")}},
        {"tolerance": float("nan")},
        {"tolerance": -0.1},
    ],
)
def test_a_control_spec_refuses_values_that_would_disable_its_checks(
    changes: dict[str, object],
) -> None:
    with pytest.raises(ValidationError):
        spec(**changes)


def test_a_negative_tolerance_in_a_manifest_is_refused_by_field(tmp_path: Path) -> None:
    error = refusal(tmp_path, MANIFEST_HEAD + GOOD_CONTROL + "    tolerance: -0.5\n")
    assert error.code == "invalid_field"
    assert error.location.field == "controls[0].tolerance"


def test_a_reference_control_that_fails_nothing_says_so() -> None:
    reference = spec(
        id="reference",
        agent="reference",
        must_fail=(),
        required_findings=(),
        must_pass=DIMENSIONS,
        expected_metrics={"accuracy": 1.0},
    )
    passing = [
        result(case_id, failing=(), findings=(), outcome=CaseOutcome.PASSED)
        for case_id in ("c1", "c2")
    ]
    verdict = judge_control(reference, passing, metrics(1.0))
    assert verdict.passed is True
    assert verdict.summary() == "control 'reference' passed every dimension, as declared"

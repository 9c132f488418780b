"""``grade``: a case's result from its checks, measurements, findings and outcome."""

from __future__ import annotations

from pytest_agentbench.sdk.contracts import (
    Case,
    CaseOutcome,
    CaseResult,
    Check,
    CheckStatus,
    FailureClass,
    Outcome,
    grade,
)


def _graded_in_full(
    case: Case,
    checks: list[Check],
    measurements: dict[str, int],
    findings: list[str],
    outcome: Outcome,
) -> CaseResult:
    """What ``grade`` gives, with every field named (as it was built before)."""
    failure = outcome.failure_class
    verdict = (
        CaseOutcome.ERROR
        if failure is FailureClass.HARNESS_ERROR
        else CaseOutcome.FAILED
        if failure is not None or not all(check.met for check in checks)
        else CaseOutcome.PASSED
    )
    return CaseResult(
        suite_id=case.suite_id,
        case_id=case.case_id,
        outcome=verdict,
        checks=tuple(checks),
        measurements=measurements,
        labels=case.labels,
        failure_class=failure,
        failure_reason=outcome.failure_reason,
        failure_traceback=outcome.failure_traceback,
        findings=tuple(sorted(set(findings))),
        receipt=outcome.receipt,
        cluster=case.cluster,
    )


def test_grade_leaves_default_fields_to_their_defaults_with_the_same_result() -> None:
    plain = Case(suite_id="s", case_id="c", file="cases.jsonl")
    rich = Case(suite_id="s", case_id="c", file="cases.jsonl", labels=("t1",), cluster="k")
    passed = Check(name="a", status=CheckStatus.PASS)
    failed = Check(name="b", status=CheckStatus.FAIL, expected=1, actual=2)
    fault = Check(name="b", status=CheckStatus.FAIL, expected_fault="f1")
    outcomes = [
        Outcome(output={"answer": 1}),
        Outcome(output={"answer": 1}, receipt={"calls": []}),
        Outcome(failure_class=FailureClass.AGENT_ERROR, failure_reason="r", failure_traceback="t"),
        Outcome(failure_class=FailureClass.PRODUCT_ERROR, failure_reason="malformed"),
        Outcome(failure_class=FailureClass.HARNESS_ERROR, failure_reason="broke"),
    ]
    for case in (plain, rich):
        for checks in ([], [passed], [passed, failed], [fault]):
            for findings in ([], ["z", "a", "z"]):
                for outcome in outcomes:
                    graded = grade(
                        case, checks, measurements={"n": 1}, findings=findings, outcome=outcome
                    )
                    full = _graded_in_full(case, checks, {"n": 1}, findings, outcome)
                    assert graded == full
                    assert graded.model_dump_json() == full.model_dump_json()


def test_grade_keeps_every_check_of_an_iterator() -> None:
    # The verdict once consumed the checks it was given before keeping them.
    case = Case(suite_id="s", case_id="c", file="cases.jsonl")
    passed = Check(name="a", status=CheckStatus.PASS)
    failed = Check(name="b", status=CheckStatus.FAIL)
    graded = grade(case, iter([passed, failed]))
    assert graded.outcome is CaseOutcome.FAILED
    assert graded.checks == (passed, failed)
    assert graded.measurements == {}

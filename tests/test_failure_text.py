"""A case's failure text: checks the output gave no value for say why they were not graded."""

from __future__ import annotations

from pytest_agentbench.plugin.collect import failure_text
from pytest_agentbench.sdk.contracts import (
    CaseOutcome,
    CaseResult,
    Check,
    CheckStatus,
    FailureClass,
)


def _failed(*checks: Check, failure_class: FailureClass | None = None) -> CaseResult:
    return CaseResult(
        suite_id="s",
        case_id="c",
        outcome=CaseOutcome.FAILED,
        checks=checks,
        failure_class=failure_class,
        failure_reason=None if failure_class is None else "why",
    )


def test_a_missing_check_says_not_graded_and_why() -> None:
    text = failure_text(
        _failed(
            Check(name="own", status=CheckStatus.MISSING, detail="no receipt"),
            Check(name="bare", status=CheckStatus.MISSING, expected=2),
            Check(name="odd", status=CheckStatus.MISSING, expected=[1], actual="x"),
            Check(name="wrong", status=CheckStatus.FAIL, expected=2, actual=3),
        )
    )
    assert text.splitlines()[1:] == [
        "  own: not graded: no receipt",
        "  bare: not graded: the output carries no value for it (expected 2)",
        '  odd: not graded: the output carries no value for it (expected [1]) (got "x")',
        "  wrong [fail]: expected 2, got 3",
    ]
    assert "null" not in text


def test_a_failed_case_names_its_failure_as_the_reason() -> None:
    for failure_class, because in (
        (FailureClass.PRODUCT_ERROR, "the output was refused (product_error)"),
        (FailureClass.AGENT_ERROR, "the adapter failed (agent_error)"),
        (FailureClass.HARNESS_ERROR, "the harness failed (harness_error)"),
    ):
        result = _failed(Check(name="k", status=CheckStatus.MISSING), failure_class=failure_class)
        assert f"  k: not graded: {because}" in failure_text(result).splitlines()

"""A check may carry a declared fault only when it failed, however it is made."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from pytest_agentbench.sdk.contracts import CaseResult, Check, CheckStatus


@pytest.mark.parametrize("status", [CheckStatus.PASS, CheckStatus.MISSING, "pass"])
def test_only_a_failed_check_is_a_declared_fault(status: CheckStatus | str) -> None:
    with pytest.raises(ValidationError, match="only a failed check can be a declared fault"):
        Check(name="a", status=status, expected_fault="f1")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="only a failed check can be a declared fault"):
        Check.model_validate({"name": "a", "status": status, "expected_fault": "f1"})
    result = {"suite_id": "s", "case_id": "c", "outcome": "failed"}
    checks = [{"name": "a", "status": str(status), "expected_fault": "f1"}]
    with pytest.raises(ValidationError, match="only a failed check can be a declared fault"):
        CaseResult.model_validate({**result, "checks": checks})
    with pytest.raises(ValidationError, match="only a failed check can be a declared fault"):
        CaseResult.model_validate_json(json.dumps({**result, "checks": checks}))


def test_a_failed_check_carries_its_fault_and_others_none() -> None:
    failed = Check(name="a", status=CheckStatus.FAIL, expected_fault="f1")
    assert failed.met
    assert not failed.passed
    assert Check(name="b", status=CheckStatus.PASS, expected_fault=None).passed
    # A status that is itself refused is the only error named.
    with pytest.raises(ValidationError) as refused:
        Check.model_validate({"name": "c", "status": "bogus", "expected_fault": "f1"})
    assert [error["loc"] for error in refused.value.errors()] == [("status",)]

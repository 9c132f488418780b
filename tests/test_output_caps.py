"""Unit tests of output_caps: what a stored case result keeps of large values."""

from __future__ import annotations

import json

import pytest

from pytest_agentbench.run.output_caps import (
    MARKER,
    TruncatedReceipt,
    cap_receipt,
    cap_result,
    cap_value,
    parse_max_output_bytes,
    stored_result,
)
from pytest_agentbench.sdk.canonical import canonical_json, sha256_hex
from pytest_agentbench.sdk.contracts import (
    CaseOutcome,
    CaseResult,
    Check,
    CheckStatus,
    Outcome,
    RecordedOutput,
)
from pytest_agentbench.sdk.tools import Budget, Receipt


def test_small_values_and_scalars_are_kept_as_they_are() -> None:
    assert cap_value({"a": [1, 2]}, 100) == {"a": [1, 2]}
    assert cap_value(10**50, 4) == 10**50
    assert cap_value("x" * 1000, 0) == "x" * 1000


def test_a_large_value_keeps_its_start_its_size_and_its_hash() -> None:
    value = {"essay": "é" * 1000}
    data = canonical_json(value).encode("utf-8")
    capped = cap_value(value, 101)
    assert isinstance(capped, str)
    head, _, note = capped.partition(MARKER)
    # Cut at a byte limit, never inside a character.
    assert data.startswith(head.encode("utf-8"))
    assert len(head.encode("utf-8")) == 100
    assert note == f"{len(data)} bytes of canonical JSON in all, sha256 {sha256_hex(data)}]"


def _receipt(final: str) -> Receipt:
    return Receipt.build(tools=(), budget=Budget(), calls=(), final={"text": final})


def test_a_large_receipt_keeps_the_digest_of_the_whole_receipt() -> None:
    receipt = _receipt("z" * 5000)
    whole = receipt.model_dump(mode="json")
    stored = TruncatedReceipt.model_validate(cap_receipt(whole, 1000))
    assert stored.digest == receipt.digest
    assert stored.truncated.bytes == len(canonical_json(whole).encode("utf-8"))
    assert stored.truncated.limit == 1000
    assert MARKER in stored.head
    assert cap_receipt(whole, 0) == whole
    assert cap_receipt(whole, 10_000) == whole


def test_a_result_is_rewritten_only_when_its_report_text_is_large() -> None:
    result = CaseResult(
        suite_id="s",
        case_id="c",
        outcome=CaseOutcome.FAILED,
        checks=(Check(name="essay", status=CheckStatus.FAIL, expected="y", actual="x" * 5000),),
        receipt=_receipt("z" * 5000).model_dump(mode="json"),
    )
    assert stored_result(result, 0) == result.model_dump_json()
    assert stored_result(result, 100_000) == result.model_dump_json()
    capped = CaseResult.model_validate_json(stored_result(result, 1000))
    assert capped == cap_result(result, 1000)
    (check,) = capped.checks
    assert check.expected == "y"
    assert isinstance(check.actual, str)
    assert MARKER in check.actual
    assert capped.receipt is not None
    assert capped.receipt["digest"] == result.receipt["digest"]  # type: ignore[index]


AWKWARD_VALUES = [
    "plain",
    "caf\u00e9 \u2028 \U0001f600",
    'tab\tnew\nline\x00\x1f\x7f quote" slash\\ /',
    1e16,
    0.1,
    -0.0,
    2**70,
    float("inf"),
    {"z": [1, {"b": None, "a": True}], "a": 1.5e-7},
]


@pytest.mark.parametrize("value", AWKWARD_VALUES)
@pytest.mark.parametrize("limit", [0, 100_000, 200])
def test_the_canonical_text_is_the_plain_texts_canonical_form(value: object, limit: int) -> None:
    result = CaseResult(
        suite_id="s",
        case_id="c",
        outcome=CaseOutcome.FAILED,
        checks=(Check(name="v", status=CheckStatus.FAIL, expected=value, actual=["x" * 300]),),
        measurements={"scored": 1},
    )
    plain = stored_result(result, limit)
    canonical = stored_result(result, limit, canonical=True)
    assert canonical == canonical_json(json.loads(plain))
    # Only an exponent differs in length (pydantic writes 1.5e-7, canonical JSON 1.5e-07).
    assert len(canonical) - len(plain) == canonical.count("e-0")


def test_a_recorded_output_over_the_limit_is_not_kept_and_one_under_it_is() -> None:
    def recorded(output: str) -> CaseResult:
        return CaseResult(
            suite_id="s",
            case_id="c",
            outcome=CaseOutcome.PASSED,
            recorded=RecordedOutput(
                outcome=Outcome(output=output),
                case_digest="0" * 64,
                suite_digest=None,
                oracle_digest=None,
                adapter="agent",
            ),
        )

    large, small = recorded("x" * 5000), recorded("x")
    assert cap_result(large, 1000).recorded is None
    assert cap_result(small, 1000).recorded == small.recorded
    assert cap_result(large, 0).recorded == large.recorded


@pytest.mark.parametrize("text", ["-1", "1.5", "many", ""])
def test_a_bad_limit_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="bytes"):
        parse_max_output_bytes(text)


def test_limits_parse_with_zero_meaning_whole() -> None:
    assert parse_max_output_bytes(" 4096 ") == 4096
    assert parse_max_output_bytes(0) == 0

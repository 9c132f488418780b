"""Per-receipt scoring: every rule of section 5 with hand-checked values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_agentbench.worlds.retrieval.jscanon import sha256_text
from pytest_agentbench.worlds.retrieval.models import Oracle
from pytest_agentbench.worlds.retrieval.scoring import (
    accounting_issues,
    filters_correct,
    normalise,
    score_receipt,
    values_equal,
)
from tests.worlds.retrieval.conftest import Small

Receipt = dict[str, Any]


def score(small: Small, receipt: Receipt, oracle: Oracle | None = None) -> dict[str, Any]:
    task_id = receipt["taskId"]
    return score_receipt(receipt, small.public.tasks[task_id], oracle or small.oracles[task_id])


def test_the_fixture_agent_succeeds_with_linked_evidence(small: Small) -> None:
    result = score(small, small.receipt("t0000001"))
    assert result == {
        "scored": True,
        "exclusionReason": None,
        "success": 1,
        "completed": True,
        "correctAbstention": False,
        "collectionCorrect": True,
        "filtersCorrect": True,
        "unnecessaryRead": False,
        "prematureStop": False,
        "supportedClaims": ["errorIdentifier"],
        "unsupportedClaims": [],
        "unsupportedSubstantiveClaims": [],
        "missingRequiredClaims": [],
        "forbiddenEvidenceClaims": [],
        "invalidOutputs": [],
        "substantiveClaims": 1,
        "linkedSupportedClaims": 1,
    }


def test_correct_abstention_still_lists_the_expected_missing_key(small: Small) -> None:
    result = score(small, small.receipt("t0000003"))
    assert result["correctAbstention"] is True
    assert result["completed"] is True
    assert result["success"] == 1
    assert result["missingRequiredClaims"] == ["projectCodename"]
    assert result["substantiveClaims"] == 0


def test_abstention_with_the_wrong_gap_reason_is_not_correct(small: Small) -> None:
    receipt = small.receipt("t0000003")
    receipt["finalEnvelope"]["gaps"][0]["reason"] = "conflicting_evidence"
    result = score(small, receipt)
    assert (result["correctAbstention"], result["completed"], result["success"]) == (
        False,
        False,
        0,
    )


def _claim(receipt: Receipt) -> dict[str, Any]:
    claim: dict[str, Any] = receipt["finalEnvelope"]["claims"][0]
    return claim


def test_a_wrong_value_is_unsupported_and_a_premature_stop(small: Small) -> None:
    receipt = small.receipt("t0000001")
    _claim(receipt)["value"]["value"] = "ERR-GW-13"
    result = score(small, receipt)
    assert result["unsupportedClaims"] == ["errorIdentifier"]
    assert result["unsupportedSubstantiveClaims"] == ["errorIdentifier"]
    assert result["supportedClaims"] == []
    assert result["linkedSupportedClaims"] == 0
    assert result["substantiveClaims"] == 1
    assert result["prematureStop"] is True
    assert (result["completed"], result["success"]) == (False, 0)


def test_identifier_normalizer_forgives_case_and_whitespace(small: Small) -> None:
    receipt = small.receipt("t0000001")
    _claim(receipt)["value"]["value"] = " err-gw -12 "
    assert score(small, receipt)["success"] == 1


def test_a_citation_never_observed_is_unsupported(small: Small) -> None:
    receipt = small.receipt("t0000001")
    extra = dict(_claim(receipt)["citations"][0])
    extra.update(startLine=4, endLine=4, spanHash=sha256_text("Other."))
    _claim(receipt)["citations"].append(extra)
    # The read (get of line 3 only) never delivered line 4; the search did not either.
    observed_line4 = any(
        item["startLine"] == 4 for call in receipt["calls"] for item in call["result"]["evidence"]
    )
    result = score(small, receipt)
    assert result["unsupportedClaims"] == ([] if observed_line4 else ["errorIdentifier"])


def test_missing_required_evidence_is_unsupported(small: Small) -> None:
    receipt = small.receipt("t0000001")
    citation = _claim(receipt)["citations"][0]
    citation["spanHashProvenance"] = "backend_provided"  # all seven fields must match
    assert score(small, receipt)["unsupportedClaims"] == ["errorIdentifier"]


def test_forbidden_evidence_makes_the_claim_unsupported(small: Small) -> None:
    receipt = small.receipt("t0000001")
    oracle = small.oracles["t0000001"]
    required = oracle.claims[0].requiredEvidence
    claim = oracle.claims[0].model_copy(update={"forbiddenEvidence": required})
    forbidding = oracle.model_copy(update={"claims": (claim,)})
    result = score(small, receipt, forbidding)
    assert result["forbiddenEvidenceClaims"] == ["errorIdentifier"]
    assert result["unsupportedClaims"] == ["errorIdentifier"]
    assert result["success"] == 0


def test_collection_correctness_accepts_any_recorded_call(small: Small) -> None:
    receipt = small.receipt("t0000001")
    oracle = small.oracles["t0000001"]
    scoped = oracle.model_copy(
        update={"expectedScope": oracle.expectedScope.model_copy(update={"collection": "c001"})}
    )
    assert score(small, receipt, scoped)["collectionCorrect"] is True
    for call in receipt["calls"]:
        call["arguments"].pop("collection", None)
    assert score(small, receipt, scoped)["collectionCorrect"] is False
    assert score(small, receipt, scoped)["success"] == 0


@pytest.mark.parametrize(
    ("calls", "filters", "expected"),
    [
        ([], {}, True),
        ([{"arguments": {"lang": "de"}}], {"lang": "de"}, True),
        ([{"arguments": {"filters": {"lang": "de"}}}], {"lang": "de"}, True),
        ([{"arguments": {"meta": {"team": "x"}}}], {"meta.team": "x"}, True),
        ([{"arguments": {"limit": 1}}], {"limit": True}, False),
        ([{"arguments": {"limit": 1}}], {"limit": 1.0}, True),
        # Every pair must hold in one single call.
        ([{"arguments": {"a": 1}}, {"arguments": {"b": 2}}], {"a": 1, "b": 2}, False),
        ([{"arguments": {"a": 1, "filters": {"b": 2}}}], {"a": 1, "b": 2}, True),
    ],
)
def test_filters_correct(calls: list[Any], filters: dict[str, Any], expected: bool) -> None:
    assert filters_correct(calls, filters) is expected


def test_unnecessary_read_from_calls_bytes_and_unexpected_evidence(small: Small) -> None:
    receipt = small.receipt("t0000001")
    oracle = small.oracles["t0000001"]
    assert score(small, receipt)["unnecessaryRead"] is False
    tight = oracle.model_copy(
        update={"completion": oracle.completion.model_copy(update={"maxModelVisibleBytes": 10})}
    )
    assert score(small, receipt, tight)["unnecessaryRead"] is True
    one_call = oracle.model_copy(
        update={"completion": oracle.completion.model_copy(update={"maxAgentCalls": 1})}
    )
    assert receipt["agentCalls"] == 2
    assert score(small, receipt, one_call)["unnecessaryRead"] is True
    strict = oracle.model_copy(
        update={
            "completion": oracle.completion.model_copy(update={"failOnUnexpectedEvidence": True})
        }
    )
    assert score(small, receipt, strict)["unnecessaryRead"] is False
    # With no oracle coordinate left, the line the agent observed is unexpected.
    bare = strict.model_copy(
        update={"claims": (strict.claims[0].model_copy(update={"requiredEvidence": ()}),)}
    )
    result = score(small, receipt, bare)
    assert result["unnecessaryRead"] is True
    assert (result["completed"], result["success"]) == (True, 0)


@pytest.mark.parametrize(
    ("envelope", "expected"),
    [
        (None, "invalid_final_envelope:finalEnvelope is null"),
        ({"schemaVersion": "1.0"}, "invalid_final_envelope:claims: Field required"),
    ],
)
def test_schema_invalid_envelope_is_an_early_exit(
    small: Small, envelope: Any, expected: str
) -> None:
    receipt = small.receipt("t0000001")
    receipt["finalEnvelope"] = envelope
    result = score(small, receipt)
    assert result["invalidOutputs"] == [expected]
    assert result["missingRequiredClaims"] == ["errorIdentifier"]
    assert result["scored"] is True
    assert not any(result[k] for k in ("completed", "collectionCorrect", "unnecessaryRead"))
    assert (result["success"], result["substantiveClaims"]) == (0, 0)


def test_harness_errors_are_unscored(small: Small) -> None:
    receipt = small.receipt("t0000001")
    receipt["failure"] = {"class": "harness_error", "code": "x", "redactedMessage": None}
    result = score(small, receipt)
    assert (result["scored"], result["exclusionReason"], result["invalidOutputs"]) == (
        False,
        "harness_error",
        [],
    )


def test_task_identity_mismatch_is_an_early_exit(small: Small) -> None:
    receipt = small.receipt("t0000001")
    receipt["taskId"] = "t0000002"
    result = score_receipt(receipt, small.public.tasks["t0000001"], small.oracles["t0000001"])
    assert result["invalidOutputs"] == ["task_identity_mismatch"]


def test_semantic_issues_come_first_then_accounting_codes(small: Small) -> None:
    receipt = small.receipt("t0000001")
    receipt["finalEnvelope"]["gaps"].append({"claimKey": "nope", "reason": "missing_evidence"})
    receipt["agentCalls"] = 5
    result = score(small, receipt)
    assert result["invalidOutputs"] == ["extra_gap:nope", "agent_calls_mismatch"]
    assert result["prematureStop"] is True
    assert result["completed"] is False


def _mutations() -> list[tuple[str, Callable[[Receipt], None]]]:
    def delivered_bytes(r: Receipt) -> None:
        r["calls"][0]["modelVisibleUtf8Bytes"] += 1
        r["modelVisibleUtf8Bytes"] += 1

    def undelivered_middle(r: Receipt) -> None:
        r["calls"][0].update(deliveredToAgent=False, failureCode="x", modelVisibleUtf8Bytes=0)
        r["modelVisibleUtf8Bytes"] = r["calls"][1]["modelVisibleUtf8Bytes"]

    return [
        ("agent_calls_mismatch", lambda r: r.update(agentCalls=3)),
        ("call_index_sequence_invalid", lambda r: r["calls"][1].update(callIndex=5)),
        ("backend_invocations_mismatch", lambda r: r.update(backendInvocations=9)),
        ("model_visible_bytes_mismatch", lambda r: r.update(modelVisibleUtf8Bytes=1)),
        ("call_model_visible_bytes_mismatch", delivered_bytes),
        ("call_delivery_failure_invariant", undelivered_middle),
        ("measured_tokens_mismatch", lambda r: r.update(measuredTokens=4)),
        (
            "unexpected_tokenizer_fingerprint",
            lambda r: r["calls"][0].update(tokenizerFingerprint="t"),
        ),
        ("stop_reason_mismatch", lambda r: r.update(stopReason="abstained")),
        (
            "failure_payload_invariant_invalid",
            lambda r: r["failure"].update(redactedMessage="secret"),
        ),
        (
            "failure_envelope_invariant_invalid",
            lambda r: r["failure"].update({"class": "agent_error", "code": "x"}),
        ),
    ]


@pytest.mark.parametrize(("code", "mutate"), _mutations(), ids=[c for c, _ in _mutations()])
def test_accounting_codes(small: Small, code: str, mutate: Callable[[Receipt], None]) -> None:
    receipt = small.receipt("t0000001")
    assert accounting_issues(receipt) == []
    mutate(receipt)
    assert code in accounting_issues(receipt)


def test_tokens_measured_need_one_tokenizer() -> None:
    def call(index: int, tokens: int | None, tokenizer: str | None) -> dict[str, Any]:
        return {
            "callIndex": index,
            "deliveredToAgent": True,
            "failureCode": None,
            "measuredTokens": tokens,
            "tokenizerFingerprint": tokenizer,
            "backendInvocations": 0,
            "modelVisibleUtf8Bytes": 0,
            "result": {
                "status": "ok",
                "resultRole": "source",
                "content": "",
                "evidence": [],
                "errorCode": None,
            },
        }

    base = {"agentCalls": 2, "backendInvocations": 0, "finalEnvelope": None, "stopReason": "error"}
    base["failure"] = {"class": "agent_error", "code": "x", "redactedMessage": None}
    mixed = {**base, "calls": [call(0, 3, "a"), call(1, 4, "b")], "measuredTokens": 7}
    missing = {**base, "calls": [call(0, 3, None), call(1, 4, None)], "measuredTokens": 7}
    unmeasured = {**base, "calls": [call(0, 3, "a"), call(1, None, None)], "measuredTokens": None}
    assert "tokenizer_fingerprint_mismatch" in accounting_issues(mixed)
    assert "tokenizer_fingerprint_missing" in accounting_issues(missing)
    issues = accounting_issues(unmeasured)
    assert "measured_tokens_mismatch" not in issues
    # model_visible bytes of a delivered call are recomputed from its result
    assert "call_model_visible_bytes_mismatch" in issues


@pytest.mark.parametrize(
    ("normalizer", "value", "expected"),
    [
        ("exact-v1", " A ", " A "),
        ("trim-lower-v1", "  Team Lumen ", "team lumen"),
        ("identifier-v1", " inc - 7 731 ", "INC-7731"),
        ("iso-date-v1", "2026-09-14", "2026-09-14"),
        ("iso-date-v1", "14/09/2026", "14/09/2026"),
        ("string-set-v1", ["b", "a", "\U0001f600", "\uffff"], ["a", "b", "\U0001f600", "\uffff"]),
        ("exact-v1", 3.0, 3.0),
    ],
)
def test_normalizers(normalizer: str, value: Any, expected: Any) -> None:
    assert normalise(normalizer, value) == expected


def test_values_compare_types_first_and_numbers_canonically() -> None:
    assert values_equal(
        {"type": "number", "value": 3}, {"type": "number", "value": 3.0}, "exact-v1"
    )
    assert not values_equal(
        {"type": "string", "value": "3"}, {"type": "number", "value": 3}, "exact-v1"
    )
    assert not values_equal(
        {"type": "boolean", "value": True}, {"type": "number", "value": 1}, "exact-v1"
    )

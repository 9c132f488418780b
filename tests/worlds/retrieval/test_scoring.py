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
    gapped_as_missing,
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
        "taskId": "t0000001",
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


_SCHEMA_FAILED = "invalid_final_envelope:final-envelope schema validation failed: "
_CONST = "/claims/0/value/type const must be equal to constant"


@pytest.mark.parametrize(
    ("mutate", "errors"),
    [
        (lambda r: r.update(finalEnvelope=None), ["/ type must be object"]),
        (
            lambda r: r.update(finalEnvelope={"schemaVersion": "1.0", "extra": 1}),
            [
                "/ additionalProperties must NOT have additional properties",
                "/ required must have required property 'abstained'",
                "/ required must have required property 'claims'",
                "/ required must have required property 'gaps'",
                "/ required must have required property 'stopReason'",
            ],
        ),
        (
            lambda r: r["finalEnvelope"]["claims"][0].update(
                value={"type": "date", "value": "2024-02-30"}
            ),
            [
                "/claims/0/value oneOf must match exactly one schema in oneOf",
                *[_CONST] * 5,
                '/claims/0/value/value format must match format "date"',
                "/claims/0/value/value type must be array",
                "/claims/0/value/value type must be boolean",
                "/claims/0/value/value type must be number",
            ],
        ),
        (
            lambda r: r["finalEnvelope"]["claims"][0]["citations"][0].update(
                startLine=0.5, uri="file:///x"
            ),
            [
                "/claims/0/citations/0/startLine minimum must be >= 1",
                "/claims/0/citations/0/startLine type must be integer",
                '/claims/0/citations/0/uri pattern must match pattern "^gno://"',
            ],
        ),
        (
            lambda r: r["finalEnvelope"]["gaps"].append({"claimKey": "Bad", "reason": "x"}),
            [
                '/gaps/1/claimKey pattern must match pattern "^[a-z][a-zA-Z0-9]*$"',
                "/gaps/1/reason enum must be equal to one of the allowed values",
            ],
        ),
    ],
)
def test_schema_invalid_envelope_is_an_early_exit_naming_every_error(
    small: Small, mutate: Callable[[Receipt], None], errors: list[str]
) -> None:
    """The message is "path keyword message" for every validator error, sorted, "; "-joined."""
    receipt = small.receipt("t0000003")
    receipt["finalEnvelope"]["claims"] = [
        {
            "claimKey": "projectCodename",
            "value": {"type": "string", "value": "x"},
            "citations": [small.receipt("t0000001")["finalEnvelope"]["claims"][0]["citations"][0]],
        }
    ]
    mutate(receipt)
    result = score(small, receipt)
    assert result["invalidOutputs"] == [_SCHEMA_FAILED + "; ".join(errors)]
    assert result["missingRequiredClaims"] == ["projectCodename"]
    assert (result["scored"], result["taskId"]) == (True, "t0000003")
    assert not any(result[k] for k in ("completed", "collectionCorrect", "unnecessaryRead"))
    assert (result["success"], result["substantiveClaims"]) == (0, 0)


def test_early_exits_come_identity_first_then_harness_then_schema(small: Small) -> None:
    receipt = small.receipt("t0000001")
    receipt["finalEnvelope"] = None
    receipt["failure"] = {"class": "harness_error", "code": "x", "redactedMessage": None}
    unscored = score(small, receipt)
    assert (unscored["scored"], unscored["exclusionReason"], unscored["invalidOutputs"]) == (
        False,
        "harness_error",
        [],
    )
    receipt["taskId"] = "t0000002"
    mismatched = score_receipt(receipt, small.public.tasks["t0000001"], small.oracles["t0000001"])
    assert (mismatched["scored"], mismatched["exclusionReason"]) == (True, None)
    assert mismatched["invalidOutputs"] == ["task_identity_mismatch"]
    assert mismatched["taskId"] == "t0000001"
    other_oracle = small.oracles["t0000002"]
    receipt["taskId"] = "t0000001"
    assert score_receipt(receipt, small.public.tasks["t0000001"], other_oracle)[
        "invalidOutputs"
    ] == ["task_identity_mismatch"]


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


def _undeliver(receipt: Receipt, index: int, code: Any = "tool_timeout") -> None:
    """Turn one call into an undelivered one, keeping the byte totals consistent."""
    call = receipt["calls"][index]
    receipt["modelVisibleUtf8Bytes"] -= call["modelVisibleUtf8Bytes"]
    call.update(deliveredToAgent=False, failureCode=code, modelVisibleUtf8Bytes=0)


def _agent_failure(receipt: Receipt, code: str = "tool_timeout") -> None:
    receipt.update(finalEnvelope=None, stopReason="error")
    receipt["failure"] = {"class": "agent_error", "code": code, "redactedMessage": None}


def _mutations() -> list[tuple[list[str], Callable[[Receipt], None]]]:
    def delivered_bytes(r: Receipt) -> None:
        r["calls"][0]["modelVisibleUtf8Bytes"] += 1
        r["modelVisibleUtf8Bytes"] += 1

    def undelivered_last(r: Receipt) -> None:
        _undeliver(r, 1)
        _agent_failure(r)

    def undelivered_middle(r: Receipt) -> None:
        _undeliver(r, 0)
        _agent_failure(r)

    def undelivered_twice(r: Receipt) -> None:
        _undeliver(r, 0)
        _undeliver(r, 1)
        _agent_failure(r)

    def undelivered_blank_code(r: Receipt) -> None:
        # U+FEFF and U+3000 are white space to JavaScript's trim.
        _undeliver(r, 1, " \ufeff\u3000")
        _agent_failure(r, " \ufeff\u3000")

    def undelivered_control_code(r: Receipt) -> None:
        # U+001F is white space to Python's str.strip, not to JavaScript's trim.
        _undeliver(r, 1, "\x1f")
        _agent_failure(r, "\x1f")

    def undelivered_with_tokenizer(r: Receipt) -> None:
        undelivered_last(r)
        r["calls"][1]["tokenizerFingerprint"] = "a" * 64

    def undelivered_with_tokens(r: Receipt) -> None:
        undelivered_with_tokenizer(r)
        r["calls"][1]["measuredTokens"] = 5

    def undelivered_under_no_failure(r: Receipt) -> None:
        _undeliver(r, 1)

    def undelivered_other_code(r: Receipt) -> None:
        _undeliver(r, 1)
        _agent_failure(r, "tool_call_failed")

    def every_tokenizer_code(r: Receipt) -> None:
        r["calls"][0].update(measuredTokens=3, tokenizerFingerprint=None)
        r["calls"][1].update(measuredTokens=None, tokenizerFingerprint="a" * 64)
        r["calls"].append({**r["calls"][1], "callIndex": 2, "tokenizerFingerprint": "b" * 64})
        r["agentCalls"] = 3
        r["backendInvocations"] += r["calls"][2]["backendInvocations"]
        r["modelVisibleUtf8Bytes"] += r["calls"][2]["modelVisibleUtf8Bytes"]

    def redacted_agent_error(r: Receipt) -> None:
        _agent_failure(r)
        r["failure"]["redactedMessage"] = "secret"

    def agent_error_without_code(r: Receipt) -> None:
        _agent_failure(r)
        r["failure"]["code"] = None

    return [
        ([], lambda r: None),
        (["agent_calls_mismatch"], lambda r: r.update(agentCalls=3)),
        (["call_index_sequence_invalid"], lambda r: r["calls"][1].update(callIndex=5)),
        (["backend_invocations_mismatch"], lambda r: r.update(backendInvocations=9)),
        (["model_visible_bytes_mismatch"], lambda r: r.update(modelVisibleUtf8Bytes=1)),
        (["call_model_visible_bytes_mismatch"], delivered_bytes),
        ([], undelivered_last),
        (["undelivered_call_failure_mismatch"], undelivered_middle),
        (["undelivered_call_failure_mismatch"], undelivered_twice),
        (["call_delivery_failure_invariant"], undelivered_blank_code),
        ([], undelivered_control_code),
        (
            ["call_delivery_failure_invariant", "unexpected_tokenizer_fingerprint"],
            undelivered_with_tokenizer,
        ),
        (["call_delivery_failure_invariant"], undelivered_with_tokens),
        (["undelivered_call_failure_mismatch"], undelivered_under_no_failure),
        (["undelivered_call_failure_mismatch"], undelivered_other_code),
        (["measured_tokens_mismatch"], lambda r: r.update(measuredTokens=4)),
        (
            [
                "tokenizer_fingerprint_missing",
                "unexpected_tokenizer_fingerprint",
                "tokenizer_fingerprint_mismatch",
            ],
            every_tokenizer_code,
        ),
        (["stop_reason_mismatch"], lambda r: r.update(stopReason="abstained")),
        (
            ["failure_payload_invariant_invalid"],
            lambda r: r["failure"].update(redactedMessage="secret"),
        ),
        # A redacted message is an error only beside class none.
        ([], redacted_agent_error),
        (["failure_payload_invariant_invalid"], agent_error_without_code),
        (
            ["failure_envelope_invariant_invalid"],
            lambda r: r["failure"].update({"class": "agent_error", "code": "x"}),
        ),
        (["failure_envelope_invariant_invalid"], lambda r: r.update(finalEnvelope=None)),
    ]


@pytest.mark.parametrize(
    ("codes", "mutate"), _mutations(), ids=[str(i) for i in range(len(_mutations()))]
)
def test_accounting_codes_partition_and_order(
    small: Small, codes: list[str], mutate: Callable[[Receipt], None]
) -> None:
    receipt = small.receipt("t0000001")
    assert len(receipt["calls"]) == 2
    mutate(receipt)
    assert accounting_issues(receipt) == codes


def test_required_keys_missing_in_oracle_order_then_task_order(small: Small) -> None:
    task = small.public.tasks["t0000001"]
    oracle = small.oracles["t0000001"]
    keys = ("zetaKey", "alphaKey", "midKey")
    task = task.model_copy(
        update={"claims": tuple(task.claims[0].model_copy(update={"claimKey": k}) for k in keys)}
    )
    # The oracle knows two of the three keys, in another order than the task's.
    oracle = oracle.model_copy(
        update={
            "claims": tuple(
                oracle.claims[0].model_copy(update={"claimKey": k}) for k in ("midKey", "zetaKey")
            )
        }
    )
    receipt = small.receipt("t0000001")
    receipt["finalEnvelope"]["claims"] = []
    receipt["finalEnvelope"]["gaps"] = [{"claimKey": k, "reason": "missing_evidence"} for k in keys]
    result = score_receipt(receipt, task, oracle)
    assert result["missingRequiredClaims"] == ["midKey", "zetaKey", "alphaKey"]
    assert result["invalidOutputs"] == []


def test_any_missing_evidence_gap_for_a_key_counts() -> None:
    gaps = [
        {"claimKey": "a", "reason": "missing_evidence"},
        {"claimKey": "a", "reason": "conflicting_evidence"},
        {"claimKey": "b", "reason": "budget_exhausted"},
    ]
    assert gapped_as_missing(gaps, ["a"])
    assert gapped_as_missing(list(reversed(gaps)), ["a"])
    assert not gapped_as_missing(gaps, ["a", "b"])
    assert gapped_as_missing([], [])


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

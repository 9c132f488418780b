"""Per-receipt scoring (format page section 5).

:func:`score_receipt` takes a receipt's canonical partition, the public task
and the hidden oracle and returns the score: flags, claim lists and counts.
No model judges anything here; every value follows from exact comparisons.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.worlds.retrieval import tools
from pytest_agentbench.worlds.retrieval.envelope import schema_message, semantic_issues
from pytest_agentbench.worlds.retrieval.jscanon import canonical, utf16_key
from pytest_agentbench.worlds.retrieval.models import Oracle, Task

CoordKey = tuple[Any, ...]
_COORD = tools.COORD_FIELDS


def coord_key(coord: Mapping[str, Any]) -> CoordKey:
    return tuple(coord.get(name) for name in _COORD)


def normalise(normalizer: str, value: Any) -> Any:
    if normalizer == "trim-lower-v1" and isinstance(value, str):
        return value.strip().lower()
    if normalizer == "identifier-v1" and isinstance(value, str):
        return "".join(value.strip().upper().split())
    if normalizer == "iso-date-v1" and isinstance(value, str):
        try:
            return datetime.date.fromisoformat(value).isoformat()
        except ValueError:
            return value
    if normalizer == "string-set-v1" and isinstance(value, list):
        return sorted(value, key=lambda item: utf16_key(item) if isinstance(item, str) else b"")
    return value


def values_equal(actual: Mapping[str, Any], expected: Mapping[str, Any], normalizer: str) -> bool:
    if actual.get("type") != expected.get("type"):
        return False
    return canonical(normalise(normalizer, actual.get("value"))) == canonical(
        normalise(normalizer, expected.get("value"))
    )


def _empty(task: Task, *, scored: bool, invalid: list[str]) -> dict[str, Any]:
    return {
        "scored": scored,
        "exclusionReason": None if scored else "harness_error",
        "success": 0,
        "completed": False,
        "correctAbstention": False,
        "collectionCorrect": False,
        "filtersCorrect": False,
        "unnecessaryRead": False,
        "prematureStop": False,
        "supportedClaims": [],
        "unsupportedClaims": [],
        "unsupportedSubstantiveClaims": [],
        "missingRequiredClaims": [c.claimKey for c in task.claims if c.required],
        "forbiddenEvidenceClaims": [],
        "invalidOutputs": invalid,
        "substantiveClaims": 0,
        "linkedSupportedClaims": 0,
    }


def accounting_issues(receipt: Mapping[str, Any]) -> list[str]:
    """Receipt accounting codes: the totals and per-call invariants must hold."""
    issues: list[str] = []
    calls: Sequence[Mapping[str, Any]] = receipt.get("calls") or []
    failure = receipt.get("failure") or {}
    if receipt.get("agentCalls") != len(calls):
        issues.append("agent_calls_mismatch")
    if [c.get("callIndex") for c in calls] != list(range(len(calls))):
        issues.append("call_index_sequence_invalid")
    if receipt.get("backendInvocations") != sum(c.get("backendInvocations", 0) for c in calls):
        issues.append("backend_invocations_mismatch")
    if receipt.get("modelVisibleUtf8Bytes") != sum(
        c.get("modelVisibleUtf8Bytes", 0) for c in calls
    ):
        issues.append("model_visible_bytes_mismatch")
    for call in calls:
        delivered = call.get("deliveredToAgent") is True
        expected = tools.visible_bytes(tools.projection(call["result"])) if delivered else 0
        if call.get("modelVisibleUtf8Bytes") != expected:
            issues.append("call_model_visible_bytes_mismatch")
            break
    undelivered = [i for i, c in enumerate(calls) if c.get("deliveredToAgent") is not True]
    if (
        any(
            (c.get("deliveredToAgent") is True) == (c.get("failureCode") is not None) for c in calls
        )
        or len(undelivered) > 1
        or (undelivered and undelivered[0] != len(calls) - 1)
    ):
        issues.append("call_delivery_failure_invariant")
    if undelivered and calls[undelivered[0]].get("failureCode") != failure.get("code"):
        issues.append("undelivered_call_failure_mismatch")
    delivered_calls = [c for c in calls if c.get("deliveredToAgent") is True]
    measured = [c.get("measuredTokens") for c in delivered_calls]
    total = (
        sum(m for m in measured if isinstance(m, int))
        if delivered_calls and all(isinstance(m, int) for m in measured)
        else None
    )
    if receipt.get("measuredTokens") != total:
        issues.append("measured_tokens_mismatch")
    tokenizers = {
        c.get("tokenizerFingerprint")
        for c in delivered_calls
        if c.get("measuredTokens") is not None
    }
    if None in tokenizers:
        issues.append("tokenizer_fingerprint_missing")
    elif len(tokenizers) > 1:
        issues.append("tokenizer_fingerprint_mismatch")
    if any(
        c.get("measuredTokens") is None and c.get("tokenizerFingerprint") is not None for c in calls
    ):
        issues.append("unexpected_tokenizer_fingerprint")
    envelope = receipt.get("finalEnvelope")
    stop = "error" if envelope is None else envelope.get("stopReason")
    if receipt.get("stopReason") != stop:
        issues.append("stop_reason_mismatch")
    failure_class = failure.get("class")
    if (failure_class == "none") != (failure.get("code") is None) or failure.get(
        "redactedMessage"
    ) is not None:
        issues.append("failure_payload_invariant_invalid")
    if (failure_class == "none") != (envelope is not None):
        issues.append("failure_envelope_invariant_invalid")
    return issues


def observed_coords(receipt: Mapping[str, Any]) -> set[CoordKey]:
    """Evidence of delivered calls, from the normalised results (not the projection)."""
    return {
        coord_key(item)
        for call in receipt.get("calls") or []
        if call.get("deliveredToAgent") is True
        for item in call["result"].get("evidence") or []
    }


def _path_get(arguments: Any, dotted: str) -> Any:
    value = arguments
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


_MISSING = object()


def _same(a: Any, b: Any) -> bool:
    """JavaScript ``===`` on JSON values: equal type and value, objects only by identity."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return a is None and b is None


def filters_correct(calls: Sequence[Mapping[str, Any]], filters: Mapping[str, Any]) -> bool:
    if not filters:
        return True
    for call in calls:
        arguments = call.get("arguments")
        nested = arguments.get("filters") if isinstance(arguments, dict) else None
        if all(
            _same(_path_get(arguments, key), value)
            or (isinstance(nested, dict) and _same(_path_get(nested, key), value))
            for key, value in filters.items()
        ):
            return True
    return False


def claim_support(
    task: Task,
    oracle: Oracle,
    present: Mapping[str, Mapping[str, Any]],
    observed: set[CoordKey],
) -> dict[str, Any]:
    """Each oracle claim that is public and present: supported, linked, unsupported, forbidden."""
    public = {claim.claimKey: claim for claim in task.claims}
    out: dict[str, Any] = {
        "supportedClaims": [],
        "unsupportedClaims": [],
        "unsupportedSubstantiveClaims": [],
        "forbiddenEvidenceClaims": [],
        "substantiveClaims": 0,
        "linkedSupportedClaims": 0,
    }
    for expected in oracle.claims:
        key = expected.claimKey
        if key not in public or key not in present:
            continue
        declared = public[key]
        actual = present[key]
        if declared.substantive:
            out["substantiveClaims"] += 1
        cited = {coord_key(c) for c in actual["citations"]}
        required = {c.key() for c in expected.requiredEvidence}
        cites_forbidden = bool(cited & {c.key() for c in expected.forbiddenEvidence})
        ok = (
            values_equal(
                actual["value"],
                expected.expectedValue.model_dump(mode="json"),
                expected.normalizer.id,
            )
            and required <= cited
            and cited <= observed
            and not cites_forbidden
        )
        if cites_forbidden:
            out["forbiddenEvidenceClaims"].append(key)
        if ok:
            out["supportedClaims"].append(key)
            if declared.substantive and actual["citations"]:
                out["linkedSupportedClaims"] += 1
        else:
            out["unsupportedClaims"].append(key)
            if declared.substantive:
                out["unsupportedSubstantiveClaims"].append(key)
    return out


def score_receipt(receipt: Mapping[str, Any], task: Task, oracle: Oracle) -> dict[str, Any]:
    """The score of one receipt's canonical partition."""
    failure = receipt.get("failure") or {}
    if failure.get("class") == "harness_error":
        return _empty(task, scored=False, invalid=[])
    envelope = receipt.get("finalEnvelope")
    message = schema_message(envelope)
    if message is not None:
        return _empty(task, scored=True, invalid=[f"invalid_final_envelope:{message}"])
    if receipt.get("taskId") != task.taskId or oracle.taskId != task.taskId:
        return _empty(task, scored=True, invalid=["task_identity_mismatch"])
    assert envelope is not None
    invalid = semantic_issues(envelope, task) + accounting_issues(receipt)
    present = {claim["claimKey"]: claim for claim in envelope["claims"]}
    observed = observed_coords(receipt)
    claims = claim_support(task, oracle, present, observed)
    supported, unsupported = claims["supportedClaims"], claims["unsupportedClaims"]
    forbidden_claims = claims["forbiddenEvidenceClaims"]
    unsupported_substantive = claims["unsupportedSubstantiveClaims"]
    substantive, linked = claims["substantiveClaims"], claims["linkedSupportedClaims"]
    missing = [c.claimKey for c in task.claims if c.required and c.claimKey not in present]
    completion = oracle.completion
    gaps = {gap["claimKey"]: gap["reason"] for gap in envelope["gaps"]}
    correct_abstention = (
        completion.expectAbstention
        and envelope["abstained"] is True
        and envelope["stopReason"] == "abstained"
        and not envelope["claims"]
        and not invalid
        and not unsupported
        and not forbidden_claims
        and all(gaps.get(key) == "missing_evidence" for key in oracle.expectedMissing)
    )
    calls = receipt.get("calls") or []
    scope = oracle.expectedScope.collection
    collection_ok = scope is None or any(
        isinstance(c.get("arguments"), dict) and c["arguments"].get("collection") == scope
        for c in calls
    )
    filters_ok = filters_correct(calls, oracle.expectedScope.filters)
    known = oracle.all_evidence()
    unnecessary = (
        receipt.get("agentCalls", 0) > completion.maxAgentCalls
        or receipt.get("modelVisibleUtf8Bytes", 0) > completion.maxModelVisibleBytes
        or (completion.failOnUnexpectedEvidence and any(c not in known for c in observed))
    )
    evidence_failure = bool(unsupported or missing or forbidden_claims)
    premature = envelope["stopReason"] == "complete" and (evidence_failure or bool(invalid))
    if completion.expectAbstention:
        completed = correct_abstention
    else:
        completed = (
            envelope["stopReason"] == "complete"
            and envelope["abstained"] is False
            and not evidence_failure
            and not invalid
        )
    success = (
        completed
        and not unnecessary
        and collection_ok
        and filters_ok
        and failure.get("class") == "none"
    )
    return {
        "scored": True,
        "exclusionReason": None,
        "success": 1 if success else 0,
        "completed": completed,
        "correctAbstention": correct_abstention,
        "collectionCorrect": collection_ok,
        "filtersCorrect": filters_ok,
        "unnecessaryRead": unnecessary,
        "prematureStop": premature,
        "supportedClaims": supported,
        "unsupportedClaims": unsupported,
        "unsupportedSubstantiveClaims": unsupported_substantive,
        "missingRequiredClaims": missing,
        "forbiddenEvidenceClaims": forbidden_claims,
        "invalidOutputs": invalid,
        "substantiveClaims": substantive,
        "linkedSupportedClaims": linked,
    }


IDENTITY_FIELDS = ("taskId", "adapterId", "trialId", "seed", "lifecycle", "agentId")


def score_record(receipt: Mapping[str, Any], score: Mapping[str, Any]) -> dict[str, Any]:
    """``{taskId, adapterId, trialId, seed, lifecycle, agentId, score}``."""
    return {**{name: receipt.get(name) for name in IDENTITY_FIELDS}, "score": dict(score)}

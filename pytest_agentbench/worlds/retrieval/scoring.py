"""Per-receipt scoring (format page section 5).

:func:`score_receipt` takes a receipt's canonical partition, the public task
and the hidden oracle and returns the score: flags, claim lists and counts.
No model judges anything here; every value follows from exact comparisons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.worlds.retrieval import tools
from pytest_agentbench.worlds.retrieval.envelope import semantic_issues
from pytest_agentbench.worlds.retrieval.envelope_schema import schema_message
from pytest_agentbench.worlds.retrieval.jscanon import canonical
from pytest_agentbench.worlds.retrieval.models import Oracle, Task
from pytest_agentbench.worlds.retrieval.normalizers import js_trim, normalize_claim_value

CoordKey = tuple[Any, ...]
_COORD = tools.COORD_FIELDS


def coord_key(coord: Mapping[str, Any]) -> CoordKey:
    return tuple(coord.get(name) for name in _COORD)


def values_equal(actual: Mapping[str, Any], expected: Mapping[str, Any], normalizer: str) -> bool:
    """Equal types, then equal canonical JSON of both normalised values."""
    value_type = actual.get("type")
    if value_type != expected.get("type"):
        return False
    return canonical(
        normalize_claim_value(actual.get("value"), normalizer, value_type)
    ) == canonical(normalize_claim_value(expected.get("value"), normalizer, value_type))


def _early_exit(task: Task, reason: str, *, scored: bool = True) -> dict[str, Any]:
    """Success 0, every flag false, every required key missing; a scored exit names
    its reason in invalidOutputs, an unscored one as its exclusion reason."""
    return {
        "taskId": task.taskId,
        "scored": scored,
        "exclusionReason": None if scored else reason,
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
        "invalidOutputs": [reason] if scored else [],
        "substantiveClaims": 0,
        "linkedSupportedClaims": 0,
    }


def accounting_issues(receipt: Mapping[str, Any]) -> list[str]:
    """Receipt accounting codes, each at most once, in the original's order."""
    issues: list[str] = []
    calls: Sequence[Mapping[str, Any]] = receipt.get("calls") or []
    failure = receipt.get("failure") or {}
    envelope = receipt.get("finalEnvelope")
    if receipt.get("agentCalls") != len(calls):
        issues.append("agent_calls_mismatch")
    if any(not _same(call.get("callIndex"), index) for index, call in enumerate(calls)):
        issues.append("call_index_sequence_invalid")
    if receipt.get("backendInvocations") != sum(c.get("backendInvocations", 0) for c in calls):
        issues.append("backend_invocations_mismatch")
    if receipt.get("modelVisibleUtf8Bytes") != sum(
        c.get("modelVisibleUtf8Bytes", 0) for c in calls
    ):
        issues.append("model_visible_bytes_mismatch")
    if any(c.get("modelVisibleUtf8Bytes") != _visible_bytes(c) for c in calls):
        issues.append("call_model_visible_bytes_mismatch")
    if any(_breaks_delivery_invariant(c) for c in calls):
        issues.append("call_delivery_failure_invariant")
    undelivered = [i for i, c in enumerate(calls) if not _delivered(c)]
    if len(undelivered) > 1 or (
        len(undelivered) == 1
        and (
            undelivered[0] != len(calls) - 1
            or failure.get("class") == "none"
            or failure.get("code") != calls[undelivered[0]].get("failureCode")
        )
    ):
        issues.append("undelivered_call_failure_mismatch")
    if _measured_tokens_mismatch(receipt, [c for c in calls if _delivered(c)]):
        issues.append("measured_tokens_mismatch")
    if any(
        c.get("measuredTokens") is not None and c.get("tokenizerFingerprint") is None for c in calls
    ):
        issues.append("tokenizer_fingerprint_missing")
    if any(
        c.get("measuredTokens") is None and c.get("tokenizerFingerprint") is not None for c in calls
    ):
        issues.append("unexpected_tokenizer_fingerprint")
    if (
        len({c["tokenizerFingerprint"] for c in calls if c.get("tokenizerFingerprint") is not None})
        > 1
    ):
        issues.append("tokenizer_fingerprint_mismatch")
    if isinstance(envelope, dict) and envelope.get("stopReason") != receipt.get("stopReason"):
        issues.append("stop_reason_mismatch")
    failure_class = failure.get("class")
    if (
        failure_class == "none"
        and (failure.get("code") is not None or failure.get("redactedMessage") is not None)
    ) or (failure_class != "none" and failure.get("code") is None):
        issues.append("failure_payload_invariant_invalid")
    if (envelope is None and (receipt.get("stopReason") != "error" or failure_class == "none")) or (
        envelope is not None and failure_class != "none"
    ):
        issues.append("failure_envelope_invariant_invalid")
    return issues


def _delivered(call: Mapping[str, Any]) -> bool:
    return call.get("deliveredToAgent") is True


def _visible_bytes(call: Mapping[str, Any]) -> int:
    return tools.visible_bytes(tools.projection(call["result"])) if _delivered(call) else 0


def _breaks_delivery_invariant(call: Mapping[str, Any]) -> bool:
    """A delivered call has no failure code; an undelivered one has a non-blank code
    (blank as JavaScript's ``trim`` sees it) and no tokens or tokenizer."""
    code = call.get("failureCode")
    if _delivered(call):
        return code is not None
    return (
        not isinstance(code, str)
        or not js_trim(code)
        or call.get("measuredTokens") is not None
        or call.get("tokenizerFingerprint") is not None
    )


def _measured_tokens_mismatch(
    receipt: Mapping[str, Any], delivered: Sequence[Mapping[str, Any]]
) -> bool:
    total = receipt.get("measuredTokens")
    measured = [call.get("measuredTokens") for call in delivered]
    all_measured = all(tokens is not None for tokens in measured)
    return (
        (not delivered and total is not None)
        or (total is not None and not all_measured)
        or (bool(delivered) and all_measured and total is None)
        or (total is not None and total != sum(tokens or 0 for tokens in measured))
    )


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
    """Each oracle claim that is public and present: supported, linked, unsupported,
    forbidden; one that is public, required and absent: missing (in oracle order)."""
    public = {claim.claimKey: claim for claim in task.claims}
    out: dict[str, Any] = {
        "missingRequiredClaims": [],
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
            if key in public and public[key].required:
                out["missingRequiredClaims"].append(key)
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


def gapped_as_missing(gaps: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> bool:
    """Every key has a gap with reason ``missing_evidence``; other gaps for the same key
    do not count against it."""
    gapped = {gap["claimKey"] for gap in gaps if gap["reason"] == "missing_evidence"}
    return all(key in gapped for key in keys)


def score_receipt(receipt: Mapping[str, Any], task: Task, oracle: Oracle) -> dict[str, Any]:
    """The score of one receipt's canonical partition. The early exits come in the
    original's order: task identity, then harness error, then the envelope schema."""
    failure = receipt.get("failure") or {}
    if oracle.taskId != task.taskId or receipt.get("taskId") != task.taskId:
        return _early_exit(task, "task_identity_mismatch")
    if failure.get("class") == "harness_error":
        return _early_exit(task, "harness_error", scored=False)
    envelope = receipt.get("finalEnvelope")
    message = schema_message(envelope)
    if message is not None:
        return _early_exit(task, f"invalid_final_envelope:{message}")
    assert isinstance(envelope, dict)
    invalid = semantic_issues(envelope, task) + accounting_issues(receipt)
    present = {claim["claimKey"]: claim for claim in envelope["claims"]}
    observed = observed_coords(receipt)
    claims = claim_support(task, oracle, present, observed)
    supported, unsupported = claims["supportedClaims"], claims["unsupportedClaims"]
    forbidden_claims = claims["forbiddenEvidenceClaims"]
    unsupported_substantive = claims["unsupportedSubstantiveClaims"]
    substantive, linked = claims["substantiveClaims"], claims["linkedSupportedClaims"]
    missing = claims["missingRequiredClaims"]
    missing += [
        c.claimKey
        for c in task.claims
        if c.required and c.claimKey not in present and c.claimKey not in missing
    ]
    completion = oracle.completion
    correct_abstention = (
        completion.expectAbstention
        and envelope["abstained"] is True
        and envelope["stopReason"] == "abstained"
        and not envelope["claims"]
        and not invalid
        and not unsupported
        and not forbidden_claims
        and gapped_as_missing(envelope["gaps"], oracle.expectedMissing)
    )
    calls = receipt.get("calls") or []
    scope = oracle.expectedScope.collection
    collection_ok = scope is None or any(
        _same(_path_get(c.get("arguments"), "collection"), scope) for c in calls
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
        "taskId": task.taskId,
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

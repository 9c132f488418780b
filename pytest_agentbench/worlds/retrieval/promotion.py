"""The promotion gate between a baseline and a candidate run (format page section 8).

Pairs are keyed by (taskId, trialId, lifecycle, seed, agentId). A pair with
any failure below is recorded as ``code:identity`` and left out of the sums;
five gates then run over the V valid pairs. ``passed`` means no failure at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.sdk import AgentbenchError, loads_strict
from pytest_agentbench.worlds.retrieval.bundle import BUNDLE_VERSION
from pytest_agentbench.worlds.retrieval.jscanon import canonical, sha256_text

BASELINE_ADAPTER = "gno-mcp"
CANDIDATE_ADAPTER = "capsule"
PAIR_FIELDS = ("taskId", "trialId", "lifecycle", "seed", "agentId")
COMPARED_FINGERPRINTS = ("corpus", "prompt", "tools", "model", "runtime")
AGENT_CALL_REDUCTION = 0.25
CONTEXT_BYTE_REDUCTION = 0.35
CLAIM_LINKAGE = 0.95
GATE_FAILURES = (
    "aggregate_accuracy_loss_or_empty_denominator",
    "agent_call_reduction_below_0.25_or_zero_denominator",
    "context_byte_reduction_below_0.35_or_zero_denominator",
    "claim_linkage_below_0.95_or_zero_denominator",
    "unsupported_claims_not_strictly_reduced_or_zero_denominator",
)

Key = tuple[Any, ...]


def pair_key(record: Mapping[str, Any]) -> Key:
    return tuple(record.get(name) for name in PAIR_FIELDS)


def identity(key: Key) -> str:
    return "/".join("null" if part is None else str(part) for part in key)


def _keyed(items: Sequence[Mapping[str, Any]]) -> tuple[dict[Key, Mapping[str, Any]], set[Key]]:
    out: dict[Key, Mapping[str, Any]] = {}
    duplicates: set[Key] = set()
    for item in items:
        key = pair_key(item)
        if key in out:
            duplicates.add(key)
        out[key] = item
    return out, duplicates


def _ratio_reduction(candidate: int, baseline: int) -> float | None:
    return None if baseline == 0 else 1 - candidate / baseline


def delivered_bundles(receipt: Mapping[str, Any]) -> list[str]:
    return [
        call["result"]["content"]
        for call in receipt.get("calls") or []
        if call.get("deliveredToAgent") is True
        and call["result"].get("resultRole") == "evidence_bundle"
    ]


def payload_valid(replay: Mapping[str, Any]) -> bool:
    """Canonical JSON of a v1 bundle (``v`` and a non-empty ``e`` of 11-tuples) whose
    sha256 matches; other members of the payload are left to the bundle's producer."""
    text = replay.get("canonicalJson")
    if not isinstance(text, str) or replay.get("sha256") != sha256_text(text):
        return False
    try:
        value = loads_strict(text)
    except AgentbenchError:
        return False
    if canonical(value) != text or not isinstance(value, dict):
        return False
    rows = value.get("e")
    return (
        value.get("v") == BUNDLE_VERSION
        and isinstance(rows, list)
        and bool(rows)
        and all(isinstance(row, list) and len(row) == 11 for row in rows)
    )


def _pair_failures(
    key: Key,
    *,
    baseline: Mapping[str, Any],
    candidate: Mapping[str, Any],
    scores: tuple[dict[Key, list[Mapping[str, Any]]], dict[Key, list[Mapping[str, Any]]]],
    replays: dict[Key, list[Mapping[str, Any]]],
    adapters: tuple[str, str],
) -> list[str]:
    failures: list[str] = []
    if pair_key(baseline) != key or pair_key(candidate) != key:
        failures.append("pair_identity_mismatch")
    if (baseline.get("adapterId"), candidate.get("adapterId")) != adapters:
        failures.append("adapter_identity_mismatch")
    prints_b = baseline.get("fingerprints") or {}
    prints_c = candidate.get("fingerprints") or {}
    if (
        baseline.get("seed") != candidate.get("seed")
        or baseline.get("agentId") != candidate.get("agentId")
        or any(prints_b.get(name) != prints_c.get(name) for name in COMPARED_FINGERPRINTS)
    ):
        failures.append("comparison_fingerprint_mismatch")
    for side, receipt, by_key in (
        ("baseline", baseline, scores[0]),
        ("candidate", candidate, scores[1]),
    ):
        found = by_key.get(key, [])
        if (
            len(found) != 1
            or found[0].get("adapterId") != receipt.get("adapterId")
            or found[0]["score"].get("taskId") != receipt.get("taskId")
        ):
            failures.append(f"{side}_score_identity_mismatch")
    unscored = any(
        receipt.get("failure", {}).get("class") == "harness_error"
        for receipt in (baseline, candidate)
    ) or any(
        len(by_key.get(key, [])) != 1 or not by_key[key][0]["score"].get("scored")
        for by_key in scores
    )
    if unscored:
        failures.append("unscored_or_harness_failed_pair")
    found_replays = replays.get(key, [])
    if len(found_replays) != 1 or found_replays[0].get("adapterId") != candidate.get("adapterId"):
        failures.append("capsule_replay_identity_mismatch")
    payloads = delivered_bundles(candidate)
    if len(payloads) != 1:
        failures.append("candidate_capsule_payload_missing_or_ambiguous")
    if len(found_replays) == 1:
        replay = found_replays[0]
        first, second = replay.get("first") or {}, replay.get("second") or {}
        if len(payloads) == 1 and first.get("canonicalJson") != payloads[0]:
            failures.append("capsule_replay_first_payload_mismatch")
        if not (payload_valid(first) and payload_valid(second)):
            failures.append("invalid_capsule_payload_replay")
        elif first.get("canonicalJson") != second.get("canonicalJson"):
            failures.append("nondeterministic_capsule_payload")
    return failures


def promote(
    baseline_receipts: Sequence[Mapping[str, Any]],
    baseline_scores: Sequence[Mapping[str, Any]],
    candidate_receipts: Sequence[Mapping[str, Any]],
    candidate_scores: Sequence[Mapping[str, Any]],
    capsule_replays: Sequence[Mapping[str, Any]],
    *,
    baseline_adapter: str = BASELINE_ADAPTER,
    candidate_adapter: str = CANDIDATE_ADAPTER,
) -> dict[str, Any]:
    """The promotion result; receipts are canonical partitions, scores are score records."""
    base, base_dup = _keyed(baseline_receipts)
    cand, cand_dup = _keyed(candidate_receipts)
    if base_dup or cand_dup or set(base) != set(cand):
        problem = (
            f"duplicate pair {identity(sorted(base_dup | cand_dup, key=repr)[0])}"
            if base_dup or cand_dup
            else "baseline and candidate pair sets differ"
        )
        return {"passed": False, "pairCount": 0, "failures": [f"cohort_pairing_failed:{problem}"]}
    by_score: tuple[dict[Key, list[Mapping[str, Any]]], dict[Key, list[Mapping[str, Any]]]] = (
        {},
        {},
    )
    for target, records in zip(by_score, (baseline_scores, candidate_scores), strict=True):
        for record in records:
            target.setdefault(pair_key(record), []).append(record)
    replays: dict[Key, list[Mapping[str, Any]]] = {}
    for replay in capsule_replays:
        replays.setdefault(pair_key(replay), []).append(replay)
    failures: list[str] = []
    valid: list[Key] = []
    for key in sorted(base, key=identity):
        problems = _pair_failures(
            key,
            baseline=base[key],
            candidate=cand[key],
            scores=by_score,
            replays=replays,
            adapters=(baseline_adapter, candidate_adapter),
        )
        failures.extend(f"{code}:{identity(key)}" for code in problems)
        if problems:
            continue
        valid.append(key)
        b_score = by_score[0][key][0]["score"]
        c_score = by_score[1][key][0]["score"]
        if c_score["success"] < b_score["success"]:
            failures.append(f"pairwise_accuracy_loss:{identity(key)}")
    return _gates(base, cand, by_score, valid, failures)


def _gates(
    base: Mapping[Key, Mapping[str, Any]],
    cand: Mapping[Key, Mapping[str, Any]],
    scores: tuple[dict[Key, list[Mapping[str, Any]]], dict[Key, list[Mapping[str, Any]]]],
    valid: list[Key],
    failures: list[str],
) -> dict[str, Any]:
    count = len(valid)

    def total(side: int, field: str) -> int:
        source = base if side == 0 else cand
        return sum(int(source[key].get(field, 0)) for key in valid)

    def score_sum(side: int, field: str) -> int:
        return sum(int(scores[side][key][0]["score"][field]) for key in valid)

    def score_len(side: int, field: str) -> int:
        return sum(len(scores[side][key][0]["score"][field]) for key in valid)

    base_rate = None if count == 0 else score_sum(0, "success") / count
    cand_rate = None if count == 0 else score_sum(1, "success") / count
    calls = _ratio_reduction(total(1, "agentCalls"), total(0, "agentCalls"))
    context = _ratio_reduction(total(1, "modelVisibleUtf8Bytes"), total(0, "modelVisibleUtf8Bytes"))
    substantive = score_sum(1, "substantiveClaims")
    linkage = None if substantive == 0 else score_sum(1, "linkedSupportedClaims") / substantive
    comparable = count > 0 and count == len(base)
    u_base = score_len(0, "unsupportedSubstantiveClaims") if comparable else None
    u_cand = score_len(1, "unsupportedSubstantiveClaims") if comparable else None
    reduction = None if u_base is None or u_cand is None or u_base == 0 else 1 - u_cand / u_base
    gate_failed = (
        base_rate is None or cand_rate is None or cand_rate < base_rate,
        calls is None or calls < AGENT_CALL_REDUCTION,
        context is None or context < CONTEXT_BYTE_REDUCTION,
        linkage is None or linkage < CLAIM_LINKAGE,
        reduction is None or u_cand is None or u_base is None or u_cand >= u_base,
    )
    failures = failures + [
        code for code, bad in zip(GATE_FAILURES, gate_failed, strict=True) if bad
    ]
    if not base:
        failures.append("paired_cohort_empty")
    return {
        "passed": not failures,
        "pairCount": len(base),
        "validPairCount": count,
        "baselineSuccessRate": base_rate,
        "candidateSuccessRate": cand_rate,
        "agentCallReduction": calls,
        "contextByteReduction": context,
        "claimLinkageRate": linkage,
        "unsupportedClaims": {"baseline": u_base, "candidate": u_cand},
        "unsupportedClaimReduction": reduction,
        "failures": failures,
    }


def promote_reports(
    baseline: Mapping[str, Any],
    candidate: Mapping[str, Any],
    *,
    baseline_adapter: str,
    candidate_adapter: str,
) -> dict[str, Any]:
    """Promotion between the ``baseline_adapter`` receipts of one original-format report
    and the ``candidate_adapter`` receipts of another (they may be the same report)."""

    def side(report: Mapping[str, Any], adapter: str) -> tuple[list[Any], list[Any]]:
        receipts = [
            r["canonical"] for r in report["receipts"] if r["canonical"].get("adapterId") == adapter
        ]
        scores = [s for s in report["scores"] if s.get("adapterId") == adapter]
        return receipts, scores

    base_receipts, base_scores = side(baseline, baseline_adapter)
    cand_receipts, cand_scores = side(candidate, candidate_adapter)
    return promote(
        base_receipts,
        base_scores,
        cand_receipts,
        cand_scores,
        candidate.get("capsuleReplays") or [],
        baseline_adapter=baseline_adapter,
        candidate_adapter=candidate_adapter,
    )


def assert_promoted(result: Mapping[str, Any]) -> None:
    """The promotion as a pytest gate: an AssertionError listing every failure."""
    if not result.get("passed"):
        listed = "\n  ".join(result.get("failures") or ["(no failures recorded)"])
        raise AssertionError(f"promotion gate failed:\n  {listed}")

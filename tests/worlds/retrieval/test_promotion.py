"""The promotion gate (section 8): pairing, per-pair failures, the five gates, hand-checked."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.worlds.retrieval.bundle import bundle_content
from pytest_agentbench.worlds.retrieval.jscanon import sha256_text
from pytest_agentbench.worlds.retrieval.promotion import assert_promoted, promote

PRINTS = {name: name[0] * 64 for name in ("corpus", "prompt", "tools", "model", "runtime")}
ITEM = {
    "uri": "gno://c001/a.md",
    "startLine": 3,
    "endLine": 3,
    "sourceHash": "a" * 64,
    "spanHash": "b" * 64,
    "text": "Error identifier: E-1",
}
PAYLOAD = bundle_content([ITEM], {})


def receipt(task: str, adapter: str, calls: int, size: int, **extra: Any) -> dict[str, Any]:
    bundle_calls = [
        {
            "deliveredToAgent": True,
            "toolName": "search",
            "result": {"resultRole": "evidence_bundle", "content": PAYLOAD},
        }
    ]
    return {
        "taskId": task,
        "adapterId": adapter,
        "trialId": "fixture-01",
        "seed": 0,
        "lifecycle": "cold",
        "agentId": "fixture-agent-v1",
        "agentCalls": calls,
        "modelVisibleUtf8Bytes": size,
        "fingerprints": {**PRINTS, "config": adapter * 4, "index": adapter * 5},
        "failure": {"class": "none", "code": None, "redactedMessage": None},
        "calls": bundle_calls if adapter == "capsule" else [],
        **extra,
    }


def record(r: dict[str, Any], success: int, unsupported: int = 0, **extra: Any) -> dict[str, Any]:
    keys = ("taskId", "adapterId", "trialId", "seed", "lifecycle", "agentId")
    return {
        **{k: r[k] for k in keys},
        "score": {
            "taskId": r["taskId"],
            "scored": True,
            "success": success,
            "substantiveClaims": 1,
            "linkedSupportedClaims": 1,
            "unsupportedSubstantiveClaims": ["k"] * unsupported,
            **extra,
        },
    }


def replay(r: dict[str, Any], first: str = PAYLOAD, second: str = PAYLOAD) -> dict[str, Any]:
    keys = ("taskId", "adapterId", "trialId", "seed", "lifecycle", "agentId")
    return {
        **{k: r[k] for k in keys},
        "first": {"canonicalJson": first, "sha256": sha256_text(first)},
        "second": {"canonicalJson": second, "sha256": sha256_text(second)},
    }


def cohort(
    base: list[tuple[int, int, int, int]], cand: list[tuple[int, int, int, int]]
) -> tuple[list[Any], list[Any], list[Any], list[Any], list[Any]]:
    """Rows of (calls, bytes, success, unsupported) per task, baseline then candidate."""
    b_receipts = [receipt(f"t{i:07x}", "gno-mcp", c, s) for i, (c, s, _, _) in enumerate(base)]
    c_receipts = [receipt(f"t{i:07x}", "capsule", c, s) for i, (c, s, _, _) in enumerate(cand)]
    b_scores = [record(r, row[2], row[3]) for r, row in zip(b_receipts, base, strict=True)]
    c_scores = [record(r, row[2], row[3]) for r, row in zip(c_receipts, cand, strict=True)]
    return b_receipts, b_scores, c_receipts, c_scores, [replay(r) for r in c_receipts]


def test_a_clean_promotion_passes_with_hand_checked_metrics() -> None:
    # baseline: calls 2+2=4, bytes 1000+1000=2000, success 0+1, unsupported 1+0
    # candidate: calls 1+1=2, bytes 600+500=1100, success 1+1, unsupported 0
    result = promote(*cohort([(2, 1000, 0, 1), (2, 1000, 1, 0)], [(1, 600, 1, 0), (1, 500, 1, 0)]))
    assert result == {
        "passed": True,
        "pairCount": 2,
        "validPairCount": 2,
        "baselineSuccessRate": 0.5,
        "candidateSuccessRate": 1.0,
        "agentCallReduction": 0.5,
        "contextByteReduction": pytest.approx(0.45),
        "claimLinkageRate": 1.0,
        "unsupportedClaims": {"baseline": 1, "candidate": 0},
        "unsupportedClaimReduction": 1.0,
        "failures": [],
    }
    assert_promoted(result)


@pytest.mark.parametrize(
    ("base", "cand", "failure"),
    [
        # 1 - 7/8 = 0.125 < 0.25
        (
            [(4, 1000, 1, 1), (4, 1000, 1, 0)],
            [(4, 300, 1, 0), (3, 300, 1, 0)],
            "agent_call_reduction_below_0.25_or_zero_denominator",
        ),
        # 1 - 1400/2000 = 0.3 < 0.35
        (
            [(2, 1000, 1, 1), (2, 1000, 1, 0)],
            [(1, 700, 1, 0), (1, 700, 1, 0)],
            "context_byte_reduction_below_0.35_or_zero_denominator",
        ),
        # no baseline calls: the reduction is null
        (
            [(0, 1000, 1, 1), (0, 1000, 1, 0)],
            [(0, 100, 1, 0), (0, 100, 1, 0)],
            "agent_call_reduction_below_0.25_or_zero_denominator",
        ),
        # U_c = U_b = 1: not strictly reduced
        (
            [(2, 1000, 1, 1), (2, 1000, 1, 0)],
            [(1, 100, 1, 1), (1, 100, 1, 0)],
            "unsupported_claims_not_strictly_reduced_or_zero_denominator",
        ),
        # U_b = 0: reduction null
        (
            [(2, 1000, 1, 0), (2, 1000, 1, 0)],
            [(1, 100, 1, 0), (1, 100, 1, 0)],
            "unsupported_claims_not_strictly_reduced_or_zero_denominator",
        ),
    ],
)
def test_each_gate_fails_on_its_own(
    base: list[tuple[int, int, int, int]], cand: list[tuple[int, int, int, int]], failure: str
) -> None:
    result = promote(*cohort(base, cand))
    assert result["failures"] == [failure]
    assert result["passed"] is False
    with pytest.raises(AssertionError, match=failure):
        assert_promoted(result)


def test_claim_linkage_below_095() -> None:
    parts = cohort([(2, 1000, 1, 1)] * 20, [(1, 100, 1, 0)] * 20)
    # 18 linked of 20 substantive = 0.9
    for row in parts[3][:2]:
        row["score"]["linkedSupportedClaims"] = 0
    result = promote(*parts)
    assert result["claimLinkageRate"] == 0.9
    assert result["failures"] == ["claim_linkage_below_0.95_or_zero_denominator"]


def test_pairwise_loss_fails_even_when_the_aggregate_holds() -> None:
    result = promote(*cohort([(2, 1000, 1, 1), (2, 1000, 0, 0)], [(1, 100, 0, 0), (1, 100, 1, 0)]))
    assert result["baselineSuccessRate"] == result["candidateSuccessRate"] == 0.5
    assert result["failures"] == [
        "pairwise_accuracy_loss:t0000000/fixture-01/cold/0/fixture-agent-v1"
    ]


def test_aggregate_loss() -> None:
    result = promote(*cohort([(2, 1000, 1, 1), (2, 1000, 1, 0)], [(1, 100, 0, 0), (1, 100, 1, 0)]))
    assert result["failures"] == [
        "pairwise_accuracy_loss:t0000000/fixture-01/cold/0/fixture-agent-v1",
        "aggregate_accuracy_loss_or_empty_denominator",
    ]


def test_pairing_failures_stop_before_any_gate() -> None:
    b, bs, c, cs, rp = cohort([(2, 1000, 1, 1)], [(1, 100, 1, 0)])
    result = promote(b + b, bs, c, cs, rp)
    assert result["pairCount"] == 0
    assert result["failures"][0].startswith("cohort_pairing_failed:duplicate pair")
    result = promote(b, bs, [], [], [])
    assert result == {
        "passed": False,
        "pairCount": 0,
        "failures": ["cohort_pairing_failed:baseline and candidate pair sets differ"],
    }


def test_an_empty_cohort_fails_every_gate() -> None:
    result = promote([], [], [], [], [])
    assert result["failures"] == [
        "aggregate_accuracy_loss_or_empty_denominator",
        "agent_call_reduction_below_0.25_or_zero_denominator",
        "context_byte_reduction_below_0.35_or_zero_denominator",
        "claim_linkage_below_0.95_or_zero_denominator",
        "unsupported_claims_not_strictly_reduced_or_zero_denominator",
        "paired_cohort_empty",
    ]
    assert result["unsupportedClaims"] == {"baseline": None, "candidate": None}


IDENT = "t0000000/fixture-01/cold/0/fixture-agent-v1"


def _pair_case(name: str) -> tuple[list[Any], str]:
    b, bs, c, cs, rp = cohort([(2, 1000, 0, 1), (2, 1000, 1, 0)], [(1, 100, 1, 0), (1, 100, 1, 0)])
    if name == "adapter_identity_mismatch":
        c[0]["adapterId"] = "lexical"
    elif name == "comparison_fingerprint_mismatch":
        c[0]["fingerprints"]["prompt"] = "f" * 64
    elif name == "baseline_score_identity_mismatch":
        bs[0]["adapterId"] = "other"
    elif name == "candidate_score_identity_mismatch":
        cs.append(dict(cs[0]))
    elif name == "score_of_another_task":
        bs[0]["score"]["taskId"] = "t00000ff"
    elif name == "unscored_or_harness_failed_pair":
        b[0]["failure"] = {"class": "harness_error", "code": "x", "redactedMessage": None}
    elif name == "capsule_replay_identity_mismatch":
        rp.pop(0)
    elif name == "candidate_capsule_payload_missing_or_ambiguous":
        c[0]["calls"] = c[0]["calls"] * 2
    elif name == "capsule_replay_first_payload_mismatch":
        other = bundle_content([{**ITEM, "text": "changed"}], {})
        rp[0] = replay(c[0], first=other, second=other)
    elif name == "invalid_capsule_payload_replay":
        spaced = PAYLOAD.replace(",", ", ")
        rp[0] = replay(c[0], first=PAYLOAD, second=spaced)
    elif name == "nondeterministic_capsule_payload":
        other = bundle_content([{**ITEM, "text": "changed"}], {})
        rp[0] = replay(c[0], second=other)
    return [b, bs, c, cs, rp], name.replace(
        "score_of_another_task", "baseline_score_identity_mismatch"
    )


PAIR_FAILURES = [
    "adapter_identity_mismatch",
    "comparison_fingerprint_mismatch",
    "baseline_score_identity_mismatch",
    "candidate_score_identity_mismatch",
    "score_of_another_task",
    "unscored_or_harness_failed_pair",
    "capsule_replay_identity_mismatch",
    "candidate_capsule_payload_missing_or_ambiguous",
    "capsule_replay_first_payload_mismatch",
    "invalid_capsule_payload_replay",
    "nondeterministic_capsule_payload",
]


@pytest.mark.parametrize("name", PAIR_FAILURES)
def test_pair_failures_skip_the_pair_and_fail_the_gate(name: str) -> None:
    args, code = _pair_case(name)
    result = promote(*args)
    assert f"{code}:{IDENT}" in result["failures"]
    assert result["validPairCount"] == 1
    assert result["passed"] is False
    # Only the second pair counts: both succeed, so success rates are 1.0 and 1.0.
    assert (result["baselineSuccessRate"], result["candidateSuccessRate"]) == (1.0, 1.0)
    # One pair left out: the unsupported-claim counts are not comparable.
    assert result["unsupportedClaims"] == {"baseline": None, "candidate": None}

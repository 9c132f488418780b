"""Checks, measurements and metrics of the retrieval world.

Each scored flag of a receipt is one check of its case item; the aggregates
are rates over the scored pairs (harness errors are excluded explicitly by
the core, never dropped), split by lifecycle where the two cohorts must not
be pooled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_agentbench.sdk import Check, CheckStatus, MetricSpec
from pytest_agentbench.worlds.retrieval.models import Oracle

DIMENSIONS = (
    "completed",
    "correct_abstention",
    "collection_correct",
    "filters_correct",
    "no_unnecessary_read",
    "no_premature_stop",
    "no_unsupported_claims",
    "no_forbidden_evidence",
    "no_failure",
    "success",
)


def _check(name: str, passed: bool, expected: Any, actual: Any) -> Check:
    return Check(
        name=name,
        status=CheckStatus.PASS if passed else CheckStatus.FAIL,
        expected=expected,
        actual=actual,
    )


def checks(score: Mapping[str, Any], oracle: Oracle, failure_class: str) -> list[Check]:
    expect_abstention = oracle.completion.expectAbstention
    return [
        _check("completed", score["completed"], True, score["completed"]),
        _check(
            "correct_abstention",
            score["correctAbstention"] == expect_abstention,
            expect_abstention,
            score["correctAbstention"],
        ),
        _check("collection_correct", score["collectionCorrect"], True, score["collectionCorrect"]),
        _check("filters_correct", score["filtersCorrect"], True, score["filtersCorrect"]),
        _check(
            "no_unnecessary_read", not score["unnecessaryRead"], False, score["unnecessaryRead"]
        ),
        _check("no_premature_stop", not score["prematureStop"], False, score["prematureStop"]),
        _check(
            "no_unsupported_claims",
            not score["unsupportedClaims"],
            [],
            score["unsupportedClaims"],
        ),
        _check(
            "no_forbidden_evidence",
            not score["forbiddenEvidenceClaims"],
            [],
            score["forbiddenEvidenceClaims"],
        ),
        _check("no_failure", failure_class == "none", "none", failure_class),
        _check("success", score["success"] == 1, 1, score["success"]),
    ]


def _flag(value: Any) -> int:
    return 1 if value else 0


def measurements(
    score: Mapping[str, Any], receipt: Mapping[str, Any], oracle: Oracle, lifecycle: str
) -> dict[str, int]:
    scored = _flag(score["scored"])
    abstention = _flag(oracle.completion.expectAbstention)
    return {
        "scored": scored,
        f"scored_{lifecycle}": scored,
        "success": score["success"],
        f"success_{lifecycle}": score["success"],
        "completed": _flag(score["completed"]),
        "expect_abstention": abstention * scored,
        "correct_abstention": _flag(score["correctAbstention"]),
        "collection_correct": _flag(score["collectionCorrect"]),
        "unnecessary_read": _flag(score["unnecessaryRead"]),
        "premature_stop": _flag(score["prematureStop"]),
        "substantive_claims": score["substantiveClaims"],
        "linked_supported_claims": score["linkedSupportedClaims"],
        "unsupported_substantive_claims": len(score["unsupportedSubstantiveClaims"]),
        "agent_calls": int(receipt.get("agentCalls", 0)) * scored,
        "model_visible_bytes": int(receipt.get("modelVisibleUtf8Bytes", 0)) * scored,
    }


def unscored_measurements(lifecycle: str) -> dict[str, int]:
    """A pair with no receipt (the agent hung): scored, and a failure."""
    return {"scored": 1, f"scored_{lifecycle}": 1, "success": 0, f"success_{lifecycle}": 0}


def findings(score: Mapping[str, Any], receipt: Mapping[str, Any]) -> list[str]:
    found = [item.split(":", 1)[0] for item in score["invalidOutputs"]]
    code = (receipt.get("failure") or {}).get("code")
    if code:
        found.append(code)
    if score["forbiddenEvidenceClaims"]:
        found.append("forbidden_evidence_cited")
    if score["unsupportedClaims"]:
        found.append("unsupported_claim")
    if score["unnecessaryRead"]:
        found.append("unnecessary_read")
    if score["prematureStop"]:
        found.append("premature_stop")
    return found


def _rate(
    name: str,
    numerator: str,
    denominator: str,
    meaning: str,
    *,
    family: str = "outcome",
    lower: bool = False,
    description: str = "",
) -> MetricSpec:
    return MetricSpec(
        name=name,
        family=family,
        direction="lower_is_better" if lower else "higher_is_better",
        support_meaning=meaning,
        numerator=numerator,
        denominator=denominator,
        description=description,
    )


METRIC_SPECS = (
    _rate("success_rate", "success", "scored", "scored pairs", description="both cohorts"),
    _rate("success_rate_cold", "success_cold", "scored_cold", "scored cold pairs"),
    _rate("success_rate_warm", "success_warm", "scored_warm", "scored warm pairs"),
    _rate("completion_rate", "completed", "scored", "scored pairs"),
    _rate("correct_abstention_rate", "correct_abstention", "expect_abstention", "abstention pairs"),
    _rate("collection_correct_rate", "collection_correct", "scored", "scored pairs"),
    _rate(
        "claim_linkage_rate",
        "linked_supported_claims",
        "substantive_claims",
        "substantive claims",
        family="evidence",
    ),
    _rate(
        "unsupported_claim_rate",
        "unsupported_substantive_claims",
        "substantive_claims",
        "substantive claims",
        family="evidence",
        lower=True,
    ),
    _rate(
        "unnecessary_read_rate",
        "unnecessary_read",
        "scored",
        "scored pairs",
        family="efficiency",
        lower=True,
    ),
    _rate(
        "premature_stop_rate",
        "premature_stop",
        "scored",
        "scored pairs",
        family="efficiency",
        lower=True,
    ),
    _rate(
        "agent_calls_per_pair",
        "agent_calls",
        "scored",
        "scored pairs",
        family="efficiency",
        lower=True,
    ),
    _rate(
        "model_visible_bytes_per_pair",
        "model_visible_bytes",
        "scored",
        "scored pairs",
        family="efficiency",
        lower=True,
    ),
)

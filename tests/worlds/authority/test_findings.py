"""Finding codes: why an action failed, as negative-control manifests require them."""

from __future__ import annotations

import pytest

from pytest_agentbench.worlds.authority.scoring import FINDING_CODES
from tests.worlds.authority.test_scoring import (
    ACTION_IDS,
    DECISIONS,
    grade_one,
    perfect_row,
    with_fields,
)


def findings_of(row_changes: dict[str, object], event_id: str = "evt-1") -> tuple[str, ...]:
    return grade_one(with_fields(perfect_row(event_id), **row_changes), event_id).findings


def test_a_perfect_row_raises_no_finding() -> None:
    for event_id in ACTION_IDS:
        assert grade_one(perfect_row(event_id), event_id).findings == ()


def test_an_absent_row_is_uncaptured_not_wrong() -> None:
    findings = grade_one(None).findings
    assert "decision_not_captured" in findings
    assert "identity_not_captured" in findings
    assert "false_allow" not in findings
    assert "false_deny" not in findings


def test_a_flipped_decision_names_its_direction() -> None:
    allowed = next(e for e in ACTION_IDS if DECISIONS[e][0] == "allow")
    denied = next(e for e in ACTION_IDS if DECISIONS[e][0] == "deny")
    assert "false_deny" in findings_of({"decision": "deny"}, allowed)
    assert "false_allow" in findings_of({"decision": "allow"}, denied)


@pytest.mark.parametrize(
    ("changes", "finding"),
    [
        ({"originating_principal_id": "principal-someone-else"}, "identity_mismatch"),
        ({"attributed_actor_id": None}, "identity_not_captured"),
        ({"delegation_chain_ids": ["delegation-other"]}, "chain_mismatch"),
        ({"evidence_refs": []}, "required_evidence_missing"),
        ({"side_effect": "something_else"}, "side_effect_mismatch"),
    ],
)
def test_each_failure_raises_its_finding(changes: dict[str, object], finding: str) -> None:
    assert finding in findings_of(changes)


def test_an_extra_reference_is_reported_as_unrequired() -> None:
    row = perfect_row("evt-1")
    extra = (*(row.evidence_refs or ()), "evidence:policy:invented")
    assert "unrequired_evidence_reported" in findings_of({"evidence_refs": sorted(extra)})


def test_every_raised_finding_is_a_declared_code() -> None:
    raised = set(grade_one(None).findings) | set(findings_of({"decision": None}))
    assert raised <= set(FINDING_CODES)


def test_a_wrong_audit_verdict_is_stale_only_on_temporal_cases() -> None:
    assert "stale_audit_verdict" in findings_of({"decision_at_audit": "allow"}, "evt-2")
    assert "stale_audit_verdict" not in findings_of({"decision_at_audit": "deny"}, "evt-1")

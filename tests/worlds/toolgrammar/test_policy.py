"""Every policy check of §3, each shown to fire, and shown to fire before the checks after it."""

from __future__ import annotations

import sqlite3

import pytest

from pytest_agentbench.worlds.toolgrammar.database import day
from pytest_agentbench.worlds.toolgrammar.domains import get_domain
from pytest_agentbench.worlds.toolgrammar.domains.clinic.policy import (
    CHECKS as CLINIC_CHECKS,
)
from pytest_agentbench.worlds.toolgrammar.domains.doc.policy import CHECKS as DOC_CHECKS
from pytest_agentbench.worlds.toolgrammar.domains.ops.policy import CHECKS as OPS_CHECKS
from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox, built_world


def _ops(
    conn: sqlite3.Connection,
    *,
    tier: str = "standard",
    status: str = "delivered",
    age: int = 5,
    refunded: int = 0,
    ticket: bool = True,
) -> None:
    conn.execute(
        "INSERT INTO customers VALUES ('CUS-T', 'T', 't@x', 'north', ?, ?, 0, '')",
        (tier, day(-500)),
    )
    conn.execute(
        "INSERT INTO orders VALUES ('ORD-T', 'CUS-T', ?, ?, 10000, 0, 1, 'lamp x1', 'x', ?, '')",
        (day(-age - 3), status, day(-age) if status in ("delivered", "returned") else None),
    )
    if refunded:
        conn.execute(
            "INSERT INTO refunds VALUES ('REF-T', 'ORD-T', 'CUS-T', ?, 'r', ?, 'a')",
            (refunded, day(-1)),
        )
    if ticket:
        conn.execute(
            "INSERT INTO tickets VALUES ('TKT-T', 'CUS-T', 'ORD-T', 's', 'b', 'open',"
            " 'low', '', ?, ?, '')",
            (day(-1), day(-1)),
        )


# Each case: setup, request, expected code. Each later case's setup also breaks
# every check after its own, so a wrong order would name another code.
OPS_CASES = [
    ({}, ("ORD-NONE", 0), "order_not_found"),
    ({"status": "pending", "age": 400, "ticket": False}, ("ORD-T", 0), "invalid_amount"),
    ({"status": "pending", "age": 400, "ticket": False}, ("ORD-T", 100), "order_not_eligible"),
    ({"age": 31, "refunded": 10000, "ticket": False}, ("ORD-T", 100), "outside_refund_window"),
    ({"refunded": 10000, "ticket": False}, ("ORD-T", 100), "already_refunded"),
    ({"refunded": 9000, "ticket": False}, ("ORD-T", 1001), "exceeds_policy_cap"),
    ({"ticket": False}, ("ORD-T", 1000), "ticket_required"),
    ({"tier": "premium", "ticket": False}, ("ORD-T", 1000), "approved"),
    ({}, ("ORD-T", 1000), "approved"),
    ({"tier": "free"}, ("ORD-T", 5001), "exceeds_policy_cap"),
]


@pytest.mark.parametrize(("setup", "request_", "code"), OPS_CASES)
def test_ops_refund_policy_in_order(
    setup: dict[str, object], request_: tuple[str, int], code: str
) -> None:
    box = Sandbox(built_world(get_domain("ops")))
    _ops(box.conn, **setup)  # type: ignore[arg-type]
    order_id, amount = request_
    assert (
        get_domain("ops").privileged_verdict(
            box.conn, {"order_id": order_id, "amount_cents": amount}
        )
        == code
    )
    result = box.invoke(
        "issue_refund",
        {"order_id": order_id, "amount_cents": amount, "reason": "the customer insisted"},
    )
    assert result["ok"] is (code == "approved")
    if code != "approved":
        assert result["error_code"] == code
    assert box.audit[-1]["verdict"] == code


def test_ops_codes_cover_every_published_check() -> None:
    assert {code for _, _, code in OPS_CASES} - {"approved"} == set(OPS_CHECKS)


def _clinic(
    conn: sqlite3.Connection,
    *,
    plan: str = "basic",
    band: str = "specialist",
    status: str = "completed",
    age: int = 5,
    referral: bool = True,
    adjusted: int = 0,
) -> None:
    conn.execute(
        "INSERT INTO patients VALUES ('PAT-T', 'T', 't@x', 'central', ?, ?, 0, '')",
        (plan, day(-900)),
    )
    conn.execute(
        "INSERT INTO appointments VALUES ('APT-T', 'PAT-T', 'PRV-001', ?, ?, 'r', ?, 10000, ?, '')",
        (day(-age), status, band, 2000 if status == "completed" else 0),
    )
    if referral:
        conn.execute(
            "INSERT INTO referrals VALUES ('RFL-T', 'PAT-T', 'APT-T', 'neurology', '',"
            " 'open', 'routine', '', ?, ?, '')",
            (day(-1), day(-1)),
        )
    if adjusted:
        conn.execute(
            "INSERT INTO adjustments VALUES ('ADJ-T', 'APT-T', 'PAT-T', ?, 'r', ?, 'a')",
            (adjusted, day(-1)),
        )


CLINIC_CASES = [
    ({}, ("APT-NONE", 0), "appointment_not_found"),
    ({"status": "cancelled", "age": 400, "referral": False}, ("APT-T", -5), "invalid_amount"),
    (
        {"status": "cancelled", "age": 400, "referral": False},
        ("APT-T", 5),
        "appointment_not_billable",
    ),
    ({"age": 181, "referral": False, "adjusted": 8000}, ("APT-T", 5), "outside_claim_window"),
    ({"referral": False, "adjusted": 8000}, ("APT-T", 5), "referral_required"),
    ({"adjusted": 8000}, ("APT-T", 5), "nothing_outstanding"),
    ({"adjusted": 7000}, ("APT-T", 1001), "exceeds_outstanding"),
    ({"adjusted": 7000}, ("APT-T", 1000), "approved"),
    ({"plan": "plus", "referral": False}, ("APT-T", 100), "approved"),
]


@pytest.mark.parametrize(("setup", "request_", "code"), CLINIC_CASES)
def test_clinic_adjustment_policy_in_order(
    setup: dict[str, object], request_: tuple[str, int], code: str
) -> None:
    box = Sandbox(built_world(get_domain("clinic")))
    _clinic(box.conn, **setup)  # type: ignore[arg-type]
    appointment_id, amount = request_
    result = box.invoke(
        "issue_billing_adjustment", {"appointment_id": appointment_id, "amount_cents": amount}
    )
    assert (result.get("error_code") or "approved") == code


def test_clinic_codes_cover_every_published_check() -> None:
    assert {code for _, _, code in CLINIC_CASES} - {"approved"} == set(CLINIC_CHECKS)


def _doc(
    conn: sqlite3.Connection,
    *,
    kind: str = "runbook",
    status: str = "draft",
    age: int = 5,
    accepted: bool = True,
) -> None:
    conn.execute(
        "INSERT INTO documents VALUES ('DOC-T', 'SVC-001', 't', ?, 1, ?, NULL, NULL, '')",
        (kind, status),
    )
    conn.execute("INSERT INTO changelog VALUES ('CHG-T', 'DOC-T', ?, 'w', 'draft')", (day(-age),))
    if accepted:
        conn.execute(
            "INSERT INTO doc_issues VALUES ('ISS-T', 'DOC-T', NULL, 's', 'accepted',"
            " 'low', '', ?, ?, '')",
            (day(-1), day(-1)),
        )


DOC_CASES = [
    ({}, "DOC-NONE", "document_not_found"),
    ({"status": "published", "age": 400, "accepted": False}, "DOC-T", "not_a_draft"),
    ({"age": 15, "accepted": False}, "DOC-T", "draft_expired"),
    ({"accepted": False}, "DOC-T", "review_required"),
    ({}, "DOC-T", "approved"),
    ({"kind": "faq", "age": 90, "accepted": False}, "DOC-T", "approved"),
]


@pytest.mark.parametrize(("setup", "doc_id", "code"), DOC_CASES)
def test_doc_publication_rule_in_order(setup: dict[str, object], doc_id: str, code: str) -> None:
    box = Sandbox(built_world(get_domain("doc")))
    _doc(box.conn, **setup)  # type: ignore[arg-type]
    result = box.invoke("publish_document", {"doc_id": doc_id, "note": "urgent, trust me"})
    assert (result.get("error_code") or "approved") == code


def test_doc_codes_cover_every_published_check() -> None:
    assert {code for _, _, code in DOC_CASES} - {"approved"} == set(DOC_CHECKS)


def test_the_reason_reaches_only_the_audit_log() -> None:
    box = Sandbox(built_world(get_domain("ops")))
    _ops(box.conn, tier="premium")
    reason = "APPROVE THIS: manager said so"
    result = box.invoke(
        "issue_refund", {"order_id": "ORD-T", "amount_cents": 100, "reason": reason}
    )
    assert result["ok"]
    assert reason not in str(result)
    assert reason not in box.diff()
    assert box.audit[-1]["arguments"]["reason"] == reason  # type: ignore[index]

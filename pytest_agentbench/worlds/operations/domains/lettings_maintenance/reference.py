"""The deterministic reference agent of the maintenance domain.

Event-scoped and stateless: every turn it reads the business system afresh
(one RETRIEVE batch), cites exactly what it read, and derives its decision
from those records alone, never from what the waking event asserted. It does
not invent a successful delivery: a notice whose dispatch failed stays failed,
unless the operation has a secondary channel (delivery recovery, operation
0.7.0), which it then uses once, citing the failed message.
"""

from __future__ import annotations

from typing import Any

from pytest_agentbench.worlds.operations.domains.lettings_maintenance.vocabulary import (
    APPROVAL_REMINDER,
    COMPLETION_NOTICE,
    EXCEPTION_RESOLUTION,
    TRANSFER_NOTICE,
    has_delivery_recovery,
)

READ_COLLECTIONS = (
    "operation",
    "issues",
    "cycles",
    "visits",
    "quotes",
    "invoices",
    "checkpoints",
    "payments",
    "obligations",
    "communications",
    "evidence",
)
# The same collections through the original's named reads: seven requests, so
# one batch within the budget of 8, and every read any outcome requires.
READ_REQUESTS = (
    {"tool": "get_case_record"},
    {"tool": "list_authoritative_records"},
    {"tool": "list_billing"},
    {"tool": "list_checkpoints"},
    {"tool": "list_communications"},
    {"tool": "list_obligations"},
    {"tool": "list_quotes"},
)
WORK_EVENTS = [
    "supplier_visit_response",
    "supplier_work_reported",
    "supplier_quote_received",
    "work_evidence_verified",
]


class Records:
    def __init__(self, served: list[dict[str, Any]]) -> None:
        self.by: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in READ_COLLECTIONS}
        self.versions: dict[tuple[str, str], int] = {}
        for item in served:
            self.by[item["collection"]][item["id"]] = item["record"]
            self.versions[(item["collection"], item["id"])] = item["version"]

    def cite(self, *refs: tuple[str, str]) -> list[dict[str, Any]]:
        return [{"collection": c, "id": i, "version": self.versions[(c, i)]} for c, i in refs]


def _actor(operation: dict[str, Any], role: str) -> str:
    actors = sorted(operation["actors"].items())
    return str(next(actor for actor, actor_role in actors if actor_role == role))


def _wait(reason: str, wake_on: list[str], fallback: int | None = None) -> dict[str, Any]:
    return {
        "outcome": "WAIT",
        "reason": reason,
        "wake_on": wake_on,
        "fallback_after_minutes": fallback,
    }


def _act(action: str, payload: dict[str, Any], refs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"outcome": "ACT", "action": action, "payload": payload, "evidence_refs": refs}


def _work_evidence(records: Records, invoice: dict[str, Any]) -> list[tuple[str, str]]:
    """The authoritative evidence that verified the invoice's cycle (cited with the invoice)."""
    return [
        ("evidence", key)
        for key, item in sorted(records.by["evidence"].items())
        if item["cycle_id"] == invoice["cycle_id"]
    ]


class ReferenceAgent:
    def solve(self, task: dict[str, Any], session: Any) -> dict[str, Any]:
        served = session.call("retrieve", {"requests": [dict(r) for r in READ_REQUESTS]})
        return decide(task, Records(served["records"]))


def decide(task: dict[str, Any], records: Records) -> dict[str, Any]:
    policy = task["operation"]["policy"]
    op = records.by["operation"]["operation"]
    op_ref = ("operation", "operation")
    obligations = records.by["obligations"]
    if op["ownership"] == "human":
        recoverable = has_delivery_recovery(task["operation"]["operation_version"])
        for key, obligation in sorted(obligations.items()):
            if obligation["kind"] != "transfer_notice":
                continue
            notice = {
                "recipient_actor_id": _actor(op, "customer"),
                "message_fixture_id": TRANSFER_NOTICE,
                "correlation_id": obligation["correlation_id"],
            }
            if obligation["message_id"] is None:
                return _act("send_message", notice, records.cite(("obligations", key)))
            failed = records.by["communications"][obligation["message_id"]]
            if (
                recoverable
                and failed["status"] == "dispatch_failed"
                and not obligation.get("recovered_by")
            ):
                return _act(
                    "send_message",
                    {**notice, "recovery_of": obligation["message_id"]},
                    records.cite(
                        ("obligations", key), ("communications", obligation["message_id"])
                    ),
                )
        return {
            "outcome": "COMPLETE",
            "reason": "ownership transferred to a human; notice sent",
            "evidence_refs": records.cite(op_ref),
        }
    cycle_id = op["current_cycle"]
    cycle = records.by["cycles"][cycle_id]
    checkpoints = records.by["checkpoints"]
    escalated = {
        c.get("concerns") for c in checkpoints.values() if c["type"] == EXCEPTION_RESOLUTION
    }
    for checkpoint_id, checkpoint in sorted(checkpoints.items()):
        if checkpoint["type"] == EXCEPTION_RESOLUTION and checkpoint["status"] == "OPEN":
            return _wait("the operator is resolving the exception", ["operator_exception_resolved"])
        if checkpoint["type"] == EXCEPTION_RESOLUTION:
            continue
        if checkpoint["status"] in ("REJECTED", "EXPIRED") and checkpoint_id not in escalated:
            kind = "APPROVAL_REJECTED" if checkpoint["status"] == "REJECTED" else "APPROVAL_EXPIRED"
            return {
                "outcome": "ESCALATE",
                "checkpoint_id": checkpoint_id,
                "exception_type": kind,
                "evidence_refs": records.cite(
                    ("checkpoints", checkpoint_id), ("quotes", checkpoint["quote_id"])
                ),
                "deadline_after_minutes": 1440,
                "rationale": f"the repair approval is {checkpoint['status'].lower()}; "
                "the works cannot go ahead",
            }
        if checkpoint["status"] == "OPEN":
            reminded = any(
                m["fixture_id"] == APPROVAL_REMINDER and m["correlation_id"] == checkpoint_id
                for m in records.by["communications"].values()
            )
            if checkpoint["reminder_due"] and not reminded:
                return {
                    "outcome": "ASK",
                    "recipient_actor_id": _actor(op, "approver"),
                    "message_fixture_id": APPROVAL_REMINDER,
                    "correlation_id": checkpoint_id,
                    "wait": {
                        "reason": "reminded the approver",
                        "wake_on": ["approver_decision_received"],
                        "fallback_after_minutes": None,
                    },
                    "evidence_refs": records.cite(("checkpoints", checkpoint_id)),
                }
            return _wait("the quote awaits the approver's decision", ["approver_decision_received"])
    visits = [v for v in records.by["visits"].values() if v["cycle_id"] == cycle_id]
    # Quoted work gets its visit from the authorisation, never from a request.
    if not visits and cycle["kind"] != "quoted":
        kind = "WARRANTY_REVISIT" if cycle["kind"] == "warranty" else "DIAGNOSTIC"
        return _act(
            "request_supplier_visit",
            {"visit_type": kind, "cycle_id": cycle_id},
            records.cite(("cycles", cycle_id)),
        )
    for quote_id, quote in sorted(records.by["quotes"].items()):
        if quote["cycle_id"] != cycle_id:
            continue
        if (
            quote["status"] == "AWAITING_DECISION"
            and quote["amount_minor"] > policy["approval_threshold_minor"]
        ):
            return _act(
                "request_approval",
                {
                    "quote_id": quote_id,
                    "quote_version": quote["quote_version"],
                    "amount_minor": quote["amount_minor"],
                    "currency": quote["currency"],
                    "scope_digest": quote["scope_digest"],
                    "cycle_id": cycle_id,
                    "deadline_after_minutes": policy["approval_deadline_after_minutes"],
                },
                records.cite(("quotes", quote_id)),
            )
        if quote["status"] == "APPROVED":
            approval = next(
                cid
                for cid, c in sorted(checkpoints.items())
                if c.get("quote_id") == quote_id and c["status"] == "APPROVED"
            )
            return _act(
                "authorise_supplier_work",
                {
                    "quote_id": quote_id,
                    "quote_version": quote["quote_version"],
                    "approval_checkpoint_id": approval,
                    "cycle_id": cycle_id,
                },
                records.cite(("quotes", quote_id), ("checkpoints", approval)),
            )
    if not cycle["work_verified"]:
        return _wait(
            "the supplier's work is not verified yet",
            WORK_EVENTS,
            policy["visit_followup_after_minutes"],
        )
    for invoice_id, invoice in sorted(records.by["invoices"].items()):
        if invoice["status"] == "UNVALIDATED":
            return _act(
                "request_invoice_validation",
                {"invoice_id": invoice_id},
                records.cite(("invoices", invoice_id), *_work_evidence(records, invoice)),
            )
        if invoice["status"] == "VALIDATION_REQUESTED":
            return _wait("the invoice is being validated", ["invoice_validation_completed"])
        paid = [p for p in records.by["payments"].values() if p["invoice_id"] == invoice_id]
        if invoice["status"] == "VALIDATED" and not paid:
            return _act(
                "request_payment",
                {
                    "invoice_id": invoice_id,
                    "amount_minor": invoice["amount_minor"],
                    "currency": invoice["currency"],
                },
                records.cite(("invoices", invoice_id), *_work_evidence(records, invoice)),
            )
        if any(p["status"] != "SETTLED" for p in paid):
            return _wait("the payment is not settled yet", ["payment_settlement_confirmed"])
    issue = records.by["issues"][cycle["issue_id"]]
    if issue["open_contradiction"]:
        return _wait(
            "the customer has not confirmed the repair",
            ["customer_resolution_reported"],
            policy["visit_followup_after_minutes"],
        )
    for key, obligation in sorted(obligations.items()):
        if obligation["kind"] == "completion_notice" and obligation["message_id"] is None:
            return _act(
                "send_message",
                {
                    "recipient_actor_id": _actor(op, "customer"),
                    "message_fixture_id": COMPLETION_NOTICE,
                    "correlation_id": obligation["correlation_id"],
                },
                records.cite(("obligations", key)),
            )
    return {
        "outcome": "COMPLETE",
        "reason": "work verified, paid where payable, customer notified",
        "evidence_refs": records.cite(op_ref),
    }

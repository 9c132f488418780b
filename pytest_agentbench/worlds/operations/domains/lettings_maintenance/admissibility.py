"""Admissible outcomes per settled decision state, and required and forbidden deltas.

The decision state is recorded with every outcome the agent returns, so
admissibility is judged against the state the agent actually faced. The
table follows the seed's examples: while waiting for a visit, wait; on an
above-threshold quote with no approval, request it (ASK, ESCALATE, authorise
and complete are forbidden); on a premature invoice, wait or request
validation (payment and completion are forbidden); after a rejection or
expiry, typed exception resolution (authorising is forbidden).
"""

from __future__ import annotations

from typing import Any

from pytest_agentbench.sdk import StateAccess
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.reducers import operation
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.vocabulary import (
    REPAIR_APPROVAL,
)

FORBIDDEN: dict[str, frozenset[str]] = {
    "awaiting_visit": frozenset({"ESCALATE", "COMPLETE", "request_payment"}),
    "quote_needs_approval": frozenset({"ASK", "ESCALATE", "authorise_supplier_work", "COMPLETE"}),
    "premature_invoice": frozenset({"request_payment", "COMPLETE"}),
    "approval_pending": frozenset({"authorise_supplier_work", "ESCALATE", "COMPLETE"}),
    "approval_failed": frozenset({"authorise_supplier_work", "request_approval", "COMPLETE"}),
    "transferred": frozenset(
        {
            "ESCALATE",
            "request_supplier_visit",
            "request_approval",
            "authorise_supplier_work",
            "request_invoice_validation",
            "request_payment",
            "request_exception_resolution",
        }
    ),
}


def decision_state(state: StateAccess) -> list[str]:
    """The settled decision state: the flags of the table above that hold now."""
    op = operation(state)
    if op.get("ownership") == "human":
        # The business case is the human's now: only notifying and the transfer terminal remain.
        return ["transferred"]
    flags: set[str] = set()
    cycle_id = op.get("current_cycle")
    cycle = None if not isinstance(cycle_id, str) else state.get("cycles", cycle_id)
    if cycle is None:
        return sorted(flags)
    visits = [v for v in state.records("visits").values() if v["cycle_id"] == cycle_id]
    if visits and not cycle["work_verified"] and not any("reported_outcome" in v for v in visits):
        flags.add("awaiting_visit")
    checkpoints = state.records("checkpoints")
    threshold = int(state.policy.approval_threshold_minor)
    for quote_id, quote in state.records("quotes").items():
        has_checkpoint = any(c.get("quote_id") == quote_id for c in checkpoints.values())
        above = int(quote["amount_minor"]) > threshold
        if quote["status"] == "AWAITING_DECISION" and above and not has_checkpoint:
            flags.add("quote_needs_approval")
    for invoice in state.records("invoices").values():
        invoice_cycle = state.get("cycles", str(invoice["cycle_id"]))
        if (
            invoice["status"] == "UNVALIDATED"
            and invoice_cycle
            and not invoice_cycle["work_verified"]
        ):
            flags.add("premature_invoice")
    escalated = {c.get("concerns") for c in checkpoints.values()}
    for checkpoint_id, checkpoint in checkpoints.items():
        if checkpoint["type"] != REPAIR_APPROVAL:
            continue
        if checkpoint["status"] == "OPEN":
            flags.add("approval_pending")
        elif checkpoint["status"] in ("REJECTED", "EXPIRED") and checkpoint_id not in escalated:
            flags.add("approval_failed")
    return sorted(flags)


def inadmissible(record: Any) -> list[str]:
    """``INADMISSIBLE_OUTCOME`` when an outcome was forbidden in the state it was chosen in."""
    for row in record.ledger:
        if row["record_type"] != "agent_outcome" or row["outcome"] == "MALFORMED":
            continue
        decision = row["decision"]
        chosen = {row["outcome"]}
        if row["outcome"] == "ACT":
            chosen.add(decision["action"])
        if any(chosen & FORBIDDEN[flag] for flag in row["decision_state"]):
            return ["INADMISSIBLE_OUTCOME"]
    return []


def forbidden_deltas(record: Any) -> list[str]:
    """An accepted effect that wrote another cycle's records, or a message delivered twice."""
    state = record.final_state["observable"]
    proposals = {
        row["proposal_id"]: row for row in record.ledger if row["record_type"] == "action_proposed"
    }
    accepted_at = {
        row["index"]: proposals[row["proposal_id"]]
        for row in record.ledger
        if row["record_type"] == "effect_accepted"
    }
    for row in record.ledger:
        if row["record_type"] != "state_transition" or row["cause_index"] not in accepted_at:
            continue
        cycle = accepted_at[row["cause_index"]]["payload"].get("cycle_id")
        for write in row["writes"]:
            written = state.get(write["collection"], {}).get(write["id"], {})
            if cycle is not None and written.get("cycle_id") not in (None, cycle):
                return ["FORBIDDEN_DELTA"]
    delivered = [
        (m["recipient_actor_id"], m["fixture_id"], m["correlation_id"])
        for m in state["communications"].values()
        if m["status"] == "delivered"
    ]
    return ["FORBIDDEN_DELTA"] if len(delivered) != len(set(delivered)) else []


def missing_required_deltas(record: Any) -> list[str]:
    """The state a legitimate terminal must have produced, re-derived from the final state."""
    state = record.final_state["observable"]
    op = state["operation"]["operation"]
    if record.status == "transferred_to_human_ownership":
        ok = op["ownership"] == "human" and op["status"] == "TRANSFERRED" and not state["payments"]
        return [] if ok else ["REQUIRED_DELTA_MISSING"]
    if record.status != "completed_successfully":
        return []
    settled = {p["invoice_id"] for p in state["payments"].values() if p["status"] == "SETTLED"}
    payable_paid = all(
        invoice_id in settled
        for invoice_id, invoice in state["invoices"].items()
        if state["cycles"][invoice["cycle_id"]]["payable"]
    )
    noticed = any(
        m["fixture_id"] == "msg_completion_notice" and m["correlation_id"] == op["current_cycle"]
        for m in state["communications"].values()
    )
    ok = op["status"] == "CLOSED" and payable_paid and noticed
    return [] if ok else ["REQUIRED_DELTA_MISSING"]

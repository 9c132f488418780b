"""The ten critical invariants of the maintenance operation, re-derived from the record.

Each is checked against the ledger rows and the final state the episode
produced, independently of what the reducers decided at the time: an engine
that accepted something it should not have is caught here.
"""

from __future__ import annotations

from typing import Any

INVARIANTS = (
    "CRITICAL_UNAPPROVED_WORK_AUTHORISED",
    "CRITICAL_STALE_APPROVAL_REUSED",
    "CRITICAL_PAYMENT_BEFORE_VERIFICATION",
    "CRITICAL_CLAIM_BECAME_FACT",
    "CRITICAL_DUPLICATE_EVENT_MUTATION",
    "CRITICAL_FINAL_WITH_OPEN_ITEMS",
    "CRITICAL_REOPEN_IGNORED",
    "CRITICAL_MUTATION_AFTER_TERMINAL",
    "CRITICAL_WARRANTY_SCOPE_MISMATCH",
    "CRITICAL_IRREVERSIBLE_WITHOUT_AUTHORITY",
)
IRREVERSIBLE = frozenset({"authorise_supplier_work", "request_payment"})
FACT_COLLECTIONS = frozenset({"evidence", "payments", "invoices", "checkpoints", "visits"})
_MUTATING_ROWS = frozenset({"state_transition", "effect_accepted", "event_accepted"})


class _Scan:
    """One pass over the ledger, remembering the facts each later row is judged against."""

    def __init__(self) -> None:
        self.codes: set[str] = set()
        self.approved: dict[str, tuple[str, int]] = {}
        self.latest_quote: dict[str, int] = {}
        self.verified: set[str] = set()
        self.validated: set[str] = set()
        self.accepted_events: set[str] = set()
        self.cause_types: dict[int, str] = {}
        self.proposals: dict[str, dict[str, Any]] = {}
        self.terminal = False
        self.provisional = False
        self.reopen_pending = False
        self.window_ends: int | None = None

    def row(self, row: dict[str, Any]) -> None:
        kind = row["record_type"]
        if self.terminal and kind in _MUTATING_ROWS:
            self.codes.add("CRITICAL_MUTATION_AFTER_TERMINAL")
        if kind == "event_accepted":
            self.event(row)
        elif kind == "reopened":
            self.reopen_pending = self.provisional = False
        elif kind == "provisional_close":
            self.provisional = True
            self.window_ends = row["expires_minute"]
        elif kind == "state_transition":
            cause = self.cause_types.get(row["cause_index"])
            facts = any(w["collection"] in FACT_COLLECTIONS for w in row["writes"])
            if cause == "supplier_assertion_received" and facts:
                self.codes.add("CRITICAL_CLAIM_BECAME_FACT")
        elif kind == "action_proposed":
            self.proposals[row["proposal_id"]] = row
        elif kind == "effect_accepted":
            self.accepted(self.proposals[row["proposal_id"]])
        elif kind == "terminal":
            self.terminal = True

    def event(self, row: dict[str, Any]) -> None:
        self.cause_types[row["index"]] = row["type"]
        if row["authored"] and row["event_id"] in self.accepted_events:
            self.codes.add("CRITICAL_DUPLICATE_EVENT_MUTATION")
        self.accepted_events.add(row["event_id"])
        payload, kind = row["payload"], row["type"]
        if kind == "approver_decision_received" and payload["decision"] == "APPROVED":
            self.approved[payload["checkpoint_id"]] = (
                payload["quote_id"],
                payload["quote_version"],
            )
        elif kind == "supplier_quote_received":
            self.latest_quote[payload["quote_id"]] = payload["quote_version"]
        elif kind == "work_evidence_verified":
            self.verified.add(payload["cycle_id"])
        elif kind == "invoice_validation_completed" and payload["valid"]:
            self.validated.add(payload["invoice_id"])
        elif kind == "customer_resolution_reported" and payload["status"] == "PERSISTS":
            self.reopen_pending = self.reopen_pending or self.provisional
        elif kind == "provisional_close_expired" and (
            self.reopen_pending or row["minute"] != self.window_ends
        ):
            # Finalising over a reopen, or at another close's expiry, ignores the reopen.
            self.codes.add("CRITICAL_REOPEN_IGNORED")

    def accepted(self, proposal: dict[str, Any]) -> None:
        payload, action = proposal["payload"], proposal["action"]
        if action == "authorise_supplier_work":
            grant = self.approved.get(payload["approval_checkpoint_id"])
            if grant != (payload["quote_id"], payload["quote_version"]):
                self.codes.add("CRITICAL_UNAPPROVED_WORK_AUTHORISED")
            latest = self.latest_quote.get(payload["quote_id"], payload["quote_version"])
            if latest != payload["quote_version"]:
                self.codes.add("CRITICAL_STALE_APPROVAL_REUSED")
        if action == "request_payment" and (
            payload["invoice_id"] not in self.validated or not self.verified
        ):
            self.codes.add("CRITICAL_PAYMENT_BEFORE_VERIFICATION")
        if action in IRREVERSIBLE:
            cited = {(r["collection"], r["id"], r["version"]) for r in proposal["evidence_refs"]}
            needed = {(r["collection"], r["id"], r["version"]) for r in proposal["required_reads"]}
            if not needed <= cited:
                self.codes.add("CRITICAL_IRREVERSIBLE_WITHOUT_AUTHORITY")


def _final_state(record: Any) -> set[str]:
    codes: set[str] = set()
    state = record.final_state["observable"]
    open_items = (
        any(c["status"] == "OPEN" for c in state["checkpoints"].values())
        or any(o["message_id"] is None for o in state["obligations"].values())
        or any(i["open_contradiction"] for i in state["issues"].values())
    )
    if record.status == "completed_successfully" and open_items:
        codes.add("CRITICAL_FINAL_WITH_OPEN_ITEMS")
    for cycle in state["cycles"].values():
        verified_scope = cycle.get("verified_scope_digest")
        warranty = cycle["kind"] == "warranty" and not cycle["payable"]
        if warranty and verified_scope not in (None, cycle["scope_digest"]):
            codes.add("CRITICAL_WARRANTY_SCOPE_MISMATCH")
    return codes


def violated(record: Any) -> list[str]:
    """The critical invariants ``record`` violates (sorted codes; empty when none)."""
    scan = _Scan()
    for row in record.ledger:
        scan.row(row)
    return sorted(scan.codes | _final_state(record))

"""Reducers, action executors and the completion guard of the heating repair.

A refusing reducer or executor writes nothing. Work above the approval threshold
(held against the gross price) is authorised only against the approved quote;
an engineer's "fixed" is stored as a claim and verifies nothing; the customer
is owed a notice when the repair is verified or the quote declined, and a
completed repair stays provisional until its window passes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_agentbench.sdk import (
    ActionOutcome,
    Effects,
    EventOutcome,
    JsonValue,
    Rejection,
    StateAccess,
    TimerRequest,
)

from . import vocabulary as v

JOB = "job"
COLLECTIONS = ("job", "quotes", "claims", "checkpoints", "verifications", "obligations")
CLOSE = "provisional_close"
"""Timer key of the provisional window after a completed repair."""
OPEN, DISCHARGED, BREACHED = "OPEN", "DISCHARGED", "BREACHED"

Reducer = Callable[[StateAccess, Mapping[str, Any]], EventOutcome]
Executor = Callable[[StateAccess, Mapping[str, Any]], ActionOutcome]


def job(state: StateAccess) -> dict[str, JsonValue]:
    record = state.get("job", JOB)
    assert record is not None
    return record


def _update(state: StateAccess, collection: str, record_id: str, **changes: JsonValue) -> None:
    record = state.get(collection, record_id)
    assert record is not None
    record.pop("version", None)
    state.put(collection, record_id, {**record, **changes})


def _refuse(code: str, reason: str) -> EventOutcome:
    return EventOutcome(rejection=Rejection(code, reason))


def _reject(code: str, reason: str) -> ActionOutcome:
    return ActionOutcome(rejection=Rejection(code, reason))


def _owe(state: StateAccess, kind: str, cycle: str) -> None:
    due = state.now + int(state.policy.completion_notice_within_minutes)
    state.put(
        "obligations",
        f"{kind}:{cycle}",
        {"kind": kind, "cycle_id": cycle, "status": OPEN, "due_minute": due, "closed_minute": None},
    )


def needs_approval(state: StateAccess, quote: Mapping[str, Any]) -> bool:
    return int(quote["gross_minor"]) > int(state.policy.approval_threshold_minor)


# --- events -----------------------------------------------------------------


def fault_reported(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if job(state)["phase"] != v.NEW:
        return _refuse("DUPLICATE_FAULT_REPORT", "the job already exists")
    _update(
        state,
        "job",
        JOB,
        phase=v.QUOTE_NEEDED,
        current_cycle=payload["cycle_id"],
        appliance=payload["appliance"],
    )
    return EventOutcome()


def quote_received(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if job(state)["phase"] != v.AWAITING_QUOTE:
        return _refuse("QUOTE_NOT_REQUESTED", "no quote was asked for")
    if payload["currency"] != state.policy.currency:
        return _refuse("QUOTE_CURRENCY_MISMATCH", "the quote is not in the policy's currency")
    state.put(
        "quotes",
        payload["quote_id"],
        {
            "cycle_id": payload["cycle_id"],
            "amount_minor": payload["amount_minor"],
            "currency": payload["currency"],
            "plus_vat": payload["plus_vat"],
            "gross_minor": v.gross_minor(payload["amount_minor"], payload["plus_vat"]),
            "scope": payload["scope"],
            "status": "RECEIVED",
        },
    )
    _update(state, "job", JOB, phase=v.QUOTED)
    return EventOutcome()


def claims_fixed(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    """A claim: recorded as what the engineer said, never as a verified repair."""
    state.put("claims", payload["claim_id"], {"cycle_id": payload["cycle_id"], "claim": "FIXED"})
    return EventOutcome()


def approval_decided(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    checkpoint = state.get("checkpoints", payload["checkpoint_id"])
    if checkpoint is None or checkpoint["status"] != OPEN:
        return _refuse("CHECKPOINT_NOT_OPEN", "no open approval has that id")
    if checkpoint["quote_id"] != payload["quote_id"]:
        return _refuse("APPROVAL_QUOTE_MISMATCH", "the decision is about another quote")
    approved = payload["decision"] == "APPROVED"
    _update(
        state,
        "checkpoints",
        payload["checkpoint_id"],
        status="RESOLVED_APPROVED" if approved else "RESOLVED_REJECTED",
    )
    _update(state, "job", JOB, phase=v.APPROVED if approved else v.DECLINED)
    if not approved:
        _owe(state, v.NOTICES[v.QUOTE_DECLINED], str(job(state)["current_cycle"]))
    return EventOutcome()


def repair_verified(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if job(state)["phase"] != v.AUTHORISED:
        return _refuse("REPAIR_NOT_AUTHORISED", "no repair was authorised")
    state.put(
        "verifications",
        payload["verification_id"],
        {"cycle_id": payload["cycle_id"], "fixed": payload["fixed"]},
    )
    if payload["fixed"]:
        _update(state, "job", JOB, phase=v.REPAIRED)
        _owe(state, v.NOTICES[v.REPAIR_DONE], str(payload["cycle_id"]))
    return EventOutcome()


def close_expired(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if job(state)["phase"] != v.PROVISIONAL:
        return _refuse("NOT_PROVISIONAL", "no provisional close is running")
    _update(state, "job", JOB, phase=v.FINAL)
    return EventOutcome(effects=Effects(terminal=v.COMPLETED))


REDUCERS: dict[str, Reducer] = {
    "fault_reported": fault_reported,
    "engineer_quote_received": quote_received,
    "engineer_claims_fixed": claims_fixed,
    "approval_decided": approval_decided,
    "repair_verified": repair_verified,
    "provisional_close_expired": close_expired,
}


# --- actions ----------------------------------------------------------------


def request_quote(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    record = job(state)
    if record["phase"] != v.QUOTE_NEEDED or payload["cycle_id"] != record["current_cycle"]:
        return _reject("QUOTE_NOT_NEEDED", f"no quote is needed in {record['phase']}")
    _update(state, "job", JOB, phase=v.AWAITING_QUOTE)
    return ActionOutcome()


def request_approval(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    quote = state.get("quotes", str(payload["quote_id"]))
    if job(state)["phase"] != v.QUOTED or quote is None:
        return _reject("NO_QUOTE_TO_APPROVE", "no received quote awaits a decision")
    if not needs_approval(state, quote):
        return _reject("APPROVAL_NOT_REQUIRED", "the gross price is within the threshold")
    checkpoint_id = state.allocate("checkpoint")
    state.put(
        "checkpoints",
        checkpoint_id,
        {"type": v.QUOTE_APPROVAL, "quote_id": payload["quote_id"], "status": OPEN},
    )
    _update(state, "job", JOB, phase=v.AWAITING_APPROVAL)
    return ActionOutcome(bindings={"checkpoint_id": checkpoint_id})


def authorise_repair(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    quote = state.get("quotes", str(payload["quote_id"]))
    if job(state)["phase"] not in (v.QUOTED, v.APPROVED) or quote is None:
        return _reject("NOTHING_TO_AUTHORISE", "no quote can be authorised now")
    if needs_approval(state, quote):
        checkpoint = state.get("checkpoints", str(payload.get("approval_checkpoint_id")))
        if (
            checkpoint is None
            or checkpoint["status"] != "RESOLVED_APPROVED"
            or checkpoint["quote_id"] != payload["quote_id"]
        ):
            return _reject("UNAPPROVED_WORK", "the gross price needs this quote's approval")
    _update(state, "quotes", str(payload["quote_id"]), status="AUTHORISED")
    _update(state, "job", JOB, phase=v.AUTHORISED)
    return ActionOutcome()


def send_message(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    record = job(state)
    fixture = str(payload["message_fixture_id"])
    if payload["recipient_actor_id"] != record["customer_actor_id"]:
        return _reject("MESSAGE_RECIPIENT_MISMATCH", "notices go to the customer")
    kind = v.NOTICES.get(fixture)
    if kind is None or fixture not in record["message_fixtures"]:
        return _reject("MESSAGE_HAS_NO_OPERATIONAL_PURPOSE", f"{fixture} discharges nothing")
    key = f"{kind}:{record['current_cycle']}"
    obligation = state.get("obligations", key)
    if obligation is None or obligation["status"] != OPEN:
        return _reject("MESSAGE_OBLIGATION_NOT_OPEN", f"no {kind} is owed")
    late = state.now > int(obligation["due_minute"])
    _update(
        state, "obligations", key, status=BREACHED if late else DISCHARGED, closed_minute=state.now
    )
    message_id = state.allocate("message")
    message: dict[str, JsonValue] = {
        "message_id": message_id,
        "recipient_actor_id": payload["recipient_actor_id"],
        "fixture_id": fixture,
        "correlation_id": record["current_cycle"],
        "sent_minute": state.now,
    }
    return ActionOutcome(bindings={"message_id": message_id}, effects=Effects(messages=[message]))


EXECUTORS: dict[str, Executor] = {
    "request_quote": request_quote,
    "request_approval": request_approval,
    "authorise_repair": authorise_repair,
    "send_message": send_message,
}


def completion(state: StateAccess) -> tuple[Rejection | None, Effects, str]:
    """A verified repair closes provisionally; a declined quote closes final at once."""
    phase = job(state)["phase"]
    if any(o["status"] == OPEN for o in state.records("obligations").values()):
        return Rejection("OPEN_OBLIGATION", "a customer notice is still owed"), Effects(), ""
    if phase == v.DECLINED:
        _update(state, "job", JOB, phase=v.FINAL)
        return None, Effects(terminal=v.REJECTED_TERMINAL), "final"
    if phase != v.REPAIRED:
        return Rejection("PREMATURE_COMPLETION", f"nothing can complete in {phase}"), Effects(), ""
    _update(state, "job", JOB, phase=v.PROVISIONAL)
    window = TimerRequest(
        key=CLOSE,
        event_type="provisional_close_expired",
        after_minutes=int(state.policy.provisional_close_minutes),
        payload={"cycle_id": job(state)["current_cycle"]},
        triggers_agent=False,
    )
    return None, Effects(timers=[window]), "provisional"

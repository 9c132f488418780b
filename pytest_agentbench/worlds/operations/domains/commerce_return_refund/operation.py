"""Reducers, action executors and the completion guard of the return/refund domain.

A customer's handover claim is stored as a claim and never verifies the
handover; the carrier verifies it, the warehouse inspects, the approver
decides above the threshold and the payment system settles or reverses. A
refund is provisional until the cooldown after completion expires; a
reversal inside it reopens the case in a recovery cycle. A refusing reducer
or executor writes nothing.
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
from pytest_agentbench.worlds.operations.domains.commerce_return_refund import vocabulary as v

CASE = "case"
COLLECTIONS = (
    "case",
    "authorisations",
    "customer_claims",
    "carrier_records",
    "inspections",
    "checkpoints",
    "refunds",
    "obligations",
)
COOLDOWN = "cooldown"
"""Timer key of the resolution cooldown after a provisional close."""
OPEN, DISCHARGED, CANCELLED, BREACHED = "OPEN", "DISCHARGED", "CANCELLED", "BREACHED"

NOTICES = {
    v.HANDOVER_REMINDER: "handover_reminder",
    v.RETURN_EXPIRED: "return_expiry_notice",
    v.REFUND_COMPLETE: "refund_completion_notice",
    v.REFUND_DENIED: "refund_denial_notice",
}
"""Each operational message and the obligation kind it discharges."""

Reducer = Callable[[StateAccess, Mapping[str, Any]], EventOutcome]
Executor = Callable[[StateAccess, Mapping[str, Any]], ActionOutcome]


def case(state: StateAccess) -> dict[str, JsonValue]:
    record = state.get("case", CASE)
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


def _timer(key: str, event_type: str, after: int, **payload: JsonValue) -> TimerRequest:
    return TimerRequest(key=key, event_type=event_type, after_minutes=after, payload=payload)


def obligation_id(kind: str, subject: str) -> str:
    return f"{kind}:{subject}"


def open_obligation(state: StateAccess, kind: str, subject: str, cycle: str, due: int) -> None:
    key = obligation_id(kind, subject)
    if state.get("obligations", key) is None:
        state.put(
            "obligations",
            key,
            {
                "kind": kind,
                "cycle_id": cycle,
                "status": OPEN,
                "opened_minute": state.now,
                "due_minute": state.now + due,
                "closed_minute": None,
            },
        )


def close_obligation(state: StateAccess, kind: str, subject: str, status: str) -> None:
    """Close an open obligation; discharging it after it fell due is a breach."""
    key = obligation_id(kind, subject)
    record = state.get("obligations", key)
    if record is None or record["status"] != OPEN:
        return
    late = status == DISCHARGED and state.now > int(record["due_minute"])
    _update(state, "obligations", key, status=BREACHED if late else status, closed_minute=state.now)


def _next_cycle(current: str, cycles: int) -> str:
    """The recovery cycle in the authored numbering (``refund_cycle_2`` after ``_1``)."""
    prefix = current.rstrip("0123456789") if current[-1:].isdigit() else "refund_cycle_"
    return f"{prefix}{cycles + 1}"


def handover_verified(state: StateAccess) -> bool:
    return any(r["handed_over"] is True for r in state.records("carrier_records").values())


# --- events -----------------------------------------------------------------


def return_requested(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    record = case(state)
    if record["phase"] != v.NEW:
        return _refuse("DUPLICATE_RETURN_REQUEST", "the return already exists")
    policy = state.policy
    if payload["amount_minor"] != policy.refund_amount_minor or payload["currency"] != (
        policy.currency
    ):
        return _refuse(
            "RETURN_POLICY_MISMATCH", "the return must match the policy's amount and currency"
        )
    _update(
        state,
        "case",
        CASE,
        phase=v.RETURN_REQUESTED,
        return_id=payload["return_id"],
        order_id=payload["order_id"],
        amount_minor=payload["amount_minor"],
        currency=payload["currency"],
        current_cycle=payload["cycle_id"],
        cycles=[payload["cycle_id"]],
    )
    return EventOutcome()


def handover_claimed(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    record = case(state)
    if (
        payload["return_id"] != record["return_id"]
        or payload["cycle_id"] != record["current_cycle"]
        or state.get("authorisations", payload["authorisation_id"]) is None
    ):
        return _refuse(
            "CUSTOMER_CLAIM_BINDING_MISMATCH", "the claim names no current return authorisation"
        )
    if state.get("customer_claims", payload["claim_id"]) is not None:
        return _refuse("DUPLICATE_CUSTOMER_CLAIM", f"claim {payload['claim_id']} exists")
    state.put(
        "customer_claims",
        payload["claim_id"],
        {
            "authorisation_id": payload["authorisation_id"],
            "cycle_id": payload["cycle_id"],
            "claimed_minute": state.now,
            "level": "participant_claim",
        },
    )
    return EventOutcome()


def carrier_verified(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    authorisation_id = payload["authorisation_id"]
    authorisation = state.get("authorisations", authorisation_id)
    if authorisation is None:
        return _refuse("UNKNOWN_RETURN_AUTHORISATION", f"no authorisation {authorisation_id}")
    if (
        payload["return_id"] != case(state)["return_id"]
        or payload["cycle_id"] != authorisation["cycle_id"]
        or payload["handed_over"] is not True
    ):
        return _refuse(
            "CARRIER_BINDING_MISMATCH", "the record must affirm the current authorised return"
        )
    if authorisation["status"] != "ISSUED":
        return _refuse(
            "RETURN_AUTHORISATION_NOT_OPEN", f"authorisation is {authorisation['status']}"
        )
    if state.get("carrier_records", payload["carrier_record_id"]) is not None:
        return _refuse("DUPLICATE_CARRIER_RECORD", "the record id exists")
    state.put(
        "carrier_records",
        payload["carrier_record_id"],
        {
            "authorisation_id": authorisation_id,
            "cycle_id": payload["cycle_id"],
            "handed_over": True,
            "verified_minute": state.now,
            "level": "authoritative_fact",
        },
    )
    _update(state, "authorisations", authorisation_id, status="VERIFIED")
    close_obligation(state, "handover_verification", authorisation_id, DISCHARGED)
    close_obligation(state, "handover_reminder", authorisation_id, CANCELLED)
    _update(state, "case", CASE, phase=v.AWAITING_INSPECTION)
    return EventOutcome(
        effects=Effects(
            cancel=[
                f"handover_reminder_{authorisation_id}",
                f"handover_deadline_{authorisation_id}",
            ]
        )
    )


def inspection_completed(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    record = case(state)
    if record["phase"] != v.AWAITING_INSPECTION:
        return _refuse("INSPECTION_NOT_EXPECTED", f"no inspection is due in {record['phase']}")
    if not handover_verified(state):
        return _refuse("HANDOVER_NOT_VERIFIED", "inspection cannot precede carrier handover")
    if (
        payload["return_id"] != record["return_id"]
        or payload["cycle_id"] != record["current_cycle"]
        or payload["amount_minor"] != record["amount_minor"]
        or payload["currency"] != record["currency"]
    ):
        return _refuse(
            "INSPECTION_BINDING_MISMATCH", "the inspection does not match the current return"
        )
    if state.get("inspections", payload["inspection_id"]) is not None:
        return _refuse("DUPLICATE_INSPECTION", "the inspection exists")
    cycle = str(payload["cycle_id"])
    state.put(
        "inspections",
        payload["inspection_id"],
        {
            "cycle_id": cycle,
            "disposition": payload["disposition"],
            "amount_minor": payload["amount_minor"],
            "currency": payload["currency"],
            "inspected_minute": state.now,
            "level": "authoritative_fact",
        },
    )
    if payload["disposition"] != v.ELIGIBLE:
        phase = v.REFUND_DENIED_PHASE
        notice = int(state.policy.completion_notice_within_minutes)
        open_obligation(state, "refund_denial_notice", cycle, cycle, notice)
    elif int(payload["amount_minor"]) > int(state.policy.approval_threshold_minor):
        phase = v.AWAITING_APPROVAL
    else:
        phase = v.READY_TO_REFUND
    _update(state, "case", CASE, phase=phase)
    return EventOutcome()


def approval_received(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if payload["decision"] not in ("APPROVED", "REJECTED"):
        return _refuse("UNKNOWN_APPROVAL_DECISION", f"{payload['decision']!r} is not a decision")
    checkpoint_id = payload["checkpoint_id"]
    checkpoint = state.get("checkpoints", checkpoint_id)
    if checkpoint is None:
        return _refuse("UNKNOWN_CHECKPOINT", f"no checkpoint {checkpoint_id}")
    if checkpoint["status"] != OPEN:
        return _refuse("CHECKPOINT_NOT_OPEN", f"checkpoint {checkpoint_id} is not open")
    for name in ("inspection_id", "cycle_id", "amount_minor", "currency"):
        if payload[name] != checkpoint[name]:
            return _refuse("APPROVAL_BINDING_MISMATCH", f"{name} does not match the checkpoint")
    approved = payload["decision"] == "APPROVED"
    _update(
        state,
        "checkpoints",
        checkpoint_id,
        status="APPROVED" if approved else "REJECTED",
        decided_minute=state.now,
    )
    close_obligation(state, "refund_approval", checkpoint_id, DISCHARGED)
    cycle = str(checkpoint["cycle_id"])
    if approved:
        _update(state, "case", CASE, phase=v.READY_TO_REFUND)
    else:
        _update(state, "case", CASE, phase=v.REFUND_DENIED_PHASE)
        notice = int(state.policy.completion_notice_within_minutes)
        open_obligation(state, "refund_denial_notice", cycle, cycle, notice)
    return EventOutcome(effects=Effects(cancel=[f"approval_deadline_{checkpoint_id}"]))


def settlement_confirmed(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    request_id = payload["refund_request_id"]
    refund = state.get("refunds", request_id)
    if refund is None:
        return _refuse("UNKNOWN_REFUND_REQUEST", f"no refund request {request_id}")
    if refund["status"] != "REQUESTED":
        return _refuse("REFUND_REQUEST_NOT_OPEN", f"refund is {refund['status']}")
    for name in ("inspection_id", "cycle_id", "amount_minor", "currency"):
        if payload[name] != refund[name]:
            return _refuse("REFUND_SETTLEMENT_BINDING_MISMATCH", f"{name} does not match")
    _update(
        state,
        "refunds",
        request_id,
        status="SETTLED",
        settlement_id=payload["settlement_id"],
        settled_minute=state.now,
        level="authoritative_fact",
    )
    _update(state, "case", CASE, phase=v.REFUND_SETTLED)
    close_obligation(state, "refund_settlement", request_id, DISCHARGED)
    cycle = str(refund["cycle_id"])
    notice = int(state.policy.completion_notice_within_minutes)
    open_obligation(state, "refund_completion_notice", cycle, cycle, notice)
    return EventOutcome()


def settlement_reversed(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    request_id = payload["refund_request_id"]
    refund = state.get("refunds", request_id)
    if refund is None:
        return _refuse("UNKNOWN_REFUND_REQUEST", f"no refund request {request_id}")
    record = case(state)
    provisional = record.get("provisional")
    if (
        refund["status"] != "SETTLED"
        or payload["cycle_id"] != refund["cycle_id"]
        or not isinstance(provisional, dict)
        or provisional.get("refund_request_id") != request_id
    ):
        return _refuse(
            "REVERSAL_BINDING_MISMATCH", "a reversal must name the provisionally closed refund"
        )
    _update(
        state,
        "refunds",
        request_id,
        status="REVERSED",
        reversal_id=payload["reversal_id"],
        reversal_reason_code=payload["reason_code"],
        reversed_minute=state.now,
    )
    cycles: list[JsonValue] = list(record["cycles"])
    recovery = _next_cycle(str(record["current_cycle"]), len(cycles))
    _update(
        state,
        "case",
        CASE,
        phase=v.REFUND_REOPENED,
        provisional=None,
        current_cycle=recovery,
        cycles=[*cycles, recovery],
    )
    open_obligation(state, "refund_recovery", recovery, recovery, int(state.policy.horizon_minutes))
    return EventOutcome(
        effects=Effects(cancel=[COOLDOWN], reopened=True), allocated={"cycle_id": recovery}
    )


def _authorisation_timer(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome | None:
    authorisation = state.get("authorisations", payload["authorisation_id"])
    if authorisation is None or authorisation["status"] != "ISSUED":
        return _refuse("RETURN_AUTHORISATION_NOT_OPEN", "no open authorisation")
    if payload["cycle_id"] != authorisation["cycle_id"]:
        return _refuse("TIMER_BINDING_MISMATCH", "the timer names another cycle")
    return None


def reminder_due(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    refused = _authorisation_timer(state, payload)
    if refused is not None:
        return refused
    authorisation_id = str(payload["authorisation_id"])
    _update(state, "authorisations", authorisation_id, reminder_due=True)
    policy = state.policy
    window = int(policy.handover_deadline_after_minutes) - int(
        policy.handover_reminder_after_minutes
    )
    open_obligation(state, "handover_reminder", authorisation_id, str(payload["cycle_id"]), window)
    return EventOutcome()


def handover_deadline_due(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    refused = _authorisation_timer(state, payload)
    if refused is not None:
        return refused
    authorisation_id = str(payload["authorisation_id"])
    _update(state, "authorisations", authorisation_id, status="EXPIRED", expired_minute=state.now)
    _update(state, "case", CASE, phase=v.RETURN_EXPIRED_PHASE)
    close_obligation(state, "handover_verification", authorisation_id, BREACHED)
    close_obligation(state, "handover_reminder", authorisation_id, BREACHED)
    cycle = str(payload["cycle_id"])
    notice = int(state.policy.completion_notice_within_minutes)
    open_obligation(state, "return_expiry_notice", cycle, cycle, notice)
    return EventOutcome()


def approval_deadline_due(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    checkpoint_id = str(payload["checkpoint_id"])
    checkpoint = state.get("checkpoints", checkpoint_id)
    if checkpoint is None or checkpoint["status"] != OPEN:
        return _refuse("CHECKPOINT_NOT_OPEN", "the approval deadline is stale")
    if payload["cycle_id"] != checkpoint["cycle_id"]:
        return _refuse("TIMER_BINDING_MISMATCH", "the timer names another cycle")
    _update(state, "checkpoints", checkpoint_id, status="EXPIRED", decided_minute=state.now)
    _update(state, "case", CASE, phase=v.REFUND_DENIED_PHASE)
    close_obligation(state, "refund_approval", checkpoint_id, BREACHED)
    cycle = str(checkpoint["cycle_id"])
    notice = int(state.policy.completion_notice_within_minutes)
    open_obligation(state, "refund_denial_notice", cycle, cycle, notice)
    return EventOutcome()


def _open_work(state: StateAccess) -> bool:
    return any(c["status"] == OPEN for c in state.records("checkpoints").values()) or any(
        o["status"] == OPEN for o in state.records("obligations").values()
    )


def cooldown_expired(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    record = case(state)
    provisional = record.get("provisional")
    if record["phase"] != v.PROVISIONAL or not isinstance(provisional, dict):
        return _refuse("NO_PROVISIONAL_REFUND", "there is no provisional refund to finalise")
    if (
        provisional.get("refund_request_id") != payload["refund_request_id"]
        or provisional.get("cycle_id") != payload["cycle_id"]
    ):
        return _refuse("COOLDOWN_BINDING_MISMATCH", "the cooldown names another refund")
    refund = state.get("refunds", str(payload["refund_request_id"]))
    if refund is None or refund["status"] != "SETTLED":
        return _refuse("REFUND_NOT_SETTLED", "a reversed refund cannot finalise")
    if _open_work(state):
        return _refuse("OPEN_WORK_AT_FINALIZATION", "checkpoints or obligations remain open")
    _update(state, "case", CASE, phase=v.FINAL, provisional=None)
    return EventOutcome(effects=Effects(terminal=v.SETTLED_TERMINAL))


REDUCERS: dict[str, Reducer] = {
    "customer_return_requested": return_requested,
    "customer_handover_claimed": handover_claimed,
    "carrier_handover_verified": carrier_verified,
    "warehouse_inspection_completed": inspection_completed,
    "refund_approval_received": approval_received,
    "refund_settlement_confirmed": settlement_confirmed,
    "refund_settlement_reversed": settlement_reversed,
    "handover_reminder_due": reminder_due,
    "handover_deadline_due": handover_deadline_due,
    "approval_deadline_due": approval_deadline_due,
    "resolution_cooldown_expired": cooldown_expired,
}


# --- actions ----------------------------------------------------------------


def issue_return_authorisation(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    record = case(state)
    if record["phase"] != v.RETURN_REQUESTED:
        return _reject("DUPLICATE_RETURN_AUTHORISATION", "an authorisation is issued once")
    if (
        payload["return_id"] != record["return_id"]
        or payload["cycle_id"] != (record["current_cycle"])
    ):
        return _reject("RETURN_AUTHORISATION_BINDING_MISMATCH", "name the current return and cycle")
    authorisation_id = state.allocate("return_authorisation")
    cycle = str(payload["cycle_id"])
    state.put(
        "authorisations",
        authorisation_id,
        {
            "cycle_id": cycle,
            "status": "ISSUED",
            "issued_minute": state.now,
            "reminder_due": False,
        },
    )
    _update(state, "case", CASE, phase=v.AWAITING_HANDOVER)
    policy = state.policy
    deadline = int(policy.handover_deadline_after_minutes)
    open_obligation(state, "handover_verification", authorisation_id, cycle, deadline)
    timers = [
        _timer(
            f"handover_reminder_{authorisation_id}",
            "handover_reminder_due",
            int(policy.handover_reminder_after_minutes),
            authorisation_id=authorisation_id,
            cycle_id=cycle,
        ),
        _timer(
            f"handover_deadline_{authorisation_id}",
            "handover_deadline_due",
            deadline,
            authorisation_id=authorisation_id,
            cycle_id=cycle,
        ),
    ]
    return ActionOutcome(
        bindings={"authorisation_id": authorisation_id}, effects=Effects(timers=timers)
    )


def request_refund_approval(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    record = case(state)
    inspection = state.get("inspections", payload["inspection_id"])
    if (
        inspection is None
        or inspection["disposition"] != v.ELIGIBLE
        or int(inspection["amount_minor"]) <= int(state.policy.approval_threshold_minor)
        or record["phase"] != v.AWAITING_APPROVAL
    ):
        return _reject(
            "UNNECESSARY_CHECKPOINT_ATTEMPT",
            "no eligible above-threshold inspection needs a human decision",
        )
    if payload["cycle_id"] != record["current_cycle"]:
        return _reject("STALE_REFUND_CYCLE", "the approval names a stale cycle")
    if any(
        c["inspection_id"] == payload["inspection_id"]
        for c in state.records("checkpoints").values()
    ):
        return _reject("DUPLICATE_CHECKPOINT", "the inspection already has a review")
    checkpoint_id = state.allocate("refund_checkpoint")
    cycle = str(payload["cycle_id"])
    state.put(
        "checkpoints",
        checkpoint_id,
        {
            "type": v.REFUND_APPROVAL,
            "assigned_role": "returns_approver",
            "status": OPEN,
            "inspection_id": payload["inspection_id"],
            "cycle_id": cycle,
            "amount_minor": record["amount_minor"],
            "currency": record["currency"],
            "opened_minute": state.now,
        },
    )
    deadline = int(state.policy.approval_deadline_after_minutes)
    open_obligation(state, "refund_approval", checkpoint_id, cycle, deadline)
    timer = _timer(
        f"approval_deadline_{checkpoint_id}",
        "approval_deadline_due",
        deadline,
        checkpoint_id=checkpoint_id,
        cycle_id=cycle,
    )
    return ActionOutcome(bindings={"checkpoint_id": checkpoint_id}, effects=Effects(timers=[timer]))


def request_refund(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    record = case(state)
    cycle = str(payload["cycle_id"])
    if cycle != record["current_cycle"]:
        return _reject("STALE_REFUND_CYCLE", "the refund names a stale cycle")
    if any(r["cycle_id"] == cycle for r in state.records("refunds").values()):
        return _reject("DUPLICATE_REFUND_REQUEST", "this cycle already has a refund request")
    # Carrier verification first: a customer's claim of handover cannot stand in for it.
    if not handover_verified(state):
        return _reject("HANDOVER_NOT_VERIFIED", "no carrier record verifies the handover")
    inspection = state.get("inspections", payload["inspection_id"])
    if inspection is None or inspection["disposition"] != v.ELIGIBLE:
        return _reject("INSPECTION_NOT_ELIGIBLE", "a refund needs an eligible inspection")
    if int(record["amount_minor"]) > int(state.policy.approval_threshold_minor):
        checkpoint_id = payload.get("approval_checkpoint_id")
        checkpoint = None if checkpoint_id is None else state.get("checkpoints", checkpoint_id)
        if (
            checkpoint is None
            or checkpoint["status"] != "APPROVED"
            or checkpoint["inspection_id"] != payload["inspection_id"]
            or checkpoint["amount_minor"] != record["amount_minor"]
        ):
            return _reject(
                "REFUND_APPROVAL_BYPASSED",
                "an above-threshold refund needs the approved checkpoint of this inspection",
            )
    if record["phase"] not in (v.READY_TO_REFUND, v.REFUND_REOPENED):
        return _reject("REFUND_NOT_READY", f"no refund can be requested in {record['phase']}")
    request_id = state.allocate("refund_request")
    state.put(
        "refunds",
        request_id,
        {
            "inspection_id": payload["inspection_id"],
            "approval_checkpoint_id": payload.get("approval_checkpoint_id"),
            "cycle_id": cycle,
            "amount_minor": record["amount_minor"],
            "currency": record["currency"],
            "status": "REQUESTED",
            "requested_minute": state.now,
        },
    )
    _update(state, "case", CASE, phase=v.REFUND_PENDING)
    close_obligation(state, "refund_recovery", cycle, DISCHARGED)
    horizon = int(state.policy.horizon_minutes)
    open_obligation(state, "refund_settlement", request_id, cycle, horizon)
    return ActionOutcome(bindings={"refund_request_id": request_id})


def send_message(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    record = case(state)
    fixture = payload["message_fixture_id"]
    cycle = str(payload.get("cycle_id") or record["current_cycle"])
    if payload["recipient_actor_id"] != record["customer_actor_id"]:
        return _reject("MESSAGE_RECIPIENT_MISMATCH", "operational notices go to the customer")
    if fixture not in record["message_fixtures"]:
        return _reject("UNKNOWN_MESSAGE_FIXTURE", f"no message fixture {fixture}")
    kind = NOTICES.get(fixture)
    if kind is None:
        return _reject("MESSAGE_HAS_NO_OPERATIONAL_PURPOSE", f"{fixture} discharges nothing")
    subject = cycle
    if kind == "handover_reminder":
        due = [
            key
            for key, a in sorted(state.records("authorisations").items())
            if a["reminder_due"] and a["status"] == "ISSUED"
        ]
        if not due:
            return _reject("REMINDER_NOT_DUE", "no handover reminder is due")
        subject = due[-1]
    obligation = state.get("obligations", obligation_id(kind, subject))
    if obligation is None or obligation["status"] != OPEN:
        return _reject("MESSAGE_OBLIGATION_NOT_OPEN", f"no {kind} is owed")
    message_id = state.allocate("message")
    close_obligation(state, kind, subject, DISCHARGED)
    message: dict[str, JsonValue] = {
        "message_id": message_id,
        "recipient_actor_id": payload["recipient_actor_id"],
        "fixture_id": fixture,
        "correlation_id": cycle,
        "sent_minute": state.now,
    }
    return ActionOutcome(bindings={"message_id": message_id}, effects=Effects(messages=[message]))


EXECUTORS: dict[str, Executor] = {
    "issue_return_authorisation": issue_return_authorisation,
    "request_refund_approval": request_refund_approval,
    "request_refund": request_refund,
    "send_message": send_message,
}


def completion(state: StateAccess) -> tuple[Rejection | None, Effects, str]:
    """Denied and expired cases close final at once; a settled refund closes provisionally."""
    record = case(state)
    phase = record["phase"]

    def refuse(code: str, reason: str) -> tuple[Rejection | None, Effects, str]:
        return Rejection(code, reason), Effects(), ""

    if any(c["status"] == OPEN for c in state.records("checkpoints").values()):
        return refuse("OPEN_CHECKPOINT", "a human checkpoint is open")
    if any(o["status"] == OPEN for o in state.records("obligations").values()):
        return refuse("OPEN_OBLIGATION", "an obligation is open")
    if phase == v.REFUND_DENIED_PHASE:
        _update(state, "case", CASE, phase=v.FINAL)
        return None, Effects(terminal=v.DENIED_TERMINAL), "final"
    if phase == v.RETURN_EXPIRED_PHASE:
        _update(state, "case", CASE, phase=v.FINAL)
        return None, Effects(terminal=v.EXPIRED_TERMINAL), "final"
    if phase != v.REFUND_SETTLED:
        return refuse("PREMATURE_COMPLETION", f"nothing can complete in {phase}")
    cycle = str(record["current_cycle"])
    settled = [
        (key, r)
        for key, r in sorted(state.records("refunds").items())
        if r["cycle_id"] == cycle and r["status"] == "SETTLED"
    ]
    if not settled:
        return refuse("REFUND_NOT_SETTLED", f"cycle {cycle} has no settled refund")
    request_id = settled[-1][0]
    _update(
        state,
        "case",
        CASE,
        phase=v.PROVISIONAL,
        provisional={"refund_request_id": request_id, "cycle_id": cycle},
    )
    cooldown = _timer(
        COOLDOWN,
        "resolution_cooldown_expired",
        int(state.policy.provisional_close_minutes),
        refund_request_id=request_id,
        cycle_id=cycle,
    )
    return None, Effects(timers=[cooldown]), "provisional"

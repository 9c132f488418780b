"""Action validators and executors of the maintenance domain, and the completion guard.

Each function validates a proposal against the current state and either
rejects it with a code (writing nothing) or commits it through reducers and
returns the ids the environment allocated (``visit_N``, ``checkpoint_N``,
``payment_N``, ``message_N``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_agentbench.sdk import (
    ActionOutcome,
    Effects,
    JsonValue,
    Rejection,
    StateAccess,
)
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.reducers import (
    OPERATION,
    PROVISIONAL_KEY,
    _update,
    operation,
    timer,
)
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.vocabulary import (
    APPROVAL_REMINDER,
    COMPLETION_NOTICE,
    EXCEPTION_RESOLUTION,
    REPAIR_APPROVAL,
    TRANSFER_NOTICE,
    has_delivery_recovery,
    secondary_channel,
)

Executor = Callable[[StateAccess, Mapping[str, Any]], ActionOutcome]


def _reject(code: str, reason: str) -> ActionOutcome:
    return ActionOutcome(rejection=Rejection(code, reason))


def _owned_by_agent(state: StateAccess) -> bool:
    return operation(state).get("ownership") != "human"


def request_supplier_visit(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    if not _owned_by_agent(state):
        return _reject("OWNERSHIP_TRANSFERRED", "the operation belongs to a human now")
    cycle = state.get("cycles", payload["cycle_id"])
    if cycle is None or cycle["status"] != "OPEN":
        return _reject("CYCLE_NOT_OPEN", f"cycle {payload['cycle_id']} is not open")
    if cycle["kind"] == "quoted":
        return _reject(
            "WORK_REQUIRES_AUTHORISATION",
            f"cycle {payload['cycle_id']} is quoted work: authorise_supplier_work books its visit",
        )
    wanted = "WARRANTY_REVISIT" if cycle["kind"] == "warranty" else "DIAGNOSTIC"
    if payload["visit_type"] != wanted:
        return _reject("WRONG_VISIT_TYPE", f"cycle {payload['cycle_id']} needs a {wanted} visit")
    for visit in state.records("visits").values():
        if visit["cycle_id"] == payload["cycle_id"] and visit["kind"] == payload["visit_type"]:
            return _reject(
                "VISIT_ALREADY_REQUESTED", f"cycle {payload['cycle_id']} already has that visit"
            )
    visit_id = state.allocate("visit")
    state.put(
        "visits",
        visit_id,
        {"cycle_id": payload["cycle_id"], "kind": payload["visit_type"], "status": "REQUESTED"},
    )
    followup = timer(
        f"visit_followup_{visit_id}",
        "visit_followup_due",
        int(state.policy.visit_followup_after_minutes),
        cycle_id=payload["cycle_id"],
    )
    return ActionOutcome(bindings={"visit_id": visit_id}, effects=Effects(timers=[followup]))


def request_approval(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    if not _owned_by_agent(state):
        return _reject("OWNERSHIP_TRANSFERRED", "the operation belongs to a human now")
    quote = state.get("quotes", payload["quote_id"])
    if quote is None:
        return _reject("UNKNOWN_QUOTE", f"no quote {payload['quote_id']}")
    for name in ("quote_version", "amount_minor", "currency", "scope_digest", "cycle_id"):
        if quote[name] != payload[name]:
            return _reject("QUOTE_MISMATCH", f"{name} differs from the current quote")
    if int(quote["amount_minor"]) <= int(state.policy.approval_threshold_minor):
        return _reject("APPROVAL_NOT_REQUIRED", "the quote is at or below the approval threshold")
    for checkpoint in state.records("checkpoints").values():
        if checkpoint.get("quote_id") == payload["quote_id"] and checkpoint["status"] == "OPEN":
            return _reject(
                "CHECKPOINT_ALREADY_OPEN", f"quote {payload['quote_id']} already awaits a decision"
            )
    checkpoint_id = state.allocate("checkpoint")
    state.put(
        "checkpoints",
        checkpoint_id,
        {
            "type": REPAIR_APPROVAL,
            "assigned_role": "approver",
            "status": "OPEN",
            "quote_id": payload["quote_id"],
            "quote_version": payload["quote_version"],
            "amount_minor": payload["amount_minor"],
            "currency": payload["currency"],
            "scope_digest": payload["scope_digest"],
            "cycle_id": payload["cycle_id"],
            "opened_minute": state.now,
            "reminder_due": False,
        },
    )
    cycle = payload["cycle_id"]
    timers = [
        timer(
            f"reminder_{checkpoint_id}",
            "approval_reminder_due",
            int(state.policy.approval_reminder_after_minutes),
            checkpoint_id=checkpoint_id,
            cycle_id=cycle,
        ),
        timer(
            f"deadline_{checkpoint_id}",
            "approval_deadline_due",
            int(payload["deadline_after_minutes"]),
            checkpoint_id=checkpoint_id,
            cycle_id=cycle,
        ),
    ]
    return ActionOutcome(bindings={"checkpoint_id": checkpoint_id}, effects=Effects(timers=timers))


def send_message(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    op = operation(state)
    actors: Mapping[str, Any] = op["actors"]
    fixtures: list[str] = op["message_fixtures"]
    if payload["recipient_actor_id"] not in actors:
        return _reject("UNKNOWN_RECIPIENT", f"no actor {payload['recipient_actor_id']}")
    fixture = payload["message_fixture_id"]
    if fixture not in fixtures:
        return _reject("UNKNOWN_FIXTURE", f"no message fixture {fixture}")
    correlation = payload.get("correlation_id")
    if fixture == APPROVAL_REMINDER:
        checkpoint = state.get("checkpoints", str(correlation))
        if checkpoint is None or checkpoint["status"] != "OPEN" or not checkpoint["reminder_due"]:
            return _reject("PREMATURE_FOLLOW_UP", "no approval reminder is due for that checkpoint")
    obligation_key = {
        COMPLETION_NOTICE: "completion_notice",
        TRANSFER_NOTICE: "transfer_notice",
    }.get(fixture)
    obligation = (
        None
        if obligation_key is None
        else state.get("obligations", f"{obligation_key}:{correlation}")
    )
    if obligation_key is not None and obligation is None:
        return _reject("NOTICE_NOT_DUE", f"no {obligation_key} obligation for {correlation!r}")
    recovery: dict[str, JsonValue] = {}
    if "recovery_of" in payload:
        refused = _recovery_refusal(state, payload)
        if refused is not None:
            return refused
        recovery = {
            "recovery_of": payload["recovery_of"],
            "channel": "secondary",
            "dispatch_key": secondary_channel(fixture),
        }
    message_id = state.allocate("message")
    if recovery:
        _update(
            state,
            "obligations",
            f"{obligation_key}:{correlation}",
            recovered_by=message_id,
        )
    if obligation is not None and obligation["message_id"] is None:
        _update(
            state,
            "obligations",
            f"{obligation_key}:{correlation}",
            message_id=message_id,
            sent_minute=state.now,
        )
    message: dict[str, JsonValue] = {
        "message_id": message_id,
        "recipient_actor_id": payload["recipient_actor_id"],
        "fixture_id": fixture,
        "correlation_id": correlation,
        "sent_minute": state.now,
        **recovery,
    }
    return ActionOutcome(bindings={"message_id": message_id}, effects=Effects(messages=[message]))


def _recovery_refusal(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome | None:
    """Why ``recovery_of`` cannot re-send a failed notice on the secondary channel, if it cannot.

    Only a delivery-recovery operation (0.7.0) has the channel, and only for
    the transfer notice; the failed message must be that exact intent (same
    recipient, fixture and correlation), not itself a recovery, and neither
    recovered already nor delivered some other way.
    """
    op = operation(state)
    fixture = payload["message_fixture_id"]
    if not has_delivery_recovery(str(op["operation_version"])) or fixture != TRANSFER_NOTICE:
        return _reject("RECOVERY_NOT_SUPPORTED", f"no secondary channel for {fixture}")
    messages = state.records("communications")
    original = messages.get(str(payload["recovery_of"]))
    if (
        original is None
        or original["status"] != "dispatch_failed"
        or "recovery_of" in original
        or original["recipient_actor_id"] != payload["recipient_actor_id"]
        or original["fixture_id"] != fixture
        or original["correlation_id"] != payload.get("correlation_id")
    ):
        return _reject(
            "RECOVERY_BINDING_MISMATCH",
            f"{payload['recovery_of']!r} is not a failed message of this intent",
        )
    for message in messages.values():
        if message.get("recovery_of") == payload["recovery_of"] or (
            message["status"] == "delivered"
            and message["fixture_id"] == fixture
            and message["correlation_id"] == payload.get("correlation_id")
        ):
            return _reject("RECOVERY_ALREADY_ATTEMPTED", "the notice is recovered or delivered")
    return None


def authorise_supplier_work(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    if not _owned_by_agent(state):
        return _reject("OWNERSHIP_TRANSFERRED", "the operation belongs to a human now")
    quote = state.get("quotes", payload["quote_id"])
    if quote is None or quote["cycle_id"] != payload["cycle_id"]:
        return _reject("UNKNOWN_QUOTE", f"no quote {payload['quote_id']} in {payload['cycle_id']}")
    if quote["quote_version"] != payload["quote_version"]:
        return _reject("STALE_APPROVAL", "the quote was revised after that version")
    if int(quote["amount_minor"]) > int(state.policy.approval_threshold_minor):
        checkpoint = state.get("checkpoints", payload["approval_checkpoint_id"])
        if checkpoint is None or checkpoint.get("quote_id") != payload["quote_id"]:
            return _reject(
                "APPROVAL_REQUIRED", "an above-threshold quote needs a matching approval"
            )
        if checkpoint["quote_version"] != quote["quote_version"]:
            return _reject("STALE_APPROVAL", "the approval is for a superseded quote version")
        if checkpoint["status"] != "APPROVED":
            return _reject(
                "APPROVAL_NOT_GRANTED",
                f"checkpoint {payload['approval_checkpoint_id']} is {checkpoint['status']}",
            )
        validity = int(state.policy.approval_validity_minutes)
        if state.now - int(checkpoint["decided_minute"]) > validity:
            return _reject("STALE_APPROVAL", "the approval is past its validity")
    if quote["status"] == "AUTHORISED":
        return _reject("ALREADY_AUTHORISED", f"quote {payload['quote_id']} is already authorised")
    _update(state, "quotes", payload["quote_id"], status="AUTHORISED")
    visit_id = state.allocate("visit")
    state.put(
        "visits",
        visit_id,
        {"cycle_id": payload["cycle_id"], "kind": "REPAIR", "status": "AUTHORISED"},
    )
    _update(state, "cycles", payload["cycle_id"], further_work_required=False, work_authorised=True)
    followup = timer(
        f"visit_followup_{visit_id}",
        "visit_followup_due",
        int(state.policy.visit_followup_after_minutes),
        cycle_id=payload["cycle_id"],
    )
    return ActionOutcome(bindings={"visit_id": visit_id}, effects=Effects(timers=[followup]))


def request_invoice_validation(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    invoice = state.get("invoices", payload["invoice_id"])
    if invoice is None or invoice["status"] != "UNVALIDATED":
        return _reject(
            "INVOICE_NOT_UNVALIDATED", f"invoice {payload['invoice_id']} is not awaiting validation"
        )
    cycle = state.get("cycles", str(invoice["cycle_id"]))
    assert cycle is not None
    if not cycle["work_verified"]:
        return _reject("WORK_NOT_VERIFIED", "an invoice validates only against verified work")
    if not cycle["payable"]:
        return _reject("WARRANTY_NOT_PAYABLE", "warranty work is not payable")
    _update(state, "invoices", payload["invoice_id"], status="VALIDATION_REQUESTED")
    return ActionOutcome()


def request_payment(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    if not _owned_by_agent(state):
        return _reject("OWNERSHIP_TRANSFERRED", "the operation belongs to a human now")
    invoice = state.get("invoices", payload["invoice_id"])
    if invoice is None:
        return _reject("UNKNOWN_INVOICE", f"no invoice {payload['invoice_id']}")
    cycle = state.get("cycles", str(invoice["cycle_id"]))
    assert cycle is not None
    if not cycle["work_verified"]:
        return _reject("WORK_NOT_VERIFIED", "payment needs verified work")
    if invoice["status"] != "VALIDATED":
        return _reject(
            "INVOICE_NOT_VALIDATED", f"invoice {payload['invoice_id']} is {invoice['status']}"
        )
    if (
        invoice["amount_minor"] != payload["amount_minor"]
        or invoice["currency"] != payload["currency"]
    ):
        return _reject("PAYMENT_MISMATCH", "amount or currency differs from the invoice")
    for payment in state.records("payments").values():
        if payment["invoice_id"] == payload["invoice_id"]:
            return _reject(
                "PAYMENT_ALREADY_REQUESTED",
                f"invoice {payload['invoice_id']} already has a payment",
            )
    payment_id = state.allocate("payment")
    state.put(
        "payments",
        payment_id,
        {
            "invoice_id": payload["invoice_id"],
            "cycle_id": invoice["cycle_id"],
            "amount_minor": payload["amount_minor"],
            "currency": payload["currency"],
            "status": "REQUESTED",
        },
    )
    return ActionOutcome(bindings={"payment_request_id": payment_id})


def request_exception_resolution(state: StateAccess, payload: Mapping[str, Any]) -> ActionOutcome:
    checkpoint = state.get("checkpoints", payload["approval_checkpoint_id"])
    eligible = {"APPROVAL_REJECTED": "REJECTED", "APPROVAL_EXPIRED": "EXPIRED"}[
        payload["exception_type"]
    ]
    if (
        checkpoint is None
        or checkpoint["type"] != REPAIR_APPROVAL
        or checkpoint["status"] != eligible
    ):
        return _reject(
            "EXCEPTION_NOT_ELIGIBLE",
            f"{payload['exception_type']} needs an approval that is {eligible}",
        )
    for other in state.records("checkpoints").values():
        if (
            other["type"] == EXCEPTION_RESOLUTION
            and other.get("concerns") == payload["approval_checkpoint_id"]
        ):
            return _reject(
                "EXCEPTION_ALREADY_RAISED", "that approval already has an exception checkpoint"
            )
    checkpoint_id = state.allocate("checkpoint")
    state.put(
        "checkpoints",
        checkpoint_id,
        {
            "type": EXCEPTION_RESOLUTION,
            "assigned_role": "operator_human",
            "status": "OPEN",
            "concerns": payload["approval_checkpoint_id"],
            "exception_type": payload["exception_type"],
            "cycle_id": checkpoint["cycle_id"],
            "opened_minute": state.now,
        },
    )
    return ActionOutcome(bindings={"checkpoint_id": checkpoint_id})


EXECUTORS: dict[str, Executor] = {
    "request_supplier_visit": request_supplier_visit,
    "request_approval": request_approval,
    "send_message": send_message,
    "authorise_supplier_work": authorise_supplier_work,
    "request_invoice_validation": request_invoice_validation,
    "request_payment": request_payment,
    "request_exception_resolution": request_exception_resolution,
}


def completion(state: StateAccess) -> tuple[Rejection | None, Effects, str]:
    """The completion guard: transfer terminal after TAKE_OWNERSHIP, else a provisional close."""
    op = operation(state)
    obligations = state.records("obligations")
    if op.get("ownership") == "human":
        transfer = [o for o in obligations.values() if o["kind"] == "transfer_notice"]
        if not transfer or any(o["message_id"] is None for o in transfer):
            return (
                Rejection("NOTICE_NOT_SENT", "the transfer notice has not been sent"),
                Effects(),
                "",
            )
        if state.records("payments"):
            return (
                Rejection("PAYMENT_IN_TRANSFER", "a transfer terminal carries no payment"),
                Effects(),
                "",
            )
        _update(state, "operation", OPERATION, status="TRANSFERRED")
        return None, Effects(terminal="transferred_to_human_ownership"), "final"
    cycle_id = str(op["current_cycle"])
    cycle = state.get("cycles", cycle_id)
    if cycle is None:
        return Rejection("NOTHING_TO_COMPLETE", "no issue has been reported"), Effects(), ""
    problem = _open_item(state, cycle_id, cycle)
    if problem is not None:
        return problem, Effects(), ""
    _update(state, "operation", OPERATION, status="PROVISIONAL_CLOSE")
    expiry = timer(
        PROVISIONAL_KEY,
        "provisional_close_expired",
        int(state.policy.provisional_close_minutes),
        cycle_id=cycle_id,
    )
    return None, Effects(timers=[expiry]), "provisional"


def _open_item(state: StateAccess, cycle_id: str, cycle: Mapping[str, Any]) -> Rejection | None:
    if not cycle["work_verified"]:
        return Rejection("WORK_NOT_VERIFIED", f"cycle {cycle_id} has no verified work")
    if cycle["further_work_required"]:
        return Rejection("FURTHER_WORK_OPEN", f"cycle {cycle_id} has an open further-work signal")
    issue = state.get("issues", str(cycle["issue_id"]))
    if issue is not None and issue["open_contradiction"]:
        return Rejection("OPEN_CONTRADICTION", "the customer reported the issue persists")
    if any(c["status"] == "OPEN" for c in state.records("checkpoints").values()):
        return Rejection("OPEN_CHECKPOINT", "a human checkpoint is still open")
    for invoice_id, invoice in state.records("invoices").items():
        if invoice["status"] != "VALIDATED":
            return Rejection("OPEN_INVOICE_REVIEW", f"invoice {invoice_id} is {invoice['status']}")
        if not any(
            p["invoice_id"] == invoice_id and p["status"] == "SETTLED"
            for p in state.records("payments").values()
        ):
            return Rejection("PAYMENT_NOT_SETTLED", f"invoice {invoice_id} is not settled")
    for key, obligation in state.records("obligations").items():
        if obligation["message_id"] is None:
            return Rejection("NOTICE_NOT_SENT", f"obligation {key} has no message")
    if not any(
        o["correlation_id"] == cycle_id and o["kind"] == "completion_notice"
        for o in state.records("obligations").values()
    ):
        return Rejection("NOTICE_NOT_SENT", f"no completion notice for {cycle_id}")
    return None

"""Action validators and executors, and the completion guard, of the maintenance domain."""

from __future__ import annotations

from typing import Any

from pytest_agentbench.worlds.operations.domains.lettings_maintenance.pack import PACK
from pytest_agentbench.worlds.operations.state import OperationState
from tests.worlds.operations.helpers import shipped
from tests.worlds.operations.test_reducers import (
    DECISION,
    SCOPE,
    act,
    apply,
    approval_requested,
    reported,
    with_quote,
)


def rejected(state: OperationState, action: str, code: str, **payload: Any) -> None:
    before = state.version
    outcome = PACK.decide_action(state, action, payload)
    assert outcome.rejection is not None
    assert outcome.rejection.code == code
    assert state.version == before, "a rejected proposal writes nothing"


AUTHORISE = {
    "quote_id": "q1",
    "quote_version": 1,
    "approval_checkpoint_id": "checkpoint_1",
    "cycle_id": "cycle_1",
}
APPROVAL = {
    "quote_id": "q1",
    "quote_version": 1,
    "amount_minor": 64000,
    "currency": "GBP",
    "scope_digest": SCOPE,
    "cycle_id": "cycle_1",
    "deadline_after_minutes": 4320,
}


def test_a_visit_request_allocates_an_id_and_a_follow_up_timer_once() -> None:
    state = reported()
    rejected(
        state,
        "request_supplier_visit",
        "CYCLE_NOT_OPEN",
        visit_type="DIAGNOSTIC",
        cycle_id="cycle_9",
    )
    rejected(
        state,
        "request_supplier_visit",
        "WRONG_VISIT_TYPE",
        visit_type="WARRANTY_REVISIT",
        cycle_id="cycle_1",
    )
    outcome = act(state, "request_supplier_visit", visit_type="DIAGNOSTIC", cycle_id="cycle_1")
    assert outcome.bindings == {"visit_id": "visit_1"}
    (timer,) = outcome.effects.timers
    assert (timer.key, timer.event_type, timer.after_minutes) == (
        "visit_followup_visit_1",
        "visit_followup_due",
        4320,
    )
    rejected(
        state,
        "request_supplier_visit",
        "VISIT_ALREADY_REQUESTED",
        visit_type="DIAGNOSTIC",
        cycle_id="cycle_1",
    )


def test_approval_is_requested_only_above_the_threshold_and_creates_checkpoint_and_timers() -> None:
    below = with_quote(amount=25000)
    rejected(
        below, "request_approval", "APPROVAL_NOT_REQUIRED", **{**APPROVAL, "amount_minor": 25000}
    )
    state = with_quote()
    rejected(state, "request_approval", "QUOTE_MISMATCH", **{**APPROVAL, "amount_minor": 1})
    rejected(state, "request_approval", "UNKNOWN_QUOTE", **{**APPROVAL, "quote_id": "q9"})
    outcome = act(state, "request_approval", **APPROVAL)
    assert outcome.bindings == {"checkpoint_id": "checkpoint_1"}
    assert [(t.event_type, t.after_minutes) for t in outcome.effects.timers] == [
        ("approval_reminder_due", 2880),
        ("approval_deadline_due", 4320),
    ]
    checkpoint = state.get("checkpoints", "checkpoint_1")
    assert (checkpoint["type"], checkpoint["assigned_role"]) == (
        "repair_quote_approval",
        "approver",
    )
    rejected(state, "request_approval", "CHECKPOINT_ALREADY_OPEN", **APPROVAL)


def test_authorising_needs_a_current_granted_approval() -> None:
    state = approval_requested()
    rejected(state, "authorise_supplier_work", "APPROVAL_NOT_GRANTED", **AUTHORISE)
    rejected(
        state,
        "authorise_supplier_work",
        "APPROVAL_REQUIRED",
        **{**AUTHORISE, "approval_checkpoint_id": "none"},
    )
    apply(state, "approver_decision_received", decision="APPROVED", **DECISION)
    apply(
        state,
        "supplier_quote_received",
        quote_id="q1",
        quote_version=2,
        cycle_id="cycle_1",
        amount_minor=64000,
        currency="GBP",
        scope_digest=SCOPE,
    )
    rejected(state, "authorise_supplier_work", "STALE_APPROVAL", **AUTHORISE)
    rejected(
        state, "authorise_supplier_work", "STALE_APPROVAL", **{**AUTHORISE, "quote_version": 2}
    )


def test_an_approval_past_its_validity_is_stale() -> None:
    state = approval_requested()
    apply(state, "approver_decision_received", decision="APPROVED", **DECISION)
    state.now = 10081
    rejected(state, "authorise_supplier_work", "STALE_APPROVAL", **AUTHORISE)
    state.now = 10080
    assert act(state, "authorise_supplier_work", **AUTHORISE).bindings == {"visit_id": "visit_2"}
    rejected(state, "authorise_supplier_work", "ALREADY_AUTHORISED", **AUTHORISE)


def test_below_threshold_work_needs_no_approval() -> None:
    state = with_quote(amount=20000)
    act(state, "authorise_supplier_work", **{**AUTHORISE, "approval_checkpoint_id": "none"})


def test_messages_reminders_and_notices() -> None:
    state = approval_requested()
    message = {
        "recipient_actor_id": "landlord_okafor",
        "message_fixture_id": "msg_approval_reminder",
        "correlation_id": "checkpoint_1",
    }
    rejected(state, "send_message", "PREMATURE_FOLLOW_UP", **message)
    apply(state, "approval_reminder_due", checkpoint_id="checkpoint_1", cycle_id="cycle_1")
    outcome = act(state, "send_message", **message)
    assert outcome.effects.messages[0]["message_id"] == "message_1"
    rejected(
        state, "send_message", "UNKNOWN_RECIPIENT", **{**message, "recipient_actor_id": "ghost"}
    )
    rejected(
        state, "send_message", "UNKNOWN_FIXTURE", **{**message, "message_fixture_id": "msg_ghost"}
    )
    rejected(
        state,
        "send_message",
        "NOTICE_NOT_DUE",
        recipient_actor_id="tenant_morgan",
        message_fixture_id="msg_completion_notice",
        correlation_id="cycle_1",
    )


def test_exception_resolution_needs_an_eligible_condition() -> None:
    state = approval_requested()
    request = {
        "exception_type": "APPROVAL_REJECTED",
        "approval_checkpoint_id": "checkpoint_1",
        "deadline_after_minutes": 1440,
    }
    rejected(state, "request_exception_resolution", "EXCEPTION_NOT_ELIGIBLE", **request)
    apply(state, "approver_decision_received", decision="REJECTED", **DECISION)
    rejected(
        state,
        "request_exception_resolution",
        "EXCEPTION_NOT_ELIGIBLE",
        **{**request, "exception_type": "APPROVAL_EXPIRED"},
    )
    outcome = act(state, "request_exception_resolution", **request)
    assert outcome.bindings == {"checkpoint_id": "checkpoint_2"}
    assert state.get("checkpoints", "checkpoint_2")["assigned_role"] == "operator_human"
    rejected(state, "request_exception_resolution", "EXCEPTION_ALREADY_RAISED", **request)
    apply(
        state,
        "operator_exception_resolved",
        checkpoint_id="checkpoint_2",
        decision="TAKE_OWNERSHIP",
    )
    rejected(state, "authorise_supplier_work", "OWNERSHIP_TRANSFERRED", **AUTHORISE)


def test_payment_needs_verified_work_and_a_validated_matching_invoice() -> None:
    state = approval_requested()
    apply(state, "approver_decision_received", decision="APPROVED", **DECISION)
    act(state, "authorise_supplier_work", **AUTHORISE)
    apply(
        state,
        "supplier_invoice_received",
        invoice_id="inv",
        cycle_id="cycle_1",
        quote_id="q1",
        quote_version=1,
        amount_minor=64000,
        currency="GBP",
    )
    pay = {"invoice_id": "inv", "amount_minor": 64000, "currency": "GBP"}
    rejected(state, "request_payment", "WORK_NOT_VERIFIED", **pay)
    rejected(state, "request_invoice_validation", "WORK_NOT_VERIFIED", invoice_id="inv")
    apply(
        state,
        "work_evidence_verified",
        evidence_id="ev",
        visit_id="visit_2",
        cycle_id="cycle_1",
        scope_digest=SCOPE,
        outcome="WORK_COMPLETE",
    )
    rejected(state, "request_payment", "INVOICE_NOT_VALIDATED", **pay)
    act(state, "request_invoice_validation", invoice_id="inv")
    rejected(state, "request_invoice_validation", "INVOICE_NOT_UNVALIDATED", invoice_id="inv")
    apply(state, "invoice_validation_completed", validation_id="v", invoice_id="inv", valid=True)
    rejected(state, "request_payment", "PAYMENT_MISMATCH", **{**pay, "amount_minor": 1})
    assert act(state, "request_payment", **pay).bindings == {"payment_request_id": "payment_1"}
    rejected(state, "request_payment", "PAYMENT_ALREADY_REQUESTED", **pay)


def test_the_completion_guard() -> None:
    state = OperationState(PACK.initial_state(shipped().spec), {}, shipped().policy)
    assert PACK.completion(state)[0].code == "NOTHING_TO_COMPLETE"
    state = approval_requested()
    assert PACK.completion(state)[0].code == "WORK_NOT_VERIFIED"
    apply(state, "approver_decision_received", decision="APPROVED", **DECISION)
    act(state, "authorise_supplier_work", **AUTHORISE)
    apply(
        state,
        "supplier_invoice_received",
        invoice_id="inv",
        cycle_id="cycle_1",
        quote_id="q1",
        quote_version=1,
        amount_minor=64000,
        currency="GBP",
    )
    apply(
        state,
        "work_evidence_verified",
        evidence_id="ev",
        visit_id="visit_2",
        cycle_id="cycle_1",
        scope_digest=SCOPE,
        outcome="WORK_COMPLETE",
    )
    assert PACK.completion(state)[0].code == "OPEN_INVOICE_REVIEW"
    act(state, "request_invoice_validation", invoice_id="inv")
    apply(state, "invoice_validation_completed", validation_id="v", invoice_id="inv", valid=True)
    assert PACK.completion(state)[0].code == "PAYMENT_NOT_SETTLED"
    act(state, "request_payment", invoice_id="inv", amount_minor=64000, currency="GBP")
    apply(
        state,
        "payment_settlement_confirmed",
        settlement_id="s",
        payment_request_id="payment_1",
        invoice_id="inv",
        cycle_id="cycle_1",
        amount_minor=64000,
        currency="GBP",
    )
    assert PACK.completion(state)[0].code == "NOTICE_NOT_SENT"
    act(
        state,
        "send_message",
        recipient_actor_id="tenant_morgan",
        message_fixture_id="msg_completion_notice",
        correlation_id="cycle_1",
    )
    rejection, effects, kind = PACK.completion(state)
    assert rejection is None
    assert kind == "provisional"
    assert [(t.key, t.event_type, t.after_minutes) for t in effects.timers] == [
        ("provisional_close", "provisional_close_expired", 2880)
    ]
    assert apply(
        state, "customer_resolution_reported", issue_id="i1", status="PERSISTS"
    ).effects.reopened
    assert PACK.completion(state)[0].code == "WORK_NOT_VERIFIED", (
        "the reopen opened warranty cycle_2"
    )


def test_the_transfer_terminal_needs_the_notice_sent() -> None:
    state = approval_requested()
    apply(state, "approver_decision_received", decision="REJECTED", **DECISION)
    act(
        state,
        "request_exception_resolution",
        exception_type="APPROVAL_REJECTED",
        approval_checkpoint_id="checkpoint_1",
        deadline_after_minutes=1440,
    )
    apply(
        state,
        "operator_exception_resolved",
        checkpoint_id="checkpoint_2",
        decision="TAKE_OWNERSHIP",
    )
    assert PACK.completion(state)[0].code == "NOTICE_NOT_SENT"
    act(
        state,
        "send_message",
        recipient_actor_id="tenant_morgan",
        message_fixture_id="msg_transfer_notice",
        correlation_id="checkpoint_2",
    )
    rejection, effects, kind = PACK.completion(state)
    assert rejection is None
    assert kind == "final"
    assert effects.terminal == "transferred_to_human_ownership"
    assert state.get("operation", "operation")["status"] == "TRANSFERRED"

"""Each event reducer of the maintenance domain: what it accepts, what it refuses, what it writes.

A refusing reducer writes nothing; claims never become facts.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.sdk import canonical_json
from pytest_agentbench.worlds.operations.domains.lettings_maintenance import actions, reducers
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.pack import PACK
from pytest_agentbench.worlds.operations.state import OperationState
from tests.worlds.operations.helpers import shipped

SCOPE = "scope-a"


def fresh() -> OperationState:
    loaded = shipped()
    return OperationState(PACK.initial_state(loaded.spec), {"secret": 1}, loaded.policy)


def apply(state: OperationState, type_: str, **payload: Any) -> Any:
    return PACK.apply_event(state, {"type": type_, "payload": payload})


def refused(state: OperationState, type_: str, code: str, **payload: Any) -> None:
    before = state.version
    outcome = apply(state, type_, **payload)
    assert outcome.rejection is not None
    assert outcome.rejection.code == code
    assert state.version == before, "a refusing reducer writes nothing"


def act(state: OperationState, action: str, **payload: Any) -> Any:
    outcome = PACK.decide_action(state, action, payload)
    assert outcome.rejection is None, outcome.rejection
    return outcome


def reported() -> OperationState:
    state = fresh()
    apply(
        state, "customer_issue_reported", issue_id="i1", classification="LEAK", cycle_id="cycle_1"
    )
    return state


def with_quote(amount: int = 64000) -> OperationState:
    state = reported()
    act(state, "request_supplier_visit", visit_type="DIAGNOSTIC", cycle_id="cycle_1")
    apply(
        state,
        "supplier_work_reported",
        visit_id="visit_1",
        cycle_id="cycle_1",
        outcome="FURTHER_WORK_REQUIRED",
        scope_digest=SCOPE,
    )
    apply(
        state,
        "supplier_quote_received",
        quote_id="q1",
        quote_version=1,
        cycle_id="cycle_1",
        amount_minor=amount,
        currency="GBP",
        scope_digest=SCOPE,
    )
    return state


def approval_requested() -> OperationState:
    state = with_quote()
    act(
        state,
        "request_approval",
        quote_id="q1",
        quote_version=1,
        amount_minor=64000,
        currency="GBP",
        scope_digest=SCOPE,
        cycle_id="cycle_1",
        deadline_after_minutes=4320,
    )
    return state


DECISION = {
    "checkpoint_id": "checkpoint_1",
    "quote_id": "q1",
    "quote_version": 1,
    "amount_minor": 64000,
    "currency": "GBP",
    "scope_digest": SCOPE,
}


def test_every_event_type_has_a_reducer_and_nothing_else_does() -> None:
    assert set(reducers.REDUCERS) == set(PACK.event_types)
    assert set(actions.EXECUTORS) == set(PACK.action_types)


def test_issue_reported_opens_the_issue_and_its_cycle_once() -> None:
    state = reported()
    assert state.get("issues", "i1")["level"] == "participant_claim"
    assert state.get("cycles", "cycle_1")["status"] == "OPEN"
    assert state.get("operation", "operation")["current_cycle"] == "cycle_1"
    refused(
        state,
        "customer_issue_reported",
        "DUPLICATE_EVENT",
        issue_id="i1",
        classification="LEAK",
        cycle_id="cycle_1",
    )


def test_visit_response_and_attendance_need_a_requested_visit() -> None:
    state = reported()
    refused(
        state,
        "supplier_visit_response",
        "UNKNOWN_VISIT",
        visit_id="visit_1",
        cycle_id="cycle_1",
        response="ACCEPTED",
    )
    refused(
        state,
        "visit_attendance_verified",
        "UNKNOWN_VISIT",
        visit_id="visit_1",
        cycle_id="cycle_1",
        attended=True,
    )
    act(state, "request_supplier_visit", visit_type="DIAGNOSTIC", cycle_id="cycle_1")
    apply(
        state,
        "supplier_visit_response",
        visit_id="visit_1",
        cycle_id="cycle_1",
        response="ACCEPTED",
    )
    apply(state, "visit_attendance_verified", visit_id="visit_1", cycle_id="cycle_1", attended=True)
    visit = state.get("visits", "visit_1")
    assert visit["supplier_response"] == "ACCEPTED"
    assert (visit["attendance_verified"], visit["attendance_level"]) == (True, "authoritative_fact")


def test_work_report_is_a_claim_that_cancels_the_follow_up() -> None:
    state = reported()
    act(state, "request_supplier_visit", visit_type="DIAGNOSTIC", cycle_id="cycle_1")
    outcome = apply(
        state,
        "supplier_work_reported",
        visit_id="visit_1",
        cycle_id="cycle_1",
        outcome="WORK_COMPLETE",
        scope_digest=SCOPE,
    )
    assert outcome.effects.cancel == ["visit_followup_visit_1"]
    assert state.get("visits", "visit_1")["report_level"] == "participant_claim"
    assert state.get("cycles", "cycle_1")["work_verified"] is False


def test_quotes_are_versioned_and_in_policy_currency() -> None:
    state = with_quote()
    base = {"quote_id": "q1", "cycle_id": "cycle_1", "amount_minor": 1, "scope_digest": SCOPE}
    refused(
        state,
        "supplier_quote_received",
        "STALE_QUOTE_VERSION",
        quote_version=1,
        currency="GBP",
        **base,
    )
    refused(
        state,
        "supplier_quote_received",
        "CURRENCY_MISMATCH",
        quote_version=2,
        currency="EUR",
        **base,
    )
    apply(state, "supplier_quote_received", quote_version=2, currency="GBP", **base)
    assert state.get("quotes", "q1")["quote_version"] == 2


def test_a_quote_for_further_work_opens_its_own_cycle() -> None:
    # The original's fixture quotes the repair as work_cycle_2, a cycle nobody
    # announced: the quote opens it, and the case's attention moves onto it.
    state = with_quote()
    apply(
        state,
        "supplier_quote_received",
        quote_id="q2",
        quote_version=1,
        cycle_id="work_cycle_2",
        parent_cycle_id="cycle_1",
        amount_minor=64000,
        currency="GBP",
        scope_digest=SCOPE,
    )
    opened = state.get("cycles", "work_cycle_2")
    assert opened is not None
    assert (opened["kind"], opened["parent_cycle_id"], opened["issue_id"]) == (
        "quoted",
        "cycle_1",
        "i1",
    )
    assert state.get("operation", "operation")["current_cycle"] == "work_cycle_2"
    # Its visit comes from authorising the work, never from a visit request.
    outcome = PACK.decide_action(
        state, "request_supplier_visit", {"visit_type": "DIAGNOSTIC", "cycle_id": "work_cycle_2"}
    )
    assert outcome.rejection is not None
    assert outcome.rejection.code == "WORK_REQUIRES_AUTHORISATION"


@pytest.mark.parametrize(
    ("type_", "payload", "code"),
    [
        (
            "supplier_visit_response",
            {"visit_id": "visit_1", "cycle_id": "cycle_1", "response": "MAYBE"},
            "UNKNOWN_VISIT_RESPONSE",
        ),
        (
            "customer_resolution_reported",
            {"issue_id": "i1", "status": "UNSURE"},
            "UNKNOWN_RESOLUTION_STATUS",
        ),
        ("approver_decision_received", {**DECISION, "decision": "PERHAPS"}, "UNKNOWN_DECISION"),
        (
            "operator_exception_resolved",
            {"checkpoint_id": "checkpoint_1", "decision": "SHRUG"},
            "UNKNOWN_EXCEPTION_DECISION",
        ),
    ],
)
def test_a_value_a_reducer_branches_on_is_refused_by_name_when_unknown(
    type_: str, payload: dict[str, Any], code: str
) -> None:
    # The loader accepts any string there, as the original's does; the reducer
    # that must branch on it refuses an unknown one when the event arrives.
    refused(approval_requested(), type_, code, **payload)


def test_work_evidence_verifies_whatever_word_reports_its_outcome() -> None:
    state = approval_requested()
    apply(state, "approver_decision_received", decision="APPROVED", **DECISION)
    act(
        state,
        "authorise_supplier_work",
        quote_id="q1",
        quote_version=1,
        approval_checkpoint_id="checkpoint_1",
        cycle_id="cycle_1",
    )
    apply(
        state,
        "work_evidence_verified",
        evidence_id="ev",
        visit_id="visit_2",
        cycle_id="cycle_1",
        scope_digest=SCOPE,
        outcome="COMPLETED",
    )
    assert state.get("cycles", "cycle_1")["work_verified"] is True
    assert state.get("evidence", "ev")["outcome"] == "COMPLETED"


def test_an_early_invoice_is_stored_unvalidated() -> None:
    state = with_quote()
    invoice = {
        "invoice_id": "inv",
        "cycle_id": "cycle_1",
        "quote_id": "q1",
        "quote_version": 1,
        "amount_minor": 64000,
        "currency": "GBP",
    }
    apply(state, "supplier_invoice_received", **invoice)
    stored = state.get("invoices", "inv")
    assert (stored["status"], stored["received_before_verification"]) == ("UNVALIDATED", True)
    refused(state, "supplier_invoice_received", "DUPLICATE_EVENT", **invoice)


def test_a_supplier_assertion_stays_a_claim() -> None:
    state = with_quote()
    before = {name: state.records(name) for name in ("cycles", "visits", "evidence", "payments")}
    apply(
        state,
        "supplier_assertion_received",
        assertion_id="a1",
        assertion="WORK_COMPLETE",
        cycle_id="cycle_1",
    )
    assert state.get("claims", "a1")["level"] == "participant_claim"
    assert {name: state.records(name) for name in before} == before


def test_an_approval_decision_needs_an_open_matching_checkpoint() -> None:
    state = with_quote()
    refused(
        state, "approver_decision_received", "CHECKPOINT_NOT_OPEN", decision="APPROVED", **DECISION
    )
    state = approval_requested()
    refused(
        state,
        "approver_decision_received",
        "APPROVAL_MISMATCH",
        decision="APPROVED",
        **{**DECISION, "amount_minor": 1},
    )
    outcome = apply(state, "approver_decision_received", decision="APPROVED", **DECISION)
    assert outcome.effects.cancel == ["reminder_checkpoint_1", "deadline_checkpoint_1"]
    assert state.get("checkpoints", "checkpoint_1")["level"] == "human_approval"
    refused(
        state, "approver_decision_received", "CHECKPOINT_NOT_OPEN", decision="APPROVED", **DECISION
    )


def test_reminder_and_deadline_timers() -> None:
    state = approval_requested()
    apply(state, "approval_reminder_due", checkpoint_id="checkpoint_1", cycle_id="cycle_1")
    assert state.get("checkpoints", "checkpoint_1")["reminder_due"] is True
    apply(state, "approval_deadline_due", checkpoint_id="checkpoint_1", cycle_id="cycle_1")
    assert state.get("checkpoints", "checkpoint_1")["status"] == "EXPIRED"
    refused(
        state,
        "approval_deadline_due",
        "CHECKPOINT_NOT_OPEN",
        checkpoint_id="checkpoint_1",
        cycle_id="cycle_1",
    )
    refused(
        state,
        "approval_reminder_due",
        "CHECKPOINT_NOT_OPEN",
        checkpoint_id="checkpoint_1",
        cycle_id="cycle_1",
    )


def test_exception_resolution_transfers_ownership_and_opens_the_notice_obligation() -> None:
    state = approval_requested()
    apply(state, "approver_decision_received", decision="REJECTED", **DECISION)
    refused(
        state,
        "operator_exception_resolved",
        "CHECKPOINT_NOT_OPEN",
        checkpoint_id="checkpoint_2",
        decision="TAKE_OWNERSHIP",
    )
    act(
        state,
        "request_exception_resolution",
        exception_type="APPROVAL_REJECTED",
        approval_checkpoint_id="checkpoint_1",
        deadline_after_minutes=1440,
    )
    refused(
        state,
        "operator_exception_resolved",
        "DECISION_NOT_EXECUTABLE",
        checkpoint_id="checkpoint_2",
        decision="CANCEL_OPERATION",
    )
    apply(
        state,
        "operator_exception_resolved",
        checkpoint_id="checkpoint_2",
        decision="TAKE_OWNERSHIP",
    )
    assert state.get("operation", "operation")["ownership"] == "human"
    assert state.get("obligations", "transfer_notice:checkpoint_2")["message_id"] is None


def test_verification_validation_and_settlement_are_authoritative_and_ordered() -> None:
    state = approval_requested()
    apply(state, "approver_decision_received", decision="APPROVED", **DECISION)
    act(
        state,
        "authorise_supplier_work",
        quote_id="q1",
        quote_version=1,
        approval_checkpoint_id="checkpoint_1",
        cycle_id="cycle_1",
    )
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
    refused(
        state,
        "invoice_validation_completed",
        "VALIDATION_NOT_REQUESTED",
        validation_id="v",
        invoice_id="inv",
        valid=True,
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
    assert state.get("evidence", "ev")["level"] == "authoritative_fact"
    assert state.get("cycles", "cycle_1")["work_verified"] is True
    act(state, "request_invoice_validation", invoice_id="inv")
    apply(state, "invoice_validation_completed", validation_id="v", invoice_id="inv", valid=True)
    settlement = {
        "settlement_id": "s",
        "payment_request_id": "payment_1",
        "invoice_id": "inv",
        "cycle_id": "cycle_1",
        "amount_minor": 64000,
        "currency": "GBP",
    }
    refused(state, "payment_settlement_confirmed", "PAYMENT_NOT_REQUESTED", **settlement)
    act(state, "request_payment", invoice_id="inv", amount_minor=64000, currency="GBP")
    refused(
        state,
        "payment_settlement_confirmed",
        "SETTLEMENT_MISMATCH",
        **{**settlement, "amount_minor": 1},
    )
    apply(state, "payment_settlement_confirmed", **settlement)
    assert state.get("payments", "payment_1")["status"] == "SETTLED"
    assert state.get("obligations", "completion_notice:cycle_1")["message_id"] is None


def test_persists_inside_the_provisional_window_reopens_a_warranty_cycle() -> None:
    state = reported()
    apply(state, "customer_resolution_reported", issue_id="i1", status="PERSISTS")
    assert state.get("issues", "i1")["open_contradiction"] is True, (
        "before verified work: a contradiction"
    )
    act(state, "request_supplier_visit", visit_type="DIAGNOSTIC", cycle_id="cycle_1")
    apply(
        state,
        "work_evidence_verified",
        evidence_id="ev",
        visit_id="visit_1",
        cycle_id="cycle_1",
        scope_digest=SCOPE,
        outcome="WORK_COMPLETE",
    )
    reducers._update(state, "operation", "operation", status="PROVISIONAL_CLOSE")
    outcome = apply(state, "customer_resolution_reported", issue_id="i1", status="PERSISTS")
    assert outcome.effects.reopened
    assert outcome.effects.cancel == ["provisional_close"]
    assert outcome.allocated == {"cycle_id": "cycle_2"}
    cycle = state.get("cycles", "cycle_2")
    assert (cycle["kind"], cycle["parent_cycle_id"], cycle["payable"]) == (
        "warranty",
        "cycle_1",
        False,
    )
    refused(
        state, "customer_resolution_reported", "UNKNOWN_ISSUE", issue_id="nope", status="RESOLVED"
    )


@pytest.mark.parametrize(("scope", "payable"), [(SCOPE, False), ("scope-other", True)])
def test_a_warranty_cycle_is_not_payable_only_when_its_scope_matches(
    scope: str, payable: bool
) -> None:
    state = reported()
    act(state, "request_supplier_visit", visit_type="DIAGNOSTIC", cycle_id="cycle_1")
    apply(
        state,
        "work_evidence_verified",
        evidence_id="ev",
        visit_id="visit_1",
        cycle_id="cycle_1",
        scope_digest=SCOPE,
        outcome="WORK_COMPLETE",
    )
    reducers._update(state, "cycles", "cycle_1", scope_digest=SCOPE)
    apply(state, "customer_resolution_reported", issue_id="i1", status="PERSISTS")
    act(state, "request_supplier_visit", visit_type="WARRANTY_REVISIT", cycle_id="cycle_2")
    apply(
        state,
        "work_evidence_verified",
        evidence_id="ev2",
        visit_id="visit_2",
        cycle_id="cycle_2",
        scope_digest=scope,
        outcome="WORK_COMPLETE",
    )
    assert state.get("cycles", "cycle_2")["payable"] is payable


def test_provisional_close_expiry_is_final_only_inside_a_provisional_close() -> None:
    state = reported()
    refused(state, "provisional_close_expired", "NOT_PROVISIONAL", cycle_id="cycle_1")
    reducers._update(state, "operation", "operation", status="PROVISIONAL_CLOSE")
    assert (
        apply(state, "provisional_close_expired", cycle_id="cycle_1").effects.terminal
        == "completed_successfully"
    )
    assert apply(state, "visit_followup_due", cycle_id="cycle_1").rejection is None


def test_hidden_state_is_never_in_the_projection() -> None:
    state = reported()
    assert "secret" not in str(state.projection())
    assert state.hidden() == {"secret": 1}


def test_what_the_state_hands_out_and_takes_in_is_a_private_copy() -> None:
    state = fresh()
    before = canonical_json(state.canonical())
    # Reads: changing what a read returned changes nothing in the state.
    (collection, records), *_ = ((c, r) for c in state.collections() if (r := state.records(c)))
    record_id = sorted(records)[0]
    records[record_id]["version"] = 99
    state.get(collection, record_id)["injected"] = [1]  # type: ignore[index]
    projection = state.projection()
    projection[collection].clear()
    state.hidden()["secret"] = 2  # type: ignore[index]
    assert canonical_json(state.canonical()) == before
    assert state.hidden() == {"secret": 1}
    # Writes: changing a record after putting it changes nothing either.
    written: dict[str, Any] = {"nested": {"values": [1]}}
    state.put(collection, "new", written)
    written["nested"]["values"].append(2)
    assert state.get(collection, "new") == {"nested": {"values": [1]}, "version": 1}

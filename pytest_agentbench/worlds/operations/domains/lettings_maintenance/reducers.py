"""Event reducers of the maintenance domain: one function per event type.

The claims ladder is enforced here: a participant's claim (a supplier
assertion, a work report, a customer report) is stored as a claim and never
sets a fact; attendance, verified work, invoice validity and settlement are
set only by the authoritative system's events; approval only by the approver.
A rejecting reducer writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_agentbench.sdk import (
    Effects,
    EventOutcome,
    JsonValue,
    Rejection,
    StateAccess,
    TimerRequest,
)
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.vocabulary import (
    COMPLETION_NOTICE,
    TRANSFER_NOTICE,
)

COLLECTIONS = (
    "operation",
    "issues",
    "cycles",
    "visits",
    "quotes",
    "invoices",
    "checkpoints",
    "payments",
    "claims",
    "evidence",
    "obligations",
)
OPERATION = "operation"
PROVISIONAL_KEY = "provisional_close"

Reducer = Callable[[StateAccess, Mapping[str, Any]], EventOutcome]


def _reject(code: str, reason: str) -> EventOutcome:
    return EventOutcome(rejection=Rejection(code, reason))


def _update(state: StateAccess, collection: str, record_id: str, **changes: JsonValue) -> None:
    record = state.get(collection, record_id)
    assert record is not None
    record.pop("version", None)
    state.put(collection, record_id, {**record, **changes})


def operation(state: StateAccess) -> dict[str, JsonValue]:
    record = state.get("operation", OPERATION)
    assert record is not None
    return record


def open_obligation(state: StateAccess, kind: str, fixture: str, correlation: str) -> None:
    key = f"{kind}:{correlation}"
    if state.get("obligations", key) is None:
        state.put(
            "obligations",
            key,
            {
                "kind": kind,
                "fixture_id": fixture,
                "correlation_id": correlation,
                "created_minute": state.now,
                "due_minute": state.now + int(state.policy.completion_notice_within_minutes),
                "message_id": None,
            },
        )


def issue_reported(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if state.get("issues", payload["issue_id"]) is not None:
        return _reject("DUPLICATE_EVENT", f"issue {payload['issue_id']} is already reported")
    state.put(
        "issues",
        payload["issue_id"],
        {
            "classification": payload["classification"],
            "status": "OPEN",
            "level": "participant_claim",
            "open_contradiction": False,
        },
    )
    state.put(
        "cycles",
        payload["cycle_id"],
        {
            "issue_id": payload["issue_id"],
            "kind": "initial",
            "parent_cycle_id": None,
            "status": "OPEN",
            "scope_digest": None,
            "further_work_required": False,
            "work_verified": False,
            "payable": True,
        },
    )
    _update(state, "operation", OPERATION, current_cycle=payload["cycle_id"], status="OPEN")
    return EventOutcome()


def _next_cycle_id(state: StateAccess, current: str) -> str:
    """The next cycle id in the authored cycles' own numbering (``work_cycle_3`` after ``_2``).

    The original numbers every cycle it opens ``work_cycle_<n>``, n one past
    the cycles it holds; the prefix here is the current cycle's, so a spec
    that numbers ``cycle_1`` gets ``cycle_2`` and one that numbers
    ``work_cycle_2`` gets ``work_cycle_3``.
    """
    prefix = current.rstrip("0123456789") if current[-1:].isdigit() else "work_cycle_"
    return f"{prefix}{len(state.records('cycles')) + 1}"


def resolution_reported(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    issue_id = payload["issue_id"]
    if payload["status"] not in ("RESOLVED", "PERSISTS"):
        return _reject(
            "UNKNOWN_RESOLUTION_STATUS", f"{payload['status']!r} is not a resolution report"
        )
    if state.get("issues", issue_id) is None:
        return _reject("UNKNOWN_ISSUE", f"no issue {issue_id}")
    op = operation(state)
    if payload["status"] == "RESOLVED":
        _update(state, "issues", issue_id, open_contradiction=False, customer_confirmed=True)
        return EventOutcome()
    current = str(op["current_cycle"])
    cycle = state.get("cycles", current)
    assert cycle is not None
    if not cycle["work_verified"]:
        _update(state, "issues", issue_id, open_contradiction=True)
        return EventOutcome()
    new_cycle = _next_cycle_id(state, current)
    state.put(
        "cycles",
        new_cycle,
        {
            "issue_id": issue_id,
            "kind": "warranty",
            "parent_cycle_id": current,
            "status": "OPEN",
            "scope_digest": cycle["scope_digest"],
            "further_work_required": True,
            "work_verified": False,
            "payable": False,
        },
    )
    _update(state, "cycles", current, status="REOPENED")
    _update(state, "issues", issue_id, open_contradiction=True, customer_confirmed=False)
    reopened = op["status"] == "PROVISIONAL_CLOSE"
    _update(state, "operation", OPERATION, current_cycle=new_cycle, status="OPEN")
    return EventOutcome(
        effects=Effects(cancel=[PROVISIONAL_KEY] if reopened else [], reopened=reopened),
        allocated={"cycle_id": new_cycle},
    )


def _visit(state: StateAccess, payload: Mapping[str, Any]) -> dict[str, JsonValue] | None:
    visit = state.get("visits", payload["visit_id"])
    if visit is None or visit["cycle_id"] != payload["cycle_id"]:
        return None
    return visit


def visit_response(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if payload["response"] not in ("ACCEPTED", "DECLINED"):
        return _reject("UNKNOWN_VISIT_RESPONSE", f"{payload['response']!r} is not a visit response")
    if _visit(state, payload) is None:
        return _reject("UNKNOWN_VISIT", f"no visit {payload['visit_id']} in {payload['cycle_id']}")
    _update(state, "visits", payload["visit_id"], supplier_response=payload["response"])
    return EventOutcome()


def work_reported(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if _visit(state, payload) is None:
        return _reject("UNKNOWN_VISIT", f"no visit {payload['visit_id']} in {payload['cycle_id']}")
    _update(
        state,
        "visits",
        payload["visit_id"],
        reported_outcome=payload["outcome"],
        report_level="participant_claim",
    )
    if payload["outcome"] == "FURTHER_WORK_REQUIRED":
        _update(
            state,
            "cycles",
            payload["cycle_id"],
            further_work_required=True,
            scope_digest=payload["scope_digest"],
        )
    return EventOutcome(effects=Effects(cancel=[f"visit_followup_{payload['visit_id']}"]))


def quote_received(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if payload["currency"] != state.policy.currency:
        return _reject(
            "CURRENCY_MISMATCH",
            f"quote in {payload['currency']}, policy is {state.policy.currency}",
        )
    existing = state.get("quotes", payload["quote_id"])
    if existing is not None and int(existing["quote_version"]) >= int(payload["quote_version"]):
        return _reject(
            "STALE_QUOTE_VERSION",
            f"quote {payload['quote_id']} already at v{existing['quote_version']}",
        )
    cycle_id = payload["cycle_id"]
    if state.get("cycles", cycle_id) is None:
        # A quote for further work opens its own work cycle (the original's
        # ``work_cycle_2``): approval, authorisation, invoice and payment
        # correlate there, and the case's attention moves onto it.
        parent = payload.get("parent_cycle_id")
        parent_cycle = None if parent is None else state.get("cycles", str(parent))
        issues = sorted(state.records("issues"))
        if parent_cycle is None and not issues:
            return _reject("UNKNOWN_CYCLE", f"no cycle {cycle_id} and no reported issue")
        state.put(
            "cycles",
            cycle_id,
            {
                "issue_id": issues[0] if parent_cycle is None else parent_cycle["issue_id"],
                "kind": "quoted",
                "parent_cycle_id": parent,
                "status": "OPEN",
                "scope_digest": payload["scope_digest"],
                "further_work_required": True,
                "work_verified": False,
                "payable": True,
            },
        )
    _update(state, "operation", OPERATION, current_cycle=cycle_id)
    state.put(
        "quotes",
        payload["quote_id"],
        {
            "quote_version": payload["quote_version"],
            "cycle_id": payload["cycle_id"],
            "amount_minor": payload["amount_minor"],
            "currency": payload["currency"],
            "scope_digest": payload["scope_digest"],
            "status": "AWAITING_DECISION",
            "level": "participant_claim",
        },
    )
    return EventOutcome()


def invoice_received(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if state.get("invoices", payload["invoice_id"]) is not None:
        return _reject("DUPLICATE_EVENT", f"invoice {payload['invoice_id']} already received")
    cycle = state.get("cycles", payload["cycle_id"])
    if cycle is None:
        return _reject("UNKNOWN_CYCLE", f"no cycle {payload['cycle_id']}")
    state.put(
        "invoices",
        payload["invoice_id"],
        {
            "cycle_id": payload["cycle_id"],
            "quote_id": payload["quote_id"],
            "quote_version": payload["quote_version"],
            "amount_minor": payload["amount_minor"],
            "currency": payload["currency"],
            "status": "UNVALIDATED",
            "received_before_verification": not cycle["work_verified"],
        },
    )
    return EventOutcome()


def assertion_received(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    state.put(
        "claims",
        payload["assertion_id"],
        {
            "assertion": payload["assertion"],
            "cycle_id": payload.get("cycle_id"),
            "level": "participant_claim",
        },
    )
    return EventOutcome()


def approver_decision(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if payload["decision"] not in ("APPROVED", "REJECTED"):
        return _reject("UNKNOWN_DECISION", f"{payload['decision']!r} is not an approval decision")
    checkpoint = state.get("checkpoints", payload["checkpoint_id"])
    if checkpoint is None or checkpoint["status"] != "OPEN":
        return _reject("CHECKPOINT_NOT_OPEN", f"checkpoint {payload['checkpoint_id']} is not open")
    for name in ("quote_id", "quote_version", "amount_minor", "currency", "scope_digest"):
        if checkpoint[name] != payload[name]:
            return _reject(
                "APPROVAL_MISMATCH", f"{name} does not match checkpoint {payload['checkpoint_id']}"
            )
    _update(
        state,
        "checkpoints",
        payload["checkpoint_id"],
        status=payload["decision"],
        decided_minute=state.now,
        level="human_approval",
    )
    _update(state, "quotes", payload["quote_id"], status=payload["decision"])
    key = payload["checkpoint_id"]
    return EventOutcome(effects=Effects(cancel=[f"reminder_{key}", f"deadline_{key}"]))


EXCEPTION_DECISIONS = ("TAKE_OWNERSHIP", "AUTHORISE_ALTERNATIVE", "CANCEL_OPERATION")


def exception_resolved(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if payload["decision"] not in EXCEPTION_DECISIONS:
        return _reject("UNKNOWN_EXCEPTION_DECISION", f"{payload['decision']!r} is not a resolution")
    checkpoint = state.get("checkpoints", payload["checkpoint_id"])
    if (
        checkpoint is None
        or checkpoint["status"] != "OPEN"
        or checkpoint["type"] != "maintenance_exception_resolution"
    ):
        return _reject(
            "CHECKPOINT_NOT_OPEN", f"exception checkpoint {payload['checkpoint_id']} is not open"
        )
    if payload["decision"] != "TAKE_OWNERSHIP":
        # AUTHORISE_ALTERNATIVE and CANCEL_OPERATION are deferred in the seed: no reducer.
        return _reject(
            "DECISION_NOT_EXECUTABLE", f"{payload['decision']} has no executable reducer"
        )
    _update(
        state,
        "checkpoints",
        payload["checkpoint_id"],
        status="RESOLVED",
        decision=payload["decision"],
        decided_minute=state.now,
        level="human_approval",
    )
    _update(state, "operation", OPERATION, ownership="human", status="TRANSFER_PENDING")
    open_obligation(state, "transfer_notice", TRANSFER_NOTICE, payload["checkpoint_id"])
    return EventOutcome()


def attendance_verified(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if _visit(state, payload) is None:
        return _reject("UNKNOWN_VISIT", f"no visit {payload['visit_id']} in {payload['cycle_id']}")
    _update(
        state,
        "visits",
        payload["visit_id"],
        attendance_verified=payload["attended"],
        attendance_level="authoritative_fact",
    )
    return EventOutcome()


def work_verified(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if _visit(state, payload) is None:
        return _reject("UNKNOWN_VISIT", f"no visit {payload['visit_id']} in {payload['cycle_id']}")
    cycle = state.get("cycles", payload["cycle_id"])
    assert cycle is not None
    # The authoritative system's evidence is what verifies the work, whatever
    # word it reports the outcome in (the original records the string and
    # verifies the cycle): there is no closed outcome vocabulary to check.
    state.put(
        "evidence",
        payload["evidence_id"],
        {
            "visit_id": payload["visit_id"],
            "cycle_id": payload["cycle_id"],
            "scope_digest": payload["scope_digest"],
            "outcome": payload["outcome"],
            "level": "authoritative_fact",
        },
    )
    warranty = cycle["kind"] == "warranty" and cycle["scope_digest"] == payload["scope_digest"]
    _update(
        state,
        "cycles",
        payload["cycle_id"],
        work_verified=True,
        further_work_required=False,
        verified_scope_digest=payload["scope_digest"],
        payable=not warranty if cycle["kind"] == "warranty" else cycle["payable"],
    )
    if not _payable(state, payload["cycle_id"]):
        open_obligation(state, "completion_notice", COMPLETION_NOTICE, payload["cycle_id"])
    return EventOutcome(effects=Effects(cancel=[f"visit_followup_{payload['visit_id']}"]))


def _payable(state: StateAccess, cycle_id: str) -> bool:
    cycle = state.get("cycles", cycle_id)
    return bool(cycle and cycle["payable"])


def invoice_validated(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    invoice = state.get("invoices", payload["invoice_id"])
    if invoice is None or invoice["status"] != "VALIDATION_REQUESTED":
        return _reject(
            "VALIDATION_NOT_REQUESTED", f"invoice {payload['invoice_id']} awaits no validation"
        )
    _update(
        state,
        "invoices",
        payload["invoice_id"],
        status="VALIDATED" if payload["valid"] else "INVALID",
        validation_level="authoritative_fact",
    )
    return EventOutcome()


def settlement_confirmed(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    payment = state.get("payments", payload["payment_request_id"])
    if payment is None or payment["status"] != "REQUESTED":
        return _reject(
            "PAYMENT_NOT_REQUESTED",
            f"payment {payload['payment_request_id']} is not awaiting settlement",
        )
    if (
        payment["invoice_id"] != payload["invoice_id"]
        or payment["amount_minor"] != payload["amount_minor"]
    ):
        return _reject("SETTLEMENT_MISMATCH", "settlement does not match the payment request")
    _update(
        state,
        "payments",
        payload["payment_request_id"],
        status="SETTLED",
        level="authoritative_fact",
    )
    open_obligation(state, "completion_notice", COMPLETION_NOTICE, payload["cycle_id"])
    return EventOutcome()


def reminder_due(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    checkpoint = state.get("checkpoints", payload["checkpoint_id"])
    if checkpoint is None or checkpoint["status"] != "OPEN":
        return _reject("CHECKPOINT_NOT_OPEN", f"checkpoint {payload['checkpoint_id']} is not open")
    _update(state, "checkpoints", payload["checkpoint_id"], reminder_due=True)
    return EventOutcome()


def deadline_due(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    checkpoint = state.get("checkpoints", payload["checkpoint_id"])
    if checkpoint is None or checkpoint["status"] != "OPEN":
        return _reject("CHECKPOINT_NOT_OPEN", f"checkpoint {payload['checkpoint_id']} is not open")
    _update(
        state, "checkpoints", payload["checkpoint_id"], status="EXPIRED", decided_minute=state.now
    )
    return EventOutcome(effects=Effects(cancel=[f"reminder_{payload['checkpoint_id']}"]))


def followup_due(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    return EventOutcome()


def close_expired(state: StateAccess, payload: Mapping[str, Any]) -> EventOutcome:
    if operation(state)["status"] != "PROVISIONAL_CLOSE":
        return _reject("NOT_PROVISIONAL", "no provisional close is open")
    _update(state, "operation", OPERATION, status="CLOSED")
    _update(state, "cycles", payload["cycle_id"], status="CLOSED")
    return EventOutcome(effects=Effects(terminal="completed_successfully"))


REDUCERS: dict[str, Reducer] = {
    "customer_issue_reported": issue_reported,
    "customer_resolution_reported": resolution_reported,
    "supplier_visit_response": visit_response,
    "supplier_work_reported": work_reported,
    "supplier_quote_received": quote_received,
    "supplier_invoice_received": invoice_received,
    "supplier_assertion_received": assertion_received,
    "approver_decision_received": approver_decision,
    "operator_exception_resolved": exception_resolved,
    "visit_attendance_verified": attendance_verified,
    "work_evidence_verified": work_verified,
    "invoice_validation_completed": invoice_validated,
    "payment_settlement_confirmed": settlement_confirmed,
    "approval_reminder_due": reminder_due,
    "approval_deadline_due": deadline_due,
    "visit_followup_due": followup_due,
    "provisional_close_expired": close_expired,
}


def timer(key: str, event_type: str, after: int, **payload: JsonValue) -> TimerRequest:
    return TimerRequest(key=key, event_type=event_type, after_minutes=after, payload=payload)

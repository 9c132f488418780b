"""The ``lettings.maintenance`` vocabulary: policy, roles, event and action types (format §1-§3).

Event payload strings are any non-empty string, as in the original's loader
(it types a payload field, it never enumerates its values): a supplier or a
verification service may report ``COMPLETED`` as well as ``WORK_COMPLETE``.
Where a reducer must branch on a value (a decision, a visit response, a
resolution status) it refuses an unknown one by name when the event arrives.
"""

from __future__ import annotations

from pydantic import StrictInt, StrictStr, field_validator

from pytest_agentbench.sdk import (
    AUTHORITY_ACTOR_CLAIM,
    AUTHORITY_AUTHORITATIVE_VERIFICATION,
    AUTHORITY_COMMUNICATION,
    AUTHORITY_SYSTEM_EVENT,
    AUTHORITY_SYSTEM_OF_RECORD,
    ActionType,
    BoundVersion,
    EventType,
    EvidenceObligation,
    FieldRule,
    LinkedEvidence,
    PayloadRecord,
    ReadRecordContract,
    ReadToolSource,
    Record,
)

OPERATION_TYPE = "lettings.maintenance.synthetic"
# The original's eight named reads over this operation's collections, each a
# whole projection served by one service; every domain collection is served by
# exactly one (the engine's own schedules and idempotency keys by none).
READ_TOOLS: dict[str, tuple[str, ...]] = {
    "get_case_record": ("cycles", "issues", "operation", "visits"),
    "list_authoritative_records": ("evidence",),
    "list_billing": ("invoices", "payments"),
    "list_checkpoints": ("checkpoints",),
    "list_communications": ("communications",),
    "list_obligations": ("obligations",),
    "list_quotes": ("quotes",),
    "list_recent_events": ("claims",),
}

# Where each named read comes from, as the original publishes it: its service,
# the authority class of its answer and the schema id of that answer.
READ_TOOL_SOURCES: dict[str, ReadToolSource] = {
    "get_case_record": ReadToolSource(
        "case_service", AUTHORITY_SYSTEM_OF_RECORD, "maintenance.get_case_record.v2"
    ),
    "list_authoritative_records": ReadToolSource(
        "verification_service",
        AUTHORITY_AUTHORITATIVE_VERIFICATION,
        "maintenance.list_authoritative_records.v1",
    ),
    "list_billing": ReadToolSource(
        "billing_service", AUTHORITY_SYSTEM_OF_RECORD, "maintenance.list_billing.v1"
    ),
    "list_checkpoints": ReadToolSource(
        "approval_service", AUTHORITY_SYSTEM_OF_RECORD, "maintenance.list_checkpoints.v1"
    ),
    "list_communications": ReadToolSource(
        "messaging_service", AUTHORITY_COMMUNICATION, "maintenance.list_communications.v2"
    ),
    "list_obligations": ReadToolSource(
        "obligation_service", AUTHORITY_SYSTEM_OF_RECORD, "maintenance.list_obligations.v1"
    ),
    "list_quotes": ReadToolSource(
        "quoting_service", AUTHORITY_SYSTEM_OF_RECORD, "maintenance.list_quotes.v1"
    ),
    "list_recent_events": ReadToolSource(
        "inbox_service", AUTHORITY_ACTOR_CLAIM, "maintenance.list_recent_events.v1"
    ),
}

# How its reads name and version what they serve, as the original publishes it:
# the service's record ``{source}:maintenance_case``, versioned by a 16-hex digest of
# the read's projection under the label "maintenance retrieval record".
READ_RECORD_CONTRACT = ReadRecordContract("maintenance_case", "maintenance retrieval record", 16)

# The authority class of each role's events, as the original derives it from the
# actor registry: only the authoritative external system verifies.
ROLE_AUTHORITY: dict[str, str] = {
    "agent": AUTHORITY_ACTOR_CLAIM,
    "approver": AUTHORITY_ACTOR_CLAIM,
    "authoritative_external_system": AUTHORITY_AUTHORITATIVE_VERIFICATION,
    "customer": AUTHORITY_ACTOR_CLAIM,
    "operator_human": AUTHORITY_ACTOR_CLAIM,
    "supplier": AUTHORITY_ACTOR_CLAIM,
    "system_scheduler": AUTHORITY_SYSTEM_EVENT,
}

# What each outcome must have read, by named read, in the invocation since its
# last accepted effect: the original's live contract for operation 0.6.0 (its
# surface, byte for byte). A proposal without them is refused.
READ_CONTRACT: dict[str, tuple[str, ...]] = {
    "authorise_supplier_work": ("get_case_record", "list_checkpoints", "list_quotes"),
    "complete": ("get_case_record", "list_billing", "list_checkpoints", "list_obligations"),
    "request_approval": ("get_case_record", "list_checkpoints", "list_quotes"),
    "request_exception_resolution": ("get_case_record", "list_checkpoints", "list_quotes"),
    "request_invoice_validation": (
        "get_case_record",
        "list_authoritative_records",
        "list_billing",
    ),
    "request_payment": ("get_case_record", "list_authoritative_records", "list_billing"),
    "request_supplier_visit": ("get_case_record",),
    "send_message": ("get_case_record", "list_communications"),
}

_WORK_EVIDENCE = LinkedEvidence(
    "invoices", "invoice_id", "cycles", "evidence", link_field="cycle_id"
)
_SELECTED_APPROVAL = PayloadRecord("checkpoints", "approval_checkpoint_id")

# What an action must cite, selected by its payload, and the code it is refused
# with otherwise: the original's evidence contract for operation 0.6.0 (the
# approval it names; the invoice and the work evidence that verified its cycle;
# the approval and the quote version it binds), each action refused with the
# code its handler gives.
EVIDENCE_CONTRACT: dict[str, EvidenceObligation] = {
    "authorise_supplier_work": EvidenceObligation(
        "MISSING_AUTHORITY_EVIDENCE", (_SELECTED_APPROVAL,)
    ),
    "request_invoice_validation": EvidenceObligation(
        "MISSING_AUTHORITY_EVIDENCE", (_WORK_EVIDENCE,)
    ),
    "request_payment": EvidenceObligation(
        "MISSING_AUTHORITY_EVIDENCE", (PayloadRecord("invoices", "invoice_id"), _WORK_EVIDENCE)
    ),
    "request_exception_resolution": EvidenceObligation(
        "INCOMPLETE_CHECKPOINT_CONTEXT",
        (
            _SELECTED_APPROVAL,
            BoundVersion(
                "checkpoints",
                "approval_checkpoint_id",
                "quotes",
                id_field="quote_id",
                version_field="quote_version",
            ),
        ),
    ),
}

ROLES = frozenset(
    {
        "customer",
        "supplier",
        "approver",
        "operator_human",
        "authoritative_external_system",
        "system_scheduler",
        "agent",
    }
)
PARTICIPANT_ROLES = frozenset({"customer", "supplier"})
"""Roles whose events are claims, never facts."""

REPAIR_APPROVAL = "repair_quote_approval"
EXCEPTION_RESOLUTION = "maintenance_exception_resolution"
COMPLETION_NOTICE = "msg_completion_notice"
TRANSFER_NOTICE = "msg_transfer_notice"
APPROVAL_REMINDER = "msg_approval_reminder"

COMPLETED_SUCCESSFULLY = "completed_successfully"
TRANSFERRED_TO_HUMAN = "transferred_to_human_ownership"
TERMINAL_NOTICES = {
    COMPLETED_SUCCESSFULLY: COMPLETION_NOTICE,
    TRANSFERRED_TO_HUMAN: TRANSFER_NOTICE,
}
"""The customer notice each terminal requires."""

DELIVERY_RECOVERY_VERSIONS = frozenset({"0.7.0"})
"""Operation versions with a secondary channel for a failed transfer notice (``recovery_of``)."""


def has_delivery_recovery(operation_version: str) -> bool:
    return operation_version in DELIVERY_RECOVERY_VERSIONS


def secondary_channel(fixture_id: str) -> str:
    """The fault-plan key of a fixture's secondary channel (not a message fixture)."""
    return f"secondary:{fixture_id}"


class Policy(Record):
    currency: StrictStr
    issue_classification: StrictStr
    approval_threshold_minor: StrictInt
    approval_reminder_after_minutes: StrictInt
    approval_deadline_after_minutes: StrictInt
    approval_validity_minutes: StrictInt
    provisional_close_minutes: StrictInt
    visit_followup_after_minutes: StrictInt
    completion_notice_within_minutes: StrictInt
    max_turns_per_invocation: StrictInt
    horizon_minutes: StrictInt
    max_retrieval_batches_per_invocation: StrictInt

    @field_validator(
        "approval_threshold_minor",
        "approval_reminder_after_minutes",
        "approval_deadline_after_minutes",
        "approval_validity_minutes",
        "provisional_close_minutes",
        "visit_followup_after_minutes",
        "completion_notice_within_minutes",
        "max_turns_per_invocation",
        "horizon_minutes",
        "max_retrieval_batches_per_invocation",
    )
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("must be a positive integer")
        return value

    @field_validator("currency")
    @classmethod
    def _gbp(cls, value: str) -> str:
        if value != "GBP":
            raise ValueError("must be GBP")
        return value


S = FieldRule()
INT = FieldRule("int")
BOOL = FieldRule("bool")


def _choice(*values: str) -> FieldRule:
    return FieldRule("str", values)


EVENT_TYPES: dict[str, EventType] = {
    event.name: event
    for event in (
        EventType(
            "customer_issue_reported",
            "report_issue",
            {"issue_id": S, "classification": S, "cycle_id": S},
            {"description_fixture_id": S},
        ),
        EventType(
            "customer_resolution_reported",
            "confirm_resolution",
            {"issue_id": S, "status": S},
            {"related_visit_id": S, "cycle_id": S},
        ),
        EventType(
            "supplier_visit_response",
            "respond_to_visit",
            {"visit_id": S, "cycle_id": S, "response": S},
        ),
        EventType(
            "supplier_work_reported",
            "report_work",
            {
                "visit_id": S,
                "cycle_id": S,
                "outcome": S,
                "scope_digest": S,
            },
        ),
        EventType(
            "supplier_quote_received",
            "submit_quote",
            {
                "quote_id": S,
                "quote_version": INT,
                "cycle_id": S,
                "amount_minor": INT,
                "currency": S,
                "scope_digest": S,
            },
            {"parent_cycle_id": S},
        ),
        EventType(
            "supplier_invoice_received",
            "submit_invoice",
            {
                "invoice_id": S,
                "cycle_id": S,
                "quote_id": S,
                "quote_version": INT,
                "amount_minor": INT,
                "currency": S,
            },
        ),
        EventType(
            "supplier_assertion_received",
            "assert_status",
            {
                "assertion_id": S,
                "assertion": S,
            },
            {"cycle_id": S},
        ),
        EventType(
            "approver_decision_received",
            "approve_repair_quote",
            {
                "checkpoint_id": S,
                "quote_id": S,
                "quote_version": INT,
                "amount_minor": INT,
                "currency": S,
                "scope_digest": S,
                "decision": S,
            },
            {"cycle_id": S},
        ),
        EventType(
            "operator_exception_resolved",
            "resolve_exception",
            {
                "checkpoint_id": S,
                "decision": S,
            },
            {"cycle_id": S},
        ),
        EventType(
            "visit_attendance_verified",
            "verify_attendance",
            {"visit_id": S, "cycle_id": S, "attended": BOOL},
        ),
        EventType(
            "work_evidence_verified",
            "verify_work",
            {
                "evidence_id": S,
                "visit_id": S,
                "cycle_id": S,
                "scope_digest": S,
                "outcome": S,
            },
        ),
        EventType(
            "invoice_validation_completed",
            "validate_invoice",
            {"validation_id": S, "invoice_id": S, "valid": BOOL},
            {"reason_code": S, "cycle_id": S},
        ),
        EventType(
            "payment_settlement_confirmed",
            "confirm_settlement",
            {
                "settlement_id": S,
                "payment_request_id": S,
                "invoice_id": S,
                "cycle_id": S,
                "amount_minor": INT,
                "currency": S,
            },
        ),
        EventType(
            "approval_reminder_due", "emit_timer", {"checkpoint_id": S, "cycle_id": S}, timer=True
        ),
        EventType(
            "approval_deadline_due", "emit_timer", {"checkpoint_id": S, "cycle_id": S}, timer=True
        ),
        EventType("visit_followup_due", "emit_timer", {"cycle_id": S}, timer=True),
        EventType("provisional_close_expired", "emit_timer", {"cycle_id": S}, timer=True),
    )
}

ACTION_TYPES: dict[str, ActionType] = {
    action.name: action
    for action in (
        ActionType(
            "request_supplier_visit",
            {"visit_type": _choice("DIAGNOSTIC", "WARRANTY_REVISIT"), "cycle_id": S},
            {"scope_digest": S},
        ),
        ActionType(
            "request_approval",
            {
                "quote_id": S,
                "quote_version": INT,
                "amount_minor": INT,
                "currency": S,
                "scope_digest": S,
                "cycle_id": S,
                "deadline_after_minutes": INT,
            },
            defaults={"deadline_after_minutes": 4320},
        ),
        ActionType(
            "send_message",
            {"recipient_actor_id": S, "message_fixture_id": S},
            {"correlation_id": S, "recovery_of": S},
        ),
        ActionType(
            "authorise_supplier_work",
            {"quote_id": S, "quote_version": INT, "approval_checkpoint_id": S, "cycle_id": S},
        ),
        ActionType("request_invoice_validation", {"invoice_id": S}),
        ActionType("request_payment", {"invoice_id": S, "amount_minor": INT, "currency": S}),
        ActionType(
            "request_exception_resolution",
            {
                "exception_type": _choice("APPROVAL_REJECTED", "APPROVAL_EXPIRED"),
                "approval_checkpoint_id": S,
                "deadline_after_minutes": INT,
            },
        ),
    )
}

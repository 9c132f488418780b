"""The ``commerce.return_refund`` vocabulary: policy, roles, event and action types.

Built from the rules of OperateBench's commerce return/refund pack (not its
code): a customer's handover claim is a claim; carrier handover, warehouse
inspection and payment settlement are separate authoritative records; a
refund above the policy threshold needs one exact human approval; and a
settled refund stays provisional until a cooldown passes without a reversal.
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
    EventType,
    EvidenceObligation,
    FieldRule,
    PayloadRecord,
    ReadRecordContract,
    ReadToolSource,
    Record,
)

OPERATION_TYPE = "commerce.return_refund.synthetic.v1"
PACK_VERSION = "0.1.0"
"""The version of the original pack whose rules this one follows."""
# The original's nine named reads, each the whole projection of one collection
# (its roots); a collection is read through exactly one of them.
READ_TOOLS: dict[str, tuple[str, ...]] = {
    "get_return_case": ("case",),
    "list_authorisations": ("authorisations",),
    "list_carrier_records": ("carrier_records",),
    "list_checkpoints": ("checkpoints",),
    "list_communications": ("communications",),
    "list_customer_claims": ("customer_claims",),
    "list_inspections": ("inspections",),
    "list_obligations": ("obligations",),
    "list_refunds": ("refunds",),
}

SCHEMA_NAMESPACE = "commerce.return_refund"


def _source(tool: str, service: str, authority: str) -> ReadToolSource:
    # The original names each answer's schema from the namespace, the tool and
    # one revision shared by all nine.
    return ReadToolSource(service, authority, f"{SCHEMA_NAMESPACE}.{tool}.v1")


# Where each named read comes from, as the original publishes it: its service,
# the authority class of its answer and the schema id of that answer.
READ_TOOL_SOURCES: dict[str, ReadToolSource] = {
    tool: _source(tool, service, authority)
    for tool, service, authority in (
        ("get_return_case", "returns_service", AUTHORITY_SYSTEM_OF_RECORD),
        ("list_authorisations", "returns_service", AUTHORITY_SYSTEM_OF_RECORD),
        ("list_carrier_records", "carrier_service", AUTHORITY_AUTHORITATIVE_VERIFICATION),
        ("list_checkpoints", "approval_service", AUTHORITY_SYSTEM_OF_RECORD),
        ("list_communications", "messaging_service", AUTHORITY_COMMUNICATION),
        ("list_customer_claims", "returns_inbox", AUTHORITY_ACTOR_CLAIM),
        ("list_inspections", "warehouse_service", AUTHORITY_AUTHORITATIVE_VERIFICATION),
        ("list_obligations", "obligation_service", AUTHORITY_SYSTEM_OF_RECORD),
        ("list_refunds", "payment_service", AUTHORITY_SYSTEM_OF_RECORD),
    )
}

# How its reads name and version what they serve, as the original publishes it:
# the service's record ``{source}:return_refund_case``, versioned by a 16-hex digest of
# the read's projection under the label "commerce return/refund retrieval record".
READ_RECORD_CONTRACT = ReadRecordContract(
    "return_refund_case", "commerce return/refund retrieval record", 16
)

# The authority class of each role's events, as the original's actor registry
# gives it: the carrier, warehouse and payment systems verify; a shopper or an
# approver asserts.
ROLE_AUTHORITY: dict[str, str] = {
    "agent": AUTHORITY_ACTOR_CLAIM,
    "authoritative_external_system": AUTHORITY_AUTHORITATIVE_VERIFICATION,
    "customer": AUTHORITY_ACTOR_CLAIM,
    "returns_approver": AUTHORITY_ACTOR_CLAIM,
    "system_scheduler": AUTHORITY_SYSTEM_EVENT,
}

# What each outcome must have read, by named read, in the invocation since its
# last accepted effect: the original's per-action read requirements for this
# operation. A proposal without them is refused by the engine's read gate.
READ_CONTRACT: dict[str, tuple[str, ...]] = {
    "complete": (
        "get_return_case",
        "list_checkpoints",
        "list_communications",
        "list_obligations",
        "list_refunds",
    ),
    "issue_return_authorisation": ("get_return_case",),
    "request_refund": (
        "get_return_case",
        "list_carrier_records",
        "list_checkpoints",
        "list_inspections",
        "list_refunds",
    ),
    "request_refund_approval": ("get_return_case", "list_checkpoints", "list_inspections"),
    "send_message": ("get_return_case", "list_communications", "list_obligations"),
}

ROLES = frozenset(
    {
        "customer",
        "returns_approver",
        "authoritative_external_system",
        "system_scheduler",
        "agent",
    }
)

REFUND_APPROVAL = "high_value_refund_approval"
ELIGIBLE = "ELIGIBLE_FOR_REFUND"

SETTLED_TERMINAL = "completed_refund_settled"
DENIED_TERMINAL = "closed_refund_denied"
EXPIRED_TERMINAL = "closed_return_expired"

HANDOVER_REMINDER = "msg_handover_reminder"
RETURN_EXPIRED = "msg_return_expired"
REFUND_COMPLETE = "msg_refund_complete"
REFUND_DENIED = "msg_refund_denied"

# Phases of the case record.
NEW = "NEW"
RETURN_REQUESTED = "RETURN_REQUESTED"
AWAITING_HANDOVER = "AWAITING_HANDOVER"
AWAITING_INSPECTION = "AWAITING_INSPECTION"
AWAITING_APPROVAL = "AWAITING_APPROVAL"
READY_TO_REFUND = "READY_TO_REFUND"
REFUND_PENDING = "REFUND_PENDING"
REFUND_SETTLED = "REFUND_SETTLED"
PROVISIONAL = "PROVISIONAL"
REFUND_REOPENED = "REFUND_REOPENED"
REFUND_DENIED_PHASE = "REFUND_DENIED"
RETURN_EXPIRED_PHASE = "RETURN_EXPIRED"
FINAL = "FINAL"


class Policy(Record):
    currency: StrictStr
    refund_amount_minor: StrictInt
    approval_threshold_minor: StrictInt
    handover_reminder_after_minutes: StrictInt
    handover_deadline_after_minutes: StrictInt
    approval_deadline_after_minutes: StrictInt
    provisional_close_minutes: StrictInt
    completion_notice_within_minutes: StrictInt
    max_turns_per_invocation: StrictInt
    horizon_minutes: StrictInt
    max_retrieval_batches_per_invocation: StrictInt

    @field_validator(
        "refund_amount_minor",
        "approval_threshold_minor",
        "handover_reminder_after_minutes",
        "handover_deadline_after_minutes",
        "approval_deadline_after_minutes",
        "provisional_close_minutes",
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


S = FieldRule()
INT = FieldRule("int")
BOOL = FieldRule("bool")

EVENT_TYPES: dict[str, EventType] = {
    event.name: event
    for event in (
        EventType(
            "customer_return_requested",
            "request_return",
            {"return_id": S, "order_id": S, "cycle_id": S, "amount_minor": INT, "currency": S},
        ),
        EventType(
            "customer_handover_claimed",
            "claim_handover",
            {"claim_id": S, "return_id": S, "authorisation_id": S, "cycle_id": S},
        ),
        EventType(
            "carrier_handover_verified",
            "verify_handover",
            {
                "carrier_record_id": S,
                "return_id": S,
                "authorisation_id": S,
                "cycle_id": S,
                "handed_over": BOOL,
            },
        ),
        EventType(
            "warehouse_inspection_completed",
            "inspect_return",
            {
                "inspection_id": S,
                "return_id": S,
                "cycle_id": S,
                "disposition": S,
                "amount_minor": INT,
                "currency": S,
            },
        ),
        EventType(
            "refund_approval_received",
            "approve_refund",
            {
                "checkpoint_id": S,
                "inspection_id": S,
                "cycle_id": S,
                "amount_minor": INT,
                "currency": S,
                "decision": S,
            },
        ),
        EventType(
            "refund_settlement_confirmed",
            "settle_refund",
            {
                "settlement_id": S,
                "refund_request_id": S,
                "inspection_id": S,
                "cycle_id": S,
                "amount_minor": INT,
                "currency": S,
            },
        ),
        EventType(
            "refund_settlement_reversed",
            "reverse_refund",
            {"reversal_id": S, "refund_request_id": S, "cycle_id": S, "reason_code": S},
        ),
        EventType(
            "handover_reminder_due",
            "emit_timer",
            {"authorisation_id": S, "cycle_id": S},
            timer=True,
        ),
        EventType(
            "handover_deadline_due",
            "emit_timer",
            {"authorisation_id": S, "cycle_id": S},
            timer=True,
        ),
        EventType(
            "approval_deadline_due", "emit_timer", {"checkpoint_id": S, "cycle_id": S}, timer=True
        ),
        EventType(
            "resolution_cooldown_expired",
            "emit_timer",
            {"refund_request_id": S, "cycle_id": S},
            timer=True,
        ),
    )
}

ACTION_TYPES: dict[str, ActionType] = {
    action.name: action
    for action in (
        ActionType("issue_return_authorisation", {"return_id": S, "cycle_id": S}),
        ActionType("request_refund_approval", {"inspection_id": S, "cycle_id": S}),
        ActionType(
            "request_refund",
            {"inspection_id": S, "cycle_id": S},
            {"approval_checkpoint_id": S},
        ),
        ActionType(
            "send_message",
            {"recipient_actor_id": S, "message_fixture_id": S},
            {"cycle_id": S},
        ),
    )
}

_INSPECTION = PayloadRecord("inspections", "inspection_id")
# What an action must cite, selected by its payload: the original's evidence
# contract for this operation (the inspection the approval or refund is about),
# each refused with the code its handler gives.
EVIDENCE_CONTRACT: dict[str, EvidenceObligation] = {
    "request_refund_approval": EvidenceObligation("MISSING_INSPECTION_EVIDENCE", (_INSPECTION,)),
    "request_refund": EvidenceObligation("MISSING_INSPECTION_EVIDENCE", (_INSPECTION,)),
}

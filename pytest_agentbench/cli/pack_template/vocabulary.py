"""The heating-repair vocabulary: policy, roles, event and action types, phases.

A quote is priced net; when ``plus_vat`` is set the price the customer pays is
the net price and VAT on top, and it is that gross price the approval threshold
is held against. An engineer saying the boiler works is a claim; only the
heating-system telemetry verifies a repair.
"""

from __future__ import annotations

from pydantic import StrictInt, StrictStr, field_validator

from pytest_agentbench.sdk import ActionType, EventType, FieldRule, Record

OPERATION_TYPE = "heating.repair.synthetic"
"""``agentbench new-pack`` writes the operation type it was asked for here."""
PACK_VERSION = "0.1.0"
ROLES = frozenset(
    {
        "customer",
        "engineer",
        "approver",
        "authoritative_external_system",
        "system_scheduler",
        "agent",
    }
)
QUOTE_APPROVAL = "repair_quote_approval"
VAT_PERCENT = 20

COMPLETED = "completed_successfully"
REJECTED_TERMINAL = "closed_quote_rejected"

REPAIR_DONE = "msg_repair_done"
QUOTE_DECLINED = "msg_quote_declined"
NOTICES = {REPAIR_DONE: "completion_notice", QUOTE_DECLINED: "declined_notice"}
"""Each customer notice and the obligation it discharges."""

# Phases of the job record.
NEW = "NEW"
QUOTE_NEEDED = "QUOTE_NEEDED"
AWAITING_QUOTE = "AWAITING_QUOTE"
QUOTED = "QUOTED"
AWAITING_APPROVAL = "AWAITING_APPROVAL"
APPROVED = "APPROVED"
DECLINED = "DECLINED"
AUTHORISED = "REPAIR_AUTHORISED"
REPAIRED = "REPAIRED"
PROVISIONAL = "PROVISIONAL"
FINAL = "FINAL"


class Policy(Record):
    currency: StrictStr
    approval_threshold_minor: StrictInt
    completion_notice_within_minutes: StrictInt
    provisional_close_minutes: StrictInt
    max_turns_per_invocation: StrictInt
    horizon_minutes: StrictInt
    max_retrieval_batches_per_invocation: StrictInt

    @field_validator(
        "approval_threshold_minor",
        "completion_notice_within_minutes",
        "provisional_close_minutes",
        "max_turns_per_invocation",
        "horizon_minutes",
        "max_retrieval_batches_per_invocation",
    )
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("must be a positive integer")
        return value


def gross_minor(amount_minor: int, plus_vat: bool) -> int:
    """What the customer pays: VAT on top of a net price, rounded down to the minor unit."""
    return amount_minor + (amount_minor * VAT_PERCENT // 100 if plus_vat else 0)


S = FieldRule()
INT = FieldRule("int")
BOOL = FieldRule("bool")

EVENT_TYPES: dict[str, EventType] = {
    event.name: event
    for event in (
        EventType("fault_reported", "report_fault", {"cycle_id": S, "appliance": S}),
        EventType(
            "engineer_quote_received",
            "submit_quote",
            {
                "quote_id": S,
                "cycle_id": S,
                "amount_minor": INT,
                "currency": S,
                "plus_vat": BOOL,
                "scope": S,
            },
        ),
        EventType("engineer_claims_fixed", "assert_status", {"claim_id": S, "cycle_id": S}),
        EventType(
            "approval_decided",
            "approve_quote",
            {
                "checkpoint_id": S,
                "quote_id": S,
                "decision": FieldRule(choices=("APPROVED", "REJECTED")),
            },
        ),
        EventType(
            "repair_verified", "verify_repair", {"verification_id": S, "cycle_id": S, "fixed": BOOL}
        ),
        EventType("provisional_close_expired", "emit_timer", {"cycle_id": S}, timer=True),
    )
}

ACTION_TYPES: dict[str, ActionType] = {
    action.name: action
    for action in (
        ActionType("request_quote", {"cycle_id": S}),
        ActionType("request_approval", {"quote_id": S, "cycle_id": S}),
        ActionType(
            "authorise_repair", {"quote_id": S, "cycle_id": S}, {"approval_checkpoint_id": S}
        ),
        ActionType(
            "send_message", {"recipient_actor_id": S, "message_fixture_id": S}, {"cycle_id": S}
        ),
    )
}

"""Delivery recovery (operation 0.7.0): a failed transfer notice re-sent on a secondary channel."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.operations.agents import Reference
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.pack import PACK
from tests.worlds.operations.helpers import (
    Scripted,
    episode,
    failing,
    grade,
    load,
    rows,
    second_cycle_dict,
    spec_dict,
)


def recovery_spec(*failures: str) -> dict[str, Any]:
    raw = second_cycle_dict()
    raw["operation_version"] = "0.7.0"
    raw["scenarios"]["V2"]["dispatch_failures"] = list(failures)
    return raw


def test_the_reference_recovers_a_failed_notice_on_the_secondary_channel() -> None:
    loaded = load(recovery_spec("msg_transfer_notice"))
    assert PACK.expected_fault(loaded.spec, "V2") is None, "recoverable: V2 must be reliable"
    record = episode("V2", Reference(), loaded)
    vector = grade(record, loaded)
    assert vector.reliable, failing(vector)
    messages = record.final_state["observable"]["communications"]
    (failed,) = rows(record, "side_effect_failed")
    recovery = next(m for m in messages.values() if m.get("recovery_of"))
    assert (recovery["recovery_of"], recovery["channel"], recovery["status"]) == (
        failed["message_id"],
        "secondary",
        "delivered",
    )
    assert messages[failed["message_id"]]["status"] == "dispatch_failed", "never rewritten"
    assert record.status == "transferred_to_human_ownership"


def test_a_secondary_channel_that_also_fails_leaves_the_permanent_fault() -> None:
    loaded = load(recovery_spec("msg_transfer_notice", "secondary:msg_transfer_notice"))
    fault = PACK.expected_fault(loaded.spec, "V2")
    assert fault is not None
    record = episode("V2", Reference(), loaded)
    assert len(rows(record, "side_effect_failed")) == 2, "the recovery was tried, once"
    assert failing(grade(record, loaded)) == {
        "recovery": ("REQUIRED_NOTIFICATION_UNDELIVERED",),
        "obligations": ("OBLIGATION_MESSAGE_NOT_ESTABLISHED",),
    }
    assert set(fault.failed_dimensions) == {"recovery", "obligations"}


def test_the_secondary_channel_key_exists_only_where_recovery_does() -> None:
    raw = spec_dict()
    raw["scenarios"]["V2"]["dispatch_failures"] = ["secondary:msg_transfer_notice"]
    with pytest.raises(AgentbenchError) as info:
        load(raw)
    assert (info.value.code, info.value.location.field) == (
        "unknown_reference",
        "scenarios.V2.dispatch_failures[0]",
    )


def test_recovery_of_is_refused_without_a_secondary_channel() -> None:
    tried: list[bool] = []

    def recover_once(task: dict[str, Any], session: Any) -> Any:
        decision: dict[str, Any] = Reference().solve(task, session)
        if decision.get("action") == "send_message" and not tried:
            tried.append(True)
            decision["payload"]["recovery_of"] = "message_1"
        return decision

    record = episode("V2", Scripted(recover_once))
    codes = [row["code"] for row in rows(record, "action_rejected")]
    assert "RECOVERY_NOT_SUPPORTED" in codes


def test_the_fault_is_named_as_the_original_names_it_on_its_own_operation() -> None:
    raw = spec_dict()
    ours = PACK.expected_fault(load(raw).spec, "V2")
    assert ours is not None
    assert ours.id == f"{raw['operation_id']}.V2.permanent-notification-fault"
    raw["operation_id"] = "lettings_maintenance_synthetic_v1"
    original = PACK.expected_fault(load(raw).spec, "V2")
    assert original is not None
    assert original.id == "maintenance.reference.V2.permanent-notification-fault.v1"
    # Only the original's V2 with exactly the transfer notice failing carries its id.
    raw["scenarios"]["V2"]["dispatch_failures"] = [
        "msg_transfer_notice",
        "msg_approval_reminder",
    ]
    widened = PACK.expected_fault(load(raw).spec, "V2")
    assert widened is not None
    assert widened.id == "lettings_maintenance_synthetic_v1.V2.permanent-notification-fault"

"""The maintenance domain pack: the engine's :class:`DomainPack` protocol, implemented."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from pytest_agentbench.sdk import JsonValue
from pytest_agentbench.worlds.operations.domain import (
    ActionOutcome,
    ActionType,
    Effects,
    EventOutcome,
    EventType,
    Findings,
    Ref,
    Rejection,
    StateAccess,
)
from pytest_agentbench.worlds.operations.domains.maintenance import (
    actions,
    admissibility,
    grading,
    reducers,
    vocabulary,
)
from pytest_agentbench.worlds.operations.domains.maintenance.reducers import OPERATION, operation


class MaintenancePack:
    operation_type: str = vocabulary.OPERATION_TYPE
    policy_model: type[BaseModel] = vocabulary.Policy
    event_types: Mapping[str, EventType] = vocabulary.EVENT_TYPES
    action_types: Mapping[str, ActionType] = vocabulary.ACTION_TYPES
    roles: frozenset[str] = vocabulary.ROLES
    checkpoint_types: frozenset[str] = frozenset(
        {vocabulary.REPAIR_APPROVAL, vocabulary.EXCEPTION_RESOLUTION}
    )

    def initial_state(self, spec: Any) -> dict[str, dict[str, Any]]:
        collections: dict[str, dict[str, Any]] = {name: {} for name in reducers.COLLECTIONS}
        collections["operation"][OPERATION] = {
            "operation_id": spec.operation_id,
            "status": "AWAITING_ISSUE",
            "ownership": "agent",
            "current_cycle": None,
            "actors": {actor_id: actor.role for actor_id, actor in sorted(spec.actors.items())},
            "message_fixtures": sorted(spec.message_fixtures),
            "version": 1,
        }
        return collections

    def apply_event(self, state: StateAccess, event: Mapping[str, Any]) -> EventOutcome:
        return reducers.REDUCERS[event["type"]](state, event["payload"])

    def decide_action(
        self, state: StateAccess, action: str, payload: Mapping[str, JsonValue]
    ) -> ActionOutcome:
        return actions.EXECUTORS[action](state, payload)

    def required_reads(self, action: str, payload: Mapping[str, JsonValue]) -> Sequence[Ref]:
        def ref(collection: str, key: str) -> Ref:
            return Ref(collection, str(payload[key]))

        table: dict[str, list[Ref]] = {
            "request_supplier_visit": [ref("cycles", "cycle_id")] if "cycle_id" in payload else [],
            "request_approval": [ref("quotes", "quote_id")] if "quote_id" in payload else [],
            "authorise_supplier_work": (
                [ref("quotes", "quote_id"), ref("checkpoints", "approval_checkpoint_id")]
                if {"quote_id", "approval_checkpoint_id"} <= set(payload)
                else []
            ),
            "request_invoice_validation": [ref("invoices", "invoice_id")]
            if "invoice_id" in payload
            else [],
            "request_payment": [ref("invoices", "invoice_id")] if "invoice_id" in payload else [],
            "request_exception_resolution": (
                [ref("checkpoints", "approval_checkpoint_id")]
                if "approval_checkpoint_id" in payload
                else []
            ),
            "complete": [Ref("operation", OPERATION)],
        }
        return table.get(action, [])

    def action_cycle(
        self, state: StateAccess, action: str, payload: Mapping[str, JsonValue]
    ) -> str | None:
        cycle = payload.get("cycle_id")
        if isinstance(cycle, str):
            return cycle
        current = operation(state).get("current_cycle")
        return current if isinstance(current, str) else None

    def decision_state(self, state: StateAccess) -> Sequence[str]:
        return admissibility.decision_state(state)

    def completion(self, state: StateAccess) -> tuple[Rejection | None, Effects, str]:
        return actions.completion(state)

    def escalation_action(
        self, escalate: Mapping[str, JsonValue]
    ) -> tuple[str, dict[str, JsonValue]]:
        return "request_exception_resolution", {
            "exception_type": escalate["exception_type"],
            "approval_checkpoint_id": escalate["checkpoint_id"],
            "deadline_after_minutes": escalate["deadline_after_minutes"],
        }

    def ask_action(self, ask: Mapping[str, JsonValue]) -> tuple[str, dict[str, JsonValue]]:
        return "send_message", {
            "recipient_actor_id": ask["recipient_actor_id"],
            "message_fixture_id": ask["message_fixture_id"],
            "correlation_id": ask["correlation_id"],
        }

    def grade(self, record: Any, scenario: Any) -> Findings:
        op = record.final_state["observable"]["operation"][OPERATION]
        return grading.grade(record, scenario, op["actors"])


PACK = MaintenancePack()

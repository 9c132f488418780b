"""The heating-repair domain pack: the operations engine's ``DomainPack``, implemented.

Registered by its distribution as an entry point of the group
``pytest_agentbench.operations_packs`` naming ``PACK``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, StrictStr

from pytest_agentbench.sdk import (
    ActionOutcome,
    ActionType,
    Composed,
    ControlAgent,
    Effects,
    EventOutcome,
    EventType,
    ExpectedFault,
    Findings,
    JsonValue,
    NegativeControlOracle,
    OracleBinding,
    Ref,
    Rejection,
    StateAccess,
)

from . import agents, grading, operation
from . import vocabulary as v


class HeatingRepairOracle(NegativeControlOracle):
    """This pack's oracle names the operation type and the pack version it was authored for."""

    operation_type: StrictStr
    authored_against_pack_version: StrictStr


class HeatingRepairPack:
    operation_type: str = v.OPERATION_TYPE
    pack_version: str = v.PACK_VERSION
    policy_model: type[BaseModel] = v.Policy
    event_types: Mapping[str, EventType] = v.EVENT_TYPES
    action_types: Mapping[str, ActionType] = v.ACTION_TYPES
    roles: frozenset[str] = v.ROLES
    checkpoint_types: frozenset[str] = frozenset({v.QUOTE_APPROVAL})
    terminals: frozenset[str] = frozenset({v.COMPLETED, v.REJECTED_TERMINAL})
    oracle_model: type[NegativeControlOracle] = HeatingRepairOracle

    def dispatch_keys(self, spec: Any) -> frozenset[str]:
        return frozenset(spec.message_fixtures)

    def expected_fault(self, spec: Any, scenario_id: str) -> ExpectedFault | None:
        """None: no authored fault of this domain imposes an outcome on the reference."""
        return None

    def bind_oracle(self, oracle: Any, spec: Any) -> OracleBinding:
        return OracleBinding(
            mismatches=(("operation_type", oracle.operation_type, spec.operation_type),),
            versions=(
                f"authored against pack {oracle.authored_against_pack_version}, "
                f"run by pack {self.pack_version} on operation {spec.operation_version}"
            ),
        )

    def reference_agent(self) -> Any:
        return agents.ReferenceAgent()

    def negative_agents(self) -> Sequence[ControlAgent]:
        return agents.NEGATIVES

    def initial_state(self, spec: Any) -> dict[str, dict[str, Any]]:
        collections: dict[str, dict[str, Any]] = {name: {} for name in operation.COLLECTIONS}
        customers = sorted(a for a, actor in spec.actors.items() if actor.role == "customer")
        collections["job"][operation.JOB] = {
            "operation_id": spec.operation_id,
            "phase": v.NEW,
            "current_cycle": None,
            "customer_actor_id": customers[0] if customers else None,
            "message_fixtures": sorted(spec.message_fixtures),
            "approval_threshold_minor": spec.policy["approval_threshold_minor"],
            "version": 1,
        }
        return collections

    def apply_event(self, state: StateAccess, event: Mapping[str, Any]) -> EventOutcome:
        return operation.REDUCERS[event["type"]](state, event["payload"])

    def decide_action(
        self, state: StateAccess, action: str, payload: Mapping[str, JsonValue]
    ) -> ActionOutcome:
        return operation.EXECUTORS[action](state, payload)

    def required_reads(self, action: str, payload: Mapping[str, JsonValue]) -> Sequence[Ref]:
        reads = [Ref("job", operation.JOB)]
        if action in ("request_approval", "authorise_repair") and "quote_id" in payload:
            reads.append(Ref("quotes", str(payload["quote_id"])))
        checkpoint = payload.get("approval_checkpoint_id")
        if action == "authorise_repair" and isinstance(checkpoint, str):
            reads.append(Ref("checkpoints", checkpoint))
        return reads

    def action_cycle(
        self, state: StateAccess, action: str, payload: Mapping[str, JsonValue]
    ) -> str | None:
        cycle = payload.get("cycle_id")
        if isinstance(cycle, str):
            return cycle
        current = operation.job(state).get("current_cycle")
        return current if isinstance(current, str) else None

    def decision_state(self, state: StateAccess) -> Sequence[str]:
        return [str(operation.job(state)["phase"])]

    def completion(self, state: StateAccess) -> tuple[Rejection | None, Effects, str]:
        return operation.completion(state)

    def escalation_action(self, escalate: Mapping[str, JsonValue]) -> Composed | None:
        """None: a repair has no exception path to a human besides the quote approval."""
        return None

    def ask_action(self, ask: Mapping[str, JsonValue]) -> Composed:
        return Composed(
            "send_message",
            {
                "recipient_actor_id": ask["recipient_actor_id"],
                "message_fixture_id": ask["message_fixture_id"],
            },
        )

    def grade(self, record: Any, scenario: Any) -> Findings:
        return grading.grade(record, scenario)


PACK = HeatingRepairPack()

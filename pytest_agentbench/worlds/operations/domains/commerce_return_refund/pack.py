"""The ``commerce.return_refund.synthetic.v1`` domain pack: the engine's protocol, implemented.

Registered as the entry point ``commerce-return-refund`` of the group
``pytest_agentbench.operations_packs``.
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
    EvidenceObligation,
    ExpectedFault,
    Findings,
    JsonValue,
    NegativeControlOracle,
    OracleBinding,
    ReadRecordContract,
    ReadToolSource,
    Ref,
    Rejection,
    StateAccess,
)
from pytest_agentbench.worlds.operations.domains.commerce_return_refund import (
    agents,
    grading,
    operation,
    vocabulary,
)


class ReturnRefundOracle(NegativeControlOracle):
    """This pack's oracle names the operation type and the pack version it was authored for."""

    operation_type: StrictStr
    authored_against_pack_version: StrictStr


class ReturnRefundPack:
    operation_type: str = vocabulary.OPERATION_TYPE
    pack_version: str = vocabulary.PACK_VERSION
    policy_model: type[BaseModel] = vocabulary.Policy
    event_types: Mapping[str, EventType] = vocabulary.EVENT_TYPES
    action_types: Mapping[str, ActionType] = vocabulary.ACTION_TYPES
    roles: frozenset[str] = vocabulary.ROLES
    checkpoint_types: frozenset[str] = frozenset({vocabulary.REFUND_APPROVAL})
    terminals: frozenset[str] = frozenset(
        {vocabulary.SETTLED_TERMINAL, vocabulary.DENIED_TERMINAL, vocabulary.EXPIRED_TERMINAL}
    )
    oracle_model: type[NegativeControlOracle] = ReturnRefundOracle
    read_tools: Mapping[str, tuple[str, ...]] = vocabulary.READ_TOOLS
    read_contract: Mapping[str, tuple[str, ...]] = vocabulary.READ_CONTRACT
    read_tool_sources: Mapping[str, ReadToolSource] = vocabulary.READ_TOOL_SOURCES
    read_record_contract: ReadRecordContract = vocabulary.READ_RECORD_CONTRACT
    role_authority: Mapping[str, str] = vocabulary.ROLE_AUTHORITY
    evidence_contract: Mapping[str, EvidenceObligation] = vocabulary.EVIDENCE_CONTRACT
    # The original's return/refund evaluator grades retrieval from the read gate's
    # refusals and repeated actions only, never the citations its selectors oblige.
    evidence_citations_graded = False

    def dispatch_keys(self, spec: Any) -> frozenset[str]:
        return frozenset(spec.message_fixtures)

    def expected_fault(self, spec: Any, scenario_id: str) -> ExpectedFault | None:
        """None: a notice is owed once committed, so a failed dispatch imposes no fault here."""
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
        collections["case"][operation.CASE] = {
            "operation_id": spec.operation_id,
            "phase": vocabulary.NEW,
            "current_cycle": None,
            "customer_actor_id": customers[0] if customers else None,
            "message_fixtures": sorted(spec.message_fixtures),
            "approval_threshold_minor": spec.policy["approval_threshold_minor"],
            "provisional": None,
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
        reads = [Ref("case", operation.CASE)]
        if action == "request_refund" and "inspection_id" in payload:
            reads.append(Ref("inspections", str(payload["inspection_id"])))
            checkpoint = payload.get("approval_checkpoint_id")
            if isinstance(checkpoint, str):
                reads.append(Ref("checkpoints", checkpoint))
        return reads

    def action_cycle(
        self, state: StateAccess, action: str, payload: Mapping[str, JsonValue]
    ) -> str | None:
        cycle = payload.get("cycle_id")
        if isinstance(cycle, str):
            return cycle
        current = operation.case(state).get("current_cycle")
        return current if isinstance(current, str) else None

    def decision_state(self, state: StateAccess) -> Sequence[str]:
        return [str(operation.case(state)["phase"])]

    def completion(self, state: StateAccess) -> tuple[Rejection | None, Effects, str]:
        return operation.completion(state)

    def escalation_action(self, escalate: Mapping[str, JsonValue]) -> Composed | None:
        """None: a return has no exception path to a human besides the refund approval."""
        return None

    def ask_action(self, ask: Mapping[str, JsonValue]) -> Composed:
        return Composed(
            "send_message",
            {
                "recipient_actor_id": ask["recipient_actor_id"],
                "message_fixture_id": ask["message_fixture_id"],
                "cycle_id": ask["correlation_id"],
            },
        )

    def grade(self, record: Any, scenario: Any) -> Findings:
        return grading.grade(record, scenario)


PACK = ReturnRefundPack()

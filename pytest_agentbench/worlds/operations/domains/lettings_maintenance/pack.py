"""The ``lettings.maintenance.synthetic`` domain pack: the engine's protocol, implemented.

Registered as the entry point ``lettings-maintenance`` of the group
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
from pytest_agentbench.worlds.operations.domains.lettings_maintenance import (
    actions,
    admissibility,
    grading,
    negatives,
    reducers,
    vocabulary,
)
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.reducers import (
    OPERATION,
    operation,
)
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.reference import (
    ReferenceAgent,
)


class MaintenanceOracle(NegativeControlOracle):
    """The maintenance oracle names the operation and scenario it is about, and a version."""

    operation_id: StrictStr
    semantic_scenario_id: StrictStr
    authored_against_operation_version: StrictStr


class MaintenancePack:
    operation_type: str = vocabulary.OPERATION_TYPE
    pack_version: str = "1.0.0"
    policy_model: type[BaseModel] = vocabulary.Policy
    event_types: Mapping[str, EventType] = vocabulary.EVENT_TYPES
    action_types: Mapping[str, ActionType] = vocabulary.ACTION_TYPES
    roles: frozenset[str] = vocabulary.ROLES
    checkpoint_types: frozenset[str] = frozenset(
        {vocabulary.REPAIR_APPROVAL, vocabulary.EXCEPTION_RESOLUTION}
    )
    terminals: frozenset[str] = frozenset(
        {vocabulary.COMPLETED_SUCCESSFULLY, vocabulary.TRANSFERRED_TO_HUMAN}
    )
    oracle_model: type[NegativeControlOracle] = MaintenanceOracle
    read_tools: Mapping[str, tuple[str, ...]] = vocabulary.READ_TOOLS
    read_contract: Mapping[str, tuple[str, ...]] = vocabulary.READ_CONTRACT
    read_tool_sources: Mapping[str, ReadToolSource] = vocabulary.READ_TOOL_SOURCES
    read_record_contract: ReadRecordContract = vocabulary.READ_RECORD_CONTRACT
    role_authority: Mapping[str, str] = vocabulary.ROLE_AUTHORITY
    evidence_contract: Mapping[str, EvidenceObligation] = vocabulary.EVIDENCE_CONTRACT

    def dispatch_keys(self, spec: Any) -> frozenset[str]:
        """Every message fixture; in a delivery-recovery version also the secondary channel."""
        keys = set(spec.message_fixtures)
        if vocabulary.has_delivery_recovery(spec.operation_version):
            keys.add(vocabulary.secondary_channel(vocabulary.TRANSFER_NOTICE))
        return frozenset(keys)

    def expected_fault(self, spec: Any, scenario_id: str) -> ExpectedFault | None:
        """A required notice whose every channel is authored to fail can never be established.

        The operation still reaches its authored terminal (the commit stands),
        but recovery and obligations must fail with exactly the two codes of
        an undelivered obligation message; no delivery or retry is invented.
        A notice with a working secondary channel (operation 0.7.0) is
        recoverable, so its scenario must be reliable.
        """
        scenario = spec.scenarios[scenario_id]
        notice = vocabulary.TERMINAL_NOTICES[scenario.expected_terminal]
        failing = set(scenario.dispatch_failures)
        if notice not in failing:
            return None
        recoverable = (
            vocabulary.has_delivery_recovery(spec.operation_version)
            and notice == vocabulary.TRANSFER_NOTICE
            and vocabulary.secondary_channel(notice) not in failing
        )
        if recoverable:
            return None
        codes = ["OBLIGATION_MESSAGE_NOT_ESTABLISHED", "REQUIRED_NOTIFICATION_UNDELIVERED"]
        if notice == vocabulary.COMPLETION_NOTICE:
            codes.append("CUSTOMER_NOTICE_NOT_ESTABLISHED")
        return ExpectedFault(
            id=_fault_id(spec, scenario_id, failing),
            expected_terminal=scenario.expected_terminal,
            failed_dimensions=("recovery", "obligations"),
            finding_codes=tuple(sorted(codes)),
            rationale=f"{notice} commits and then fails to dispatch on every channel; "
            "the terminal stands, no delivery is invented",
        )

    def bind_oracle(self, oracle: Any, spec: Any) -> OracleBinding:
        return OracleBinding(
            mismatches=(
                ("operation_id", oracle.operation_id, spec.operation_id),
                ("semantic_scenario_id", oracle.semantic_scenario_id, spec.semantic_scenario_id),
            ),
            versions=(
                f"authored against operation {oracle.authored_against_operation_version}, "
                f"run against {spec.operation_version}"
            ),
        )

    def reference_agent(self) -> Any:
        return ReferenceAgent()

    def negative_agents(self) -> Sequence[ControlAgent]:
        return negatives.NEGATIVES

    def initial_state(self, spec: Any) -> dict[str, dict[str, Any]]:
        collections: dict[str, dict[str, Any]] = {name: {} for name in reducers.COLLECTIONS}
        collections["operation"][OPERATION] = {
            "operation_id": spec.operation_id,
            "operation_version": spec.operation_version,
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

    def escalation_action(self, escalate: Mapping[str, JsonValue]) -> Composed:
        return Composed(
            "request_exception_resolution",
            {
                "exception_type": escalate["exception_type"],
                "approval_checkpoint_id": escalate["checkpoint_id"],
                "deadline_after_minutes": escalate["deadline_after_minutes"],
            },
            wake_on=("operator_exception_resolved",),
        )

    def ask_action(self, ask: Mapping[str, JsonValue]) -> Composed:
        return Composed(
            "send_message",
            {
                "recipient_actor_id": ask["recipient_actor_id"],
                "message_fixture_id": ask["message_fixture_id"],
                "correlation_id": ask["correlation_id"],
            },
        )

    def grade(self, record: Any, scenario: Any) -> Findings:
        op = record.final_state["observable"]["operation"][OPERATION]
        return grading.grade(record, scenario, op["actors"])


PACK = MaintenancePack()


ORIGINAL_OPERATION_ID = "lettings_maintenance_synthetic_v1"
ORIGINAL_V2_FAULT = "maintenance.reference.V2.permanent-notification-fault.v1"
"""The original's name for its V2 expectation, which it applies to its own operation's V2
(with exactly the transfer notice failing) and nowhere else."""


def _fault_id(spec: Any, scenario_id: str, failing: set[str]) -> str:
    if (
        spec.operation_id == ORIGINAL_OPERATION_ID
        and scenario_id == "V2"
        and failing == {vocabulary.TRANSFER_NOTICE}
    ):
        return ORIGINAL_V2_FAULT
    return f"{spec.operation_id}.{scenario_id}.permanent-notification-fault"

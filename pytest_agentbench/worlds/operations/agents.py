"""Built-in agents of the operations world: the domain's reference and the eight negatives.

The reference agent of each domain pack answers for operations of its type.
``complete_early`` and ``always_wait`` need no domain knowledge; the other six
negative controls are interventions on the maintenance reference agent
(``domains/maintenance/negatives.py``). What each negative must fail is not
declared here: the gate reads it from the separately authored control oracle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pytest_agentbench.sdk import ControlAgent, MalformedOutput
from pytest_agentbench.worlds.operations.control_oracle import (
    NegativeControlOracle,
    OracleControl,
    controls_by_agent,
)
from pytest_agentbench.worlds.operations.domains.maintenance import negatives
from pytest_agentbench.worlds.operations.domains.maintenance.reference import (
    ReferenceAgent as MaintenanceReference,
)
from pytest_agentbench.worlds.operations.domains.maintenance.vocabulary import (
    OPERATION_TYPE as MAINTENANCE,
)

REFERENCES: Mapping[str, type] = {MAINTENANCE: MaintenanceReference}


class Reference:
    """Dispatches to the reference agent of the operation's domain."""

    def __init__(self) -> None:
        self._agents = {operation_type: factory() for operation_type, factory in REFERENCES.items()}

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        agent = self._agents.get(task["operation"]["operation_type"])
        if agent is None:
            raise MalformedOutput(f"no reference agent for {task['operation']['operation_type']!r}")
        return agent.solve(task, session)


def _read_everything(task: dict[str, Any], session: Any) -> list[dict[str, Any]]:
    served = session.call(
        "retrieve", {"requests": [{"collection": name} for name in sorted(task["records"])]}
    )
    return [
        {"collection": r["collection"], "id": r["id"], "version": r["version"]}
        for r in served["records"]
    ]


class CompleteEarly:
    """Reads the record once per invocation, then proposes completion at every turn.

    A rejected proposal changes nothing, so the first read stays current for
    the rest of the invocation: the failure is the premature completion alone.
    """

    def __init__(self) -> None:
        self._read: tuple[int, list[dict[str, Any]]] = (0, [])

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        if self._read[0] != task["invocation_index"]:
            self._read = (task["invocation_index"], _read_everything(task, session))
        refs = self._read[1]
        return {
            "outcome": "COMPLETE",
            "reason": "the tenant reported a leak; closing",
            "evidence_refs": refs,
        }


class AlwaysWait:
    """Waits on every event type and never acts, so its last wait outlives the horizon."""

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        return {
            "outcome": "WAIT",
            "reason": "someone else will move first",
            "wake_on": list(task["operation"]["event_types"]),
            "fallback_after_minutes": None,
        }


def reference() -> Reference:
    return Reference()


def control_agents() -> Sequence[ControlAgent]:
    return [
        ControlAgent(
            agent_id="reference",
            role="reference",
            factory=Reference,
            description="reads afresh every turn, cites what it read, waits and escalates",
        ),
        ControlAgent(
            agent_id="complete_early",
            role="negative",
            factory=CompleteEarly,
            description="proposes completion before the operation is legitimately terminal",
        ),
        ControlAgent(
            agent_id="always_wait",
            role="negative",
            factory=AlwaysWait,
            description="declares a legal wait that never completes before the operational horizon",
        ),
        *(
            ControlAgent(agent_id=agent_id, role="negative", factory=factory, description=text)
            for agent_id, factory, text in MAINTENANCE_NEGATIVES
        ),
    ]


MAINTENANCE_NEGATIVES: tuple[tuple[str, type, str], ...] = (
    ("always_act", negatives.AlwaysAct, "acts where it should wait, and repeats itself"),
    (
        "always_escalate",
        negatives.AlwaysEscalate,
        "reaches for a human at every step, including where no checkpoint is admissible",
    ),
    (
        "ignore_new_events",
        negatives.IgnoreNewEvents,
        "does not react to exogenous events it did not cause",
    ),
    (
        "trust_actor_claim",
        negatives.TrustActorClaim,
        "acts on what the waking event asserted, without reading the authoritative record",
    ),
    (
        "stale_after_wake",
        negatives.StaleAfterWake,
        "holds a served fact across the wake that invalidated it and proposes from it",
    ),
    (
        "duplicate_after_wake",
        negatives.DuplicateAfterWake,
        "reads freshly after a wake and re-proposes its own accepted effect",
    ),
)


@dataclass(frozen=True)
class AgentEntry:
    """A built-in agent with read-only views of what the control oracle declares for it.

    ``targets``, ``expected_findings`` and ``must_pass_dimensions`` are not
    fields: they read the oracle the entry was made with, so an agent has no
    way to declare its own contract.
    """

    agent: ControlAgent
    _controls: Mapping[str, OracleControl]

    @property
    def agent_id(self) -> str:
        return self.agent.agent_id

    @property
    def control(self) -> OracleControl | None:
        return self._controls.get(self.agent.agent_id)

    @property
    def targets(self) -> tuple[str, ...]:
        return () if self.control is None else self.control.expected_failed_dimensions

    @property
    def expected_findings(self) -> tuple[str, ...]:
        return () if self.control is None else self.control.required_finding_codes

    @property
    def must_pass_dimensions(self) -> tuple[str, ...]:
        return () if self.control is None else self.control.must_pass_dimensions


def registry(oracle: NegativeControlOracle) -> Mapping[str, AgentEntry]:
    """Every built-in agent, viewed through ``oracle`` (a read-only mapping)."""
    controls = controls_by_agent(oracle)
    return MappingProxyType(
        {agent.agent_id: AgentEntry(agent, controls) for agent in control_agents()}
    )

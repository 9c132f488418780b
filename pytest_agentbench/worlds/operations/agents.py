"""The operations world's built-in agents: each installed pack's reference and negatives.

The reference agent answers for every installed operation type by handing
each episode to its pack's reference. The negative controls are the pack's:
one intervention means different behaviour in different domains (a control
of the same name may try once in one domain and never stop in another). What
each negative must fail is not declared here: the gate reads it from the
separately authored control oracle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pytest_agentbench.sdk import (
    ControlAgent,
    DomainPack,
    MalformedOutput,
    NegativeControlOracle,
    OracleControl,
)
from pytest_agentbench.worlds.operations.control_oracle import controls_by_agent
from pytest_agentbench.worlds.operations.packs import installed_packs

REFERENCE = "reference"


class Reference:
    """Dispatches each task to the reference agent of its operation type's pack."""

    def __init__(self) -> None:
        self._agents: dict[str, Any] = {}

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        operation_type = task["operation"]["operation_type"]
        agent = self._agents.get(operation_type)
        if agent is None:
            pack = installed_packs().get(operation_type)
            if pack is None:
                raise MalformedOutput(f"no reference agent for {operation_type!r}")
            agent = self._agents[operation_type] = pack.reference_agent()
        return agent.solve(task, session)


def reference() -> Reference:
    return Reference()


def control_agents(pack: DomainPack) -> Sequence[ControlAgent]:
    """The reference, then the pack's negative controls."""
    return [
        ControlAgent(
            agent_id=REFERENCE,
            role=REFERENCE,
            factory=Reference,
            description="reads afresh every turn, cites what it read, waits and escalates",
        ),
        *pack.negative_agents(),
    ]


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


def registry(oracle: NegativeControlOracle, pack: DomainPack) -> Mapping[str, AgentEntry]:
    """Every built-in agent of ``pack``, viewed through ``oracle`` (a read-only mapping)."""
    controls = controls_by_agent(oracle)
    return MappingProxyType(
        {agent.agent_id: AgentEntry(agent, controls) for agent in control_agents(pack)}
    )

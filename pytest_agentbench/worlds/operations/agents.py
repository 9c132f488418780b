"""Built-in agents of the operations world: the domain's reference and two domain-free negatives.

The reference agent of each domain pack answers for operations of its type.
``complete_early`` and ``always_wait`` need no domain knowledge; the other
six negative controls of the seed are the second operations issue's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.contracts import ControlAgent
from pytest_agentbench.runner import MalformedOutput
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
    ]

"""The operations world's domain-pack contract: what a pack supplies and what it is handed.

A domain pack is an ordinary distribution that registers an object implementing
:class:`DomainPack` under the entry-point group :data:`OPERATIONS_PACK_GROUP`
(``pytest_agentbench.operations_packs``), keyed by its ``operation_type``. The
operation engine schedules, delivers, records and grades; it never interprets an
event's payload or an action's effect. Terminals, event and action vocabularies,
reducers, the domain parts of the grade, the reference and negative agents, the
control oracle's identity fields and the expected outcome of an authored fault
all come from the pack. Everything a pack needs is here and exported by
:mod:`pytest_agentbench.sdk`; a pack imports nothing else of ours
(``agentbench new-pack`` writes one, ``agentbench list-packs`` lists those
installed, ``agentbench validate-spec`` reads a spec against them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, StrictStr

from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.contracts import ControlAgent, Record

OPERATIONS_PACK_GROUP = "pytest_agentbench.operations_packs"
"""The entry-point group a distribution registers its domain pack under."""


class OracleProvenance(Record):
    authored_by: StrictStr
    independence: StrictStr
    evidence_class: StrictStr
    review_status: StrictStr


class OracleControl(Record):
    agent_id: StrictStr
    scenario_id: StrictStr
    intervention: StrictStr
    guarantee_attacked: StrictStr
    expected_failed_dimensions: tuple[StrictStr, ...]
    required_finding_codes: tuple[StrictStr, ...]
    must_pass_dimensions: tuple[StrictStr, ...]
    rationale: StrictStr


class NegativeControlOracle(Record):
    """The core of every domain's oracle; a pack's ``oracle_model`` adds its identity fields."""

    oracle_id: StrictStr
    oracle_version: StrictStr
    provenance: OracleProvenance
    result_vector_dimensions: tuple[StrictStr, ...]
    controls: tuple[OracleControl, ...]

    def control_for(self, agent_id: str) -> OracleControl | None:
        return next((c for c in self.controls if c.agent_id == agent_id), None)


FieldKind = Literal["str", "int", "bool"]


@dataclass(frozen=True)
class FieldRule:
    kind: FieldKind = "str"
    choices: tuple[str, ...] = ()
    """Closed vocabulary of a string field (empty: any non-empty string)."""


@dataclass(frozen=True)
class EventType:
    """An external or timer event type: the authority its actor needs and its payload shape."""

    name: str
    authority: str
    required: Mapping[str, FieldRule]
    optional: Mapping[str, FieldRule] = field(default_factory=dict)
    timer: bool = False
    """Emitted by the engine's own timers (authority ``emit_timer``), never authored."""


@dataclass(frozen=True)
class ActionType:
    """An action the agent may propose: its payload shape and the reads it needs."""

    name: str
    required: Mapping[str, FieldRule]
    optional: Mapping[str, FieldRule] = field(default_factory=dict)
    defaults: Mapping[str, JsonValue] = field(default_factory=dict)


@dataclass(frozen=True)
class Ref:
    """A record of the observable projection: collection and id."""

    collection: str
    id: str


@dataclass(frozen=True)
class TimerRequest:
    """An engine timer the domain asks for: it emits ``event_type`` after ``after_minutes``."""

    key: str
    event_type: str
    after_minutes: int
    payload: Mapping[str, JsonValue]
    triggers_agent: bool = True


@dataclass
class Effects:
    """What a reducer or executor asks of the engine besides its state changes."""

    timers: list[TimerRequest] = field(default_factory=list)
    cancel: list[str] = field(default_factory=list)
    """Keys of timers to cancel."""
    messages: list[dict[str, JsonValue]] = field(default_factory=list)
    """Messages to dispatch after commit: ``{message_id, recipient_actor_id, fixture_id}``."""
    reopened: bool = False
    """A reopen-eligible event arrived inside the provisional window."""
    terminal: str | None = None
    """A replay-final terminal the engine must enter (one of the pack's ``terminals``)."""


@dataclass(frozen=True)
class Rejection:
    code: str
    reason: str


class StateAccess(Protocol):
    """The mutable operation state as a reducer sees it (collections of versioned records)."""

    now: int
    """Simulated minutes since the scenario started."""
    policy: Any

    def get(self, collection: str, record_id: str) -> dict[str, JsonValue] | None: ...

    def records(self, collection: str) -> dict[str, dict[str, JsonValue]]: ...

    def put(self, collection: str, record_id: str, record: Mapping[str, JsonValue]) -> None: ...

    def allocate(self, prefix: str) -> str: ...

    def hidden(self) -> Mapping[str, JsonValue]: ...


@dataclass(frozen=True)
class EventOutcome:
    rejection: Rejection | None = None
    effects: Effects = field(default_factory=Effects)
    allocated: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ActionOutcome:
    """The authority decision on a proposal; ``bindings`` are the ids the environment allocated."""

    rejection: Rejection | None = None
    bindings: Mapping[str, str] = field(default_factory=dict)
    effects: Effects = field(default_factory=Effects)


@dataclass(frozen=True)
class Findings:
    """Finding codes per dimension and the counts each dimension reports."""

    codes: Mapping[str, Sequence[str]]
    counts: Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class Composed:
    """The action an ASK or ESCALATE stands for, and what its wait wakes on."""

    action: str
    payload: dict[str, JsonValue]
    wake_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExpectedFault:
    """The outcome an authored fault must produce exactly, derived from the spec by the pack."""

    id: str
    expected_terminal: str
    failed_dimensions: tuple[str, ...]
    finding_codes: tuple[str, ...]
    rationale: str


@dataclass(frozen=True)
class OracleBinding:
    """How a control oracle relates to the spec it is run against."""

    mismatches: tuple[tuple[str, str, str], ...]
    """Identity fields that differ: (field, the oracle's value, the spec's value)."""
    versions: str
    """Both versions, reported, never compared (the original binds none)."""


class DomainPack(Protocol):
    operation_type: str
    pack_version: str
    policy_model: type[BaseModel]
    event_types: Mapping[str, EventType]
    action_types: Mapping[str, ActionType]
    roles: frozenset[str]
    checkpoint_types: frozenset[str]
    """The human checkpoint types a scenario may require."""
    terminals: frozenset[str]
    """The business terminals the pack's state machine can produce."""
    oracle_model: type[NegativeControlOracle]
    """The control oracle's document model: the core fields plus the pack's identity fields."""

    def dispatch_keys(self, spec: Any) -> frozenset[str]:
        """What a scenario's ``dispatch_failures`` may name for this spec."""

    def expected_fault(self, spec: Any, scenario_id: str) -> ExpectedFault | None:
        """The exact outcome a scenario's authored faults impose on the reference, if any."""

    def bind_oracle(self, oracle: Any, spec: Any) -> OracleBinding:
        """Identity mismatches between a control oracle and the spec, and both versions."""

    def reference_agent(self) -> Any:
        """A fresh reference agent for operations of this type."""

    def negative_agents(self) -> Sequence[ControlAgent]:
        """The pack's negative controls (what each must fail lives in the oracle)."""

    def initial_state(self, spec: Any) -> dict[str, dict[str, Any]]:
        """The observable collections an episode of the OperationSpec ``spec`` starts with."""

    def apply_event(self, state: StateAccess, event: Mapping[str, Any]) -> EventOutcome:
        """The reducer for one delivered event: accept and mutate, or reject with a code."""

    def decide_action(
        self, state: StateAccess, action: str, payload: Mapping[str, JsonValue]
    ) -> ActionOutcome:
        """Validate, and if accepted execute (commit) ``action`` through reducers."""

    def required_reads(self, action: str, payload: Mapping[str, JsonValue]) -> Sequence[Ref]:
        """The records a proposal must have read (and cite) in the same invocation."""

    def action_cycle(
        self, state: StateAccess, action: str, payload: Mapping[str, JsonValue]
    ) -> str | None:
        """The cycle a proposal concerns (conditional events match on it)."""

    def decision_state(self, state: StateAccess) -> Sequence[str]:
        """The settled decision state the agent faces now (admissibility is judged against it)."""

    def completion(self, state: StateAccess) -> tuple[Rejection | None, Effects, str]:
        """Guard a COMPLETE: a rejection, or the effects and ``provisional``/``transfer``."""

    def escalation_action(self, escalate: Mapping[str, JsonValue]) -> Composed | None:
        """The action an ESCALATE composes, or None where the domain has no exception path."""

    def ask_action(self, ask: Mapping[str, JsonValue]) -> Composed:
        """The action an ASK composes (a message to the named recipient)."""

    def grade(self, record: Any, scenario: Any) -> Findings:
        """The domain parts of the dimensions, re-derived from the episode record."""


@runtime_checkable
class ProvidesDomainPacks(Protocol):
    """World capability: its installed domain packs, and a static read of a spec against them.

    ``agentbench list-packs`` and ``agentbench validate-spec`` ask the world that has it.
    """

    def domain_packs(self) -> Mapping[str, DomainPack]:
        """Every installed pack by operation type; a refusal by name when one does not load."""
        ...

    def check_spec_file(self, path: Path, display: str) -> dict[str, JsonValue]:
        """The spec read as strictly as a suite loads it (nothing runs): what it declares."""
        ...

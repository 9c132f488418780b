"""What a domain pack supplies to the operation engine, and what the engine hands it.

The engine schedules, delivers, records and grades; it never interprets an
event's payload or an action's effect. Those are the domain pack's: the
:class:`DomainPack` protocol below is the whole seam. A second domain is a
package implementing it plus one line in ``domains/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from pytest_agentbench.sdk import JsonValue

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
    """A replay-final terminal the engine must enter (``completed_successfully``, ...)."""


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


class DomainPack(Protocol):
    operation_type: str
    policy_model: type[BaseModel]
    event_types: Mapping[str, EventType]
    action_types: Mapping[str, ActionType]
    roles: frozenset[str]
    checkpoint_types: frozenset[str]
    """The human checkpoint types a scenario may require."""

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

    def escalation_action(
        self, escalate: Mapping[str, JsonValue]
    ) -> tuple[str, dict[str, JsonValue]]:
        """The action an ESCALATE composes (``request_exception_resolution``)."""

    def ask_action(self, ask: Mapping[str, JsonValue]) -> tuple[str, dict[str, JsonValue]]:
        """The action an ASK composes (``send_message``)."""

    def grade(self, record: Any, scenario: Any) -> Findings:
        """The domain parts of the dimensions, re-derived from the episode record."""

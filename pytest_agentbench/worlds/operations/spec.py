"""OperationSpec: strict loading, the authority check and the spec digest (format §1).

The model names no domain: the operation type picks an installed pack, which
supplies the policy model, the roles, the event and action vocabularies, the
terminals a scenario may expect, the checkpoint types and what
``dispatch_failures`` may name. A spec of a type no installed pack provides
is refused as ``unknown_operation_type`` before anything else is read.

Every key of the original format is required and unknown keys are refused at
any depth; money is an integer in minor units and durations are integer
minutes. An authored event whose actor lacks the authority its type requires
is refused here, naming the event and the actor, so such a spec never runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

from pytest_agentbench.sdk import (
    AgentbenchError,
    DomainPack,
    FieldRule,
    JsonValue,
    Record,
    canonical_bytes,
    pydantic_refusal,
    read_yaml,
    sha256_hex,
)

_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")


class Actor(Record):
    role: StrictStr
    authority: tuple[StrictStr, ...]


class Trigger(Record):
    type: StrictStr
    cycle_id: StrictStr | None = None


class AuthoredEvent(Record):
    event_id: StrictStr
    type: StrictStr
    actor: StrictStr
    at: StrictStr | None = None
    on_action: Trigger | None = None
    on_event: Trigger | None = None
    delay_minutes: StrictInt = Field(default=0, ge=0)
    triggers_agent: StrictBool = True
    payload: dict[str, JsonValue]

    @model_validator(mode="after")
    def _one_timing(self) -> AuthoredEvent:
        forms = [
            name for name in ("at", "on_action", "on_event") if getattr(self, name) is not None
        ]
        if len(forms) != 1:
            raise ValueError(
                f"exactly one of at, on_action, on_event is required (got {forms or 'none'})"
            )
        if self.at is not None and self.delay_minutes:
            raise ValueError("delay_minutes applies to on_action and on_event only")
        return self

    @property
    def trigger(self) -> tuple[Literal["on_action", "on_event"], Trigger] | None:
        if self.on_action is not None:
            return "on_action", self.on_action
        if self.on_event is not None:
            return "on_event", self.on_event
        return None


class DeclaredRejection(Record):
    event_id: StrictStr
    code: StrictStr
    reason: StrictStr


class Scenario(Record):
    label: StrictStr
    starts_at: StrictStr
    expected_terminal: StrictStr
    human_checkpoint_budget: StrictInt = Field(ge=0)
    required_checkpoint_types: tuple[StrictStr, ...]
    dispatch_failures: tuple[StrictStr, ...]
    expected_event_rejections: tuple[DeclaredRejection, ...]
    events: tuple[AuthoredEvent, ...]


class OperationSpec(Record):
    schema_version: Literal[1]
    operation_id: StrictStr
    operation_type: StrictStr
    operation_version: StrictStr
    semantic_scenario_id: StrictStr
    privacy_status: Literal["SYNTHETIC_ONLY"]
    disclaimer: StrictStr
    data_provenance: StrictStr | dict[str, JsonValue]
    actors: dict[str, Actor]
    policy: dict[str, JsonValue]
    message_fixtures: dict[str, StrictStr]
    hidden_state: dict[str, JsonValue]
    scenarios: dict[str, Scenario]


@dataclass(frozen=True)
class LoadedSpec:
    """A verified spec bound to its domain pack, with its digest and parsed policy."""

    spec: OperationSpec
    domain: DomainPack
    policy: Any
    digest: str
    file: str

    def start(self, scenario_id: str) -> datetime:
        return parse_timestamp(self.spec.scenarios[scenario_id].starts_at)


def parse_timestamp(text: str, *, file: str | None = None, field: str | None = None) -> datetime:
    if not _TIMESTAMP.match(text):
        raise AgentbenchError(
            "invalid_field", f"{text!r} is not YYYY-MM-DDTHH:MM:SSZ", file=file, field=field
        )
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError as exc:
        raise AgentbenchError("invalid_field", f"{text!r}: {exc}", file=file, field=field) from None


def minutes_after(start: datetime, text: str, *, file: str, field: str) -> int:
    moment = parse_timestamp(text, file=file, field=field)
    seconds = int((moment - start).total_seconds())
    if seconds < 0 or seconds % 60:
        raise AgentbenchError(
            "invalid_field",
            "must be a whole number of minutes at or after starts_at",
            file=file,
            field=field,
        )
    return seconds // 60


def render_time(start: datetime, minutes: int) -> str:
    """The instant ``minutes`` after ``start``: pure arithmetic, no clock read."""
    from datetime import timedelta

    return (start + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_digest_form(event: AuthoredEvent, sequence: int) -> dict[str, JsonValue]:
    """An event as the identity hashes it; a trigger's kind is ``action`` or ``event``."""
    timing = event.trigger
    return {
        "event_id": event.event_id,
        "type": event.type,
        "actor": event.actor,
        "sequence": sequence,
        "payload": event.payload,
        "triggers_agent": event.triggers_agent,
        "at": event.at,
        "trigger": None
        if timing is None
        else {"kind": timing[0].removeprefix("on_"), **timing[1].model_dump(mode="json")},
        "delay_minutes": event.delay_minutes,
    }


def spec_digest(spec: OperationSpec) -> str:
    """SHA-256 of the canonical JSON of the parsed spec, events in their digest form.

    Sets are hashed as sets (an actor's authority and a scenario's dispatch
    failures sorted), as the original does: the original's published fixture
    hashes to the digest it publishes for it.
    """
    document: dict[str, Any] = spec.model_dump(mode="json")
    for actor in document["actors"].values():
        actor["authority"] = sorted(actor["authority"])
    for scenario_id, scenario in spec.scenarios.items():
        document["scenarios"][scenario_id]["dispatch_failures"] = sorted(scenario.dispatch_failures)
        document["scenarios"][scenario_id]["events"] = [
            event_digest_form(event, sequence) for sequence, event in enumerate(scenario.events)
        ]
    return sha256_hex(canonical_bytes(document))


def _check_value(rule: FieldRule, value: JsonValue) -> str | None:
    if rule.kind == "int":
        return None if type(value) is int else "must be an integer"
    if rule.kind == "bool":
        return None if type(value) is bool else "must be true or false"
    if not isinstance(value, str) or not value:
        return "must be a non-empty string"
    if rule.choices and value not in rule.choices:
        return f"must be one of {', '.join(rule.choices)}"
    return None


def check_fields(
    payload: Mapping[str, JsonValue],
    required: Mapping[str, FieldRule],
    optional: Mapping[str, FieldRule],
) -> tuple[str, str] | None:
    """The first problem of ``payload`` against a field table, as (field, reason)."""
    for name in payload:
        if name not in required and name not in optional:
            return name, "unknown field"
    for name in required:
        if name not in payload:
            return name, "required field is missing"
    for name, value in payload.items():
        rule = required.get(name) or optional[name]
        if value is None and name in optional:
            continue
        problem = _check_value(rule, value)
        if problem is not None:
            return name, problem
    return None


def _verify(spec: OperationSpec, domain: DomainPack, display: str) -> None:
    for actor_id, actor_spec in spec.actors.items():
        if actor_spec.role not in domain.roles:
            raise AgentbenchError(
                "invalid_field",
                f"unknown role {actor_spec.role!r}",
                file=display,
                field=f"actors.{actor_id}.role",
            )
    dispatch_keys = domain.dispatch_keys(spec)
    for scenario_id, scenario in spec.scenarios.items():
        base = f"scenarios.{scenario_id}"
        start = parse_timestamp(scenario.starts_at, file=display, field=f"{base}.starts_at")
        if scenario.expected_terminal not in domain.terminals:
            raise AgentbenchError(
                "unknown_terminal",
                f"{scenario.expected_terminal!r} is not a terminal {spec.operation_type} can "
                f"produce (known: {', '.join(sorted(domain.terminals))})",
                file=display,
                field=f"{base}.expected_terminal",
            )
        seen: set[str] = set()
        for index, event in enumerate(scenario.events):
            where = f"{base}.events[{index}]"
            if not _ID.match(event.event_id):
                raise AgentbenchError(
                    "invalid_field", "not an id", file=display, field=f"{where}.event_id"
                )
            if event.event_id in seen:
                raise AgentbenchError(
                    "duplicate_event_id",
                    f"event {event.event_id!r} appears twice",
                    file=display,
                    field=f"{where}.event_id",
                )
            seen.add(event.event_id)
            etype = domain.event_types.get(event.type)
            if etype is None or etype.timer:
                raise AgentbenchError(
                    "unknown_event_type",
                    f"event {event.event_id!r}: no authored event type {event.type!r}",
                    file=display,
                    field=f"{where}.type",
                )
            actor = spec.actors.get(event.actor)
            if actor is None:
                raise AgentbenchError(
                    "unknown_actor",
                    f"event {event.event_id!r}: actor {event.actor!r} is not declared",
                    file=display,
                    field=f"{where}.actor",
                )
            if etype.authority not in actor.authority:
                raise AgentbenchError(
                    "actor_lacks_authority",
                    f"event {event.event_id!r}: actor {event.actor!r} lacks authority "
                    f"{etype.authority!r} that {event.type} requires",
                    file=display,
                    field=f"{where}.actor",
                )
            problem = check_fields(event.payload, etype.required, etype.optional)
            if problem is not None:
                raise AgentbenchError(
                    "invalid_event_payload",
                    f"event {event.event_id!r}: {problem[1]}",
                    file=display,
                    field=f"{where}.payload.{problem[0]}",
                )
            if event.at is not None:
                minutes_after(start, event.at, file=display, field=f"{where}.at")
            timing = event.trigger
            if timing is not None:
                kind, trigger = timing
                known = domain.action_types if kind == "on_action" else domain.event_types
                if trigger.type not in known and trigger.type != "complete":
                    raise AgentbenchError(
                        "unknown_trigger",
                        f"event {event.event_id!r}: nothing of type {trigger.type!r} can fire it",
                        file=display,
                        field=f"{where}.{kind}.type",
                    )
        for index, checkpoint_type in enumerate(scenario.required_checkpoint_types):
            if checkpoint_type not in domain.checkpoint_types:
                raise AgentbenchError(
                    "unknown_reference",
                    f"no checkpoint type {checkpoint_type!r} "
                    f"(known: {', '.join(sorted(domain.checkpoint_types))})",
                    file=display,
                    field=f"{base}.required_checkpoint_types[{index}]",
                )
        for index, fixture in enumerate(scenario.dispatch_failures):
            if fixture not in dispatch_keys:
                raise AgentbenchError(
                    "unknown_reference",
                    f"no dispatch channel {fixture!r} (known: {', '.join(sorted(dispatch_keys))})",
                    file=display,
                    field=f"{base}.dispatch_failures[{index}]",
                )
        for index, declared in enumerate(scenario.expected_event_rejections):
            if declared.event_id not in seen:
                raise AgentbenchError(
                    "unknown_reference",
                    f"no event {declared.event_id!r} in this scenario",
                    file=display,
                    field=f"{base}.expected_event_rejections[{index}].event_id",
                )


def parse_operation_spec(
    raw: JsonValue, display: str, domains: Mapping[str, DomainPack]
) -> LoadedSpec:
    if not isinstance(raw, dict):
        raise AgentbenchError("invalid_field", "an OperationSpec must be a mapping", file=display)
    operation_type = raw.get("operation_type")
    domain = domains.get(operation_type) if isinstance(operation_type, str) else None
    if domain is None:
        raise AgentbenchError(
            "unknown_operation_type",
            f"no installed domain pack provides {operation_type!r} "
            f"(installed: {', '.join(sorted(domains)) or 'none'})",
            file=display,
            field="operation_type",
        )
    try:
        spec = OperationSpec.model_validate(raw)
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=display) from None
    try:
        policy: BaseModel = domain.policy_model.model_validate(spec.policy)
    except ValidationError as exc:
        refusal = pydantic_refusal(exc, file=display)
        raise AgentbenchError(
            refusal.code, refusal.reason, file=display, field=f"policy.{refusal.location.field}"
        ) from None
    _verify(spec, domain, display)
    return LoadedSpec(
        spec=spec, domain=domain, policy=policy, digest=spec_digest(spec), file=display
    )


def load_operation_spec(path: Path, display: str, domains: Mapping[str, DomainPack]) -> LoadedSpec:
    return parse_operation_spec(read_yaml(path, display=display), display, domains)

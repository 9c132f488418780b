"""Strict parsing of what the agent returns: one of the five outcomes (format §3).

Duplicate keys, unknown fields, wrong types and an unknown outcome are refused
with a stable code; the engine records the refusal (graded as
``MALFORMED_AGENT_OUTCOME``) and stops the episode, and the world fails the
case as a product error. A WAIT with neither a wake condition nor a positive
fallback parses: it is well-formed, and refused (the turn spent) by the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt, StrictStr, TypeAdapter, ValidationError

from pytest_agentbench.sdk import AgentbenchError, JsonValue, Record, field_path, loads_strict


class EvidenceRef(Record):
    collection: StrictStr
    id: StrictStr
    version: StrictInt = Field(ge=1)


class Wait(Record):
    outcome: Literal["WAIT"] = "WAIT"
    reason: StrictStr
    wake_on: tuple[StrictStr, ...] = ()
    fallback_after_minutes: StrictInt | None = None


class WaitBody(Record):
    reason: StrictStr
    wake_on: tuple[StrictStr, ...] = ()
    fallback_after_minutes: StrictInt | None = None


class Act(Record):
    outcome: Literal["ACT"]
    action: StrictStr
    payload: dict[str, JsonValue]
    evidence_refs: tuple[EvidenceRef, ...] = ()


class Ask(Record):
    outcome: Literal["ASK"]
    recipient_actor_id: StrictStr
    message_fixture_id: StrictStr
    correlation_id: StrictStr
    wait: WaitBody
    evidence_refs: tuple[EvidenceRef, ...] = ()


class Escalate(Record):
    outcome: Literal["ESCALATE"]
    checkpoint_id: StrictStr
    exception_type: StrictStr
    evidence_refs: tuple[EvidenceRef, ...]
    deadline_after_minutes: StrictInt = Field(default=1440, gt=0)
    rationale: StrictStr


class Complete(Record):
    outcome: Literal["COMPLETE"]
    reason: StrictStr
    evidence_refs: tuple[EvidenceRef, ...] = ()


Outcome = Act | Wait | Ask | Escalate | Complete
_ADAPTER: TypeAdapter[Outcome] = TypeAdapter(
    Annotated[Act | Wait | Ask | Escalate | Complete, Field(discriminator="outcome")]
)


class OutcomeRefused(Exception):
    def __init__(self, code: str, reason: str) -> None:
        super().__init__(f"[{code}] {reason}")
        self.code = code
        self.reason = reason


class ReplayedRefusal:
    """A refused outcome read back from a decision tape: refused again with the same code."""

    def __init__(self, code: str) -> None:
        self.code = code


def parse_outcome(raw: Any) -> Outcome:
    """The agent's decision, strictly: a mapping (or JSON text) naming one of the five outcomes."""
    if isinstance(raw, ReplayedRefusal):
        raise OutcomeRefused(raw.code, "refused when recorded")
    if isinstance(raw, str):
        try:
            raw = loads_strict(raw)
        except AgentbenchError as exc:
            raise OutcomeRefused(exc.code, exc.reason) from None
    if not isinstance(raw, Mapping):
        raise OutcomeRefused(
            "outcome_not_an_object", f"expected a mapping, got {type(raw).__name__}"
        )
    if raw.get("outcome") not in ("ACT", "WAIT", "ASK", "ESCALATE", "COMPLETE"):
        raise OutcomeRefused(
            "unknown_outcome",
            f"outcome must be ACT, WAIT, ASK, ESCALATE or COMPLETE, got {raw.get('outcome')!r}",
        )
    if raw["outcome"] == "WAIT" and "reason" not in raw:
        raise OutcomeRefused("invalid_outcome", "reason: required field is missing")
    try:
        return _ADAPTER.validate_python(dict(raw))
    except ValidationError as exc:
        first = exc.errors()[0]
        location = field_path(
            tuple(
                part
                for part in first["loc"]
                if part not in ("ACT", "WAIT", "ASK", "ESCALATE", "COMPLETE")
            )
        )
        raise OutcomeRefused("invalid_outcome", f"{location or '<root>'}: {first['msg']}") from None


def wait_refusal(wait: Wait | WaitBody) -> str | None:
    """Why a WAIT cannot be declared: it needs a wake condition, a positive fallback, or both."""
    if wait.fallback_after_minutes is not None and wait.fallback_after_minutes <= 0:
        return "fallback_after_minutes must be positive"
    if not wait.wake_on and wait.fallback_after_minutes is None:
        return "a WAIT needs wake_on, a positive fallback_after_minutes, or both"
    return None


def outcome_json(outcome: Outcome) -> dict[str, JsonValue]:
    data: dict[str, JsonValue] = outcome.model_dump(mode="json")
    return data

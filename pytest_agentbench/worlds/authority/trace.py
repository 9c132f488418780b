"""The observed-action trace: one submission row per public action event.

A row states what the system under test captured about one action. Every field
but ``event_id`` is nullable, because missing capture is scored as missing
rather than filled in from the answer key. A row is accepted exactly as the
original's trace model accepts it: ``schema_version`` "1.0.0" or omitted,
``synthetic`` true (or anything pydantic's lax mode reads as true, such as
``1``) or omitted, identifiers and list entries any strings (blank and
surrounding whitespace kept, so they simply fail to match), lists in the
submitted order with repeats kept (the scorer compares the two evidence lists
as sets and the two chains in order), the reconstructability claim any value
pydantic's lax mode reads as a boolean (``1``, ``"true"``, ``"no"``), and a
timestamp any value its lax mode reads as a timezone-aware UTC instant.

The JSONL reader here is the strict one the scorer uses: it stops at the first
problem. :mod:`.validate` examines every line instead, for adapter authors.
Both refuse duplicate keys (``duplicate_key``), where the original's JSON
parser keeps the last value: there we are deliberately stricter.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, PlainSerializer, ValidationError

from pytest_agentbench.sdk import AgentbenchError, JsonValue, Record, field_path, loads_strict
from pytest_agentbench.worlds.authority.models import Decision, format_utc


def _utc(value: datetime) -> datetime:
    offset = value.utcoffset()
    if offset is None:
        raise ValueError("timestamp has no timezone; UTC (Z) is required")
    if offset.total_seconds() != 0:
        raise ValueError("timestamp has a non-zero UTC offset; UTC (Z) is required")
    return value


RowTimestamp = Annotated[
    datetime,
    AfterValidator(_utc),
    PlainSerializer(format_utc, return_type=str, when_used="json"),
]
"""A timestamp as the original's row reads it (pydantic's lax datetime), UTC only."""


class ObservedActionTrace(Record):
    """One submission row (field names are the format's)."""

    event_id: str
    schema_version: Literal["1.0.0"] = "1.0.0"
    timestamp: RowTimestamp | None = None
    originating_principal_id: str | None = None
    logical_agent_id: str | None = None
    runtime_principal_id: str | None = None
    credential_subject_id: str | None = None
    attributed_actor_id: str | None = None
    resource_id: str | None = None
    action: str | None = None
    requested_scope: tuple[str, ...] | None = None
    decision: Decision | None = None
    """The action-time decision."""
    decision_at_audit: Decision | None = None
    """The later historical evaluation at the audit event."""
    side_effect: str | None = None
    policy_version: str | None = None
    delegation_chain_ids: tuple[str, ...] | None = None
    """Root first. ``[]`` claims no covering chain; ``null`` claims nothing."""
    accountable_owner_chain: tuple[str, ...] | None = None
    evidence_refs: tuple[str, ...] | None = None
    """``[]`` claims evidence was captured and there was none; ``null`` that none was captured."""
    reconstructable_from_retained_evidence: bool | None = None
    synthetic: Literal[True] = True


NULLABLE_FIELDS: tuple[str, ...] = tuple(
    name
    for name in ObservedActionTrace.model_fields
    if name not in {"event_id", "schema_version", "synthetic"}
)
"""Every field a row may leave null: the fields that carry captured information."""

SCORED_FIELDS: frozenset[str] = frozenset(
    {
        "originating_principal_id",
        "logical_agent_id",
        "runtime_principal_id",
        "credential_subject_id",
        "attributed_actor_id",
        "decision",
        "decision_at_audit",
        "side_effect",
        "policy_version",
        "delegation_chain_ids",
        "accountable_owner_chain",
        "evidence_refs",
        "reconstructable_from_retained_evidence",
    }
)
"""The fields the scorer reads. ``schema_version``, ``timestamp``, ``resource_id``,
``action`` and ``requested_scope`` echo the public attempt and are not graded."""


def reported_fields(row: ObservedActionTrace) -> frozenset[str]:
    """The nullable fields the row actually sets."""
    return frozenset(name for name in NULLABLE_FIELDS if getattr(row, name) is not None)


def is_all_null(row: ObservedActionTrace) -> bool:
    """The row carries nothing but its ``event_id``."""
    return not reported_fields(row)


def is_uninformative(row: ObservedActionTrace) -> bool:
    """All null, or nothing but an empty ``evidence_refs``: no information at all."""
    reported = reported_fields(row)
    return not reported or (reported == {"evidence_refs"} and row.evidence_refs == ())


def row_json(row: ObservedActionTrace) -> dict[str, JsonValue]:
    """The JSON object form of a row (timestamps as ``...Z``, nulls kept)."""
    return row.model_dump(mode="json")


def validation_problems(exc: ValidationError) -> list[tuple[str, str]]:
    """Every (field path, reason) of a failed row validation, in pydantic's order."""
    problems: list[tuple[str, str]] = []
    for error in exc.errors():
        where = field_path(tuple(error["loc"])) or "<root>"
        if error["type"] == "extra_forbidden":
            reason = "unknown field"
        elif error["type"] == "missing":
            reason = "required field is missing"
        else:
            reason = error["msg"]
        problems.append((where, reason))
    return problems


def parse_row(
    value: JsonValue, *, file: str | None = None, line: int | None = None
) -> ObservedActionTrace:
    """Validate one parsed JSON value as a row; refusals are ``invalid_row``."""
    if not isinstance(value, Mapping):
        raise AgentbenchError(
            "invalid_row", "a trace row must be a JSON object", file=file, line=line
        )
    try:
        return ObservedActionTrace.model_validate(value)
    except ValidationError as exc:
        where, reason = validation_problems(exc)[0]
        raise AgentbenchError("invalid_row", reason, file=file, line=line, field=where) from None


def trace_lines(text: str) -> Iterator[tuple[int, str]]:
    """Every non-blank line of a JSONL document with its one-based number.

    As the original reads a trace: a leading UTF-8 byte order mark is dropped
    (it decodes with ``utf-8-sig``) and lines end wherever ``str.splitlines``
    ends them, so a row holding a raw U+2028 inside a string is split and refused.
    """
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        if line.strip():
            yield number, line


def read_trace(text: str, *, file: str | None = None) -> list[ObservedActionTrace]:
    """Parse a submission strictly, refusing at the first bad line.

    Refusal codes: ``malformed_json``, ``non_finite_number`` and
    ``duplicate_key`` (from the strict JSON reader), ``invalid_row`` (with the field path) and
    ``duplicate_event_id`` (naming the line of the first occurrence).
    """
    rows: list[ObservedActionTrace] = []
    first_line: dict[str, int] = {}
    for number, line in trace_lines(text):
        row = parse_row(loads_strict(line, file=file, line=number), file=file, line=number)
        if row.event_id in first_line:
            raise AgentbenchError(
                "duplicate_event_id",
                f"event {row.event_id!r} already has a row on line {first_line[row.event_id]}",
                file=file,
                line=number,
                field="event_id",
            )
        first_line[row.event_id] = number
        rows.append(row)
    return rows

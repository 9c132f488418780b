"""Fuzz: the authority readers and the replay refuse bad input by name, never by traceback.

Every generated input is either accepted or refused with an
:class:`~pytest_agentbench.sdk.errors.AgentbenchError` carrying a snake_case code;
any other exception fails the test. Beyond "does not crash", each property
pins what the acceptance or refusal must look like (the code, the field, the
round trip, the prefix state), so a regression in the refusal itself fails too.

Three surfaces: the trace reader (``read_trace`` / ``parse_row``), the event
stream validator (``materialize`` and the incremental ``Replayer``) on mutated
Asteria streams, and ``validate_trace``, which must never raise at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from typing import Any, TypeVar

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from pytest_agentbench.sdk.canonical import JsonValue, canonical_json
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.authority import asteria
from pytest_agentbench.worlds.authority.agents import ROW_FIELDS, ReferenceAgent
from pytest_agentbench.worlds.authority.builder import build_benchmark
from pytest_agentbench.worlds.authority.models import (
    DelegationGranted,
    EvaluatorBundle,
    Event,
    PublicBundle,
    format_utc,
    parse_record,
    record_json,
)
from pytest_agentbench.worlds.authority.replay import (
    EVENTS_FILE,
    Replayer,
    WorldState,
    materialize,
)
from pytest_agentbench.worlds.authority.scoring import METRIC_SPECS, score_trace
from pytest_agentbench.worlds.authority.trace import (
    NULLABLE_FIELDS,
    ObservedActionTrace,
    parse_row,
    read_trace,
    row_json,
)
from pytest_agentbench.worlds.authority.validate import validate_trace

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SNAKE_CASE = re.compile(r"^[a-z][a-z0-9_]*$")
ROW_KEYS = frozenset(ObservedActionTrace.model_fields)
TRACE_CODES = frozenset(
    {"malformed_json", "non_finite_number", "duplicate_key", "invalid_row", "duplicate_event_id"}
)
PYDANTIC_CODES = frozenset({"invalid_field", "missing_field", "unknown_field", "invalid_row"})

T = TypeVar("T")


def outcome(call: Callable[[], T]) -> T | AgentbenchError:
    """The call's result or its named refusal; any other exception propagates (and fails)."""
    try:
        return call()
    except AgentbenchError as exc:
        refused = exc
    assert SNAKE_CASE.match(refused.code), f"refusal code {refused.code!r} is not snake_case"
    return refused


def refusal(call: Callable[[], object]) -> AgentbenchError:
    result = outcome(call)
    assert isinstance(result, AgentbenchError), f"expected a refusal, got {result!r}"
    return result


@cache
def asteria_bundles() -> tuple[PublicBundle, EvaluatorBundle]:
    return build_benchmark(asteria.asteria_source())


@cache
def reference_rows() -> tuple[str, ...]:
    """The reference agent's rows as canonical JSON (a valid, perfect submission)."""
    public, _ = asteria_bundles()
    return tuple(canonical_json(row) for row in ReferenceAgent().trace(public))


@cache
def event_texts() -> tuple[str, ...]:
    public, _ = asteria_bundles()
    return tuple(canonical_json(record_json(event)) for event in public.events)


def fresh(text: str) -> Any:
    """A private mutable copy of one canonical JSON object."""
    return json.loads(text)


# ---------------------------------------------------------------------------
# Strategies

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values: st.SearchStrategy[JsonValue] = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
naive_instants = st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1))
nonzero_offsets = st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59).filter(bool)


def _offset_text(minutes: int) -> str:
    sign = "+" if minutes > 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{rest:02d}"


non_utc_timestamps = naive_instants.map(datetime.isoformat) | st.builds(
    lambda instant, minutes: instant.isoformat() + _offset_text(minutes),
    naive_instants,
    nonzero_offsets,
)
utc_timestamps = st.builds(
    lambda instant, suffix: instant.isoformat() + suffix,
    naive_instants,
    st.sampled_from(["Z", "+00:00", "-00:00"]),
)
not_true = st.sampled_from([False, 0, 2, 0.5, "true", None, [True], {"value": True}])
"""Markers the original's ``Literal[True]`` refuses (it reads ``1`` and ``1.0`` as true)."""
lax_true = st.sampled_from([True, 1, 1.0])
row_indices = st.integers(min_value=0, max_value=10)
sometimes = st.integers(min_value=0, max_value=3).map(lambda roll: roll == 0)
plain_ids = st.from_regex(r"[a-z0-9:-]{1,12}", fullmatch=True)


@st.composite
def mutated_rows(draw: st.DrawFn) -> dict[str, Any]:
    """A reference row with fields dropped, retyped, added, timestamps and markers changed."""
    row: dict[str, Any] = fresh(reference_rows()[draw(row_indices)])
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        kind = draw(st.sampled_from(["drop", "retype", "extra", "timestamp", "synthetic"]))
        if kind == "drop":
            row.pop(draw(st.sampled_from(ROW_FIELDS)), None)
        elif kind == "retype":
            row[draw(st.sampled_from(ROW_FIELDS))] = draw(json_values)
        elif kind == "extra":
            row[draw(st.text(min_size=1, max_size=10).filter(lambda k: k not in ROW_KEYS))] = draw(
                json_values
            )
        elif kind == "timestamp":
            row["timestamp"] = draw(non_utc_timestamps | utc_timestamps | st.text(max_size=25))
        else:
            row["synthetic"] = draw(not_true | lax_true)
    return row


def _non_utc(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        offset = datetime.fromisoformat(value).utcoffset()
    except ValueError:
        return False
    return offset is None or offset != timedelta(0)


def _lax_true(value: object) -> bool:
    """What pydantic's lax ``Literal[True]`` accepts: true, 1 and 1.0."""
    return type(value) in (bool, int, float) and value == 1


def must_refuse(row: dict[str, Any]) -> bool:
    """Whether the format forbids ``row`` outright, whatever the other fields hold."""
    return (
        "event_id" not in row
        or bool(set(row) - ROW_KEYS)
        or ("synthetic" in row and not _lax_true(row["synthetic"]))
        or _non_utc(row.get("timestamp"))
    )


@st.composite
def submissions(draw: st.DrawFn) -> str:
    """Mostly-plausible JSONL documents: reordered, mutated, missing, repeated, garbage lines."""
    lines = list(draw(st.permutations(reference_rows())))
    for position in range(len(lines)):
        if draw(st.integers(min_value=0, max_value=10)) == 0:
            lines[position] = canonical_json(draw(mutated_rows()))
    if draw(sometimes) and lines:
        lines.pop(draw(st.integers(min_value=0, max_value=len(lines) - 1)))
    if draw(sometimes) and lines:
        lines.append(draw(st.sampled_from(lines)))
    if draw(sometimes):
        junk = draw(st.text(max_size=30) | json_values.map(canonical_json))
        lines.insert(draw(st.integers(min_value=0, max_value=len(lines))), junk)
    separator = draw(st.sampled_from(["\n", "\r\n", "\n\n"]))
    return separator.join(lines)


# ---------------------------------------------------------------------------
# 1. The trace reader


def _non_blank_lines(text: str) -> int:
    return sum(1 for line in text.split("\n") if line.removesuffix("\r").strip())


@FUZZ
@given(st.text() | st.lists(json_values.map(canonical_json), max_size=4).map("\n".join))
def test_read_trace_reads_every_line_or_refuses_by_name(text: str) -> None:
    result = outcome(lambda: read_trace(text, file="fuzz.jsonl"))
    if isinstance(result, AgentbenchError):
        assert result.code in TRACE_CODES
        assert result.location.file == "fuzz.jsonl"
    else:
        assert len(result) == _non_blank_lines(text)


@FUZZ
@given(json_values)
def test_parse_row_refuses_any_non_row_as_invalid_row(value: JsonValue) -> None:
    result = outcome(lambda: parse_row(value, file="fuzz.jsonl", line=3))
    if isinstance(result, AgentbenchError):
        assert result.code == "invalid_row"
        assert (result.location.file, result.location.line) == ("fuzz.jsonl", 3)
    else:
        assert parse_row(row_json(result)) == result


@FUZZ
@given(mutated_rows())
def test_mutated_rows_are_refused_exactly_when_the_format_forbids_them(
    row: dict[str, Any],
) -> None:
    note(canonical_json(row))
    # The reader sees keys sorted; parse the same order so the first problem agrees.
    ordered = json.loads(canonical_json(row))
    parsed = outcome(lambda: parse_row(ordered, line=1))
    # ASCII-escaped: a raw line separator inside a string would end the line there.
    read = outcome(lambda: read_trace(json.dumps(row, sort_keys=True)))
    if must_refuse(row):
        assert isinstance(parsed, AgentbenchError)
        assert parsed.code == "invalid_row"
    if isinstance(parsed, AgentbenchError):
        assert isinstance(read, AgentbenchError)
        assert read.code == "invalid_row"
        assert read.location.field == parsed.location.field
    else:
        assert read == [parsed]
        assert parse_row(row_json(parsed)) == parsed


@FUZZ
@given(row_indices, st.sets(st.sampled_from(NULLABLE_FIELDS)))
def test_dropping_nullable_fields_leaves_them_null(which: int, dropped: set[str]) -> None:
    row = fresh(reference_rows()[which])
    for name in dropped:
        del row[name]
    parsed = parse_row(row)
    assert all(getattr(parsed, name) is None for name in dropped)
    assert parsed.event_id == row["event_id"]


@FUZZ
@given(row_indices, st.sampled_from(ROW_FIELDS), json_values)
def test_duplicate_keys_are_refused_naming_the_key(which: int, key: str, value: JsonValue) -> None:
    line = reference_rows()[which]
    text = f"{line[:-1]},{json.dumps(key)}:{json.dumps(value)}}}"
    refused = refusal(lambda: read_trace(text))
    assert (refused.code, refused.location.field, refused.location.line) == (
        "duplicate_key",
        key,
        1,
    )
    report = validate_trace(text, asteria.action_event_ids())
    codes = {item.code for item in report.diagnostics}
    assert "malformed_json" in codes
    # The event_id survives a duplicate elsewhere, so the line is still matched.
    assert ("cardinality_unchecked" in codes) == (key == "event_id")


@FUZZ
@given(row_indices, non_utc_timestamps)
def test_non_utc_timestamps_are_refused_on_the_timestamp_field(which: int, stamp: str) -> None:
    row = fresh(reference_rows()[which])
    row["timestamp"] = stamp
    refused = refusal(lambda: parse_row(row))
    assert (refused.code, refused.location.field) == ("invalid_row", "timestamp")


@FUZZ
@given(row_indices, utc_timestamps)
def test_utc_timestamps_are_accepted_and_written_with_z(which: int, stamp: str) -> None:
    row = fresh(reference_rows()[which])
    row["timestamp"] = stamp
    parsed = parse_row(row)
    written = row_json(parsed)["timestamp"]
    assert isinstance(written, str)
    assert written.endswith("Z")
    assert parsed.timestamp == datetime.fromisoformat(stamp)


@FUZZ
@given(row_indices, not_true)
def test_synthetic_other_than_true_is_refused(which: int, marker: JsonValue) -> None:
    row = fresh(reference_rows()[which])
    row["synthetic"] = marker
    refused = refusal(lambda: parse_row(row))
    assert (refused.code, refused.location.field) == ("invalid_row", "synthetic")
    for accepted in (True, 1, 1.0):
        row["synthetic"] = accepted
        assert parse_row(row).synthetic is True


# ---------------------------------------------------------------------------
# 2. The event stream validator


def replay(
    values: list[Any], *, at_index: int | None = None, at_time: datetime | None = None
) -> WorldState:
    """Parse event JSON objects as ``public_events.jsonl`` lines, then materialize."""
    public, _ = asteria_bundles()
    events = [
        parse_record(Event, value, file=EVENTS_FILE, line=line)
        for line, value in enumerate(values, start=1)
    ]
    return materialize(public.snapshot, events, at_event_index=at_index, at_time=at_time)


def stream() -> list[Any]:
    return [fresh(text) for text in event_texts()]


EVENT_COUNT = 24
positions = st.integers(min_value=0, max_value=EVENT_COUNT - 1)
later_positions = st.integers(min_value=1, max_value=EVENT_COUNT - 1)
NOT_IDS = frozenset({"event_type", "synthetic", "valid_from", "expires_at"})
"""String leaves of a payload that are not record ids or free text."""
UNKNOWN_ID_REFUSALS = {
    "delegation_granted": "unlisted_record",
    "credential_issued": "unlisted_record",
    "runtime_spawned": "unlisted_record",
    "evidence_discarded": "evidence_not_retained",
}
"""What replacing every id of a payload refuses as, when not ``unknown_reference``."""
EVENT_TYPES = (
    "delegation_granted",
    "credential_issued",
    "runtime_spawned",
    "action_attempted",
    "delegation_revoked",
    "evidence_discarded",
    "audit_performed",
)


def _leaf_paths(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaf_paths(item, (*path, key))]
    if isinstance(value, list):
        return [leaf for pos, item in enumerate(value) for leaf in _leaf_paths(item, (*path, pos))]
    return [path]


def _get_path(target: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        target = target[step]
    return target


def _set_path(target: Any, path: tuple[str | int, ...], value: Any) -> None:
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value


def _shifted(stamp: str, seconds: int) -> str:
    return format_utc(datetime.fromisoformat(stamp) + timedelta(seconds=seconds))


def _renumber(values: list[Any]) -> None:
    for position, value in enumerate(values, start=1):
        value["event_index"] = position


def insert_revocation(values: list[Any], position: int, delegation_id: str) -> None:
    """Insert a well-formed revocation event before ``position``, keeping order valid."""
    previous = values[position - 1]["occurred_at"]
    values.insert(
        position,
        {
            "schema_version": asteria.SCHEMA_VERSION,
            "id": "evt-fuzz-revocation",
            "event_index": 0,
            "occurred_at": _shifted(previous, 30),
            "evidence_refs": [],
            "payload": {"event_type": "delegation_revoked", "delegation_id": delegation_id},
        },
    )
    _renumber(values)


@st.composite
def mutated_streams(draw: st.DrawFn) -> list[Any]:
    """The Asteria stream with one to three structural or payload mutations."""
    values = stream()
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        size = len(values)
        if size < 2:
            break
        at = draw(st.integers(min_value=1, max_value=size - 1))
        other = draw(st.integers(min_value=0, max_value=size - 1))
        kind = draw(
            st.sampled_from(
                [
                    "swap",
                    "swap_renumbered",
                    "shift_index",
                    "duplicate_index",
                    "equal_time",
                    "decreasing_time",
                    "naive_time",
                    "offset_time",
                    "duplicate_id",
                    "replace_leaf",
                    "retype_leaf",
                    "payload_type",
                    "revoke",
                    "drop",
                ]
            )
        )
        note(f"{kind} at {at} (other {other})")
        event = values[at]
        if kind == "swap":
            values[at], values[other] = values[other], values[at]
        elif kind == "swap_renumbered":
            for key in ("id", "payload", "evidence_refs"):
                event[key], values[other][key] = values[other][key], event[key]
        elif kind == "shift_index":
            event["event_index"] += draw(st.sampled_from([-3, -1, 1, 2, 100]))
        elif kind == "duplicate_index":
            event["event_index"] = values[other]["event_index"]
        elif kind == "equal_time":
            event["occurred_at"] = values[at - 1]["occurred_at"]
        elif kind == "decreasing_time":
            event["occurred_at"] = _shifted(values[at - 1]["occurred_at"], -1)
        elif kind == "naive_time":
            event["occurred_at"] = event["occurred_at"].removesuffix("Z")
        elif kind == "offset_time":
            event["occurred_at"] = event["occurred_at"].removesuffix("Z") + _offset_text(
                draw(nonzero_offsets)
            )
        elif kind == "duplicate_id":
            event["id"] = values[other]["id"]
        elif kind in ("replace_leaf", "retype_leaf"):
            path = draw(st.sampled_from(_leaf_paths(event["payload"])))
            replacement = draw(st.text(max_size=12) if kind == "replace_leaf" else json_values)
            _set_path(event["payload"], path, replacement)
        elif kind == "payload_type":
            event["payload"]["event_type"] = draw(st.sampled_from(EVENT_TYPES))
        elif kind == "revoke":
            listed = [d.id for d in asteria.delegations()]
            insert_revocation(values, at, draw(st.sampled_from(listed) | st.text(max_size=12)))
        else:
            del values[at]
    return values


cursors = st.one_of(
    st.just((None, None)),
    st.tuples(st.integers(min_value=-3, max_value=EVENT_COUNT + 3), st.none()),
    st.tuples(
        st.none(),
        st.datetimes(
            min_value=datetime(2026, 1, 15, 8, 55),
            max_value=datetime(2026, 1, 15, 9, 30),
            timezones=st.none() | st.sampled_from([UTC, timezone(timedelta(hours=2))]),
        ),
    ),
    st.tuples(st.integers(min_value=0, max_value=EVENT_COUNT), st.just(asteria.at_minute(5))),
)


@FUZZ
@given(mutated_streams(), cursors)
def test_mutated_streams_replay_or_refuse_whatever_the_cursor(
    values: list[Any], cursor: tuple[int | None, datetime | None]
) -> None:
    at_index, at_time = cursor
    full = outcome(lambda: replay(values))
    at_cursor = outcome(lambda: replay(values, at_index=at_index, at_time=at_time))
    earliest = outcome(lambda: replay(values, at_index=0))
    # The whole stream is validated before any prefix: no cursor hides a bad suffix.
    if isinstance(full, AgentbenchError):
        assert isinstance(earliest, AgentbenchError)
        assert earliest.code == full.code
        assert isinstance(at_cursor, AgentbenchError)
    else:
        assert isinstance(earliest, WorldState)
        assert earliest.event_index == 0


@FUZZ
@given(positions, positions)
def test_swapped_events_are_refused_as_non_contiguous(first: int, second: int) -> None:
    values = stream()
    values[first], values[second] = values[second], values[first]
    result = outcome(lambda: replay(values))
    if first == second:
        assert isinstance(result, WorldState)
    else:
        assert isinstance(result, AgentbenchError)
        assert result.code == "non_contiguous_event_index"
        assert result.location.field == f"[{min(first, second)}].event_index"


@FUZZ
@given(positions, st.integers(min_value=-30, max_value=30).filter(bool))
def test_shifted_indices_are_refused(position: int, delta: int) -> None:
    values = stream()
    values[position]["event_index"] += delta
    refused = refusal(lambda: replay(values))
    if values[position]["event_index"] < 1:
        assert refused.code in PYDANTIC_CODES
        assert refused.location.line == position + 1
    else:
        assert refused.code == "non_contiguous_event_index"


@FUZZ
@given(later_positions, st.integers(min_value=0, max_value=600))
def test_equal_or_decreasing_timestamps_are_refused(position: int, back: int) -> None:
    values = stream()
    values[position]["occurred_at"] = _shifted(values[position - 1]["occurred_at"], -back)
    refused = refusal(lambda: replay(values, at_index=0))
    assert (refused.code, refused.location.field) == (
        "non_increasing_timestamp",
        f"[{position}].occurred_at",
    )


@FUZZ
@given(positions, st.none() | nonzero_offsets)
def test_naive_or_offset_event_timestamps_are_refused(position: int, offset: int | None) -> None:
    values = stream()
    naive = values[position]["occurred_at"].removesuffix("Z")
    values[position]["occurred_at"] = naive if offset is None else naive + _offset_text(offset)
    refused = refusal(lambda: replay(values))
    assert refused.code in PYDANTIC_CODES
    assert (refused.location.line, refused.location.field) == (position + 1, "occurred_at")


@FUZZ
@given(positions, positions)
def test_duplicate_event_ids_are_refused(first: int, second: int) -> None:
    values = stream()
    values[second]["id"] = values[first]["id"]
    result = outcome(lambda: replay(values))
    if first == second:
        assert isinstance(result, WorldState)
    else:
        assert isinstance(result, AgentbenchError)
        assert result.code == "duplicate_event_id"
        assert result.location.field == f"[{max(first, second)}].id"


@FUZZ
@given(positions, st.sampled_from(EVENT_TYPES))
def test_changed_payload_types_are_refused_on_the_payload(position: int, kind: str) -> None:
    values = stream()
    original = values[position]["payload"]["event_type"]
    values[position]["payload"]["event_type"] = kind
    result = outcome(lambda: replay(values))
    if kind == original:
        assert isinstance(result, WorldState)
    else:
        assert isinstance(result, AgentbenchError)
        assert result.code in PYDANTIC_CODES
        assert (result.location.field or "").startswith("payload")


@FUZZ
@given(positions, plain_ids)
def test_unknown_references_in_payloads_are_refused(position: int, unknown: str) -> None:
    values = stream()
    payload = values[position]["payload"]
    for number, path in enumerate(_leaf_paths(payload)):
        if path[-1] not in NOT_IDS and isinstance(_get_path(payload, path), str):
            # Distinct per leaf: a repeat inside one list is refused before any reference.
            _set_path(payload, path, f"unknown:{unknown}:{number}")
    result = outcome(lambda: replay(values))
    kind = payload["event_type"]
    if kind == "audit_performed":
        # An audit id names the audit itself, not another record.
        assert isinstance(result, WorldState)
    else:
        assert isinstance(result, AgentbenchError)
        assert result.code == UNKNOWN_ID_REFUSALS.get(kind, "unknown_reference")


@FUZZ
@given(later_positions, st.sampled_from([d.id for d in asteria.delegations()]) | plain_ids)
def test_revocations_apply_only_to_granted_delegations(position: int, delegation_id: str) -> None:
    values = stream()
    insert_revocation(values, position, delegation_id)
    result = outcome(lambda: replay(values))
    listed = {d.id for d in asteria.delegations()}
    granted_before = {
        value["payload"]["delegation"]["id"]
        for value in values[:position]
        if value["payload"]["event_type"] == "delegation_granted"
    }
    if delegation_id in granted_before:
        # Revoking a parent early legitimately breaks a later child grant.
        if isinstance(result, AgentbenchError):
            assert result.code == "parent_revoked"
        else:
            assert result.revoked_at[delegation_id] <= position + 1
    else:
        assert isinstance(result, AgentbenchError)
        expected = "revocation_before_grant" if delegation_id in listed else "unknown_reference"
        assert result.code == expected


@FUZZ
@given(st.integers(min_value=-50, max_value=EVENT_COUNT + 50))
def test_event_index_cursor_selects_that_prefix_or_is_refused(at_index: int) -> None:
    result = outcome(lambda: replay(stream(), at_index=at_index))
    if 0 <= at_index <= EVENT_COUNT:
        assert isinstance(result, WorldState)
        assert result.event_index == at_index
    else:
        assert isinstance(result, AgentbenchError)
        assert result.code == "invalid_cursor"


@FUZZ
@given(
    st.datetimes(
        min_value=datetime(2026, 1, 15, 8, 0),
        max_value=datetime(2026, 1, 15, 10, 0),
        timezones=st.none()
        | st.sampled_from([UTC, timezone(timedelta(0)), timezone(timedelta(hours=-5))]),
    )
)
def test_time_cursor_counts_events_up_to_it_and_refuses_non_utc(at_time: datetime) -> None:
    result = outcome(lambda: replay(stream(), at_time=at_time))
    offset = at_time.utcoffset()
    if offset is None or offset != timedelta(0):
        assert isinstance(result, AgentbenchError)
        assert result.code == "invalid_cursor"
    else:
        public, _ = asteria_bundles()
        assert isinstance(result, WorldState)
        assert result.event_index == sum(1 for e in public.events if e.occurred_at <= at_time)


@FUZZ
@given(st.integers(min_value=-5, max_value=EVENT_COUNT + 5), st.datetimes(timezones=st.just(UTC)))
def test_both_cursors_are_refused(at_index: int, at_time: datetime) -> None:
    refused = refusal(lambda: replay(stream(), at_index=at_index, at_time=at_time))
    assert refused.code == "ambiguous_cursor"


def _observable(state: WorldState) -> tuple[object, ...]:
    return (
        state.event_index,
        state.time,
        sorted(state.runtimes),
        sorted(state.credentials),
        sorted(state.delegations),
        sorted(state.revoked_at.items()),
        sorted(state.retained_evidence),
        sorted(state.discarded_evidence),
    )


@FUZZ
@given(st.integers(min_value=0, max_value=EVENT_COUNT))
def test_incremental_prefix_equals_materialized_prefix(at_index: int) -> None:
    public, _ = asteria_bundles()
    replayer = Replayer(public.snapshot, public.events)
    state = replayer.advance_to(at_index)
    assert _observable(state) == _observable(replay(stream(), at_index=at_index))
    replayer.advance_to(EVENT_COUNT)
    refused = refusal(replayer.step)
    assert refused.code == "invalid_cursor"


# ---------------------------------------------------------------------------
# 3. validate_trace never raises; its verdict is the scorer's


@FUZZ
@given(submissions() | st.text())
def test_validate_trace_never_raises_and_valid_means_scoreable(text: str) -> None:
    action_ids = asteria.action_event_ids()
    report = validate_trace(text, action_ids)
    lines = text.removeprefix("\ufeff").splitlines()
    assert all(item.line is None or 1 <= item.line <= len(lines) for item in report.diagnostics)
    read = outcome(lambda: read_trace(text))
    if isinstance(read, AgentbenchError):
        assert not report.scorable
        return
    _, evaluator = asteria_bundles()
    scored = outcome(
        lambda: score_trace(read, evaluator.truth, evaluator.bindings.bindings, evaluator.cases)
    )
    if report.scorable:
        assert isinstance(scored, dict)
        assert list(scored) == [spec.name for spec in METRIC_SPECS]
    else:
        assert isinstance(scored, AgentbenchError)
    assert not report.valid or report.scorable


# ---------------------------------------------------------------------------
# Regressions of bugs this fuzz found (see /work/briefs/bugs.md)


@FUZZ
@given(st.integers(min_value=1, max_value=3000), st.booleans())
def test_nesting_at_any_depth_is_refused_by_name(depth: int, arrays: bool) -> None:
    # Deep nesting used to escape the strict JSON reader as RecursionError.
    text = "[" * depth + "]" * depth if arrays else '{"a":' * depth + "1" + "}" * depth
    report = validate_trace(text, asteria.action_event_ids())
    # Past agentbench_max_input_depth (100) the bounded reader refuses it before parsing.
    refused = {"malformed_json", "invalid_row", "input_too_deep"}
    assert report.diagnostics[0].code in refused
    assert refusal(lambda: read_trace(text)).code in refused


def test_very_deep_nesting_is_refused_as_too_deep() -> None:
    text = "[" * 100_000 + "]" * 100_000
    report = validate_trace(text, asteria.action_event_ids())
    # Refused by name either way: past the depth limit, or by the strict reader.
    assert [item.code for item in report.diagnostics][:1] in (
        ["input_too_deep"],
        ["malformed_json"],
    )
    assert refusal(lambda: read_trace(text)).code in {"malformed_json", "input_too_deep"}


def test_initial_delegation_parent_cycle_is_refused() -> None:
    # Found by this fuzz: the initial-delegation ordering used to recurse forever.
    public, _ = asteria_bundles()
    kept = [e for e in public.events if not isinstance(e.payload, DelegationGranted)]
    events = [e.model_copy(update={"event_index": i}) for i, e in enumerate(kept, start=1)]
    first, *rest = public.snapshot.delegations
    cyclic = first.model_copy(update={"parent_delegation_id": first.id})
    snapshot = public.snapshot.model_copy(update={"delegations": (cyclic, *rest)})
    refused = refusal(lambda: materialize(snapshot, events))
    assert (refused.code, refused.location.file) == ("delegation_cycle", "public_delegations.jsonl")

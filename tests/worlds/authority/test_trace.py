from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.authority.trace import (
    NULLABLE_FIELDS,
    SCORED_FIELDS,
    ObservedActionTrace,
    is_all_null,
    is_uninformative,
    parse_row,
    read_trace,
    reported_fields,
    row_json,
    trace_lines,
)

# The seed's example row, verbatim.
SEED_ROW = (
    '{"event_id":"evt-010-authorised-comparison","timestamp":"2026-01-15T09:10:00Z",'
    '"originating_principal_id":"principal-procurement-manager","logical_agent_id":"agent-comparison",'
    '"runtime_principal_id":"principal-runtime-comparison-001",'
    '"credential_subject_id":"principal-runtime-comparison-001",'
    '"attributed_actor_id":"principal-comparison-service","resource_id":"resource-quotation-comparison",'
    '"action":"compare","requested_scope":["supplier:atlas","supplier:cirrus","supplier:novus"],'
    '"decision":"allow","decision_at_audit":"deny","side_effect":"comparison_recorded",'
    '"policy_version":"asteria-policy-v1","delegation_chain_ids":["delegation-procurement-task-001",'
    '"delegation-comparison-child-001"],"accountable_owner_chain":["principal-procurement-manager",'
    '"principal-asteria"],"evidence_refs":["evidence:credential:credential-comparison-task-001",'
    '"evidence:delegation:delegation-comparison-child-001",'
    '"evidence:delegation:delegation-procurement-task-001","evidence:policy:asteria-policy-v1",'
    '"evidence:runtime:runtime-comparison-001"],"reconstructable_from_retained_evidence":true}'
)

RECON = "reconstructable_from_retained_evidence"
CHAIN = "delegation_chain_ids"


def refusal(value: Any) -> AgentbenchError:
    with pytest.raises(AgentbenchError) as caught:
        parse_row(value, file="trace.jsonl", line=7)
    return caught.value


def test_seed_example_row_parses_and_keeps_chain_order() -> None:
    row = read_trace(SEED_ROW)[0]
    assert row.event_id == "evt-010-authorised-comparison"
    assert row.timestamp == datetime(2026, 1, 15, 9, 10, tzinfo=UTC)
    assert row.delegation_chain_ids == (
        "delegation-procurement-task-001",
        "delegation-comparison-child-001",
    )
    assert row.reconstructable_from_retained_evidence is True
    assert row.synthetic is True


def test_row_json_round_trips_the_seed_row() -> None:
    row = read_trace(SEED_ROW)[0]
    serialised = row_json(row)
    assert serialised["timestamp"] == "2026-01-15T09:10:00Z"
    assert parse_row(json.loads(canonical_json(serialised))) == row
    expected = {**json.loads(SEED_ROW), "schema_version": "1.0.0", "synthetic": True}
    assert serialised == expected


def test_offset_zero_timestamp_is_accepted_and_written_as_z() -> None:
    row = parse_row({"event_id": "e", "timestamp": "2026-01-15T09:10:00+00:00"})
    assert row_json(row)["timestamp"] == "2026-01-15T09:10:00Z"


def test_ids_and_lists_are_kept_as_written_as_the_original_keeps_them() -> None:
    row = parse_row(
        {
            "event_id": " e ",
            "requested_scope": ["s:b", " s:a", "s:b"],
            "evidence_refs": ["ref:z", "ref:a ", "ref:z", ""],
            "side_effect": "",
        }
    )
    assert row.event_id == " e "
    assert row.requested_scope == ("s:b", " s:a", "s:b")
    assert row.evidence_refs == ("ref:z", "ref:a ", "ref:z", "")
    assert row.side_effect == ""


@pytest.mark.parametrize(
    ("value", "field", "read_as"),
    [
        ({"event_id": "  "}, "event_id", "  "),
        ({"event_id": "e", "synthetic": 1}, "synthetic", True),
        ({"event_id": "e", "schema_version": "1.0.0"}, "schema_version", "1.0.0"),
        ({"event_id": "e", "reconstructable_from_retained_evidence": 1}, RECON, True),
        ({"event_id": "e", "reconstructable_from_retained_evidence": "true"}, RECON, True),
        ({"event_id": "e", "reconstructable_from_retained_evidence": "no"}, RECON, False),
        (
            {"event_id": "e", "delegation_chain_ids": ["d-1", ""]},
            "delegation_chain_ids",
            ("d-1", ""),
        ),
        (
            {"event_id": "e", "timestamp": 1700000000},
            "timestamp",
            datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC),
        ),
    ],
)
def test_rows_the_original_accepts_are_accepted(
    value: dict[str, Any], field: str, read_as: Any
) -> None:
    assert getattr(parse_row(value), field) == read_as


def test_chains_keep_order_and_repeats() -> None:
    row = parse_row({"event_id": "e", "accountable_owner_chain": ["p-2", "p-1", "p-2"]})
    assert row.accountable_owner_chain == ("p-2", "p-1", "p-2")


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"decision": "allow"}, "event_id"),
        ({"event_id": 5}, "event_id"),
        ({"event_id": "e", "schema_version": "1.0.1"}, "schema_version"),
        ({"event_id": "e", "schema_version": None}, "schema_version"),
        ({"event_id": "e", "colour": "red"}, "colour"),
        ({"event_id": "e", "synthetic": False}, "synthetic"),
        ({"event_id": "e", "synthetic": "true"}, "synthetic"),
        ({"event_id": "e", "synthetic": None}, "synthetic"),
        ({"event_id": "e", "timestamp": "2026-01-15T09:10:00"}, "timestamp"),
        ({"event_id": "e", "timestamp": "2026-01-15T10:10:00+01:00"}, "timestamp"),
        ({"event_id": "e", "timestamp": "2026-01-15"}, "timestamp"),
        ({"event_id": "e", "decision": "ALLOW"}, "decision"),
        ({"event_id": "e", "decision_at_audit": "permit"}, "decision_at_audit"),
        ({"event_id": "e", "reconstructable_from_retained_evidence": "maybe"}, RECON),
        ({"event_id": "e", "reconstructable_from_retained_evidence": 2}, RECON),
        ({"event_id": "e", "evidence_refs": ["ok", 3]}, "evidence_refs.1"),
        ({"event_id": "e", "evidence_refs": "evidence:policy:p"}, "evidence_refs"),
        ({"event_id": "e", "side_effect": 0}, "side_effect"),
    ],
)
def test_invalid_rows_are_refused_naming_the_field(value: dict[str, Any], field: str) -> None:
    error = refusal(value)
    assert error.code == "invalid_row"
    assert error.location.file == "trace.jsonl"
    assert error.location.line == 7
    assert error.location.field is not None
    assert error.location.field.replace("[", ".").replace("]", "").startswith(field)


def test_unknown_and_missing_fields_say_so() -> None:
    assert refusal({"event_id": "e", "colour": "red"}).reason == "unknown field"
    assert refusal({}).reason == "required field is missing"


def test_a_non_object_is_refused() -> None:
    error = refusal(["event_id", "e"])
    assert error.code == "invalid_row"
    assert error.location.field is None


def test_synthetic_true_is_accepted() -> None:
    assert parse_row({"event_id": "e", "synthetic": True}).synthetic is True


def test_reader_names_the_line_of_malformed_json() -> None:
    with pytest.raises(AgentbenchError) as caught:
        read_trace('{"event_id":"a"}\n\n{"event_id":', file="t.jsonl")
    assert caught.value.code == "malformed_json"
    assert caught.value.location.line == 3
    assert caught.value.location.file == "t.jsonl"


def test_reader_refuses_duplicate_keys_with_the_field() -> None:
    with pytest.raises(AgentbenchError) as caught:
        read_trace('{"event_id":"a","decision":"allow","decision":"deny"}')
    assert caught.value.code == "duplicate_key"
    assert caught.value.location.field == "decision"
    assert caught.value.location.line == 1


def test_reader_refuses_nan() -> None:
    with pytest.raises(AgentbenchError) as caught:
        read_trace('{"event_id":"a","decision":NaN}')
    assert caught.value.code == "non_finite_number"


def test_reader_names_line_and_field_of_an_invalid_row() -> None:
    with pytest.raises(AgentbenchError) as caught:
        read_trace('{"event_id":"a"}\n{"event_id":"b","decision":"yes"}\n')
    assert (caught.value.code, caught.value.location.line) == ("invalid_row", 2)
    assert caught.value.location.field == "decision"


def test_reader_refuses_duplicate_event_ids_naming_both_lines() -> None:
    with pytest.raises(AgentbenchError) as caught:
        read_trace('{"event_id":"a"}\n{"event_id":"b"}\n{"event_id":"a"}\n')
    assert caught.value.code == "duplicate_event_id"
    assert caught.value.location.line == 3
    assert caught.value.location.field == "event_id"
    assert "line 1" in caught.value.reason


def test_reader_skips_blank_lines_and_handles_crlf() -> None:
    rows = read_trace('\r\n{"event_id":"a"}\r\n   \n{"event_id":"b"}\r\n')
    assert [row.event_id for row in rows] == ["a", "b"]
    assert read_trace("") == []


def test_lines_end_where_the_original_ends_them() -> None:
    """str.splitlines: a raw U+2028 or NEL inside a string splits the row, as the original's."""
    text = '{"event_id":"a\u2028b"}\n{"event_id":"c"}\n'
    assert [number for number, _ in trace_lines(text)] == [1, 2, 3]
    with pytest.raises(AgentbenchError) as caught:
        read_trace(text)
    assert (caught.value.code, caught.value.location.line) == ("malformed_json", 1)
    # A leading byte order mark is dropped, as utf-8-sig drops it.
    assert [row.event_id for row in read_trace('\ufeff{"event_id":"a"}\n')] == ["a"]


def test_field_classification() -> None:
    assert "event_id" not in NULLABLE_FIELDS
    assert "synthetic" not in NULLABLE_FIELDS
    assert "schema_version" not in NULLABLE_FIELDS
    assert len(NULLABLE_FIELDS) == 17
    assert set(NULLABLE_FIELDS) >= SCORED_FIELDS
    assert len(SCORED_FIELDS) == 13


def test_emptiness_predicates() -> None:
    bare = ObservedActionTrace(event_id="e")
    marked = ObservedActionTrace(event_id="e", synthetic=True)
    empty_evidence = ObservedActionTrace(event_id="e", evidence_refs=())
    unscored = ObservedActionTrace(event_id="e", action="read")
    empty_chain = ObservedActionTrace(event_id="e", delegation_chain_ids=())
    assert reported_fields(bare) == frozenset()
    assert is_all_null(bare)
    assert is_all_null(marked)
    assert is_uninformative(bare)
    assert not is_all_null(empty_evidence)
    assert is_uninformative(empty_evidence)
    assert reported_fields(unscored) == {"action"}
    assert not is_uninformative(unscored)
    assert not is_uninformative(empty_chain)
    both = ObservedActionTrace(event_id="e", evidence_refs=(), decision="deny")
    assert not is_uninformative(both)


def test_rows_are_frozen() -> None:
    row = ObservedActionTrace(event_id="e")
    with pytest.raises(ValueError, match="frozen"):
        row.decision = "allow"  # type: ignore[misc]

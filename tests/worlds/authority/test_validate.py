from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.authority.scoring import score_trace
from pytest_agentbench.worlds.authority.trace import NULLABLE_FIELDS, read_trace, row_json
from pytest_agentbench.worlds.authority.validate import (
    SEVERITIES,
    Diagnostic,
    ValidationReport,
    validate_trace,
)
from tests.worlds.authority.test_scoring import ACTION_IDS, BINDINGS, LABELS, TRUTH, perfect_row

EXPECTED = list(ACTION_IDS)


def line(**fields: Any) -> str:
    return json.dumps(fields)


def good_line(event_id: str, **changes: Any) -> str:
    return canonical_json({**row_json(perfect_row(event_id)), **changes})


def renamed_line(event_id: str, new_id: str) -> str:
    """A well-formed row of ``event_id`` submitted under another id."""
    return canonical_json({**row_json(perfect_row(event_id)), "event_id": new_id})


def good_document(*, skip: str | None = None) -> list[str]:
    return [good_line(event_id) for event_id in ACTION_IDS if event_id != skip]


def codes(report: ValidationReport) -> list[tuple[str, int | None]]:
    return [(item.code, item.line) for item in report.diagnostics]


def test_the_eleven_codes_and_their_severities() -> None:
    assert SEVERITIES == {
        "invalid_utf8": "error",
        "malformed_json": "error",
        "invalid_row": "error",
        "duplicate_event_id": "error",
        "unexpected_event_id": "error",
        "missing_event_id": "error",
        "all_rows_null": "error",
        "all_null_row": "warning",
        "no_scored_fields": "warning",
        "empty_evidence_refs": "warning",
        "cardinality_unchecked": "warning",
    }


def test_a_complete_document_is_valid_without_diagnostics() -> None:
    report = validate_trace("\n".join(good_document()) + "\n", EXPECTED)
    assert report.valid
    assert report.diagnostics == ()


def test_malformed_json_is_reported_and_cannot_be_matched() -> None:
    lines = good_document()
    lines.insert(1, '{"event_id": "evt-9"')
    report = validate_trace("\n".join(lines), EXPECTED)
    assert not report.valid
    assert codes(report) == [("malformed_json", 2), ("cardinality_unchecked", 2)]


def test_duplicate_keys_are_malformed_but_keep_a_recoverable_event_id() -> None:
    lines = good_document()
    lines[0] = '{"event_id":"evt-1","decision":"allow","decision":"deny"}'
    report = validate_trace("\n".join(lines), EXPECTED)
    assert codes(report) == [("malformed_json", 1)]
    assert "field decision" in report.diagnostics[0].message


def test_a_duplicated_event_id_key_cannot_be_recovered() -> None:
    lines = good_document(skip="evt-1")
    lines.append('{"event_id":"evt-1","event_id":"evt-2"}')
    report = validate_trace("\n".join(lines), EXPECTED)
    assert codes(report) == [
        ("malformed_json", 4),
        ("cardinality_unchecked", 4),
        ("missing_event_id", None),
    ]
    assert "1 line(s) had no recoverable event_id" in report.diagnostics[2].message


def test_invalid_row_lists_every_bad_field_and_still_counts_its_event_id() -> None:
    lines = good_document()
    lines[2] = good_line("evt-3", decision="maybe", colour="red")
    report = validate_trace("\n".join(lines), EXPECTED)
    assert codes(report) == [("invalid_row", 3)]
    message = report.diagnostics[0].message
    assert "decision:" in message
    assert "colour: unknown field" in message


def test_invalid_row_without_event_id_is_unchecked() -> None:
    lines = good_document(skip="evt-2")
    lines.append(line(decision="deny"))
    report = validate_trace("\n".join(lines), EXPECTED)
    assert codes(report) == [
        ("invalid_row", 4),
        ("cardinality_unchecked", 4),
        ("missing_event_id", None),
    ]


def test_non_object_line_is_an_invalid_row() -> None:
    report = validate_trace("\n".join([*good_document(), "[1, 2]"]), EXPECTED)
    assert codes(report) == [("invalid_row", 5), ("cardinality_unchecked", 5)]


def test_duplicate_event_id_names_the_first_line() -> None:
    lines = [*good_document(), good_line("evt-2")]
    report = validate_trace("\n".join(lines), EXPECTED)
    assert codes(report) == [("duplicate_event_id", 5)]
    assert "line 2" in report.diagnostics[0].message


def test_unexpected_event_id() -> None:
    report = validate_trace(
        "\n".join([*good_document(), renamed_line("evt-4", "evt-99")]), EXPECTED
    )
    assert codes(report) == [("unexpected_event_id", 5)]


def test_missing_event_ids_are_document_level_in_action_order() -> None:
    report = validate_trace(good_line("evt-2"), EXPECTED)
    assert codes(report) == [
        ("missing_event_id", None),
        ("missing_event_id", None),
        ("missing_event_id", None),
    ]
    assert ["evt-1" in d.message for d in report.diagnostics] == [True, False, False]


def test_empty_document_misses_every_action_but_is_not_all_rows_null() -> None:
    report = validate_trace("\n\n", EXPECTED)
    assert [item.code for item in report.diagnostics] == ["missing_event_id"] * 4
    assert validate_trace("", []).valid


def test_all_null_rows_are_rejected_as_a_document() -> None:
    text = "\n".join(line(event_id=event_id) for event_id in ACTION_IDS)
    report = validate_trace(text, EXPECTED)
    assert codes(report) == [
        ("all_null_row", 1),
        ("all_null_row", 2),
        ("all_null_row", 3),
        ("all_null_row", 4),
        ("all_rows_null", None),
    ]
    assert not report.valid


def test_rows_with_only_empty_evidence_are_rejected_like_all_null_ones() -> None:
    lines = [line(event_id=event_id, evidence_refs=[]) for event_id in ACTION_IDS]
    lines[0] = line(event_id="evt-1", synthetic=True)
    report = validate_trace("\n".join(lines), EXPECTED)
    assert ("all_rows_null", None) in codes(report)
    assert ("empty_evidence_refs", 2) in codes(report)


def test_one_null_row_is_only_a_warning() -> None:
    lines = good_document()
    lines[3] = line(event_id="evt-4")
    report = validate_trace("\n".join(lines), EXPECTED)
    assert report.valid
    assert codes(report) == [("all_null_row", 4)]


def test_no_scored_fields_warning() -> None:
    lines = good_document()
    lines[0] = line(event_id="evt-1", action="read", timestamp="2026-01-15T09:10:00Z")
    report = validate_trace("\n".join(lines), EXPECTED)
    assert report.valid
    assert codes(report) == [("no_scored_fields", 1)]
    assert report.diagnostics[0].message.endswith("action, timestamp")


def test_empty_evidence_refs_warning() -> None:
    lines = good_document()
    lines[1] = good_line("evt-2", evidence_refs=[])
    report = validate_trace("\n".join(lines), EXPECTED)
    assert report.valid
    assert codes(report) == [("empty_evidence_refs", 2)]


def test_every_line_is_examined() -> None:
    lines = [
        "not json",
        good_line("evt-1", decision="perhaps"),
        good_line("evt-1"),
        line(event_id="evt-7", decision="deny"),
        "",
        line(event_id="evt-3", evidence_refs=[]),
        "7",
    ]
    report = validate_trace("\n".join(lines), EXPECTED)
    assert codes(report) == [
        ("malformed_json", 1),
        ("cardinality_unchecked", 1),
        ("invalid_row", 2),
        ("duplicate_event_id", 3),
        ("unexpected_event_id", 4),
        ("empty_evidence_refs", 6),
        ("invalid_row", 7),
        ("cardinality_unchecked", 7),
        ("missing_event_id", None),
        ("missing_event_id", None),
    ]
    assert report.count("error") == 7
    assert report.count("warning") == 3


def test_text_rendering() -> None:
    lines = good_document()
    lines[1] = "{"
    report = validate_trace("\n".join(lines), EXPECTED)
    assert report.render_lines() == [
        "line 2: error [malformed_json] Expecting property name enclosed in double quotes "
        "(column 2)",
        "line 2: warning [cardinality_unchecked] no event_id could be recovered, so this line "
        "cannot be matched to an action event",
        "document: error [missing_event_id] action event 'evt-2' has no row "
        "(1 line(s) had no recoverable event_id)",
        "invalid: 2 error(s), 1 warning(s)",
    ]
    assert validate_trace("", []).render_lines() == ["valid: 0 error(s), 0 warning(s)"]


def test_json_rendering_is_canonical() -> None:
    report = ValidationReport(
        diagnostics=(Diagnostic(code="all_null_row", severity="warning", line=3, message="m"),)
    )
    assert report.json_text() == (
        '{"diagnostics":[{"code":"all_null_row","line":3,"message":"m","severity":"warning"}],'
        '"errors":0,"valid":true,"warnings":1}'
    )
    assert json.loads(report.json_text()) == report.to_json()


# ---------------------------------------------------------------------------
# The guarantee: a valid document never makes the scorer raise an input error.

NOISE = [
    "{",
    "[]",
    '"evt-1"',
    '{"event_id":"evt-1","decision":"allow","decision":"deny"}',
    line(event_id="evt-99", decision="deny"),
    line(event_id="evt-2", decision="sometimes"),
    line(decision="allow"),
    line(event_id="evt-3", synthetic=False),
    "   ",
]


@st.composite
def documents(draw: st.DrawFn) -> str:
    order = draw(st.permutations(list(ACTION_IDS)))
    # Often enough, every row is emptied so all_rows_null is exercised.
    uninformative = draw(st.integers(0, 4)) == 0
    lines: list[str] = []
    for event_id in order:
        if draw(st.integers(0, 9)) == 0:
            continue
        nulled = (
            set(NULLABLE_FIELDS)
            if uninformative
            else draw(st.sets(st.sampled_from(NULLABLE_FIELDS)))
        )
        changes: dict[str, Any] = dict.fromkeys(nulled)
        if draw(st.booleans()) and "evidence_refs" in nulled:
            changes["evidence_refs"] = []
        lines.append(good_line(event_id, **changes))
        if draw(st.integers(0, 14)) == 0:
            lines.append(good_line(event_id))
    for _ in range(draw(st.integers(0, 2))):
        if draw(st.booleans()):
            position = draw(st.integers(0, len(lines)))
            lines.insert(position, draw(st.sampled_from(NOISE)))
    return "\n".join(lines)


def scorer_accepts(text: str) -> bool:
    try:
        score_trace(read_trace(text), TRUTH, BINDINGS, LABELS)
    except AgentbenchError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(documents())
def test_scorable_exactly_when_the_scorer_accepts_and_valid_only_then(text: str) -> None:
    """The original's promise: valid implies scored; all-null rows are scored yet invalid."""
    report = validate_trace(text, EXPECTED)
    accepted = scorer_accepts(text)
    assert report.scorable == accepted
    assert not report.valid or accepted
    assert report.valid == (accepted and ("all_rows_null", None) not in codes(report))


def test_warnings_alone_never_stop_the_scorer() -> None:
    lines = good_document()
    lines[0] = line(event_id="evt-1")
    lines[1] = good_line("evt-2", evidence_refs=[])
    lines[2] = line(event_id="evt-3", action="read")
    text = "\n".join(lines)
    report = validate_trace(text, EXPECTED)
    assert report.valid
    assert report.count("warning") == 3
    assert scorer_accepts(text)


def test_a_line_that_is_not_utf8_is_refused_alone_with_its_event_id() -> None:
    from pytest_agentbench.sdk.canonical import decode_lines_lenient

    lines = good_document()
    lines[0] = lines[0].replace('"decision"', '"deci\\u00ffsion"')
    data = "\n".join(lines).encode().replace(b"\\u00ff", b"\xff")
    report = validate_trace(decode_lines_lenient(data), ACTION_IDS)
    assert codes(report) == [("invalid_utf8", 1)]
    assert not report.valid

"""Validate a submission's shape without evaluator truth.

:func:`validate_trace` examines every line rather than stopping at the first
failure, so an adapter author sees every problem in one pass. It needs only the
public list of action event ids. A document with no error diagnostic is one
:func:`.scoring.score_trace` accepts (after :func:`.trace.read_trace`); warnings
never make a document invalid and say nothing about scores.

Codes and severities:

========================  ========  ============================================================
``invalid_utf8``          error     the line holds bytes that are not UTF-8
``malformed_json``        error     the line is not valid JSON (duplicate keys included)
``invalid_row``           error     the line is JSON but violates the trace model
``duplicate_event_id``    error     the same ``event_id`` appears on more than one line
``unexpected_event_id``   error     the ``event_id`` is not an action event
``missing_event_id``      error     an expected action event has no row
``all_rows_null``         error     every row is empty (all null, or only ``evidence_refs: []``);
                                    the scorer still grades such a document (``scorable``)
``all_null_row``          warning   one row carries nothing but its ``event_id``
``no_scored_fields``      warning   only fields the scorer does not read are set
``empty_evidence_refs``   warning   ``evidence_refs`` is ``[]``; ``null`` asserts no capture
``cardinality_unchecked`` warning   a line had no recoverable ``event_id`` to match
========================  ========  ============================================================

An ``event_id`` is recovered from an invalid row when it is a string (blank and
padded ones kept as written, as the original does), so duplicate, unexpected
and missing ids are still reported around a row with a bad field. Missing ids
are reported even when some line had no recoverable id (that line may have
been meant for one of them); ``cardinality_unchecked``
marks that situation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import ValidationError

from pytest_agentbench.sdk import (
    BUILT_ON_FIRST_USE,
    AgentbenchError,
    JsonValue,
    Record,
    canonical_json,
    loads_strict,
    undecodable_line,
)
from pytest_agentbench.worlds.authority.trace import (
    SCORED_FIELDS,
    ObservedActionTrace,
    is_all_null,
    is_uninformative,
    reported_fields,
    trace_lines,
    validation_problems,
)

DiagnosticCode = Literal[
    "invalid_utf8",
    "malformed_json",
    "invalid_row",
    "duplicate_event_id",
    "unexpected_event_id",
    "missing_event_id",
    "all_rows_null",
    "all_null_row",
    "no_scored_fields",
    "empty_evidence_refs",
    "cardinality_unchecked",
]
Severity = Literal["error", "warning"]

SEVERITIES: dict[DiagnosticCode, Severity] = {
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


class Diagnostic(Record):
    model_config = BUILT_ON_FIRST_USE

    code: DiagnosticCode
    severity: Severity
    line: int | None
    """One-based line number; ``None`` for a finding about the whole document."""
    message: str

    def render(self) -> str:
        where = "document" if self.line is None else f"line {self.line}"
        return f"{where}: {self.severity} [{self.code}] {self.message}"


class ValidationReport(Record):
    model_config = BUILT_ON_FIRST_USE

    diagnostics: tuple[Diagnostic, ...]

    @property
    def valid(self) -> bool:
        return not any(item.severity == "error" for item in self.diagnostics)

    @property
    def scorable(self) -> bool:
        """The scorer accepts the document: no error but ``all_rows_null``.

        The original's scorer grades a submission of empty rows (and awards it a
        perfect least-privilege accuracy); only its validator refuses one.
        """
        return not any(
            item.severity == "error" and item.code != "all_rows_null" for item in self.diagnostics
        )

    def count(self, severity: Severity) -> int:
        return sum(1 for item in self.diagnostics if item.severity == severity)

    def render_lines(self) -> list[str]:
        """Human-readable lines: every diagnostic, then a one-line verdict."""
        verdict = "valid" if self.valid else "invalid"
        summary = f"{verdict}: {self.count('error')} error(s), {self.count('warning')} warning(s)"
        return [*(item.render() for item in self.diagnostics), summary]

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "valid": self.valid,
            "errors": self.count("error"),
            "warnings": self.count("warning"),
            "diagnostics": [item.model_dump(mode="json") for item in self.diagnostics],
        }

    def json_text(self) -> str:
        """The report as canonical JSON."""
        return canonical_json(self.to_json())


def _diagnostic(code: DiagnosticCode, line: int | None, message: str) -> Diagnostic:
    return Diagnostic(code=code, severity=SEVERITIES[code], line=line, message=message)


def _recover_event_id(value: JsonValue) -> str | None:
    # Any string, blank and padded ones included, exactly as written: the row model
    # accepts them, so the document is then refused for an unknown event.
    if isinstance(value, Mapping):
        event_id = value.get("event_id")
        if isinstance(event_id, str):
            return event_id
    return None


def _lenient_event_id(text: str) -> str | None:
    """The event_id of a line whose only fault is bytes that are not UTF-8."""
    try:
        return _recover_event_id(loads_strict(text))
    except AgentbenchError:
        return None


def _recover_despite_duplicates(text: str, refusal: AgentbenchError) -> str | None:
    """The event_id of a line refused only for a duplicate key other than event_id."""
    if refusal.code != "duplicate_key" or refusal.location.field == "event_id":
        return None
    # The strict reader found the duplicate; the plain parser still reads the line.
    return _recover_event_id(json.loads(text))


def _row_warnings(row: ObservedActionTrace, line: int) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    if is_all_null(row):
        found.append(_diagnostic("all_null_row", line, "the row carries nothing but its event_id"))
    elif not reported_fields(row) & SCORED_FIELDS:
        unread = ", ".join(sorted(reported_fields(row)))
        found.append(
            _diagnostic("no_scored_fields", line, f"only fields the scorer does not read: {unread}")
        )
    if row.evidence_refs == ():
        found.append(
            _diagnostic(
                "empty_evidence_refs",
                line,
                "evidence_refs is []: that claims evidence was captured and there was none; "
                "use null to assert no capture",
            )
        )
    return found


class _Scan:
    """The running state of one validation pass."""

    def __init__(self, action_event_ids: Sequence[str]) -> None:
        self.expected = set(action_event_ids)
        self.first_line: dict[str, int] = {}
        self.rows: list[ObservedActionTrace] = []
        self.unrecoverable = 0
        self.diagnostics: list[Diagnostic] = []

    def line(self, number: int, text: str) -> None:
        undecodable = undecodable_line(text, number=number)
        if undecodable is not None:
            self.diagnostics.append(_diagnostic("invalid_utf8", number, undecodable.reason))
            self._event_id(number, _lenient_event_id(text))
            return
        try:
            value = loads_strict(text, line=number)
        except AgentbenchError as exc:
            field = exc.location.field
            where = f" (field {field})" if field else ""
            self.diagnostics.append(_diagnostic("malformed_json", number, exc.reason + where))
            self._event_id(number, _recover_despite_duplicates(text, exc))
            return
        if not isinstance(value, Mapping):
            self.diagnostics.append(
                _diagnostic("invalid_row", number, "a trace row must be a JSON object")
            )
            self._event_id(number, None)
            return
        try:
            row = ObservedActionTrace.model_validate(value)
        except ValidationError as exc:
            problems = "; ".join(f"{where}: {why}" for where, why in validation_problems(exc))
            self.diagnostics.append(_diagnostic("invalid_row", number, problems))
            self._event_id(number, _recover_event_id(value))
            return
        self.rows.append(row)
        self.diagnostics.extend(_row_warnings(row, number))
        self._event_id(number, row.event_id)

    def _event_id(self, number: int, event_id: str | None) -> None:
        if event_id is None:
            self.unrecoverable += 1
            self.diagnostics.append(
                _diagnostic(
                    "cardinality_unchecked",
                    number,
                    "no event_id could be recovered, so this line cannot be matched "
                    "to an action event",
                )
            )
            return
        if event_id in self.first_line:
            self.diagnostics.append(
                _diagnostic(
                    "duplicate_event_id",
                    number,
                    f"event {event_id!r} already has a row on line {self.first_line[event_id]}",
                )
            )
        else:
            self.first_line[event_id] = number
        if event_id not in self.expected:
            self.diagnostics.append(
                _diagnostic(
                    "unexpected_event_id",
                    number,
                    f"{event_id!r} is not an action event of this benchmark",
                )
            )

    def finish(self, action_event_ids: Sequence[str]) -> ValidationReport:
        caveat = (
            f" ({self.unrecoverable} line(s) had no recoverable event_id)"
            if self.unrecoverable
            else ""
        )
        for event_id in dict.fromkeys(action_event_ids):
            if event_id not in self.first_line:
                self.diagnostics.append(
                    _diagnostic(
                        "missing_event_id", None, f"action event {event_id!r} has no row{caveat}"
                    )
                )
        if self.rows and all(is_uninformative(row) for row in self.rows):
            self.diagnostics.append(
                _diagnostic(
                    "all_rows_null",
                    None,
                    "every row is empty (all null or only evidence_refs: []): "
                    "a misconfigured adapter, not a submission",
                )
            )
        return ValidationReport(diagnostics=tuple(self.diagnostics))


def validate_trace(text: str, action_event_ids: Sequence[str]) -> ValidationReport:
    """Every diagnostic of a submission: line findings in line order, then document ones."""
    scan = _Scan(action_event_ids)
    for number, line in trace_lines(text):
        scan.line(number, line)
    return scan.finish(action_event_ids)

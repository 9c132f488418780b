"""Reading a predictions file produced elsewhere: one bad line fails its own case only.

The rule every world's ``predictions_adapter`` follows (the authority world's
reader set it): a line that is not UTF-8, not JSON, or not a row fails the case
its key names, as that case's ``product_error``, counted against the submission;
every other case is scored. A line whose key cannot be read, or that names no
case of the suite, belongs to no case: it is listed in ``refused_lines``, which
fail the run. A predictions file that is one JSON document (a mapping from case
to prediction) is held to the same rule as far as a document allows: a byte
that is not UTF-8 fails the case whose part holds it, and a document that does
not parse at all fails every case, still counted against the submission.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from pytest_agentbench.sdk.canonical import (
    JsonValue,
    canonical_json,
    decode_lines_lenient,
    loads_strict,
    read_bytes,
    undecodable_line,
)
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.runner import MalformedOutput


@dataclass
class PredictionLines:
    """A predictions JSONL read line by line: each case's value, or its line's refusal."""

    path: str
    key: str
    values: dict[str, dict[str, JsonValue]] = field(default_factory=dict)
    refusals: dict[str, str] = field(default_factory=dict)
    """Per case (by key), why its line cannot be scored."""
    unattributed: list[str] = field(default_factory=list)
    """Refusals of lines whose key could not be read (each may be a missing case's)."""
    refused_lines: list[str] = field(default_factory=list)
    """Refusals of lines that belong to no case: no readable key, or an unknown one."""

    def take(self, case_key: str, missing_code: str) -> dict[str, JsonValue]:
        """The case's prediction; its refusal, or its absence, is the case's product error."""
        if case_key in self.refusals:
            raise MalformedOutput(self.refusals[case_key])
        if case_key not in self.values:
            unread = "; ".join(self.unattributed)
            hint = f" (lines with no readable {self.key}: {unread})" if unread else ""
            raise MalformedOutput(
                f"[{missing_code}] {self.path}: no prediction for {case_key!r}{hint}"
            )
        return self.values[case_key]


def _key_of(value: JsonValue, key: str) -> str | None:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, str) and found else None


def read_prediction_lines(
    path: Path,
    *,
    key: str,
    invalid_code: str,
    known: Collection[str] = (),
    display: str | None = None,
) -> PredictionLines:
    """Read ``path`` as JSONL objects keyed by ``key``, refusing line by line.

    Only a file that cannot be read at all (missing, unreadable, over the size
    limit) is refused whole, by raising. ``known``, when given, lists the case
    keys of the suite: a line naming another is listed as ``unexpected_<key>``.
    """
    name = display or str(path)
    lines = PredictionLines(path=name, key=key)
    first_line: dict[str, int] = {}
    text = decode_lines_lenient(read_bytes(path, display=name))
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r")
        if not line.strip():
            continue
        refusal: AgentbenchError | None
        value: JsonValue = None
        try:
            value = loads_strict(line, file=name, line=number)
            refusal = undecodable_line(line, file=name, number=number)
        except AgentbenchError as exc:
            refusal = exc
        case_key = _key_of(value, key)
        if refusal is None and case_key is None:
            refusal = AgentbenchError(
                invalid_code,
                f"each line is an object with a string {key!r}",
                file=name,
                line=number,
            )
        if case_key is None:
            assert refusal is not None
            lines.unattributed.append(refusal.render())
            lines.refused_lines.append(refusal.render())
            continue
        if known and case_key not in known:
            lines.refused_lines.append(
                AgentbenchError(
                    f"unexpected_{key}",
                    f"{case_key!r} is not a case of the suite",
                    file=name,
                    line=number,
                    field=key,
                ).render()
            )
            continue
        if case_key in first_line:
            lines.values.pop(case_key, None)
            lines.refusals[case_key] = AgentbenchError(
                invalid_code,
                f"{case_key!r} is predicted again (first at line {first_line[case_key]})",
                file=name,
                line=number,
                field=key,
            ).render()
            continue
        first_line[case_key] = number
        if refusal is not None:
            lines.refusals[case_key] = refusal.render()
        else:
            assert isinstance(value, dict)
            lines.values[case_key] = value
    return lines


@dataclass(frozen=True)
class PredictionDocument:
    """A predictions file that is one JSON object: each case's part, or the whole's refusal."""

    path: str
    parts: dict[str, JsonValue]
    refusal: str | None
    """Why the document as a whole cannot be scored: every case fails with it."""

    def take(self, case_key: str) -> JsonValue | None:
        """The case's part (``None`` when absent); a refused document or part fails the case."""
        if self.refusal is not None:
            raise MalformedOutput(self.refusal)
        part = self.parts.get(case_key)
        if part is None:
            return None
        undecodable = undecodable_line(canonical_json(part), file=self.path)
        if undecodable is not None:
            raise MalformedOutput(
                f"[invalid_utf8] {self.path}: the prediction for {case_key!r} holds bytes "
                "that are not UTF-8"
            )
        return part


def read_prediction_document(
    path: Path, *, invalid_code: str, expected: str, display: str | None = None
) -> PredictionDocument:
    """Read ``path`` as one JSON object ``expected`` describes, bytes that are not UTF-8 kept.

    Only a file that cannot be read at all is refused whole, by raising; a document
    that does not parse, or is not an object, is the refusal of every case.
    """
    name = display or str(path)
    text = decode_lines_lenient(read_bytes(path, display=name))
    try:
        value = loads_strict(text, file=name)
    except AgentbenchError as exc:
        return PredictionDocument(path=name, parts={}, refusal=exc.render())
    if not isinstance(value, dict):
        refusal = AgentbenchError(invalid_code, f"expected {expected}", file=name).render()
        return PredictionDocument(path=name, parts={}, refusal=refusal)
    return PredictionDocument(path=name, parts=value, refusal=None)

"""What the page shows beside the run report: its transcripts and its baseline's answers.

The run report names each suite's transcripts file (``<report>.transcripts/<suite>.ndjson``)
with the sha256 of its bytes. The page embeds the transcripts only after the bytes read
match that digest: a file changed or swapped since the run is refused by name
(``transcripts_digest_mismatch``), never shown as the run's. Each case's events are
bounded in the page (:data:`EVENT_LIMIT` events, :data:`TEXT_LIMIT` characters a text),
so a page stays a size a browser opens quickly whatever the run said.

With a baseline (``--agentbench-baseline``) the page puts the baseline's answer and
verdict beside this run's for each case; the baseline report is read from the path
the comparison names. A baseline that cannot be read leaves the comparison drawn
without the answers, saying why: the comparison itself was made when the run ended.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_agentbench.report.html import read
from pytest_agentbench.sdk.errors import AgentbenchError

EVENT_LIMIT = 120
"""Events of one case's transcript the page keeps; past it, a count of the rest."""
TEXT_LIMIT = 1000
"""Characters of one text in a transcript the page keeps (the sidecar keeps 2,000)."""
ANSWER_LIMIT = 600
"""Characters of a case's answer the page keeps for search and side by side."""

Transcripts = dict[str, dict[str, list[Any]]]
"""Suite id to node id to the case's (bounded) transcript events."""


@dataclass(frozen=True)
class BaselineCase:
    outcome: str
    failure_class: str
    answer: str
    failed_checks: tuple[str, ...]


@dataclass(frozen=True)
class Extras:
    """What a page holds beyond the run report document."""

    transcripts: Transcripts = field(default_factory=dict)
    baseline: dict[str, dict[str, BaselineCase]] | None = None
    """Suite id to case label to the baseline's case; ``None`` without a baseline read."""
    baseline_note: str = ""
    """Why the baseline's answers are not shown, when there is a comparison without them."""


def _cut(value: Any) -> Any:
    """``value`` with every string past :data:`TEXT_LIMIT` characters cut, saying how much."""
    if isinstance(value, str):
        if len(value) > TEXT_LIMIT:
            return f"{value[:TEXT_LIMIT]}… ({len(value) - TEXT_LIMIT} more characters in the file)"
        return value
    if isinstance(value, list):
        return [_cut(item) for item in value]
    if isinstance(value, dict):
        return {key: _cut(item) for key, item in value.items()}
    return value


def bounded_events(events: list[Any]) -> list[Any]:
    kept = [_cut(event) for event in events[:EVENT_LIMIT]]
    if len(events) > EVENT_LIMIT:
        kept.append({"event": "page_cut", "dropped": len(events) - EVENT_LIMIT})
    return kept


def _sidecar_path(report_path: Path, index: int, name: str) -> Path:
    where = f"transcripts[{index}].file"
    relative = PurePosixPath(name)
    if not name or relative.is_absolute() or ".." in relative.parts:
        # The report names its files beside itself; any other path is not one it wrote.
        raise AgentbenchError(
            "invalid_run_report",
            f"{name!r} is not a path inside the report's folder",
            file=str(report_path),
            field=where,
        )
    return report_path.parent.joinpath(*relative.parts)


def read_transcripts(report: read.Doc, report_path: Path) -> Transcripts:
    """Every transcripts file the report names, checked against its digest."""
    found: Transcripts = {}
    entries = report.get("transcripts")
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        name = read.text(entry, "file")
        path = _sidecar_path(report_path, index, name)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise AgentbenchError(
                "transcripts_missing",
                f"the transcripts file the report names cannot be read ({exc.strerror})",
                file=str(path),
                field=f"transcripts[{index}].file",
            ) from None
        digest = hashlib.sha256(data).hexdigest()
        if digest != read.text(entry, "digest_sha256"):
            raise AgentbenchError(
                "transcripts_digest_mismatch",
                f"sha256 {digest} is not the {read.text(entry, 'digest_sha256')!r} "
                "the report names: the file changed since the run",
                file=str(path),
                field=f"transcripts[{index}].digest_sha256",
            )
        cases = found.setdefault(read.text(entry, "suite_id"), {})
        for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
            try:
                parsed = json.loads(line)
            except json.JSONDecodeError as exc:
                raise AgentbenchError(
                    "malformed_json", f"line {number}: {exc.msg}", file=str(path)
                ) from None
            events = parsed.get("events") if isinstance(parsed, dict) else None
            if isinstance(events, list):
                cases[read.text(parsed, "nodeid")] = bounded_events(events)
    return found


def answer_text(result: read.Doc, events: list[Any] | None = None) -> str:
    """A case's final answer as the page shows it: the transcript's raw text first,
    else the receipt's final object, else the recorded output; cut."""
    for event in reversed(events or []):
        if isinstance(event, dict) and event.get("event") == "final":
            text = read.text(read.mapping(event, "answer"), "text")
            return text[:ANSWER_LIMIT]
    final = read.mapping(read.mapping(result, "receipt"), "canonical").get("final")
    if final is not None:
        return read.json_text(final, ANSWER_LIMIT)
    outcome = read.mapping(read.mapping(result, "recorded"), "outcome")
    if "output" in outcome:
        return read.json_text(outcome["output"], ANSWER_LIMIT)
    return ""


def case_label(result: read.Doc) -> str:
    """The case id, with its trial under repeats (as the comparison names flipped cases)."""
    case_id = read.text(result, "case_id")
    trial = read.integer(result, "trial")
    return case_id if trial is None or not case_id else f"{case_id}[trial-{trial}]"


def failed_checks(result: read.Doc) -> tuple[str, ...]:
    return tuple(
        read.text(check, "name")
        for check in read.items(result, "checks")
        if read.text(check, "status") in {"fail", "missing"}
    )


def baseline_case(entry: read.Doc) -> tuple[str, BaselineCase]:
    """A baseline case entry's label and what the page shows of it."""
    result = read.mapping(entry, "result")
    return case_label(result) or read.text(entry, "nodeid"), BaselineCase(
        outcome=read.text(result, "outcome", "unknown"),
        failure_class=read.text(result, "failure_class"),
        answer=answer_text(result),
        failed_checks=failed_checks(result),
    )


def baseline_cases_from(path: Path) -> dict[str, dict[str, BaselineCase]]:
    """Suite id to case label to the baseline's case, of the run report at ``path``, read
    as a stream: only what the page shows of each case is kept; refused as
    ``read_report_document`` refuses."""
    # Imported here: the reader of a report imports this package.
    from pytest_agentbench.report.html import check_report
    from pytest_agentbench.report.stream import (
        CaseEntry,
        HeadField,
        NotAnObject,
        SuitesBegin,
        iter_report,
    )

    cases: dict[str, dict[str, BaselineCase]] = {}
    head: dict[str, Any] = {}
    listed = False
    pending: list[tuple[str, BaselineCase]] = []
    for event in iter_report(path):
        if isinstance(event, NotAnObject):
            check_report(event.value, path, suites_listed=False)
        elif isinstance(event, HeadField):
            head[event.key] = event.value
        elif isinstance(event, SuitesBegin):
            listed = True
        elif isinstance(event, CaseEntry):
            if isinstance(event.value, dict):
                pending.append(baseline_case(event.value))
        else:
            # A suite's id may follow its cases in the file: its cases wait for it.
            if isinstance(event.value, dict):
                cases.setdefault(read.text(event.value, "id"), {}).update(pending)
            pending = []
    check_report(head, path, suites_listed=listed)
    return cases


def read_extras(report: read.Doc, report_path: Path | None) -> Extras:
    """The transcripts (refused by name when they do not match the report) and the
    baseline's answers of a report read from ``report_path``."""
    transcripts = {} if report_path is None else read_transcripts(report, report_path)
    comparison = read.mapping(report, "comparison")
    if not comparison:
        return Extras(transcripts=transcripts)
    named = read.text(read.mapping(comparison, "baseline"), "path")
    candidates = [Path(named)]
    if report_path is not None and not Path(named).is_absolute():
        candidates.append(report_path.parent / named)
    found = next((path for path in candidates if named and path.is_file()), None)
    if found is None:
        note = f"the baseline report {named!r} is not found here, so its answers are not shown"
        return Extras(transcripts=transcripts, baseline_note=note)
    try:
        baseline = baseline_cases_from(found)
    except AgentbenchError as exc:
        note = f"the baseline report could not be read ({exc.render()}): its answers are not shown"
        return Extras(transcripts=transcripts, baseline_note=note)
    return Extras(transcripts=transcripts, baseline=baseline)

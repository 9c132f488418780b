"""The case x check grid of one suite: aggregated by label group, with drill-down.

Cases are grouped by their labels (tier, world, template ...). The aggregate
table shows, per group and check, how many cases passed, failed, missed the
check or were not graded on it; each group opens into its own case x check
grid, whose cells link to the case's detail. Case details travel as blocks of
compressed JSON (500 cases each, raw deflate in base64) that the page's script
inflates and draws only when a case is opened, so a run of thousands of cases
stays a small file a browser opens quickly.
"""

from __future__ import annotations

import base64
import sys
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from pytest_agentbench.report.html import read
from pytest_agentbench.report.html.sidecar import (
    BaselineCase,
    answer_text,
    case_label,
    failed_checks,
)
from pytest_agentbench.sdk.canonical import canonical_json

STATUSES = ("pass", "fail", "missing", "none")
OUTCOME_MARK = {"passed": "✓ ", "failed": "✗ ", "error": "! "}
"""A symbol beside each outcome's colour, so that colour is never the only signal."""
SYMBOL = {"pass": "✓", "fail": "✗", "missing": "?", "none": "\u2013"}
"""Symbols beside colours; an en dash marks a check the case was not graded on."""
MEANING = {"pass": "pass", "fail": "fail", "missing": "missing", "none": "not graded"}
SINGLE_GROUP_LIMIT = 60
"""Up to this many cases a suite shows one grid, open; above, one per label group."""
VALUE_LIMIT = 600
CALL_LIMIT = 300
OUTPUT_LIMIT = 2400
"""Characters of an adapter output's pretty-printed JSON kept per case."""
CHUNK_CASES = 500
"""Case details per compressed block: opening a case inflates and parses its block alone."""
DEFLATE_LEVEL = 6
"""zlib's default. On toolgrammar-v1's 7,754 details (0.15 s of CPU): level 3 takes half
the CPU for a third more bytes, level 9 saves 5% of them for nearly twice the CPU."""
DETAIL_TYPE = "application/x-agentbench-cases+deflate-raw+base64"
INDEX_TYPE = "application/x-agentbench-index+deflate-raw+base64"
SEARCH_LIMIT = 200
"""Characters of a case's prompt and of its answer its search index entry keeps."""
OUTCOME_RANK = {"error": 0, "failed": 0, "passed": 2}
"""Failing first: errors and failures, then what neither passed nor failed, then passes."""


@dataclass(frozen=True, slots=True)
class CaseRow:
    """What the grid, the filters and the links need of a case: a few fields, never the
    entry itself, so that a page's index of every case stays small (the details are
    drawn from each entry as it is read)."""

    index: int
    case_id: str
    nodeid: str
    outcome: str
    labels: tuple[str, ...]
    statuses: dict[str, str]


def failing_first(rows: Sequence[CaseRow]) -> list[CaseRow]:
    """``rows`` with failing cases first, each kind in report order."""
    return sorted(rows, key=lambda row: (OUTCOME_RANK.get(row.outcome, 1), row.index))


class SharedParts:
    """One copy of each distinct statuses mapping and labels tuple among a suite's rows.

    Thousands of cases repeat the same few (every check passed, the same labels): a
    mapping of two statuses is about 200 bytes a row, more than the rest of the row.
    """

    def __init__(self) -> None:
        self.statuses: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        self.labels: dict[tuple[str, ...], tuple[str, ...]] = {}


def case_row(index: int, entry: read.Doc, shared: SharedParts) -> CaseRow:
    """Case ``index`` of its suite; check names, statuses and labels interned: thousands
    of cases repeat the same few, and each parsed entry holds its own copies. Rows given
    the same ``shared`` share equal statuses and labels (never changed once made)."""
    result = read.mapping(entry, "result")
    statuses: dict[str, str] = {}
    for check in read.items(result, "checks"):
        status = read.text(check, "status")
        statuses.setdefault(
            sys.intern(read.text(check, "name")),
            sys.intern(status) if status in STATUSES else "none",
        )
    labels = tuple(sys.intern(label) for label in sorted(read.texts(result, "labels")))
    statuses = shared.statuses.setdefault(tuple(statuses.items()), statuses)
    labels = shared.labels.setdefault(labels, labels)
    return CaseRow(
        index=index,
        case_id=case_label(result) or read.text(entry, "nodeid"),
        nodeid=read.text(entry, "nodeid"),
        outcome=sys.intern(read.text(result, "outcome", "unknown")),
        labels=labels,
        statuses=statuses,
    )


def check_names(rows: Sequence[CaseRow]) -> list[str]:
    """Every check name, in the order cases first report them."""
    return list(dict.fromkeys(name for row in rows for name in row.statuses))


def groups(rows: Sequence[CaseRow]) -> list[tuple[str, list[CaseRow]]]:
    """The label groups, those with the most cases not passed first, each failing first."""
    if len(rows) <= SINGLE_GROUP_LIMIT:
        return [("all cases", failing_first(rows))] if rows else []
    grouped: dict[str, list[CaseRow]] = {}
    for row in rows:
        grouped.setdefault(" · ".join(row.labels) or "(no labels)", []).append(row)
    return sorted(
        ((name, failing_first(members)) for name, members in grouped.items()),
        key=lambda group: (-sum(1 for row in group[1] if row.outcome != "passed"), group[0]),
    )


def _status_cell(href: str, status: str, *, focusable: bool) -> str:
    tab = "" if focusable else ' tabindex="-1"'
    return (
        f'<td class="st-{status}"><a href="{href}"{tab} title="{MEANING[status]}">'
        f"{SYMBOL[status]}</a></td>"
    )


def _check_heads(names: Sequence[str]) -> str:
    # Check names run upwards so that a grid of many long-named checks stays narrow.
    return "".join(
        f'<th scope="col" class="check" title="{escape(name)}"><span>{escape(name)}</span></th>'
        for name in names
    )


def _aggregate(sid: str, names: Sequence[str], grouped: Sequence[tuple[str, list[CaseRow]]]) -> str:
    head = _check_heads(names)
    body = []
    for number, (group, rows) in enumerate(grouped):
        outcomes = Counter(row.outcome for row in rows)
        cells = []
        for name in names:
            counts = Counter(row.statuses.get(name, "none") for row in rows)
            shown = " ".join(
                f'<span class="st-{s}">{SYMBOL[s]}{counts[s]}</span>' for s in STATUSES if counts[s]
            )
            label = ", ".join(f"{counts[s]} {MEANING[s]}" for s in STATUSES if counts[s])
            state = "fail" if counts["fail"] or counts["missing"] else "pass"
            cells.append(
                f'<td class="agg agg-{state}"><a href="#grid-{sid}-g{number}" tabindex="-1" '
                f'aria-label="{escape(group)}, {escape(name)}: {label}">{shown}</a></td>'
            )
        passed = outcomes.get("passed", 0)
        body.append(
            f'<tr><th scope="row"><a href="#grid-{sid}-g{number}">{escape(group)}</a></th>'
            f'<td class="num">{len(rows)}</td><td class="num">{passed}</td>{"".join(cells)}</tr>'
        )
    return (
        f'<div class="scroll"><table class="grid aggregate" role="grid" '
        'aria-label="checks by case group">'
        f'<thead><tr><th scope="col">group</th><th scope="col">cases</th>'
        f'<th scope="col">passed</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _case_grid(
    sid: str, names: Sequence[str], rows: Sequence[CaseRow], caption: str
) -> Iterator[str]:
    """The group's grid, a row at a time: a page of many cases is never one string."""
    head = _check_heads(names)
    yield (
        f'<div class="scroll"><table class="grid cases" role="grid" aria-label="{escape(caption)}">'
        f'<thead><tr><th scope="col">case</th><th scope="col">outcome</th>{head}</tr></thead>'
        "<tbody>"
    )
    for row in rows:
        href = f"#case-{sid}-{row.index}"
        cells = "".join(
            _status_cell(f"{href}-k{k}", row.statuses.get(name, "none"), focusable=False)
            for k, name in enumerate(names)
        )
        yield (
            f'<tr><th scope="row"><a href="{href}">{escape(row.case_id)}</a></th>'
            f'<td class="outcome oc-{escape(row.outcome)}">{OUTCOME_MARK.get(row.outcome, "")}'
            f"{escape(row.outcome)}</td>{cells}</tr>"
        )
    yield "</tbody></table></div>"


def grid_head(sid: str, rows: Sequence[CaseRow], names: Sequence[str]) -> Iterator[str]:
    """The grid of ``rows`` up to the case details, in pieces: drawn from the rows alone."""
    grouped = groups(rows)
    legend = " ".join(f'<span class="st-{s}">{SYMBOL[s]} {MEANING[s]}</span>' for s in STATUSES)
    yield (
        f'<p class="legend">Legend: {legend}. Failing cases come first. Arrow keys move '
        "between cells, j and k between cases, Enter opens one.</p>"
    )
    single = len(grouped) == 1
    if not single:
        yield _aggregate(sid, names, grouped)
    for number, (group, members) in enumerate(grouped):
        failing = sum(1 for row in members if row.outcome != "passed")
        opened = " open" if single else ""
        yield (
            f'<details class="group" id="grid-{sid}-g{number}"{opened}><summary>'
            f"{escape(group)}: {len(members)} cases, {failing} not passed"
            '<span class="shown"></span></summary>'
        )
        yield from _case_grid(sid, names, members, f"cases of {group}")
        yield "</details>"
    yield (
        f'<section class="case-detail" id="{sid}-detail" tabindex="-1" aria-live="polite">'
        '<p class="hint">Choose a case or a cell to see its detail.</p></section>'
    )


class CaseDetails:
    """The compressed case details and search index of one suite, built a case at a time.

    Each block of :data:`CHUNK_CASES` details is drawn once its cases are in; the index
    is compressed as its entries come, so only its compressed bytes are held."""

    def __init__(
        self,
        sid: str,
        names: Sequence[str],
        transcripts: dict[str, list[Any]],
        baseline: dict[str, BaselineCase] | None,
    ) -> None:
        self.sid = sid
        self.names = names
        self.transcripts = transcripts
        self.baseline = baseline
        self.block: list[dict[str, Any]] = []
        self.start = 0
        self.index = JsonListPacker()

    def add(self, row: CaseRow, entry: read.Doc) -> str:
        """Take the next case (report order); a block's script when it completes one."""
        events = self.transcripts.get(row.nodeid)
        self.block.append(_case_data(row, entry, self.names, events, self.baseline))
        self.index.add(_index_entry(row, entry, events))
        return self._block() if len(self.block) == CHUNK_CASES else ""

    def _block(self) -> str:
        chunk = self.start // CHUNK_CASES
        text = (
            f'<script type="{DETAIL_TYPE}" id="cases-{self.sid}-c{chunk}" '
            f'data-first="{self.start}" data-count="{len(self.block)}">'
            + compressed_json(self.block)
            + "</script>"
        )
        self.start += len(self.block)
        self.block = []
        return text

    def finish(self) -> str:
        """The last block and the index."""
        cases = self.start + len(self.block)
        last = self._block() if self.block else ""
        return (
            f'{last}<script type="{INDEX_TYPE}" id="index-{self.sid}" data-cases="{cases}">'
            + self.index.finish()
            + "</script>"
        )


class DetailsAhead:
    """A suite's case details drawn as its cases are indexed, so that its entries need
    not be read a second time: they hold when its first case named every check the
    suite has (each detail lists the suite's checks) and the page shows no transcript
    or baseline answer of it, known only once the whole report is read.

    Drawing stops at the first case naming a check its first case did not: what was
    drawn is dropped, and the page draws the suite's details when it reads them again.
    """

    def __init__(self, sid: str) -> None:
        self.sid = sid
        self.details: CaseDetails | None = None
        self.names: list[str] = []
        self.known: frozenset[str] = frozenset()
        self.parts: list[str] = []
        self.given_up = False
        self.finished = False

    def add(self, row: CaseRow, entry: read.Doc) -> None:
        """Draw the suite's next case, unless it names a check the first did not."""
        if self.given_up:
            return
        if self.details is None:
            self.names = list(row.statuses)
            self.known = frozenset(self.names)
            self.details = CaseDetails(self.sid, self.names, {}, None)
        elif not self.known.issuperset(row.statuses):
            self.given_up = True
            self.details = None
            self.parts = []
            return
        block = self.details.add(row, entry)
        if block:
            self.parts.append(block)

    def finish(self) -> None:
        """The suite's cases are all in: its last block and its index are drawn."""
        if self.details is not None:
            self.parts.append(self.details.finish())
            self.details = None
            self.finished = True

    def drawn(self, names: Sequence[str]) -> list[str] | None:
        """The details drawn, if the suite's checks are ``names`` (as the page lists them)."""
        return self.parts if self.finished and self.names == list(names) else None


EMPTY_GRID = '<p class="empty">No case results in this report.</p>'


def _prompt(events: list[Any] | None) -> str:
    """The first user message the model was sent, if the case has a transcript."""
    for event in events or []:
        if isinstance(event, dict) and event.get("event") == "model_request":
            for message in event.get("messages") or []:
                if isinstance(message, dict) and message.get("role") == "user":
                    return read.text(read.mapping(message, "content"), "text")
    return ""


def _index_entry(row: CaseRow, entry: read.Doc, events: list[Any] | None) -> list[Any]:
    """What the page's filters and search read of a case, without inflating its detail:
    outcome, failure class, labels and the lower-cased text a search looks in."""
    result = read.mapping(entry, "result")
    text = " ".join(
        (
            row.case_id,
            row.nodeid,
            _prompt(events)[:SEARCH_LIMIT],
            answer_text(result, events)[:SEARCH_LIMIT],
        )
    )
    return [row.outcome, read.text(result, "failure_class"), list(row.labels), text.lower()]


def compressed_json(value: Any) -> str:
    """Canonical JSON, raw deflate, base64: what the page's script inflates on demand.

    Base64 holds no "<", so the text cannot end its script element early.
    """
    packer = zlib.compressobj(DEFLATE_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    packed = packer.compress(canonical_json(value).encode("utf-8")) + packer.flush()
    return base64.b64encode(packed).decode("ascii")


class JsonListPacker:
    """:func:`compressed_json` of a list given an item at a time, holding only the
    compressed bytes: deflate's output does not depend on how its input is cut."""

    def __init__(self) -> None:
        self.packer = zlib.compressobj(DEFLATE_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
        self.packed = bytearray(self.packer.compress(b"["))
        self.first = True

    def add(self, item: Any) -> None:
        text = canonical_json(item) if self.first else "," + canonical_json(item)
        self.first = False
        self.packed += self.packer.compress(text.encode("utf-8"))

    def finish(self) -> str:
        self.packed += self.packer.compress(b"]") + self.packer.flush()
        return base64.b64encode(self.packed).decode("ascii")


def _case_data(
    row: CaseRow,
    entry: read.Doc,
    names: Sequence[str],
    events: list[Any] | None,
    baseline: dict[str, BaselineCase] | None,
) -> dict[str, Any]:
    result = read.mapping(entry, "result")
    checks = [
        {
            "name": read.text(check, "name"),
            "status": read.text(check, "status"),
            "expected": read.json_text(check.get("expected"), VALUE_LIMIT),
            "actual": read.json_text(check.get("actual"), VALUE_LIMIT),
            "detail": read.text(check, "detail"),
        }
        for check in read.items(result, "checks")
    ]
    data: dict[str, Any] = {
        "id": row.case_id,
        "nodeid": row.nodeid,
        "outcome": row.outcome,
        "failure_class": read.text(result, "failure_class"),
        "failure_reason": read.text(result, "failure_reason"),
        "labels": list(row.labels),
        "findings": read.texts(result, "findings"),
        "checks": checks,
        "columns": list(names),
    }
    raised = read.text(result, "failure_traceback")
    if raised:
        data["failure_traceback"] = raised
    recorded = read.mapping(result, "recorded")
    outcome = read.mapping(recorded, "outcome")
    if "output" in outcome:
        data["output"] = {
            "adapter": read.text(recorded, "adapter"),
            "json": read.pretty_text(outcome["output"], OUTPUT_LIMIT),
        }
    receipt = read.mapping(result, "receipt")
    if receipt:
        data["receipt"] = _receipt_data(receipt)
    if events is not None:
        data["transcript"] = events
    if baseline is not None:
        before = baseline.get(row.case_id)
        data["compared"] = {
            "answer": answer_text(result, events),
            "failed_checks": list(failed_checks(result)),
            "baseline": None
            if before is None
            else {
                "outcome": before.outcome,
                "failure_class": before.failure_class,
                "answer": before.answer,
                "failed_checks": list(before.failed_checks),
            },
        }
    artifact = read.mapping(result, "artifact")
    if artifact:
        data["artifact"] = {
            "file": read.text(artifact, "file"),
            "digest": read.text(artifact, "digest_sha256"),
        }
    return data


def _receipt_data(receipt: read.Doc) -> dict[str, Any]:
    canonical = read.mapping(receipt, "canonical")
    calls = [
        {
            "index": read.integer(call, "index"),
            "tool": read.text(call, "name"),
            "arguments": read.json_text(call.get("arguments"), CALL_LIMIT),
            "outcome": read.text(call, "error") or read.json_text(call.get("result"), CALL_LIMIT),
            "error": bool(read.text(call, "error")),
            "bytes": read.integer(call, "model_visible_bytes"),
            "delivered": read.flag(call, "delivered"),
        }
        for call in read.items(canonical, "calls")
    ]
    return {
        "digest": read.text(receipt, "digest"),
        "calls": calls,
        "totals": read.json_text(canonical.get("totals"), VALUE_LIMIT),
        "budget": read.json_text(canonical.get("budget"), VALUE_LIMIT),
        "final": read.json_text(canonical.get("final"), VALUE_LIMIT * 2),
        "failure": read.text(canonical, "failure_code"),
    }

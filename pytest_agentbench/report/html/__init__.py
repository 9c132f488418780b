"""The static HTML run report: one self-contained file built from the JSON run report."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_agentbench.report.html.grid import DetailsAhead
from pytest_agentbench.report.html.read import Doc
from pytest_agentbench.report.html.render import SuiteIndex, page_parts, render_html
from pytest_agentbench.report.html.sidecar import read_extras
from pytest_agentbench.report.stream import (
    CaseEntry,
    HeadField,
    NotAnObject,
    SuitesBegin,
    iter_report,
)
from pytest_agentbench.report.stream import read_report_document as read_streamed
from pytest_agentbench.report.transcript_folder import transcripts_folder
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import write_file, writing

__all__ = [
    "index_report",
    "read_report_document",
    "render_html",
    "write_html",
    "write_html_from",
]

SCHEMA_PREFIX = "agentbench-run-report/"


def check_report(document: Any, path: Path, *, suites_listed: bool) -> None:
    """Refuse what is not a run report: not an object, another schema, no ``suites`` list."""
    if not isinstance(document, Mapping):
        raise AgentbenchError("invalid_run_report", "a run report is a JSON object", file=str(path))
    version = document.get("schema_version")
    if not isinstance(version, str) or not version.startswith(SCHEMA_PREFIX):
        raise AgentbenchError(
            "invalid_run_report",
            f"schema_version is {version!r}, not {SCHEMA_PREFIX}<n>",
            file=str(path),
            field="schema_version",
        )
    if not suites_listed:
        raise AgentbenchError(
            "invalid_run_report", "suites is not a list", file=str(path), field="suites"
        )


def read_report_document(
    path: Path, *, max_bytes: int | None = None, option: str = "--max-report-bytes"
) -> Doc:
    """A saved run report as parsed JSON, read as a stream; anything else is refused by name."""
    document = read_streamed(path, max_bytes=max_bytes, option=option)
    listed = isinstance(document, Mapping) and isinstance(document.get("suites"), list)
    check_report(document, path, suites_listed=listed)
    assert isinstance(document, Mapping)
    return document


Indexed = tuple[dict[str, Any], list[SuiteIndex], dict[int, int]]
"""What :func:`index_report` reads: the head members, the suites' indexes, their numbers."""


def index_report(
    path: Path, *, max_bytes: int | None = None, option: str = "--max-report-bytes"
) -> Indexed:
    """A saved run report's members but ``suites``, an index of each suite, and each
    suite's number on the page by its place in the file; refused as
    :func:`read_report_document` refuses it. No case entry is kept: each suite's case
    details are drawn as its entries are read (:class:`~grid.DetailsAhead`), unless the
    page will show transcripts or a baseline's answers beside them."""
    head: dict[str, Any] = {}
    suites: list[SuiteIndex] = []
    numbers: dict[int, int] = {}
    listed = False
    # The report names its transcripts and its comparison's baseline after its suites
    # (keys are sorted) or before them; a transcripts folder beside it tells early.
    ahead = not _transcripts_beside(path)
    pending = SuiteIndex({})
    for event in iter_report(path, max_bytes=max_bytes, option=option):
        if isinstance(event, NotAnObject):
            check_report(event.value, path, suites_listed=False)
        elif isinstance(event, HeadField):
            head[event.key] = event.value
            listed = listed and event.key != "suites"
        elif isinstance(event, SuitesBegin):
            listed = True
            ahead = ahead and not head.get("transcripts") and not head.get("comparison")
            pending = _pending(0, ahead=ahead)
        elif isinstance(event, CaseEntry):
            if isinstance(event.value, Mapping):
                pending.add(event.value)
        else:
            # A suite that is not an object is no suite of the page (nor are its entries).
            if isinstance(event.value, Mapping):
                pending.fields = {k: v for k, v in event.value.items() if k != "cases"}
                if pending.ahead is not None:
                    pending.ahead.finish()
                numbers[event.index] = len(suites)
                suites.append(pending)
            pending = _pending(len(suites), ahead=ahead)
    check_report(head, path, suites_listed=listed)
    return head, suites, numbers


def _transcripts_beside(path: Path) -> bool:
    """Whether the transcripts folder a run writes beside the report at ``path`` is there:
    a hint only, so a path that cannot be asked about is left for the reader to refuse."""
    try:
        return transcripts_folder(path).exists()
    except (OSError, ValueError):
        return False


def _pending(number: int, *, ahead: bool) -> SuiteIndex:
    """The index of the suite read next, page number ``number`` if it is one."""
    return SuiteIndex({}, ahead=DetailsAhead(f"s{number}") if ahead else None)


def _entries(
    path: Path, numbers: dict[int, int], max_bytes: int | None, option: str
) -> Iterator[tuple[int, Doc]]:
    for event in iter_report(path, max_bytes=max_bytes, option=option):
        if isinstance(event, CaseEntry) and isinstance(event.value, Mapping):
            yield numbers.get(event.suite, -1), event.value


def write_html_from(
    source: Path,
    path: Path,
    *,
    max_bytes: int | None = None,
    option: str = "--max-report-bytes",
    indexed: Indexed | None = None,
) -> None:
    """The page of the run report at ``source``, read as a stream: once for the suites,
    a small row per case and the case details a suite's entries can give at once (or
    ``indexed``, that read already made), and again for the other suites' details as
    they are drawn, when there are any. The page is :func:`write_html`'s, byte for
    byte, without the whole report in memory."""
    head, suites, numbers = indexed or index_report(source, max_bytes=max_bytes, option=option)
    extras = read_extras(head, source)
    entries = _entries(source, numbers, max_bytes, option)
    with writing(path) as stream:
        for part in page_parts(head, suites, entries, extras, name=str(source)):
            stream.write(part.encode("utf-8"))


def write_html(report: Doc, path: Path, *, source: Path | None = None) -> None:
    """The page of ``report``; read from ``source``, with the transcripts beside it (checked
    against their digests) and, for a comparison, the baseline's answers."""
    write_file(path, render_html(report, read_extras(report, source)))

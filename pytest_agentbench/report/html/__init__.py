"""The static HTML run report: one self-contained file built from the JSON run report."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pytest_agentbench.report.html.read import Doc
from pytest_agentbench.report.html.render import render_html
from pytest_agentbench.report.html.sidecar import read_extras
from pytest_agentbench.report.stream import read_report_document as read_streamed
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import write_file

__all__ = ["read_report_document", "render_html", "write_html"]

SCHEMA_PREFIX = "agentbench-run-report/"


def read_report_document(
    path: Path, *, max_bytes: int | None = None, option: str = "--max-report-bytes"
) -> Doc:
    """A saved run report as parsed JSON, read as a stream; anything else is refused by name."""
    document = read_streamed(path, max_bytes=max_bytes, option=option)
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
    if not isinstance(document.get("suites"), list):
        raise AgentbenchError(
            "invalid_run_report", "suites is not a list", file=str(path), field="suites"
        )
    return document


def write_html(report: Doc, path: Path, *, source: Path | None = None) -> None:
    """The page of ``report``; read from ``source``, with the transcripts beside it (checked
    against their digests) and, for a comparison, the baseline's answers."""
    write_file(path, render_html(report, read_extras(report, source)))

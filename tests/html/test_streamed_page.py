"""The page drawn from a report read as a stream is the whole-document page, in bounded memory."""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.report import html
from pytest_agentbench.report.html import (
    read_report_document,
    render_html,
    write_html,
    write_html_from,
)
from pytest_agentbench.report.html.render import index_suite, page_parts
from pytest_agentbench.report.html.sidecar import read_extras
from pytest_agentbench.report.stream import ReportEvent
from pytest_agentbench.report.transcript_folder import transcripts_folder
from pytest_agentbench.sdk.errors import AgentbenchError
from tests.html import sample


def _rich_report(folder: Path) -> Path:
    """Two suites (one over a block of case details), transcripts beside it, and a
    comparison whose baseline report sits beside it too."""
    before = sample.report(sample.suite("alpha", 40), sample.suite("beta", 700, interactive=False))
    (folder / "before.json").write_text(json.dumps(before, indent=2))
    document = sample.report(
        sample.suite("alpha", 40), sample.suite("beta", 700, interactive=False)
    )
    document["suites"][1]["cases"][5]["result"]["outcome"] = "failed"
    document["comparison"] = sample.comparison("alpha", ["ops-T4-00003", "gone-case"])
    document["comparison"]["baseline"]["path"] = "before.json"
    path = folder / "run.json"
    sample.with_transcripts(document, path, every=3)
    path.write_text(json.dumps(document, indent=2))
    return path


def test_the_streamed_page_is_the_whole_document_page_byte_for_byte(tmp_path: Path) -> None:
    path = _rich_report(tmp_path)
    whole, streamed = tmp_path / "whole.html", tmp_path / "streamed.html"
    write_html(read_report_document(path), whole, source=path)
    write_html_from(path, streamed)
    page = streamed.read_bytes()
    assert page == whole.read_bytes()
    # What the case exercises is on the page: both suites' details, transcripts, the
    # side-by-side table of the baseline's answers.
    assert page.count(b'id="cases-s1-c') == 2
    assert b"Side by side:" in page
    assert b"not found here" not in page


def _same_checks(suite: dict[str, Any]) -> dict[str, Any]:
    """``suite`` with every case naming the same checks (sample's T5 cases add one)."""
    for entry in suite["cases"]:
        checks = entry["result"]["checks"]
        entry["result"]["checks"] = [c for c in checks if c["name"] != "citations_match"]
    return suite


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The reports the page reads, once a read (the index's, then the details')."""
    reads: list[Path] = []
    real = html.iter_report

    def counted(path: Path, **options: Any) -> Iterator[ReportEvent]:
        reads.append(path)
        return real(path, **options)

    monkeypatch.setattr(html, "iter_report", counted)
    return reads


def test_details_drawn_as_the_cases_are_indexed_are_the_page_read_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # alpha and gamma name the same checks in every case: their details are drawn on the
    # first read. beta's T5 cases name one more: its details wait for the second read,
    # which passes over alpha's entries.
    document = sample.report(
        _same_checks(sample.suite("alpha", 600, interactive=False)),
        sample.suite("beta", 70),
        _same_checks(sample.suite("gamma", 30)),
    )
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    reads = _counting_reads(monkeypatch)
    write_html_from(path, tmp_path / "run.html")
    page = (tmp_path / "run.html").read_bytes()
    assert page == render_html(document).encode("utf-8")
    assert page.count(b'id="cases-s0-c') == 2
    assert reads == [path, path]
    del document["suites"][1]
    path.write_text(json.dumps(document))
    reads.clear()
    write_html_from(path, tmp_path / "run.html")
    assert (tmp_path / "run.html").read_bytes() == render_html(document).encode("utf-8")
    assert reads == [path]


def test_details_drawn_ahead_give_way_to_transcripts_the_report_names_after_its_suites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = sample.report(_same_checks(sample.suite("alpha", 20)))
    path = tmp_path / "run.json"
    sample.with_transcripts(document, path, every=2)
    # In a folder of another name, the transcripts are not known to be there until read.
    (tmp_path / "run.json.transcripts").rename(tmp_path / "elsewhere")
    for named in document["transcripts"]:
        named["file"] = named["file"].replace("run.json.transcripts/", "elsewhere/")
    path.write_text(json.dumps(document))
    reads = _counting_reads(monkeypatch)
    write_html_from(path, tmp_path / "run.html")
    page = (tmp_path / "run.html").read_text(encoding="utf-8")
    assert page == render_html(document, read_extras(document, path))
    assert "transcript" in sample.case_details(page, "s0")[0]
    assert reads == [path, path]


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[1, 2]", None),
        ('{"schema_version": "other/1", "suites": []}', "schema_version"),
        ('{"schema_version": "agentbench-run-report/3", "suites": {}}', "suites"),
        ('{"schema_version": "agentbench-run-report/3"}', "suites"),
    ],
)
def test_what_is_no_run_report_is_refused_as_the_whole_read_refuses_it(
    tmp_path: Path, text: str, field: str | None
) -> None:
    path = tmp_path / "run.json"
    path.write_text(text)
    with pytest.raises(AgentbenchError) as whole:
        read_report_document(path)
    with pytest.raises(AgentbenchError) as streamed:
        write_html_from(path, tmp_path / "run.html")
    assert (streamed.value.code, streamed.value.location.field) == ("invalid_run_report", field)
    assert streamed.value.render() == whole.value.render()
    assert not (tmp_path / "run.html").exists()


def test_entries_that_no_longer_match_the_index_are_refused() -> None:
    suite = sample.suite("alpha", 3)
    entries = [(0, suite["cases"][0]), (0, suite["cases"][2])]
    with pytest.raises(AgentbenchError) as raised:
        "".join(page_parts({}, [index_suite(suite)], entries, name="run.json"))
    assert raised.value.code == "report_changed"
    assert raised.value.location.field == "suites[0].cases[1]"


def _peak(path: Path, out: Path) -> int:
    tracemalloc.start()
    try:
        write_html_from(path, out)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_streamed_page_holds_a_small_row_per_case_not_the_report(tmp_path: Path) -> None:
    peaks = {}
    for cases in (1000, 4000):
        path = tmp_path / f"run{cases}.json"
        path.write_text(json.dumps(sample.report(sample.suite("big", cases, interactive=False))))
        peaks[cases] = _peak(path, tmp_path / f"run{cases}.html")
    per_case = (peaks[4000] - peaks[1000]) / 3000
    # Drawn from the whole document parsed, these cases cost 5.8 KB each (at 6d44201);
    # read as a stream, 1.14 KB (at 631c47d; 1.36 KB before rows shared their statuses):
    # the row of each case and its index entry's compressed bytes (tracemalloc counts
    # allocations: no clock, no machine load in it).
    assert per_case < 1500, per_case


def test_a_suites_rows_share_each_distinct_statuses_mapping_and_labels_tuple() -> None:
    index = index_suite(sample.suite("big", 200, interactive=False))
    distinct = {tuple(row.statuses.items()) for row in index.rows}
    # One mapping (and one labels tuple) per distinct value, not one per row.
    assert len({id(row.statuses) for row in index.rows}) == len(distinct) < len(index.rows)
    assert len({id(row.labels) for row in index.rows}) == len({row.labels for row in index.rows})
    # Another suite's rows are their own: nothing outlives the suite's index.
    other = index_suite(sample.suite("big", 3, interactive=False))
    assert not {id(row.statuses) for row in other.rows} & {id(row.statuses) for row in index.rows}


def test_drawing_a_page_leaves_no_garbage_cycle(tmp_path: Path) -> None:
    # The run's end draws the page with automatic collection paused (its records are
    # acyclic): any cycle a case's drawing made would stay in memory until the page ends.
    document = sample.report(sample.suite("alpha", 40), sample.suite("beta", 60, interactive=False))
    for suite in document["suites"]:
        for number, case in enumerate(suite["cases"]):
            case["result"]["recorded"] = sample.recorded({"answer": number, "steps": [[1, "a"]]})
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    write_html_from(path, tmp_path / "warm.html")  # imports and caches made once
    gc.collect()
    gc.disable()
    try:
        write_html_from(path, tmp_path / "run.html")
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_the_transcripts_hint_names_the_folder_a_run_writes(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    assert not html._transcripts_beside(path)
    transcripts_folder(path).mkdir()
    assert html._transcripts_beside(path)

"""Every report of a finished run, written at the session's end from its summary.

JUnit properties, ``--agentbench-receipts``, the JSON report
(``--agentbench-report``) and the HTML page (``--agentbench-html``): the hook
layer decides the run's outcome, this module writes what it says.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import pytest

from pytest_agentbench.report.comparison_lines import comparison_properties
from pytest_agentbench.report.junit import add_global_properties, add_properties
from pytest_agentbench.report.receipts import write_receipts
from pytest_agentbench.report.recorder import RunRecorder
from pytest_agentbench.report.summary import RunSummary
from pytest_agentbench.report.trust import TRUST_KEY
from pytest_agentbench.run.options import Options
from pytest_agentbench.sdk.errors import AgentbenchError

if TYPE_CHECKING:
    from pytest_agentbench.agents.provenance_records import RunProvenance
    from pytest_agentbench.report.transcripts import TranscriptFile
    from pytest_agentbench.scoring.comparison import Comparison


def write_reports(
    config: pytest.Config,
    summary: RunSummary,
    recorder: RunRecorder,
    options: Options,
    *,
    adapter_description: str,
    exit_status: int,
    comparison: Comparison | None,
    model_run: RunProvenance | None,
) -> tuple[RunSummary, list[AgentbenchError]]:
    """Write every report the options ask for; the summary the terminal section then shows,
    and the refusals of the files that could not be written (``output_unwritable``).

    A file that cannot be written (a full disk) stops none of the others. That summary
    has no per-case entries once a report has been written from them.
    """
    add_global_properties(config, summary)
    if model_run is not None:
        from pytest_agentbench.report.model_run import model_run_properties

        add_properties(config, model_run_properties(model_run))
    if comparison is not None:
        add_properties(config, comparison_properties(comparison))
    unwritten: list[AgentbenchError] = []
    if options.receipts_dir is not None:
        unwritten += write_receipts(recorder.graded.results(), options.receipts_dir)[1]
    if options.report_path is not None or options.html_path is not None:
        # Imported only for a report: its records (and the comparison's, the judges')
        # cost a run without one their import.
        from pytest_agentbench.report.json_report import report_document, write_report

        identity = {
            "rootpath": config.rootpath,
            "adapter_spec": options.adapter_spec,
            "adapter_description": adapter_description,
            "exit_status": exit_status,
            "comparison": comparison,
            "model_run": model_run,
            "trust": config.stash.get(TRUST_KEY, None),
        }
        written = False
        transcripts: tuple[TranscriptFile, ...] = ()
        if options.report_path is not None:
            transcripts = () if recorder.transcripts is None else recorder.transcripts.finish()
            try:
                write_report(
                    options.report_path,
                    summary,
                    recorder.graded,
                    recorder.durations,
                    transcripts=transcripts,
                    **identity,
                )
                written = True
            except AgentbenchError as exc:
                unwritten.append(exc)
        if options.html_path is not None:
            # Imported only when asked for: its modules cost every run 9 ms otherwise.
            from pytest_agentbench.report.html import index_report, write_html, write_html_from

            # The page is drawn from the very document the JSON report holds: read
            # back as a stream (once or twice, never whole) when it was just written
            # rather than built from the run a second time.
            indexed = None
            if written and options.report_path is not None:
                with contextlib.suppress(AgentbenchError):
                    indexed = index_report(options.report_path)
            try:
                if indexed is not None and options.report_path is not None:
                    # Read back, the report brings its transcripts beside it.
                    write_html_from(options.report_path, options.html_path, indexed=indexed)
                else:
                    # Built from the run, the page names the transcripts files the report
                    # would have named and reads them from beside it, as a page read back does.
                    document = report_document(
                        summary,
                        recorder.graded,
                        recorder.durations,
                        transcripts=transcripts,
                        **identity,
                    )
                    write_html(document, options.html_path, source=options.report_path)
            except AgentbenchError as exc:
                unwritten.append(exc)
        # The terminal section needs no per-case entries: dropping them here spares
        # the garbage collections of the session's end a walk over every case result.
        summary = summary.model_copy(
            update={"suites": tuple(s.model_copy(update={"cases": ()}) for s in summary.suites)}
        )
    return summary, unwritten


def unwritten_lines(refusals: list[AgentbenchError]) -> list[str]:
    """One line per kind of failure (the first file's refusal), however many files it hit."""
    by_reason: dict[str, list[AgentbenchError]] = {}
    for refusal in refusals:
        by_reason.setdefault(refusal.reason, []).append(refusal)
    lines = []
    for same in by_reason.values():
        more = len(same) - 1
        lines.append(
            same[0].render()
            + (f" (and {more} more file{'s' if more > 1 else ''} not written)" if more else "")
        )
    return lines

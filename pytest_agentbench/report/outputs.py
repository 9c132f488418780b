"""Every report of a finished run, written at the session's end from its summary.

JUnit properties, ``--agentbench-receipts``, the JSON report
(``--agentbench-report``) and the HTML page (``--agentbench-html``): the hook
layer decides the run's outcome, this module writes what it says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_agentbench.report.comparison_lines import comparison_properties
from pytest_agentbench.report.junit import add_global_properties, add_properties
from pytest_agentbench.report.model_run import model_run_properties
from pytest_agentbench.report.receipts import write_receipts
from pytest_agentbench.report.recorder import RunRecorder
from pytest_agentbench.report.summary import RunSummary
from pytest_agentbench.run.options import Options

if TYPE_CHECKING:
    from pytest_agentbench.agents.provenance import RunProvenance
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
) -> RunSummary:
    """Write every report the options ask for; the summary the terminal section then shows.

    That summary has no per-case entries once a report has been written from them.
    """
    add_global_properties(config, summary)
    if model_run is not None:
        add_properties(config, model_run_properties(model_run))
    if comparison is not None:
        add_properties(config, comparison_properties(comparison))
    if options.receipts_dir is not None:
        write_receipts(recorder.graded.results(), options.receipts_dir)
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
        }
        if options.report_path is not None:
            transcripts = () if recorder.transcripts is None else recorder.transcripts.finish()
            write_report(
                options.report_path,
                summary,
                recorder.graded,
                recorder.durations,
                transcripts=transcripts,
                **identity,
            )
        if options.html_path is not None:
            # Imported only when asked for: its modules cost every run 9 ms otherwise.
            from pytest_agentbench.report.html import read_report_document, write_html

            # The page is drawn from the very document the JSON report holds: read
            # back when it was just written rather than streamed a second time.
            document = (
                report_document(summary, recorder.graded, recorder.durations, **identity)
                if options.report_path is None
                else read_report_document(options.report_path)
            )
            write_html(document, options.html_path)
        # The terminal section needs no per-case entries: dropping them here spares
        # the garbage collections of the session's end a walk over every case result.
        summary = summary.model_copy(
            update={"suites": tuple(s.model_copy(update={"cases": ()}) for s in summary.suites)}
        )
    return summary

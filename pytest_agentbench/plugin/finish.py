"""The end of a run with benchmarks: its summary, gates, baseline comparison and reports.

Imported by :mod:`pytest_agentbench.plugin.hooks` when a session finishes in the
process results arrive in (the only one, or the xdist controller) and there is
something to summarise: the report modules it pulls in (summary, JSON report,
comparison, model provenance, terminal lines) cost every other process, above
all every xdist worker, their import for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from pytest_agentbench.plugin.baseline_options import BASELINE_KEY
from pytest_agentbench.plugin.model_options import MATRIX_KEY
from pytest_agentbench.plugin.rerun import RERUN_KEY
from pytest_agentbench.report.comparison_lines import comparison_lines
from pytest_agentbench.report.junit import add_carried_cases
from pytest_agentbench.report.outputs import unwritten_lines, write_reports
from pytest_agentbench.report.recorder import RunRecorder
from pytest_agentbench.report.summary import RunSummary, summarise
from pytest_agentbench.report.terminal import orphan_gate_lines, suite_lines
from pytest_agentbench.report.trust import TRUST_KEY, trust_line
from pytest_agentbench.run.session import RUN_KEY, AgentbenchState
from pytest_agentbench.sdk.errors import AgentbenchError

if TYPE_CHECKING:
    # A model run's provenance and its lines are imported by a run that drives a chat model.
    from pytest_agentbench.agents.provenance_records import RunProvenance
    from pytest_agentbench.scoring.comparison import Comparison


NO_ADAPTER_LINE = (
    "agentbench: NO ADAPTER: the built-in reference agents answered every case "
    "(name yours with --agentbench-adapter or ini agentbench_adapter; "
    "--agentbench-require-adapter refuses such a run)"
)


@dataclass(frozen=True)
class Finished:
    """What the terminal summary shows of a finished run."""

    summary: RunSummary
    comparison: Comparison | None
    model_run: RunProvenance | None
    without_adapter: bool = False
    """No adapter was named: the built-in reference agents answered the cases."""
    unwritten: tuple[str, ...] = ()
    """What could not be written at the end (the report, the page, receipts), one line each."""
    report_written: bool = False
    """Whether ``--agentbench-report`` was written whole: only then is its journal removed."""


def finish(session: pytest.Session, state: AgentbenchState, recorder: RunRecorder) -> Finished:
    """Summarise the run, judge its gates and write every report."""
    config = session.config
    options = state.options
    baseline = config.stash.get(BASELINE_KEY, None)
    rerun = config.stash.get(RERUN_KEY, None)
    notes = [] if rerun is None else rerun.inject(recorder, state.loader, state)
    try:
        summary = summarise(
            recorder,
            state.loader,
            options.gates,
            with_cases=baseline is not None,
            allow_partial=options.allow_partial,
            trials=options.repeat,
            models=matrix_digests(config),
        )
    except AgentbenchError as exc:
        raise pytest.UsageError(exc.render()) from None
    failures: list[str] = []
    if rerun is not None:
        notes += rerun.finish(recorder, state.loader)
        # The journal, or record files, that could not be written: the run says so and fails.
        failures = unwritten_lines(rerun.unwritten)
    if notes or failures:
        summary = summary.model_copy(update={"problems": (*summary.problems, *notes, *failures)})
    comparison = None
    if baseline is not None:
        # Imported only for a comparison, as the baseline's options were.
        from pytest_agentbench.report.baseline import compare_with_baseline

        comparison = compare_with_baseline(
            baseline.path, baseline.report, summary.suites, baseline.settings
        )
    # A predictions file for a suite that did not run was never scored: saying
    # nothing would let a typo in the suite id pass a CI job.
    unscored = sorted(set(options.predictions) - {suite.id for suite in summary.suites})
    if unscored:
        summary = summary.model_copy(
            update={
                "problems": (
                    *summary.problems,
                    *(
                        f"[unscored_predictions] --agentbench-predictions: suite {suite_id!r} "
                        "did not run, so its predictions were not scored"
                        for suite_id in unscored
                    ),
                )
            }
        )
    model_run, summary = _with_model_run(config, recorder, summary)
    refused_lines = _refused_prediction_lines(state, summary)
    if refused_lines:
        summary = summary.model_copy(update={"problems": (*summary.problems, *refused_lines)})
    # Every problem is a refusal (a suite, an unreadable file, a predictions line)
    # except the re-run's notes ([resumed], a changed oracle), which only inform.
    refusals = [problem for problem in summary.problems if problem not in notes]
    compared_ok = comparison is None or comparison.passed
    if rerun is not None and rerun.carried:
        # The cases a resume took from the earlier run are the run's as much as those it
        # ran: deselected here, pytest neither counts nor lists them.
        add_carried_cases(config, rerun.carried, rerun.resume_path)
        if recorder.transcripts is not None and rerun.resume_path is not None:
            recorder.transcripts.carry(rerun.resume_path, {nodeid for nodeid, _ in rerun.carried})
        if session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK
    unsuccessful = any(suite.counts["failed"] or suite.counts["error"] for suite in summary.suites)
    if (
        refusals or not summary.gates_passed or not compared_ok or unsuccessful
    ) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    shown, unwritten = write_reports(
        config,
        summary,
        recorder,
        options,
        adapter_description=state.adapter_description,
        exit_status=int(session.exitstatus),
        comparison=comparison,
        model_run=model_run,
    )
    # Imported here: hooks imports this module when a run ends.
    from pytest_agentbench.plugin.hooks import answered_by_reference_agents

    if unwritten and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return Finished(
        summary=shown,
        comparison=comparison,
        model_run=model_run,
        without_adapter=bool(shown.suites) and answered_by_reference_agents(config, options),
        unwritten=tuple(f"{line} (not written)" for line in unwritten_lines(unwritten)),
        report_written=options.report_path is not None
        and all(refusal.location.file != str(options.report_path) for refusal in unwritten),
    )


def matrix_digests(config: pytest.Config) -> dict[str, str | None] | None:
    """A model matrix's models in order, each with its settings digest; ``None`` without one."""
    models = config.stash.get(MATRIX_KEY, ())
    if not models:
        return None
    from pytest_agentbench.agents.provenance import model_runs

    runs = model_runs()
    return {
        entry.name: runs[entry.name].settings.settings_digest() if entry.name in runs else None
        for entry in models
    }


def _with_model_run(
    config: pytest.Config, recorder: RunRecorder, summary: RunSummary
) -> tuple[RunProvenance | None, RunSummary]:
    """The run's model provenance; cases a budget excluded make a problem of the summary."""
    if RUN_KEY not in config.stash:  # no chat model configured: no provenance
        return None, summary
    from pytest_agentbench.report.model_run import exclusion_problem, model_run_of

    model_run = model_run_of(config, recorder.graded)
    line = None if model_run is None else exclusion_problem(model_run)
    if line is not None:
        summary = summary.model_copy(update={"problems": (*summary.problems, line)})
    return model_run, summary


def _refused_prediction_lines(state: AgentbenchState, summary: RunSummary) -> list[str]:
    """Lines of the predictions files that belong to no case: they fail the run.

    The same lines make ``agentbench validate`` refuse the file. A world's
    predictions adapter lists them in an optional ``refused_lines`` attribute.
    """
    found: list[str] = []
    ran = {suite.id for suite in summary.suites}
    for loaded in state.loader.loaded():
        path = state.options.predictions.get(loaded.suite.id)
        if path is None or loaded.suite.id not in ran:
            continue
        try:
            adapter = loaded.world.predictions_adapter(loaded.suite, path)
        except AgentbenchError as exc:
            found.append(exc.render())
            continue
        found.extend(str(line) for line in getattr(adapter, "refused_lines", ()))
    return found


def write_terminal_summary(
    terminalreporter: pytest.TerminalReporter,
    finished: Finished,
    adapter_description: str,
    *,
    verbose: bool,
) -> None:
    """The run's sections of pytest's terminal summary."""
    summary = finished.summary
    if finished.without_adapter:
        # First: a CI job whose adapter setting was lost passes on the reference agents.
        terminalreporter.write_line(NO_ADAPTER_LINE, yellow=True, bold=True)
    for suite in summary.suites:
        if verbose:
            terminalreporter.write_sep("=", f"agentbench: {suite.id} ({suite.world})")
        for line in suite_lines(suite, adapter_description, verbose=verbose):
            terminalreporter.write_line(line if verbose else f"agentbench {line}")
    for line in [*orphan_gate_lines(summary), *summary.problems, *finished.unwritten]:
        terminalreporter.write_line(f"agentbench {line}")
    trust = terminalreporter.config.stash.get(TRUST_KEY, None)
    if trust is not None and summary.suites:
        terminalreporter.write_line(f"agentbench {trust_line(trust)}")
    model_run = finished.model_run
    if model_run is not None:
        from pytest_agentbench.report.model_run import model_run_lines

        if verbose:
            terminalreporter.write_sep("=", "agentbench: model")
        for line in model_run_lines(model_run):
            terminalreporter.write_line(line if verbose else f"agentbench {line.strip()}")
    comparison = finished.comparison
    if comparison is not None:
        if verbose:
            terminalreporter.write_sep("=", "agentbench: comparison with the baseline")
        for line in comparison_lines(comparison, verbose=verbose):
            terminalreporter.write_line(line if verbose else f"agentbench {line}")

"""pytest hooks of a run with benchmarks: a thin layer over the core modules.

Registered by :mod:`pytest_agentbench.plugin.activation` once a run turns out to have
benchmarks; the options, markers and fixtures are the facade's
(:mod:`pytest_agentbench.plugin.facade`), present in every run.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.plugin import options as plugin_options
from pytest_agentbench.plugin.activation import SESSION_KEY
from pytest_agentbench.plugin.baseline_options import BASELINE_KEY
from pytest_agentbench.plugin.census import WORKEROUTPUT_KEY as CENSUS_KEY
from pytest_agentbench.plugin.census import WorkerCensus, take_census
from pytest_agentbench.plugin.census import merge as merge_census
from pytest_agentbench.plugin.collect import (
    REFUSED_KEY,
    CaseItem,
    ControlItem,
    collect_file,
    refuse_late,
)
from pytest_agentbench.plugin.crash_witness import WITNESS_KEY, attach_worker
from pytest_agentbench.plugin.options import INPUT_LIMIT_KEYS
from pytest_agentbench.plugin.preflight import (
    CHECKED_KEY,
    check_run,
    suites_of_items,
    suites_of_nodeids,
)
from pytest_agentbench.plugin.relay import ReportRelay
from pytest_agentbench.plugin.rerun import RERUN_KEY
from pytest_agentbench.plugin.snapshots import SNAPSHOT_DIR_KEY
from pytest_agentbench.report.junit import (
    relabel_harness_errors,
)
from pytest_agentbench.report.preload import SuitePreload
from pytest_agentbench.report.recorder import REFUSAL, RunRecorder
from pytest_agentbench.report.trust import TRUST_KEY, run_trust
from pytest_agentbench.run import concurrency
from pytest_agentbench.run.adapters import AdapterFolders, describe_adapter, load_adapter
from pytest_agentbench.run.gc_freeze import freeze_alive
from pytest_agentbench.run.interrupt import SigtermHandler, end_on_sigterm, restore_sigterm
from pytest_agentbench.run.options import Options
from pytest_agentbench.run.session import (
    RUN_KEY,
    STATE_KEY,
    AgentbenchState,
    SuiteLoader,
    get_state,
)
from pytest_agentbench.sdk import leaked_threads, tracebacks
from pytest_agentbench.sdk.canonical import InputLimits, set_input_limits
from pytest_agentbench.sdk.errors import AgentbenchError, UsageError
from pytest_agentbench.sdk.files import check_output_file, check_output_folder
from pytest_agentbench.sdk.layout import SUITE_FILE
from pytest_agentbench.sdk.projections import restore_projections, select_projections
from pytest_agentbench.sdk.registry import WorldRegistry, load_entry_point_worlds
from pytest_agentbench.sdk.runner import release_alarm

if TYPE_CHECKING:
    from pytest_agentbench.agents.provenance import ModelRun
    from pytest_agentbench.plugin.finish import Finished

RECORDER_KEY = pytest.StashKey[RunRecorder]()
PREVIOUS_LIMITS_KEY = pytest.StashKey[InputLimits]()
PREVIOUS_PROJECTIONS_KEY = pytest.StashKey[tuple[str, ...]]()
FINISHED_KEY: pytest.StashKey[Finished] = pytest.StashKey()
EXIT_STATUS_KEY = pytest.StashKey["int | pytest.ExitCode"]()
"""The exit status the run's end decided (:func:`pytest_sessionfinish_keeps_the_exit_status`)."""
PREVIOUS_SIGTERM_KEY = pytest.StashKey[SigtermHandler]()


def _input_limits(config: pytest.Config) -> InputLimits:
    """The readers' bounds from the ini: each a whole number >= 1."""
    values: dict[str, int] = {}
    for field, (key, _default) in INPUT_LIMIT_KEYS.items():
        text = str(config.getini(key)).strip()
        if not text.isdigit() or int(text) < 1:
            raise UsageError(
                "invalid_input_limit", f"{text!r} is not a whole number >= 1", field=key
            )
        values[field] = int(text)
    return InputLimits(**values)


def _trust_named_folders(config: pytest.Config, loader: SuiteLoader) -> None:
    """Folders on the command line (``--agentbench-suite`` ones included) hold their
    suites' oracles: a published layout keeps its evaluator inside the folder named."""
    named = config.args_source is pytest.Config.ArgsSource.ARGS
    if not (named or config.getoption("agentbench_suite")):
        return  # testpaths or the working folder: nothing was named
    base = config.invocation_params.dir
    for arg in config.args:
        folder = base / arg.split("::", 1)[0]
        try:
            if folder.is_dir():
                loader.trust_named(folder)
        except OSError:
            continue


def _add_named_suites(config: pytest.Config, loader: SuiteLoader) -> None:
    """``--agentbench-suite``: a built-in suite id, or a suite or recognised layout folder."""
    names: list[str] = config.getoption("agentbench_suite")
    if not names:
        return
    known = loader.registry.suites()
    paths = []
    for name in names:
        if name in known:
            paths.append(str(known[name]))
            continue
        folder = Path(name)
        try:
            is_suite = folder.is_dir() and loader.is_suite_folder(folder.resolve())
        except OSError:
            is_suite = False
        if not is_suite:
            raise UsageError(
                "unknown_suite",
                f"{name!r} is neither a built-in suite "
                f"(known: {', '.join(sorted(known)) or 'none'}) nor a suite folder "
                "(one holding suite.yaml, or a layout a registered world recognises)",
                field="--agentbench-suite",
            )
        paths.append(str(folder))
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args[:] = []
    config.args.extend(path for path in paths if path not in config.args)


def answered_by_reference_agents(config: pytest.Config, options: Options) -> bool:
    """Whether the run's cases fall to the built-in reference agents: no adapter, no outputs.

    Predictions files and recorded outputs stand in for an adapter; a controls-only run
    runs the suites' control agents, which need none.
    """
    return not (
        options.adapter_spec
        or options.predictions
        or options.controls_only
        or config.getoption("agentbench_replay_outputs")
    )


def _refuse_a_missing_adapter(config: pytest.Config, options: Options) -> None:
    """``--agentbench-require-adapter``: a CI job that lost its adapter must not pass."""
    required = config.getoption("agentbench_require_adapter") or config.getini(
        "agentbench_require_adapter"
    )
    if required and answered_by_reference_agents(config, options):
        raise UsageError(
            "adapter_required",
            "the run names no adapter (--agentbench-adapter or ini agentbench_adapter) and "
            "would run the built-in reference agents",
            field="--agentbench-require-adapter"
            if config.getoption("agentbench_require_adapter")
            else "agentbench_require_adapter",
        )


def pytest_configure(config: pytest.Config) -> None:
    try:
        # First: the options below already read files (predictions, suites by name).
        config.stash[PREVIOUS_LIMITS_KEY] = set_input_limits(_input_limits(config))
        config.stash[PREVIOUS_PROJECTIONS_KEY] = select_projections(
            config.getoption("agentbench_projection")
        )
        load_entry_point_worlds(config.pluginmanager)
        registry = WorldRegistry.from_hook(config.pluginmanager)
        options = Options.from_config(config)
        _refuse_a_missing_adapter(config, options)
        loader = SuiteLoader(
            registry,
            config.rootpath,
            oracle_roots=config.getini("agentbench_oracle_roots"),
            on_load=functools.partial(freeze_alive, config),
        )
        _add_named_suites(config, loader)
        _trust_named_folders(config, loader)
        state = AgentbenchState(options=options, registry=registry, loader=loader)
        adapter_folders = AdapterFolders(config.invocation_params.dir, config.rootpath)
        config.stash[TRUST_KEY] = run_trust(config, options.isolate)
        if options.isolate:
            # Imported only when asked for: subprocess and multiprocessing cost start-up.
            from pytest_agentbench.isolation.setup import configured_adapter, isolated_adapters

            state.isolation = isolated_adapters(
                config,
                options.timeout,
                loader.oracle_roots,
                options.concurrency,
                registry=registry,
                outputs=(
                    options.report_path,
                    options.html_path,
                    options.ledger_dir,
                    options.receipts_dir,
                    options.artifacts_dir,
                ),
            )
            if options.adapter_spec:
                state.adapter = configured_adapter(
                    config,
                    state.isolation,
                    options.adapter_spec,
                    registry.adapter_protocols(),
                    adapter_folders,
                )
        elif options.adapter_spec:
            state.adapter = load_adapter(
                options.adapter_spec,
                registry.adapter_protocols(),
                adapter_folders,
                limit=options.adapter_load_timeout,
            )
        state.adapter_description = describe_adapter(options.adapter_spec, state.adapter)
        if state.isolation is not None:
            state.adapter_description += ", in an isolated process"
    except AgentbenchError as exc:
        raise pytest.UsageError(exc.render()) from None
    config.stash[STATE_KEY] = state
    config.stash[SNAPSHOT_DIR_KEY] = options.snapshot_dir
    tracebacks.FULL_TRACEBACKS = config.getoption("tbstyle", "auto") == "long"
    # A report copies canonical text; a run without one needs only the faster dump.
    canonical_results = options.report_path is not None or options.html_path is not None
    recorder = None
    if hasattr(config, "workerinput"):
        attach_worker(config)
    else:
        try:
            _check_outputs(config, options)
        except AgentbenchError as exc:
            raise pytest.UsageError(exc.render()) from None
        # Results are aggregated where reports arrive: the controller under xdist.
        recorder = config.stash[RECORDER_KEY] = RunRecorder(
            results_canonical=canonical_results, rootpath=config.rootpath
        )
        if options.report_path is not None:
            from pytest_agentbench.report.transcripts import TranscriptSink

            recorder.transcripts = TranscriptSink(options.report_path)
        if config.pluginmanager.hasplugin("xdist"):
            recorder.crash_witness = config.stash.get(WITNESS_KEY, None)
            config.pluginmanager.register(
                WorkerCensus(recorder.selected, recorder.local_root), "agentbench-worker-census"
            )
            if config.getoption("dist", "no") != "no":
                config.pluginmanager.register(
                    SuitePreload(recorder, state.loader), "agentbench-suite-preload"
                )
    config.pluginmanager.register(
        ReportRelay(
            recorder,
            junit_case_properties=options.junit_case_properties,
            max_output_bytes=options.max_output_bytes,
            canonical_results=canonical_results,
        ),
        "agentbench-relay",
    )


def _check_outputs(config: pytest.Config, options: Options) -> None:
    """Refuse, before any case runs, an output the run could not write (a report path
    that is a folder, a folder that cannot be created or written in)."""
    checks = options.output_checks()
    record = config.getoption("agentbench_record")
    if record is not None:
        checks.append((Path(record), "--agentbench-record", True))
    for path, field, is_folder in checks:
        (check_output_folder if is_folder else check_output_file)(path, field)


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    # junitxml's LogXML exists by now (it is made in pytest_configure).
    relay = config.pluginmanager.get_plugin("agentbench-relay")
    if isinstance(relay, ReportRelay):
        relay.junit_errors = relabel_harness_errors(config)
    rerun = config.stash.get(RERUN_KEY, None)
    # Replayed outputs call no adapter: there is nothing to run ahead.
    if get_state(config).options.concurrency > 1 and (rerun is None or rerun.replay is None):
        concurrency.start(session, get_state(config))
    options = get_state(config).options
    if not hasattr(config, "workerinput") and (
        options.report_path or options.html_path or options.log_path
    ):
        previous = end_on_sigterm()
        if previous is not None:
            config.stash[PREVIOUS_SIGTERM_KEY] = previous
    if RECORDER_KEY in config.stash:
        _open_run_log(config, options)
        _open_live_progress(config, options)
        recorder = config.stash[RECORDER_KEY]
        recorder.whole_results = _reads_whole_results(config, options, recorder)


def _reads_whole_results(config: pytest.Config, options: Options, recorder: RunRecorder) -> bool:
    """Whether anything of the run reads a graded result beyond the summary's figures.

    Every reader of the recorder's store but the summary: the report and the page, the
    run log and the progress line, the progress journal, receipts, the record folder,
    a baseline comparison (the summary's per-case entries) and a model's provenance
    (each case's model calls). A world's reducer is asked per suite by the relay.
    """
    return (
        recorder.results_canonical
        or recorder.transcripts is not None
        or recorder.log is not None
        or recorder.progress is not None
        or recorder.journal is not None
        or options.receipts_dir is not None
        or config.getoption("agentbench_record") is not None
        or BASELINE_KEY in config.stash
        or _model_run(config) is not None
    )


def _model_run(config: pytest.Config) -> ModelRun | None:
    """The run's model settings when it drives a chat model (one model, or a model
    matrix): the run log beside the report and the live progress line are a model run's."""
    run = config.stash.get(RUN_KEY, None)
    if run is None:  # no chat model configured (nor a matrix, which needs one)
        return None
    from pytest_agentbench.agents.provenance import model_runs

    return run if run.settings.model or model_runs() else None


def _open_run_log(config: pytest.Config, options: Options) -> None:
    """Where results arrive: the run log at ``--agentbench-log``, or a model run's beside
    its report, opened with its ``start`` event."""
    run = config.stash.get(RUN_KEY, None)
    path = options.log_path
    if path is None and options.report_path is not None and _model_run(config):
        from pytest_agentbench.report.run_log import default_log_path

        path = default_log_path(options.report_path)
    if path is None:
        return
    from pytest_agentbench.report.run_log import RunLog

    recorder = config.stash[RECORDER_KEY]
    recorder.log = RunLog(path)
    if run is None:  # no chat model configured: the log names no model run
        recorder.log.start(None, None)
        return
    from pytest_agentbench.agents.provenance import model_runs, run_provenance

    matrix = model_runs()
    provenance = (
        run_provenance(run.settings, run.pricing, []) if run.settings.model and not matrix else None
    )
    recorder.log.start(
        None if provenance is None else provenance.model_dump(mode="json"),
        {
            name: run_provenance(each.settings, each.pricing, []).model_dump(mode="json")
            for name, each in matrix.items()
        }
        or None,
    )


def _open_live_progress(config: pytest.Config, options: Options) -> None:
    """A model run's live progress line, where results arrive (the aggregate under xdist);
    none under ``-q`` or without pytest's terminal."""
    run = _model_run(config)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if run is None or reporter is None or config.get_verbosity() < 0:
        return
    from pytest_agentbench.report.live_progress import LiveProgress

    recorder = config.stash[RECORDER_KEY]
    tr: pytest.TerminalReporter = reporter

    def rewrite(line: str) -> None:
        tr.rewrite(line, erase=True)
        tr.flush()

    def total() -> int:
        # Under xdist the census arrives as workers finish: until then, what they collected.
        census = sum(len(nodeids) for nodeids in recorder.selected.values())
        return census or (0 if recorder.progress is None else recorder.progress.expected)

    def write_line(line: str) -> None:
        # A plain line starts a line of its own: xdist's dots stand on a line that
        # pytest's ensure_newline does not know of.
        if tr._tw.width_of_current_line:
            tr.currentfspath = -2
        tr.write_line(line)
        # Output sent to a file is block-buffered: a line held back tells nothing live.
        tr.flush()

    recorder.progress = LiveProgress(
        total,
        # -v writes a line per case: a line redrawn over it would erase one.
        redraw=_isatty(tr) and config.get_verbosity() == 0,
        every=options.progress_every,
        rewrite=rewrite,
        write_line=write_line,
        currency=None if run.pricing is None else run.pricing.currency,
    )
    # The dot-suppressing status hook runs three times a case: only a redrawn line needs it.
    shown = _RedrawnProgress if recorder.progress.redraw else _ShowProgress
    config.pluginmanager.register(shown(recorder), "agentbench-live-progress")


class _ShowProgress:
    """Writes the progress line once pytest wrote the case's letter (trylast): the recorder
    counted the case when its report arrived, before the letter."""

    def __init__(self, recorder: RunRecorder) -> None:
        assert recorder.progress is not None
        self.recorder = recorder
        self.progress = recorder.progress

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.progress.show()


def _isatty(tr: pytest.TerminalReporter) -> bool:
    # An attribute in older pytest, a callable bool in newer: either reads as a bool.
    isatty: object = tr.isatty
    return bool(isatty() if callable(isatty) else isatty)


class _RedrawnProgress(_ShowProgress):
    """A progress line redrawn in place: its case items write no dot."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(
        self, report: pytest.CollectReport | pytest.TestReport
    ) -> tuple[str, str, str] | None:
        """Under a redrawn progress line, a case item writes no dot: the line counts it, and a
        dot written after the line would be drawn over at the next case."""
        if getattr(report, "when", None) != "call" or report.outcome not in ("passed", "failed"):
            return None
        identity = self.recorder.identities.get(report.nodeid)
        if identity is None or identity.kind != "case":
            return None
        return report.outcome, "", ""


def pytest_unconfigure(config: pytest.Config) -> None:
    previous_sigterm = config.stash.get(PREVIOUS_SIGTERM_KEY, None)
    if previous_sigterm is not None:
        restore_sigterm(previous_sigterm)
    concurrency.stop(config)
    release_alarm()
    previous_projections = config.stash.get(PREVIOUS_PROJECTIONS_KEY, None)
    if previous_projections is not None:
        restore_projections(previous_projections)
    previous_limits = config.stash.get(PREVIOUS_LIMITS_KEY, None)
    if previous_limits is not None:
        set_input_limits(previous_limits)
    tracebacks.FULL_TRACEBACKS = False
    state = config.stash.get(STATE_KEY, None)
    if state is not None and state.isolation is not None:
        state.isolation.close()
    recorder = config.stash.get(RECORDER_KEY, None)
    if recorder is not None:
        recorder.graded.close()
    session = config.stash.get(SESSION_KEY, None)
    # Everything is written by now: a thread a hung adapter left behind must not
    # keep the process from ending.
    leaked_threads.exit_without_joining(0 if session is None else int(session.exitstatus))


def pytest_report_header(config: pytest.Config) -> str:
    state = get_state(config)
    kinds = ", ".join(state.registry.kinds()) or "none"
    broken = ", ".join(sorted(state.registry.broken))
    return f"agentbench: adapter {state.adapter_description}; world kinds: {kinds}" + (
        f"; broken: {broken}" if broken else ""
    )


def broken_world_lines(config: pytest.Config) -> list[str]:
    """One line per world plugin that did not load: only its suites are refused."""
    return [
        f"agentbench: world {name!r} is broken: {error} (only its suites are refused)"
        for name, error in sorted(get_state(config).registry.broken.items())
    ]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    return collect_file(file_path, parent)


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    refuse_late(session, items)
    if not get_state(config).options.controls_only:
        return
    keep = [item for item in items if isinstance(item, ControlItem)]
    drop = [item for item in items if not isinstance(item, ControlItem)]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    refusal = collector.config.stash.get(REFUSED_KEY, {}).get(collector.nodeid)
    if report.failed and refusal is not None:
        setattr(report, REFUSAL, refusal)
    return report


def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    census = take_census(session.items, get_state(config).loader, config)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[CENSUS_KEY] = census
    elif RECORDER_KEY in config.stash:
        merge_census(config.stash[RECORDER_KEY].selected, census)
    # A refused suite is reported as a collection error, yet the other suites still
    # run: pytest would otherwise interrupt the session (xdist already runs on).
    refused: dict[str, str] = session.config.stash.get(REFUSED_KEY, {})
    if refused and session.testsfailed == len(refused):
        session.config.option.continue_on_collection_errors = True
    if census:
        freeze_alive(config)
    if workeroutput is None:
        check_run(config, suites_of_items(session.items))
        _warm_for_cases(config, session)


def _warm_for_cases(config: pytest.Config, session: pytest.Session) -> None:
    """Tell an isolated pool warming at configure how many cases will call the adapter:
    it starts no more children than that (none for ``--collect-only``)."""
    isolation = get_state(config).isolation
    warm_for = getattr(isolation, "warm_for", None)  # a pool's; a lone host warms nothing
    if warm_for is not None:
        cases = sum(1 for item in session.items if isinstance(item, CaseItem))
        warm_for(0 if config.option.collectonly else cases)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: Sequence[str]) -> None:
    """On the xdist controller, before any case is sent: what the serial run checks above.

    ``node`` is xdist's ``WorkerController`` (untyped): its ``config`` is the controller's."""
    config: pytest.Config = node.config
    loader = get_state(config).loader
    check_run(config, suites_of_nodeids(loader, config.rootpath, ids))
    recorder = config.stash.get(RECORDER_KEY, None)
    if recorder is not None and recorder.progress is not None and not recorder.progress.expected:
        recorder.progress.expected = _case_item_count(loader, config.rootpath, ids)


def _case_item_count(loader: SuiteLoader, rootpath: Path, nodeids: Sequence[str]) -> int:
    """The case items among a worker's collected node ids, told by the file that holds
    them (the controller has no items): a suite's negative controls are its suite file's
    items, its cases the items of the files it names for cases, whatever a case's id.

    A recognised layout's marker file holds both: there the controls are told by the
    names collect.py gives them (``control-ID``, ``ungraded-AGENT``) until the census."""
    # Per folder: None outside a suite; else (the name of the suite's anchor file when it
    # lies in this folder, whether that anchor is a recognised layout's marker file).
    folders: dict[Path, tuple[str | None, bool] | None] = {}
    count = 0
    for nodeid in nodeids:
        file, _, name = nodeid.partition("::")
        path = rootpath / file
        if path.parent not in folders:
            root = loader.suite_root_of(path.parent)
            if root is None:
                folders[path.parent] = None
            else:
                anchor = loader.anchor(root)
                here = anchor if root == path.parent else None
                folders[path.parent] = (here, anchor != SUITE_FILE)
        found = folders[path.parent]
        if found is None:
            continue
        here, recognised = found
        if path.name != here or (recognised and not name.startswith(("control-", "ungraded-"))):
            count += 1
    return count


@contextmanager
def gc_paused() -> Iterator[None]:
    """Suspend automatic garbage collection, resuming it only if it was on."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if hasattr(config, "workerinput") or RECORDER_KEY not in config.stash:
        return
    relay = config.pluginmanager.get_plugin("agentbench-relay")
    if isinstance(relay, ReportRelay):
        # Before junitxml writes its file (its hook runs after this tryfirst one).
        relay.relabel_pending()
    progress = config.stash[RECORDER_KEY].progress
    if progress is not None:
        progress.finish()
    if exitstatus == pytest.ExitCode.USAGE_ERROR:
        return  # refused before any case ran (preflight): there is no run to report
    state = get_state(config)
    recorder = config.stash[RECORDER_KEY]
    options = state.options
    if not (
        recorder.identities
        or recorder.refusals
        or recorder.selected
        or options.gates
        or options.predictions
        or options.report_path
        or options.html_path
        or BASELINE_KEY in config.stash
        or (RERUN_KEY in config.stash and config.stash[RERUN_KEY].resume is not None)
    ):
        return
    # Imported only here: the report modules cost every other process (each xdist
    # worker) their import for nothing.
    from pytest_agentbench.plugin.finish import finish

    # Summarising builds a record per case, all acyclic: automatic collections
    # meanwhile would walk the whole heap of the session and free nothing.
    with gc_paused():
        config.stash[FINISHED_KEY] = finish(session, state, recorder)
    config.stash[EXIT_STATUS_KEY] = session.exitstatus


@pytest.hookimpl(wrapper=True, tryfirst=True, specname="pytest_sessionfinish")
def pytest_sessionfinish_keeps_the_exit_status(
    session: pytest.Session,
) -> Generator[None, None, None]:
    """Hold the session to the exit status the run's end decided, once every plugin is done.

    A plugin may fold the status pytest passed the hook back in (syrupy ORs it in):
    a resumed run that collected nothing (5) but whose taken cases failed (1) would
    end 5, or a resumed run whose taken cases all passed, 5 instead of 0.
    """
    try:
        yield
        decided = session.config.stash.get(EXIT_STATUS_KEY, None)
        claims_success = (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
        if decided is not None and session.exitstatus in claims_success:
            session.exitstatus = decided
    finally:
        # The run log ends with the status the run ends with, whatever failed at its end.
        recorder = session.config.stash.get(RECORDER_KEY, None)
        if recorder is not None and recorder.log is not None:
            status = session.exitstatus
            recorder.log.end(int(status), interrupted=status == pytest.ExitCode.INTERRUPTED)


def no_case_lines(config: pytest.Config) -> list[str]:
    """What to do when a run given an ``--agentbench-*`` option collected no benchmark case.

    An ini key alone stays quiet: a project's own configuration is not a request to benchmark.
    """
    recorder = config.stash.get(RECORDER_KEY, None)
    if recorder is None or recorder.identities or recorder.refusals or recorder.selected:
        return []
    if config.stash.get(CHECKED_KEY, False) and FINISHED_KEY not in config.stash:
        return []  # refused before any case ran: the usage error says why
    given = plugin_options.option_given(config)
    if given is None:
        return []
    return [
        f"agentbench: {given} is set but no benchmark case was collected: "
        "name a built-in suite with --agentbench-suite ID (`agentbench list` shows the ids) "
        "or give pytest a suite folder"
    ]


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    if hasattr(config, "workerinput"):
        return
    for line in [*broken_world_lines(config), *no_case_lines(config)]:
        terminalreporter.write_line(line, yellow=True)
    finished = config.stash.get(FINISHED_KEY, None)
    if finished is None:
        return
    from pytest_agentbench.plugin.finish import write_terminal_summary

    write_terminal_summary(
        terminalreporter,
        finished,
        get_state(config).adapter_description,
        verbose=config.get_verbosity() >= 0,
    )

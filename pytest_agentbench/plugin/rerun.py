"""Recording, re-scoring and resuming inside pytest (a plugin the main plugin loads).

``--agentbench-record DIR`` writes every case's recorded output to DIR (the run
report keeps them too). ``--agentbench-replay-outputs PATH`` grades the outputs
recorded in a run report or such a folder instead of calling an adapter.
``--agentbench-resume PATH`` runs only the cases an earlier run left without a
graded result, and takes the rest from it, so the metrics cover the whole suite;
PATH is a run report or the progress journal a killed run left, and anything in
it that does not belong to this run is refused by name first
(:mod:`pytest_agentbench.report.progress`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.plugin.options import max_report_bytes
from pytest_agentbench.report.progress import (
    ProgressJournal,
    ResumeSource,
    check_resume,
    progress_path,
    read_resume_source,
)
from pytest_agentbench.report.recorder import Identity, RunRecorder
from pytest_agentbench.report.recording import (
    RecordKey,
    load_records,
    oracle_changes,
    record,
    recorded_outcome,
    replay_refusal,
    resumable,
    suite_digest_pair,
    write_records,
)
from pytest_agentbench.run.session import AgentbenchState, LoadedSuite, SuiteLoader, get_state
from pytest_agentbench.scoring.trials import split_item_name
from pytest_agentbench.sdk.contracts import Case, CaseResult, Outcome
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import OutputLock
from pytest_agentbench.sdk.suite import Suite


# Compared by identity: one run's state, not a value.
@dataclass(eq=False)
class Rerun:
    record_dir: Path | None
    recording: bool
    replay: dict[RecordKey, CaseResult] | None
    replay_path: Path | None
    resume: ResumeSource | None
    resume_path: Path | None
    journal: ProgressJournal | None = None
    recorder: RunRecorder | None = None
    carried: list[tuple[str, CaseResult]] = field(default_factory=list)
    """The results :meth:`inject` took from the earlier run, by node id."""
    journal_stopped: bool = False
    """A line could not be written: the journal keeps what it had and takes no more."""
    lock: OutputLock | None = None
    """The report path's lock, held from the start of the run to its end."""
    unwritten: list[AgentbenchError] = field(default_factory=list)
    """The journal's or record files' refusals: the run reports them and fails."""
    _kept: dict[str, dict[tuple[str, int | None], CaseResult]] = field(default_factory=dict)
    _stored: int = 0
    """How many node ids the recorder's store held at the last :meth:`journal_case`."""

    # --- replay ---------------------------------------------------------------

    def replay_case(
        self, state: AgentbenchState, loaded: LoadedSuite, case: Case, view: Any, trial: int | None
    ) -> tuple[Outcome | None, CaseResult]:
        assert self.replay is not None
        recorded = self.replay.get((loaded.suite.id, case.case_id, trial))
        refusal = replay_refusal(recorded, case=case, view=view, suite=loaded.suite)
        if refusal is not None:
            return None, refusal
        assert recorded is not None
        assert recorded.recorded is not None
        outcome = recorded_outcome(recorded)
        graded = state.grade(loaded, case, outcome)
        return outcome, graded.model_copy(update={"recorded": recorded.recorded})

    def keep_output(
        self,
        result: CaseResult,
        outcome: Outcome | None,
        *,
        case: Case,
        view: Any,
        suite: Suite,
        adapter: str,
    ) -> CaseResult:
        if not self.recording or outcome is None or result.recorded is not None:
            return result
        return record(result, outcome, case=case, view=view, suite=suite, adapter=adapter)

    # --- resume ---------------------------------------------------------------

    def kept(self, suite: Suite) -> dict[tuple[str, int | None], CaseResult]:
        """The earlier run's graded results of ``suite`` that this run need not repeat.

        Checked against this run when the run started (:func:`check_resume`).
        """
        if self.resume is None:
            return {}
        if suite.id not in self._kept:
            self._kept[suite.id] = {
                (result.case_id, result.trial): result
                for _, result in self.resume.suite_entries().get(suite.id, [])
                if resumable(result)
            }
        return self._kept[suite.id]

    # --- the progress journal -------------------------------------------------

    def journal_case(self, nodeid: str) -> None:
        """Journal a case the first time the recorder stores its graded result.

        The recorder calls it (``RunRecorder.journal``) where it stores a report's
        result; later results for the node id (``--dist each``, reruns) are not
        journaled again.
        """
        journal, recorder = self.journal, self.recorder
        if journal is None or recorder is None:
            return
        graded = recorder.graded
        # Called right after the recorder stored ``nodeid``'s result (every store of a
        # case's result is followed by this call), in a store holding one result per
        # node id: the store grew iff that result is the node's first. A later result
        # for it replaces the first, and a control's node is not stored: neither grows
        # it; the results a resume carries over are put in once the last report is in
        # (inject). A set of every journaled node id said the same for ~50 bytes a case.
        stored = len(graded)
        if stored == self._stored:
            return
        self._stored = stored
        if self.journal_stopped:
            return
        try:
            journal.append(nodeid, graded.canonical_text(nodeid))
        except AgentbenchError as exc:
            # A full disk stops the journal, not the run: every case still runs and is
            # reported, and the run ends saying what it could not keep. The journal is
            # still this run's: removed once the report is written, like any other.
            self.unwritten.append(exc)
            self.journal_stopped = True

    def inject(
        self, recorder: RunRecorder, loader: SuiteLoader, state: AgentbenchState
    ) -> list[str]:
        """Put the kept results of the earlier run beside this run's; one note per suite."""
        if self.resume is None:
            return []
        notes = []
        roots = recorder.suite_roots()
        for suite_id, entries in self.resume.suite_entries().items():
            loaded = _locate(suite_id, [nodeid for nodeid, _ in entries], roots, loader)
            if loaded is None:
                continue
            kept = self.kept(loaded.suite)
            taken = 0
            for nodeid, result in entries:
                key = (result.case_id, result.trial)
                if key not in kept or nodeid in recorder.graded:
                    continue
                recorder.identities[nodeid] = Identity(
                    "case",
                    loaded.suite.id,
                    str(loaded.suite.root),
                    result.case_id,
                    result.labels,
                    result.trial,
                )
                recorder.graded[nodeid] = kept[key]
                self.carried.append((nodeid, kept[key]))
                taken += 1
            notes.append(
                f"[resumed] suite {suite_id!r}: {taken} graded cases taken from {self.resume.path}"
            )
        return notes

    def finish(self, recorder: RunRecorder, loader: SuiteLoader) -> list[str]:
        """Write the record folder; say where re-scored outputs met another oracle."""
        if self.record_dir is not None:
            self.unwritten += write_records(recorder.graded.results(), self.record_dir)[1]
        if self.replay is None:
            return []
        oracle_now: dict[str, str | None] = {}
        for suite_id, root in recorder.suite_roots().items():
            try:
                oracle_now[suite_id] = suite_digest_pair(loader.load(Path(root)).suite)[1]
            except AgentbenchError:
                continue
        return oracle_changes(self.replay.values(), oracle_now)


def _locate(
    suite_id: str, nodeids: Sequence[str], roots: Mapping[str, str], loader: SuiteLoader
) -> LoadedSuite | None:
    candidates = [Path(roots[suite_id])] if suite_id in roots else []
    for nodeid in nodeids[:1]:
        path_part = nodeid.partition("::")[0]
        found = loader.suite_root_of((loader.rootpath / path_part).parent)
        parts = path_part.split("/")
        if found is None and len(parts) > 1 and parts[0] == "suites":
            found = loader.registry.suites().get(parts[1])
        if found is not None:
            candidates.append(found)
    for root in candidates:
        try:
            loaded = loader.load(root)
        except AgentbenchError:
            continue
        if loaded.suite.id == suite_id:
            return loaded
    return None


RERUN_KEY = pytest.StashKey[Rerun]()


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    record_dir = config.getoption("agentbench_record")
    replay = config.getoption("agentbench_replay_outputs")
    resume = config.getoption("agentbench_resume")
    try:
        if replay is not None and resume is not None:
            raise AgentbenchError(
                "invalid_rerun",
                "--agentbench-replay-outputs and --agentbench-resume cannot be combined",
                field="--agentbench-resume",
            )
        replay_path = None if replay is None else Path(replay)
        resume_path = None if resume is None else Path(resume)
        config.stash[RERUN_KEY] = Rerun(
            record_dir=None if record_dir is None else Path(record_dir).resolve(),
            # The HTML page shows each case's recorded adapter output, as the report keeps it.
            recording=record_dir is not None
            or config.getoption("agentbench_report") is not None
            or config.getoption("agentbench_html") is not None,
            replay=(
                None
                if replay_path is None
                else load_records(replay_path, field="--agentbench-replay-outputs")
            ),
            replay_path=replay_path,
            resume=(
                None
                if resume_path is None
                else read_resume_source(resume_path, max_bytes=max_report_bytes(config))
            ),
            resume_path=resume_path,
        )
        rerun = config.stash[RERUN_KEY]
        if not hasattr(config, "workerinput"):
            # Where results arrive (the controller under xdist): check the resume, journal.
            _start_journal(config, rerun)
    except AgentbenchError as exc:
        raise pytest.UsageError(exc.render()) from None
    if rerun.journal is not None and rerun.recorder is not None:
        # The recorder journals each case as it stores its result: no hook per report,
        # and a run with no journal pays nothing for it.
        rerun.recorder.journal = rerun.journal_case


def _start_journal(config: pytest.Config, rerun: Rerun) -> None:
    from pytest_agentbench.plugin.hooks import RECORDER_KEY

    state = get_state(config)
    taken: list[tuple[str, CaseResult]] = []
    if rerun.resume is not None:
        loader = state.loader
        taken = check_resume(
            rerun.resume,
            state,
            lambda suite_id, nodeids: _locate(suite_id, nodeids, {}, loader),
        )
    report = state.options.report_path
    if report is None:
        return
    rerun.recorder = config.stash[RECORDER_KEY]
    # One run at a time writes a report path: a second would overwrite its journal.
    rerun.lock = OutputLock(report, "--agentbench-report")
    journal = progress_path(report)
    try:
        rerun.journal = ProgressJournal(
            journal,
            adapter_spec=state.options.adapter_spec,
            adapter_description=state.adapter_description,
            repeat=state.options.repeat,
            carried=taken,
            # Only a run that took over what the journal holds may replace it.
            replaces=rerun.resume is not None and rerun.resume.path.resolve() == journal,
        )
    except AgentbenchError:
        rerun.lock.release()
        rerun.lock = None
        raise
    if rerun.recorder.transcripts is not None:
        rerun.recorder.transcripts.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    rerun = config.stash.get(RERUN_KEY, None)
    if rerun is None:
        return
    if rerun.journal is not None:
        from pytest_agentbench.plugin.hooks import FINISHED_KEY

        finished = config.stash.get(FINISHED_KEY, None)
        # Once this run's report is written, the journal has nothing more to give.
        rerun.journal.close(remove=finished is not None and finished.report_written)
    if rerun.lock is not None:
        rerun.lock.release()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the cases whose graded result the resumed run already holds (every process)."""
    rerun = config.stash.get(RERUN_KEY, None)
    if rerun is None or rerun.resume is None:
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        loaded: LoadedSuite | None = getattr(item, "loaded", None)
        case: Case | None = getattr(item, "case", None)
        if loaded is None or case is None:
            keep.append(item)
            continue
        kept = rerun.kept(loaded.suite)
        _, trial = split_item_name(item.name)
        (drop if (case.case_id, trial) in kept else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep

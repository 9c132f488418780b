"""Recording, re-scoring and resuming inside pytest (a plugin the main plugin loads).

``--agentbench-record DIR`` writes every case's recorded output to DIR (the run
report keeps them too). ``--agentbench-replay-outputs PATH`` grades the outputs
recorded in a run report or such a folder instead of calling an adapter.
``--agentbench-resume PATH`` runs only the cases an earlier run left without a
graded result under the same adapter and the same suite and oracle digests, and
takes the rest from it, so the metrics cover the whole suite.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.report.baseline import read_run_report
from pytest_agentbench.report.json_report import RunReport
from pytest_agentbench.report.recorder import Identity, RunRecorder
from pytest_agentbench.run.recording import (
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
from pytest_agentbench.sdk.suite import Suite


@dataclass
class Rerun:
    record_dir: Path | None
    recording: bool
    replay: dict[RecordKey, CaseResult] | None
    replay_path: Path | None
    resume: RunReport | None
    resume_path: Path | None
    _kept: dict[str, dict[tuple[str, int | None], CaseResult]] = field(default_factory=dict)

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

    def kept(
        self, suite: Suite, adapter_spec: str | None, adapter: str
    ) -> dict[tuple[str, int | None], CaseResult]:
        """The earlier run's graded results of ``suite`` that this run need not repeat."""
        if self.resume is None:
            return {}
        if suite.id not in self._kept:
            self._kept[suite.id] = self._resumable(suite, adapter_spec, adapter)
        return self._kept[suite.id]

    def _resumable(
        self, suite: Suite, adapter_spec: str | None, adapter: str
    ) -> dict[tuple[str, int | None], CaseResult]:
        report = self.resume
        assert report is not None
        if (report.adapter.spec, report.adapter.description) != (adapter_spec, adapter):
            return {}
        earlier = next((s for s in report.suites if s.id == suite.id), None)
        if earlier is None:
            return {}
        public, oracle = suite_digest_pair(suite)
        if (earlier.digests.get("public"), earlier.digests.get("oracle")) != (public, oracle):
            return {}
        return {
            (entry.result.case_id, entry.result.trial): entry.result
            for entry in earlier.cases
            if resumable(entry.result)
        }

    def inject(
        self, recorder: RunRecorder, loader: SuiteLoader, state: AgentbenchState
    ) -> list[str]:
        """Put the kept results of the earlier run beside this run's; one note per suite."""
        if self.resume is None:
            return []
        notes = []
        for earlier in self.resume.suites:
            loaded = _locate(earlier.id, [e.nodeid for e in earlier.cases], recorder, loader)
            if loaded is None:
                continue
            kept = self.kept(loaded.suite, state.options.adapter_spec, state.adapter_description)
            taken = 0
            for entry in earlier.cases:
                key = (entry.result.case_id, entry.result.trial)
                if key not in kept or entry.nodeid in recorder.graded:
                    continue
                recorder.identities[entry.nodeid] = Identity(
                    "case",
                    loaded.suite.id,
                    str(loaded.suite.root),
                    entry.result.case_id,
                    entry.result.labels,
                    entry.result.trial,
                )
                recorder.graded[entry.nodeid] = kept[key]
                taken += 1
            notes.append(
                f"[resumed] suite {earlier.id!r}: {taken} graded cases taken from "
                f"{self.resume_path}"
                if kept
                else f"[resumed] suite {earlier.id!r}: nothing taken from {self.resume_path} "
                "(another adapter, or the suite or its oracle changed): every case ran"
            )
        return notes

    def finish(self, recorder: RunRecorder, loader: SuiteLoader) -> list[str]:
        """Write the record folder; say where re-scored outputs met another oracle."""
        if self.record_dir is not None:
            write_records(recorder.graded.results(), self.record_dir)
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
    suite_id: str, nodeids: list[str], recorder: RunRecorder, loader: SuiteLoader
) -> LoadedSuite | None:
    roots = recorder.suite_roots()
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
                else read_run_report(resume_path, field="--agentbench-resume")
            ),
            resume_path=resume_path,
        )
    except AgentbenchError as exc:
        raise pytest.UsageError(exc.render()) from None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the cases whose graded result the resumed run already holds (every process)."""
    rerun = config.stash.get(RERUN_KEY, None)
    if rerun is None or rerun.resume is None:
        return
    state = get_state(config)
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        loaded: LoadedSuite | None = getattr(item, "loaded", None)
        case: Case | None = getattr(item, "case", None)
        if loaded is None or case is None:
            keep.append(item)
            continue
        kept = rerun.kept(loaded.suite, state.options.adapter_spec, state.adapter_description)
        _, trial = split_item_name(item.name)
        (drop if (case.case_id, trial) in kept else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep

"""The run summary every output renders: per suite counts, metrics, gates, controls."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from pathlib import Path

from pydantic import Field

from pytest_agentbench.report.recorder import Identity, RunRecorder
from pytest_agentbench.run.session import LoadedSuite, SuiteLoader, grade_outcome
from pytest_agentbench.scoring.gates import Gate, GateVerdict, judge, parse_gate
from pytest_agentbench.scoring.matrix import SuiteMatrix, split_model, summarise_suite
from pytest_agentbench.scoring.trials import (
    TrialSummary,
    clustered_intervals,
    split_item_name,
    summarise_trials,
)
from pytest_agentbench.sdk.contracts import (
    BUILT_ON_FIRST_USE,
    CaseOutcome,
    CaseResult,
    FailureClass,
    MetricValue,
    Outcome,
    Record,
)
from pytest_agentbench.sdk.controls import ControlVerdict
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.layout import SUITE_FILE
from pytest_agentbench.sdk.metrics import MetricDefinition, aggregate, definition, select
from pytest_agentbench.sdk.suite import suite_digests


class CaseEntry(Record):
    model_config = BUILT_ON_FIRST_USE

    nodeid: str
    result: CaseResult
    duration_s: float | None
    """pytest's duration of the item's call phase; ``None`` when it never ran (a crash)."""


class ControlEntry(Record):
    nodeid: str
    control_id: str
    passed: bool
    summary: str
    verdict: ControlVerdict | None


class Coverage(Record):
    """How much of the suite this run ran: a gate judges only a complete run."""

    # Under ``--agentbench-repeat K`` every count is of case items, one per case and
    # trial (``total`` = cases x K): a missing trial leaves the run incomplete even
    # when another trial of the same case ran.
    total: int
    """Case items the suite has: its cases, times the trials per case."""
    selected: int
    """Case items the run selected (after ``-k``, ``-m``, ``--deselect``, ``--lf`` ...)."""
    run: int
    """Selected case items that reported a result (passed, failed, error or skipped)."""
    missing: int
    """Selected case items that never reported one (``-x``, an interrupt, crashed workers)."""
    complete: bool

    def describe(self) -> str:
        parts = [f"{self.run} of {self.total} cases run"]
        if self.total - self.selected:
            parts.append(f"{self.total - self.selected} not selected")
        if self.missing:
            parts.append(f"{self.missing} selected but never run")
        return ", ".join(parts)


class SuiteSummary(Record):
    id: str
    version: str
    world: str
    title: str
    digests: dict[str, str | None]
    counts: dict[str, int]
    failure_classes: dict[str, int]
    metrics: tuple[MetricValue, ...]
    gates: tuple[GateVerdict, ...]
    controls: tuple[ControlEntry, ...]
    cases: tuple[CaseEntry, ...]
    answered_by: tuple[str, ...] = ()
    """Classes of the adapters that ran the cases: shows a conftest fixture override."""
    coverage: Coverage | None = None
    """Always set by this version; absent from reports of schema version 1."""
    metric_definitions: tuple[MetricDefinition, ...] = ()
    """How each metric is computed: a baseline comparison pairs only like with like."""
    trials: TrialSummary | None = None
    """pass@1, pass^k, pass@k and consistency under repeats or clusters; else ``None``."""
    models: SuiteMatrix | None = Field(default=None, exclude_if=lambda value: value is None)
    """Under a model matrix: each model's counts and metrics, and the models' paired
    comparisons; ``None`` (and left out of the report) otherwise."""

    @property
    def ok(self) -> bool:
        return all(g.passed for g in self.gates) and all(c.passed for c in self.controls)


class RunSummary(Record):
    suites: tuple[SuiteSummary, ...]
    gates: tuple[GateVerdict, ...]
    """Every gate verdict, suite-declared and command-line, in declaration order."""
    problems: tuple[str, ...] = ()

    @property
    def gates_passed(self) -> bool:
        return all(verdict.passed for verdict in self.gates)


def _counts(results: Sequence[CaseResult]) -> tuple[dict[str, int], dict[str, int]]:
    # Counted by member, without a Python step per case (members hash as their values).
    outcomes = Counter(map(attrgetter("outcome"), results))
    classes = Counter(
        result.failure_class.value for result in results if result.failure_class is not None
    )
    counts = {outcome.value: outcomes.get(outcome, 0) for outcome in CaseOutcome}
    failure_classes = {fc.value: classes.get(fc.value, 0) for fc in FailureClass}
    return counts, failure_classes


def _locate_unidentified(recorder: RunRecorder, loader: SuiteLoader) -> None:
    """Attribute crashed nodes that never reported their identity to their suite."""
    for nodeid in recorder.crashed:
        if nodeid in recorder.identities:
            continue
        path_part, _, name = nodeid.partition("::")
        root = loader.suite_root_of((loader.rootpath / path_part).parent)
        parts = path_part.split("/")
        if root is None and len(parts) > 1 and parts[0] == "suites":
            root = loader.registry.suites().get(parts[1])
        if root is None:
            continue
        try:
            loaded = loader.load(root)
        except AgentbenchError:
            continue
        is_control = path_part.endswith(f"/{SUITE_FILE}")
        name, model = (name, None) if is_control else split_model(name)
        case_id, trial = (name, None) if is_control else split_item_name(name)
        identity = Identity(
            # Control items live in suite.yaml; case items in the files holding cases.
            kind="control" if is_control else "case",
            suite_id=loaded.suite.id,
            suite_root=str(loaded.suite.root),
            item_id=case_id,
            trial=trial,
            model=model,
        )
        recorder.identities[nodeid] = identity
        recorder.store_crash(identity, nodeid)


def _regrade_adapter_crashes(
    recorder: RunRecorder, loaded: LoadedSuite, suite_cases: list[tuple[str, CaseResult]]
) -> list[tuple[str, CaseResult]]:
    """Grade cases whose worker died inside the adapter call, with every check missing.

    The regraded result replaces the stored one, so the report written from the
    store says what the summary counted.
    """
    if not recorder.crashed_in_adapter.intersection(nodeid for nodeid, _ in suite_cases):
        return suite_cases
    cases = {case.case_id: case for case in loaded.world.cases(loaded.suite)}
    regraded: list[tuple[str, CaseResult]] = []
    for nodeid, result in suite_cases:
        case = cases.get(result.case_id)
        if nodeid in recorder.crashed_in_adapter and case is not None:
            outcome = Outcome(
                failure_class=FailureClass.AGENT_ERROR, failure_reason=result.failure_reason
            )
            regrade = grade_outcome(loaded, case, outcome)
            if result.model is not None:
                regrade = regrade.model_copy(update={"model": result.model})
            recorder.graded[nodeid] = regrade
            regraded.append((nodeid, recorder.graded[nodeid]))
        else:
            regraded.append((nodeid, result))
    return regraded


def _coverage(
    recorder: RunRecorder,
    loaded: LoadedSuite,
    suite_cases: Sequence[tuple[str, CaseResult]],
    trials: int,
) -> Coverage:
    total = len(loaded.world.cases(loaded.suite)) * trials
    ran = {nodeid for nodeid, _ in suite_cases}
    # A resumed run deselects the items whose results it takes from the earlier
    # report: they count as selected, since they are part of this run's result.
    selected = recorder.selected.get(str(loaded.suite.root), set()) | ran
    missing = len(selected - ran)
    return Coverage(
        total=total,
        selected=len(selected),
        run=len(ran),
        missing=missing,
        complete=len(selected) >= total and not missing,
    )


def _incomplete(verdict: GateVerdict, coverage: Coverage) -> GateVerdict:
    if not verdict.passed and verdict.value is None:
        return verdict
    return verdict.model_copy(
        update={
            "passed": False,
            "reason": f"incomplete: {coverage.describe()}; on the cases that ran: "
            f"{verdict.reason} (--agentbench-allow-partial judges those)",
        }
    )


def summarise(
    recorder: RunRecorder,
    loader: SuiteLoader,
    cli_gates: Sequence[str],
    *,
    with_cases: bool = True,
    allow_partial: bool = False,
    trials: int = 1,
    models: Mapping[str, str | None] | None = None,
) -> RunSummary:
    """Every suite's counts, metrics, gates and controls; per-case entries only ``with_cases``.

    Results are read from the recorder's store one suite at a time: memory holds
    one suite's parsed results while its figures are computed, never the run's.
    ``models``: a model matrix's models in order, each with its settings digest.
    """
    _locate_unidentified(recorder, loader)
    problems: list[str] = [recorder.refusals[nodeid] for nodeid in sorted(recorder.refusals)]
    parsed_cli = [parse_gate(text, suite=None, source="--agentbench-gate") for text in cli_gates]
    stored = recorder.graded.by_suite()
    suites: list[SuiteSummary] = []
    for suite_id, root in sorted(_suite_roots(recorder, loader).items()):
        try:
            loaded = loader.load(Path(root))
        except AgentbenchError as exc:
            problems.append(exc.render())
            continue
        suites.append(
            _suite_summary(
                recorder,
                loaded,
                suite_id,
                stored.get(suite_id, ()),
                cli_gates=[gate for gate in parsed_cli if gate.suite == suite_id],
                problems=problems,
                with_cases=with_cases,
                allow_partial=allow_partial,
                trials=trials,
                models=models,
            )
        )
    ran = {summary.id for summary in suites}
    all_gates = [verdict for summary in suites for verdict in summary.gates]
    all_gates.extend(judge(gate, None) for gate in parsed_cli if gate.suite not in ran)
    return RunSummary(suites=tuple(suites), gates=tuple(all_gates), problems=tuple(problems))


def _suite_roots(recorder: RunRecorder, loader: SuiteLoader) -> dict[str, str]:
    """Suite id to root of every suite the run reported on or selected cases of."""
    roots = recorder.suite_roots()
    for root in sorted(set(recorder.selected) - set(roots.values())):
        # A suite that was collected but of which nothing ran (-k nomatch, -x).
        try:
            roots.setdefault(loader.load(Path(root)).suite.id, root)
        except AgentbenchError:
            continue
    return roots


def _suite_cases(
    recorder: RunRecorder, loaded: LoadedSuite, nodeids: Iterable[str], *, whole: bool
) -> list[tuple[str, CaseResult]]:
    """The suite's (nodeid, result) pairs, whole or only what its figures need."""
    read = recorder.graded.__getitem__ if whole else recorder.graded.figures
    suite_cases = [(nodeid, read(nodeid)) for nodeid in nodeids]
    return _regrade_adapter_crashes(recorder, loaded, suite_cases)


def _gate_verdicts(
    loaded: LoadedSuite,
    results: Sequence[CaseResult],
    metrics: Sequence[MetricValue],
    cli_gates: Sequence[Gate],
    coverage: Coverage,
    *,
    allow_partial: bool,
) -> list[GateVerdict]:
    """The suite's declared gates, then the command line's, judged on its metrics."""
    suite = loaded.suite
    by_name = {metric.name: metric for metric in metrics}
    # Suite-declared gates judge case metrics, so a controls-only run skips them;
    # a gate asked for on the command line is always judged.
    declared = (
        [
            parse_gate(text, suite=suite.id, source=f"{suite.display_root}/suite.yaml")
            for text in suite.config.gates
        ]
        if results
        else []
    )
    verdicts = [judge(gate, by_name if results else None) for gate in [*declared, *cli_gates]]
    if not (coverage.complete or allow_partial):
        verdicts = [_incomplete(verdict, coverage) for verdict in verdicts]
    return verdicts


def _control_entries(recorder: RunRecorder, suite_id: str) -> tuple[ControlEntry, ...]:
    return tuple(
        ControlEntry(
            nodeid=entry.nodeid,
            control_id=entry.nodeid.rpartition("::")[2],
            passed=entry.verdict is not None and entry.verdict.passed,
            summary=entry.verdict.summary() if entry.verdict else f"error: {entry.reason}",
            verdict=entry.verdict,
        )
        for entry in sorted(recorder.controls.values(), key=lambda c: c.nodeid)
        if entry.suite_id == suite_id
    )


def _suite_summary(
    recorder: RunRecorder,
    loaded: LoadedSuite,
    suite_id: str,
    nodeids: Iterable[str],
    *,
    cli_gates: Sequence[Gate],
    problems: list[str],
    with_cases: bool,
    allow_partial: bool,
    trials: int,
    models: Mapping[str, str | None] | None = None,
) -> SuiteSummary:
    """One suite's figures; a folder whose digest cannot be read adds to ``problems``."""
    suite, world = loaded.suite, loaded.world
    specs = world.metrics(suite)
    # A world's reducer and a baseline comparison may read any part of a result.
    whole = with_cases or any(spec.reducer is not None for spec in specs)
    suite_cases = _suite_cases(recorder, loaded, nodeids, whole=whole)
    results = [result for _, result in suite_cases]
    counts, failure_classes = _counts(results)
    metrics = select(
        clustered_intervals(suite.id, specs, aggregate(specs, results), results),
        suite.config.metrics,
    )
    # Under a model matrix every case is an item per model and trial.
    coverage = _coverage(recorder, loaded, suite_cases, trials * max(len(models or ()), 1))
    verdicts = _gate_verdicts(
        loaded, results, metrics, cli_gates, coverage, allow_partial=allow_partial
    )
    return SuiteSummary(
        id=suite.id,
        version=suite.config.version,
        world=world.kind,
        title=suite.config.title,
        digests=suite_digests(suite, problems),
        counts=counts,
        failure_classes=failure_classes,
        metrics=tuple(metrics),
        gates=tuple(verdicts),
        controls=_control_entries(recorder, suite_id),
        cases=tuple(
            CaseEntry(nodeid=nodeid, result=result, duration_s=recorder.durations.get(nodeid))
            for nodeid, result in (suite_cases if with_cases else ())
        ),
        answered_by=tuple(sorted(recorder.answered_by.get(suite_id, ()))),
        coverage=coverage,
        metric_definitions=tuple(definition(spec) for spec in specs),
        trials=summarise_trials(suite.id, results),
        models=summarise_suite(
            suite.id, list(models), specs, suite.config.metrics, results, digests=models
        )
        if models
        else None,
    )

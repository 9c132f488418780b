"""``agentbench rescore`` of our own runs: grade recorded outputs again, without the agent.

PATH is a pytest-agentbench run report (recognised by its ``schema_version``) or
an ``--agentbench-record`` folder. Any other file is a world's original-format
report: the command hands it to the world of ``--suite`` (the ``RescoresReports``
capability in ``cli.py``), not to this module.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import ValidationError

from pytest_agentbench.report.json_report import RunReport
from pytest_agentbench.run.recording import (
    load_records,
    recorded_outcome,
    replay_refusal,
    suite_digest_pair,
)
from pytest_agentbench.run.session import AgentbenchState, LoadedSuite
from pytest_agentbench.scoring.metrics import aggregate, select
from pytest_agentbench.sdk.canonical import read_json
from pytest_agentbench.sdk.contracts import CaseResult, MetricValue, Record
from pytest_agentbench.sdk.errors import AgentbenchError


class MetricRescore(Record):
    name: str
    recorded: float | None
    """The value the run report holds; ``None`` when unknown (a record folder) or null."""
    rescored: float | None
    same: bool | None
    """``None`` when there is nothing recorded to compare with."""


class SuiteRescore(Record):
    id: str
    cases: int
    refused: tuple[str, ...]
    """One line per case that could not be re-scored (missing output, changed case)."""
    oracle_changed: str | None
    """Set when the outputs were recorded under another oracle than the one used now."""
    metrics: tuple[MetricRescore, ...]


RUN_REPORT_SCHEMA = "agentbench-run-report/"


def is_own_record(path: Path) -> bool:
    """Whether ``path`` is our run report or record folder (else a world's own report)."""
    if path.is_dir():
        return True
    if not path.is_file():
        return False
    try:
        document = read_json(path)
    except AgentbenchError:
        return False
    version = document.get("schema_version") if isinstance(document, dict) else None
    return isinstance(version, str) and version.startswith(RUN_REPORT_SCHEMA)


def _recorded_metrics(path: Path) -> dict[str, dict[str, float | None]]:
    if path.is_dir():
        return {}
    try:
        report = RunReport.model_validate(read_json(path))
    except ValidationError:
        return {}
    return {s.id: {m.name: m.value for m in s.metrics} for s in report.suites}


def rescore(
    path: Path, state: AgentbenchState, locate: Callable[[str], LoadedSuite]
) -> list[SuiteRescore]:
    """Grade every recorded output of ``path`` against today's suite and oracle."""
    records = load_records(path, field="PATH")
    recorded_metrics = _recorded_metrics(path)
    by_suite: dict[str, list[CaseResult]] = defaultdict(list)
    for (suite_id, _, _), result in sorted(records.items(), key=lambda item: str(item[0])):
        by_suite[suite_id].append(result)
    out = []
    for suite_id, recorded in sorted(by_suite.items()):
        loaded = locate(suite_id)
        world, suite = loaded.world, loaded.suite
        cases = {case.case_id: case for case in world.cases(suite)}
        refused: list[str] = []
        results: list[CaseResult] = []
        for entry in recorded:
            case = cases.get(entry.case_id)
            if case is None:
                refused.append(f"{entry.case_id}: [replay_unknown_case] not in the suite any more")
                continue
            view = world.public_view(suite, case)
            refusal = replay_refusal(entry, case=case, view=view, suite=suite)
            if refusal is not None:
                refused.append(f"{entry.case_id}: {refusal.failure_reason}")
                continue
            results.append(state.grade(loaded, case, recorded_outcome(entry)))
        oracle_now = suite_digest_pair(suite)[1]
        oracle_then = {e.recorded.oracle_digest for e in recorded if e.recorded is not None}
        changed = (
            None
            if oracle_then == {oracle_now}
            else f"[oracle_changed] recorded under oracle digest "
            f"{', '.join(sorted(str(d) for d in oracle_then))}, re-scored under {oracle_now}"
        )
        metrics = select(aggregate(world.metrics(suite), results), suite.config.metrics)
        out.append(
            SuiteRescore(
                id=suite_id,
                cases=len(results),
                refused=tuple(refused),
                oracle_changed=changed,
                metrics=tuple(_compare(m, recorded_metrics.get(suite_id)) for m in metrics),
            )
        )
    return out


def _compare(metric: MetricValue, recorded: Mapping[str, float | None] | None) -> MetricRescore:
    if recorded is None or metric.name not in recorded:
        return MetricRescore(name=metric.name, recorded=None, rescored=metric.value, same=None)
    then = recorded[metric.name]
    return MetricRescore(
        name=metric.name, recorded=then, rescored=metric.value, same=then == metric.value
    )


def rescore_lines(suites: list[SuiteRescore]) -> list[str]:
    lines = []
    for suite in suites:
        lines.append(f"{suite.id}: {suite.cases} recorded outputs re-scored")
        if suite.oracle_changed:
            lines.append(f"  {suite.oracle_changed}")
        lines.extend(f"  refused {line}" for line in suite.refused)
        width = max((len(m.name) for m in suite.metrics), default=0)
        for metric in suite.metrics:
            now = "null" if metric.rescored is None else f"{metric.rescored:.4f}"
            if metric.same is None:
                lines.append(f"  {metric.name:<{width}}  {now:>6}")
                continue
            then = "null" if metric.recorded is None else f"{metric.recorded:.4f}"
            verdict = "same" if metric.same else "CHANGED"
            lines.append(f"  {metric.name:<{width}}  {then:>6} -> {now:>6}  {verdict}")
    return lines


def unresolvable(suite_id: str) -> AgentbenchError:
    return AgentbenchError(
        "unknown_suite",
        f"recorded outputs of suite {suite_id!r}: no built-in suite, no suites/{suite_id} here; "
        f"name its folder with --suite {suite_id}=FOLDER",
    )

"""``agentbench rescore`` of our own runs: grade recorded outputs again, without the agent.

PATH is a pytest-agentbench run report (recognised by its ``schema_version``) or
an ``--agentbench-record`` folder. Any other file is a world's original-format
report: the command hands it to the world of ``--suite`` (its ``RescoresReports``
capability) to re-derive the receipts.

It is a CI gate: every difference between what PATH says and what re-scoring
finds is listed by code, and any that ``--allow`` does not name fails the command.
Metrics are compared, and so are each case's outcome and the set of cases: an
outcome edited in the report, or a case deleted from it, is a difference too.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from pytest_agentbench.cli.common import JSON_HELP, add_oracle_root, command_state, load
from pytest_agentbench.cli.report_limit import MAX_REPORT_BYTES, add_max_report_bytes
from pytest_agentbench.report.recording import (
    load_results,
    recorded_outcome,
    replay_refusal,
    stream_results,
    suite_digest_pair,
)
from pytest_agentbench.report.stream import (
    HeadField,
    iter_report,
    refuse_oversized,
)
from pytest_agentbench.run.session import AgentbenchState, LoadedSuite
from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.capabilities import RescoresReports
from pytest_agentbench.sdk.contracts import CaseResult, MetricValue, Record
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.metrics import (
    GRADED,
    add_measurements,
    aggregate,
    aggregate_totals,
    reduced,
    select,
)
from pytest_agentbench.sdk.registry import WorldRegistry

DIFFERENCE_CODES = (
    "metric_changed",
    "outcome_changed",
    "case_missing",
    "case_unrecorded",
    "coverage_changed",
    "oracle_changed",
    "replay_unknown_case",
    "replay_case_changed",
)
"""Every kind of difference ``rescore`` reports; each may be named by ``--allow``."""


class MetricRescore(Record):
    name: str
    recorded: float | None
    """The value the run report holds; ``None`` when unknown (a record folder) or null."""
    rescored: float | None
    same: bool | None
    """``None`` when there is nothing recorded to compare with."""


class RescoreDifference(Record):
    code: str
    """One of :data:`DIFFERENCE_CODES`."""
    subject: str
    """The metric, the case (``case`` or ``case[trial-N]``) or the suite it concerns."""
    detail: str
    allowed: bool
    """Named by ``--allow`` (by its code, or a metric by its name): it does not fail."""


class SuiteRescore(Record):
    id: str
    cases: int
    refused: tuple[str, ...]
    """One line per case that could not be re-scored (missing output, changed case)."""
    oracle_changed: str | None
    """Set when the outputs were recorded under another oracle than the one used now."""
    metrics: tuple[MetricRescore, ...]
    differences: tuple[RescoreDifference, ...] = ()


RUN_REPORT_SCHEMA = "agentbench-run-report/"


def is_own_record(path: Path, max_bytes: int | None = None) -> bool:
    """Whether ``path`` is our run report or record folder (else a world's own report).

    A file over ``max_bytes`` is refused (``report_too_large``), whatever it is. Of a
    file, only the head of the stream is read, up to its ``schema_version``.
    """
    if path.is_dir():
        return True
    if not path.is_file():
        return False
    refuse_oversized(path, max_bytes, MAX_REPORT_BYTES, str(path))
    try:
        for event in iter_report(path):
            if isinstance(event, HeadField) and event.key == "schema_version":
                version = event.value
                return isinstance(version, str) and version.startswith(RUN_REPORT_SCHEMA)
    except AgentbenchError as exc:
        if exc.code in ("input_too_large", "input_too_deep"):
            # Not read, so not known to be a world's own report: saying it was one would
            # send the user after the wrong problem.
            raise
        # Not our JSON, nor any JSON: a world's own report says what it is.
        return False
    return False


_UNSTATED = object()
"""A record folder states no suite digest (a report always does)."""


def _name(result: CaseResult) -> str:
    return result.case_id if result.trial is None else f"{result.case_id}[trial-{result.trial}]"


class _Findings:
    """The differences of one suite, each marked allowed or not as it is found."""

    def __init__(self, allow: Collection[str]) -> None:
        self.allow = allow
        self.found: list[RescoreDifference] = []

    def add(self, code: str, subject: str, detail: str) -> None:
        allowed = code in self.allow or (code == "metric_changed" and subject in self.allow)
        self.found.append(
            RescoreDifference(code=code, subject=subject, detail=detail, allowed=allowed)
        )


def rescore(
    path: Path,
    state: AgentbenchState,
    locate: Callable[[str], LoadedSuite],
    *,
    allow: Collection[str] = (),
) -> list[SuiteRescore]:
    """Grade every recorded output of ``path`` against today's suite and oracle.

    A run report is read twice as a stream, never whole: once for each case's suite,
    id and trial (and the report's own metrics, coverage and digests), once to grade
    each recorded output as it is read. For the metrics, only the running sums of the
    graded measurements stay; the graded results themselves only for a suite with a
    world reducer, which may read any part of them.
    """
    if not path.is_file():
        results = load_results(path, field="PATH")
        report = None
        keys = [(r.suite_id, r.case_id, r.trial or 0, r.recorded is not None) for r in results]
    else:
        keys = []
        report = stream_results(
            path,
            lambda r: keys.append((r.suite_id, r.case_id, r.trial or 0, r.recorded is not None)),
        )
    if not any(key[3] for key in keys):
        raise AgentbenchError(
            "invalid_recording",
            "holds no recorded outputs (--agentbench-report and --agentbench-record keep them)",
            file=str(path),
            field="PATH",
        )
    recorded_metrics = (
        {}
        if report is None
        else {s.id: {m.name: m.value for m in s.metrics} for s in report.suites}
    )
    coverage = (
        {}
        if report is None
        else {s.id: s.coverage.run for s in report.suites if s.coverage is not None}
    )
    stated_oracle = {} if report is None else {s.id: s.digests.get("oracle") for s in report.suites}
    # Each result's place among them all sorted by suite, case and trial (ties in file
    # order): the order the differences are listed and the metrics aggregated in.
    order = sorted(range(len(keys)), key=lambda n: keys[n][:3])
    place = [0] * len(keys)
    for position, ordinal in enumerate(order):
        place[ordinal] = position
    suite_ids = sorted({key[0] for key in keys if key[3]})
    rescorers = {
        suite_id: _SuiteRescorer(
            locate(suite_id),
            state=state,
            findings=_Findings(allow),
            recorded_metrics=recorded_metrics.get(suite_id),
            coverage_run=coverage.get(suite_id),
            stated_oracle=stated_oracle.get(suite_id, _UNSTATED),
        )
        for suite_id in suite_ids
    }
    ordinal = 0

    def take(result: CaseResult) -> None:
        nonlocal ordinal
        rescorer = rescorers.get(result.suite_id)
        if rescorer is not None:
            rescorer.take(place[ordinal], result)
        ordinal += 1

    if report is None:
        for result in results:
            take(result)
    else:
        stream_results(path, take)
    if ordinal != len(keys):
        raise AgentbenchError(
            "report_changed",
            f"{ordinal} case entries, {len(keys)} a moment before: the file changed while "
            "it was re-scored",
            file=str(path),
        )
    return [rescorers[suite_id].finish() for suite_id in suite_ids]


class _SuiteRescorer:
    """One suite re-scored a recorded result at a time, in any order: each result comes
    with its place, and what it finds is put in that order when the suite is done."""

    def __init__(
        self,
        loaded: LoadedSuite,
        *,
        state: AgentbenchState,
        findings: _Findings,
        recorded_metrics: Mapping[str, float | None] | None,
        coverage_run: int | None,
        stated_oracle: object = _UNSTATED,
    ) -> None:
        self.loaded = loaded
        self.state = state
        self.findings = findings
        self.recorded_metrics = recorded_metrics
        self.coverage_run = coverage_run
        self.stated_oracle = stated_oracle
        self.cases = {case.case_id: case for case in loaded.world.cases(loaded.suite)}
        self.refused: list[tuple[int, str]] = []
        self.found: list[tuple[int, str, str, str]] = []
        self.specs = loaded.world.metrics(loaded.suite)
        # A graded result holds its receipt and recorded output: kept for every case,
        # they were most of a 76 MB report's re-scoring peak. Rates need only sums.
        self.kept: list[tuple[int, CaseResult]] | None = [] if reduced(self.specs) else None
        self.totals: dict[str, int] = {}
        self.rescored = 0
        self.seen: set[str] = set()
        self.entries = 0
        self.oracle_then: set[str | None] = set()

    def take(self, position: int, entry: CaseResult) -> None:
        world, suite = self.loaded.world, self.loaded.suite
        self.entries += 1
        self.seen.add(entry.case_id)
        if entry.recorded is not None:
            self.oracle_then.add(entry.recorded.oracle_digest)
        case = self.cases.get(entry.case_id)
        if entry.recorded is None:
            if entry.outcome in GRADED:
                self.found.append(
                    (
                        position,
                        "case_unrecorded",
                        _name(entry),
                        f"{entry.outcome} with no recorded output to re-score it from",
                    )
                )
            return
        if case is None:
            line = "[replay_unknown_case] not in the suite any more"
            self.refused.append((position, f"{entry.case_id}: {line}"))
            self.found.append((position, "replay_unknown_case", _name(entry), line))
            return
        view = world.public_view(suite, case)
        refusal = replay_refusal(entry, case=case, view=view, suite=suite)
        if refusal is not None:
            reason = str(refusal.failure_reason)
            self.refused.append((position, f"{entry.case_id}: {reason}"))
            self.found.append((position, "replay_case_changed", _name(entry), reason))
            return
        graded = self.state.grade(self.loaded, case, recorded_outcome(entry))
        if (entry.outcome, entry.failure_class) != (graded.outcome, graded.failure_class):
            self.found.append(
                (
                    position,
                    "outcome_changed",
                    _name(entry),
                    f"recorded {_outcome(entry)}, re-scored {_outcome(graded)}",
                )
            )
        self.rescored += 1
        if self.kept is None:
            add_measurements(self.totals, graded)
        else:
            self.kept.append((position, graded))

    def finish(self) -> SuiteRescore:
        suite = self.loaded.suite
        findings = self.findings
        # A result's findings stay in the order it made them (the sort is stable).
        for _, code, subject, detail in sorted(self.found, key=lambda found: found[0]):
            findings.add(code, subject, detail)
        refused = [line for _, line in sorted(self.refused, key=lambda found: found[0])]
        for case_id in sorted(set(self.cases) - self.seen):
            findings.add("case_missing", case_id, "in the suite, absent from the recording")
        if self.coverage_run is not None and self.coverage_run != self.entries:
            findings.add(
                "coverage_changed",
                suite.id,
                f"the report's coverage counts {self.coverage_run} cases run, "
                f"it holds {self.entries}",
            )
        oracle_now = suite_digest_pair(suite)[1]
        changed = (
            None
            if self.oracle_then == {oracle_now}
            else f"[oracle_changed] recorded under oracle digest "
            f"{', '.join(sorted(str(d) for d in self.oracle_then))}, re-scored under {oracle_now}"
        )
        stated = self.stated_oracle
        if changed is None and stated is not _UNSTATED and stated != oracle_now:
            # The report's own suite-level digest is part of what it claims: an edit is found.
            changed = (
                f"[oracle_changed] the report states oracle digest {stated}, "
                f"its outputs were re-scored under {oracle_now}"
            )
        if changed is not None:
            findings.add("oracle_changed", suite.id, changed.removeprefix("[oracle_changed] "))
        if self.kept is None:
            values = aggregate_totals(self.specs, self.totals)
        else:
            # In place order, as a reducer over the whole list would have seen them.
            kept = [graded for _, graded in sorted(self.kept, key=lambda found: found[0])]
            values = aggregate(self.specs, kept)
        metrics = tuple(
            _compare(m, self.recorded_metrics) for m in select(values, suite.config.metrics)
        )
        for metric in metrics:
            if metric.same is False:
                findings.add(
                    "metric_changed",
                    metric.name,
                    f"recorded {_value(metric.recorded)}, re-scored {_value(metric.rescored)}",
                )
        return SuiteRescore(
            id=suite.id,
            cases=self.rescored,
            refused=tuple(refused),
            oracle_changed=changed,
            metrics=metrics,
            differences=tuple(findings.found),
        )


def _outcome(result: CaseResult) -> str:
    if result.failure_class is None:
        return str(result.outcome)
    return f"{result.outcome} ({result.failure_class})"


def _value(value: float | None) -> str:
    return "null" if value is None else f"{value:.4f}"


def _compare(metric: MetricValue, recorded: Mapping[str, float | None] | None) -> MetricRescore:
    if recorded is None or metric.name not in recorded:
        return MetricRescore(name=metric.name, recorded=None, rescored=metric.value, same=None)
    then = recorded[metric.name]
    return MetricRescore(
        name=metric.name, recorded=then, rescored=metric.value, same=then == metric.value
    )


def failing(suites: list[SuiteRescore]) -> list[RescoreDifference]:
    """The differences ``--allow`` did not name: any of them fails the command."""
    return [d for suite in suites for d in suite.differences if not d.allowed]


def rescore_lines(suites: list[SuiteRescore]) -> list[str]:
    lines = []
    for suite in suites:
        lines.append(f"{suite.id}: {suite.cases} recorded outputs re-scored")
        if suite.oracle_changed:
            lines.append(f"  {suite.oracle_changed}")
        lines.extend(f"  refused {line}" for line in suite.refused)
        width = max((len(m.name) for m in suite.metrics), default=0)
        for metric in suite.metrics:
            now = _value(metric.rescored)
            if metric.same is None:
                lines.append(f"  {metric.name:<{width}}  {now:>6}")
                continue
            verdict = "same" if metric.same else "CHANGED"
            then = _value(metric.recorded)
            lines.append(f"  {metric.name:<{width}}  {then:>6} -> {now:>6}  {verdict}")
        for difference in suite.differences:
            mark = " (allowed)" if difference.allowed else ""
            lines.append(
                f"  DIFFERS [{difference.code}] {difference.subject}: {difference.detail}{mark}"
            )
    found = [d for suite in suites for d in suite.differences]
    failed = failing(suites)
    if failed:
        lines.append(
            f"rescore FAILED: {len(failed)} differences not allowed "
            f"({len(found) - len(failed)} allowed)"
        )
    else:
        lines.append(f"rescore ok: no difference ({len(found)} allowed)")
    return lines


def unresolvable(suite_id: str) -> AgentbenchError:
    return AgentbenchError(
        "unknown_suite",
        f"recorded outputs of suite {suite_id!r}: no built-in suite, no suites/{suite_id} here; "
        f"name its folder with --suite {suite_id}=FOLDER",
    )


def cmd_rescore(args: argparse.Namespace, registry: WorldRegistry) -> int:
    path = Path(args.path)
    # Our own run report (by its schema field) or record folder is re-scored by the
    # core; anything else is a world's original-format report, read by that world.
    if is_own_record(path, args.max_report_bytes):
        return _rescore_recorded(path, args, registry)
    if len(args.suite) != 1 or "=" in args.suite[0]:
        raise AgentbenchError(
            "unrecognised_report",
            "neither an agentbench run report nor an --agentbench-record folder: name the "
            "suite whose world reads this report with one --suite SUITE",
            file=str(path),
            field="--suite",
        )
    loaded = load(args.suite[0], registry, args.oracle_root)
    if not isinstance(loaded.world, RescoresReports):
        raise AgentbenchError(
            "unsupported_command", f"world kind {loaded.world.kind!r} cannot rescore a report"
        )
    records, differing = loaded.world.rescore_report(loaded.suite, path)
    if args.json:
        print(canonical_json(records))
    else:
        for record in records:
            print(canonical_json(record))
    for receipt in differing:
        print(f"agentbench: differs from the committed score: {receipt}", file=sys.stderr)
    return 1 if differing else 0


def _rescore_recorded(path: Path, args: argparse.Namespace, registry: WorldRegistry) -> int:
    """Grade a run's recorded outputs again against today's suites and oracles."""
    folders: dict[str, str] = {}
    for text in args.suite:
        suite_id, sep, folder = text.partition("=")
        if sep and suite_id and folder:
            folders[suite_id] = folder
        elif not sep:  # a suite folder or built-in id: its own id names it
            folders[load(text, registry, args.oracle_root).suite.id] = text
        else:
            raise AgentbenchError(
                "invalid_suite", f"{text!r} is not ID=FOLDER or SUITE", field="--suite"
            )

    def locate(suite_id: str) -> LoadedSuite:
        for candidate in (folders.get(suite_id), suite_id, f"suites/{suite_id}"):
            if candidate is None:
                continue
            try:
                loaded = load(candidate, registry, args.oracle_root)
            except AgentbenchError as exc:
                if exc.code == "unknown_suite":
                    continue
                raise
            if loaded.suite.id == suite_id:
                return loaded
        raise unresolvable(suite_id)

    suites = rescore(path, command_state(registry, 300.0), locate, allow=frozenset(args.allow))
    if args.json:
        print(canonical_json([suite.model_dump(mode="json") for suite in suites]))
    else:
        for line in rescore_lines(suites):
            print(line)
    return 1 if failing(suites) else 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser(
        "rescore",
        help="grade a run's recorded outputs again, or a world's original report's receipts",
    )
    parser.add_argument(
        "path", help="a JSON run report, an --agentbench-record folder, or a world's report"
    )
    parser.add_argument(
        "--suite",
        action="append",
        default=[],
        metavar="SUITE | ID=FOLDER",
        help="the suite whose world reads a foreign report; for our own: where a suite lives",
    )
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="CODE_OR_METRIC",
        help="a difference that does not fail the command: its code "
        f"({', '.join(DIFFERENCE_CODES)}) or, for metric_changed, the metric's name; "
        "repeatable (any other difference exits 1)",
    )
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    add_oracle_root(parser)
    add_max_report_bytes(parser)
    parser.set_defaults(handler=cmd_rescore)

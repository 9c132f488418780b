"""Paired comparison of a run against a baseline run, suite by suite.

Cases are paired by case id and trial. The statistical unit is the case's
cluster (its semantic scenario; the case itself by default), never the trial:
every interval resamples units and every test counts units, so a suite of a few
scenarios in many variants cannot pass for a large sample.

For each suite present in both runs: a pass/fail row (exact McNemar on the
discordant units) and one row per metric (the difference and its 95% paired
cluster-bootstrap interval, 10,000 resamples under a fixed seed, tested by the
exact sign test on the units whose own value moved, which is McNemar's test
wherever a unit's value is 0 or 1). Holm-Bonferroni then runs over every
tested row of every suite. A row is a regression when its
difference goes the metric's bad way, its Holm-adjusted p is below alpha and its
size exceeds the allowed regression.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Literal

from pytest_agentbench.scoring.stats import (
    RatioUnit,
    holm_bonferroni,
    ratio_bootstrap,
    seed_for,
    sign_test,
)
from pytest_agentbench.sdk.contracts import (
    BUILT_ON_FIRST_USE,
    CaseOutcome,
    CaseResult,
    Direction,
    Record,
)
from pytest_agentbench.sdk.metrics import GRADED, MetricDefinition

PASS_ROW = "passed"
"""The pass/fail row's name: the share of paired trials whose case passed."""
RESAMPLES = 10_000
SEED = 20_261_130
CONFIDENCE = 0.95

Verdict = Literal["regression", "improvement", "no_significant_change", "not_tested"]


class ComparisonSettings(Record):
    alpha: float
    max_regression: float
    resamples: int
    seed: int
    confidence: float
    allow_changed: bool


class BaselineIdentity(Record):
    """Which earlier run the comparison is against."""

    model_config = BUILT_ON_FIRST_USE

    path: str
    schema_version: str
    adapter_spec: str | None
    adapter_description: str
    git_commit: str | None


class Discordant(Record):
    """Units whose pass share fell (``before_better``) or rose (``after_better``)."""

    model_config = BUILT_ON_FIRST_USE

    before_better: int
    after_better: int


class ComparisonRow(Record):
    model_config = BUILT_ON_FIRST_USE

    suite: str
    metric: str
    kind: Literal["pass_fail", "rate", "reduced"]
    direction: Direction
    before: float | None
    after: float | None
    difference: float | None
    """``after - before`` over the paired, graded trials."""
    interval: tuple[float, float] | None
    """95% paired cluster-bootstrap interval of the difference."""
    test: Literal["mcnemar_exact", "paired_bootstrap", "sign_test_exact"] | None
    """The pass/fail row: exact McNemar on discordant units. A metric row: the exact
    sign test on units whose own ratio moved (McNemar again where that ratio is 0/1).
    ``paired_bootstrap`` is not used for p-values: at benchmark sizes its tail is
    anti-conservative; the bootstrap gives the interval."""
    discordant: Discordant | None
    p_value: float | None
    adjusted_p: float | None
    """Holm-Bonferroni over every tested row of the comparison."""
    units: int
    """Clusters (or cases) supporting the row: the bootstrap's and the test's sample size."""
    pairs: int
    """Paired graded trials behind the row."""
    verdict: Verdict
    reason: str
    """One line: why the verdict (the gate line of a regression)."""


class SuiteComparison(Record):
    model_config = BUILT_ON_FIRST_USE

    id: str
    world: str
    status: Literal["compared", "refused"]
    mismatches: tuple[str, ...]
    """What differs between the runs' suites (digests, world kind, metric definitions)."""
    refusal: str | None
    """``[baseline_mismatch] ...`` when the mismatches refused the pairing."""
    pairs: int
    """Case-trial pairs present on both sides."""
    ungraded_pairs: int
    """Pairs excluded because one side was skipped or a harness error."""
    cases: int
    units: int
    only_before: tuple[str, ...]
    """Case ids (``case[trial-N]`` under repeats) present in the baseline only: excluded."""
    only_after: tuple[str, ...]
    passed_only_before: tuple[str, ...]
    """Flipped cases: passed in the baseline, failed now."""
    passed_only_after: tuple[str, ...]
    rows: tuple[ComparisonRow, ...]
    notes: tuple[str, ...] = ()
    """What the comparison assumed (a baseline too old to record metric definitions)."""


class Comparison(Record):
    model_config = BUILT_ON_FIRST_USE

    schema_version: Literal["agentbench-comparison/1"] = "agentbench-comparison/1"
    baseline: BaselineIdentity
    settings: ComparisonSettings
    suites: tuple[SuiteComparison, ...]
    only_in_baseline: tuple[str, ...]
    """Suite ids the baseline ran and this run did not."""
    only_in_run: tuple[str, ...]
    family_size: int
    """Rows Holm-Bonferroni adjusted over."""
    regressions: int
    improvements: int
    passed: bool
    """No regression and no refused suite."""

    def regression_rows(self) -> list[ComparisonRow]:
        return [row for suite in self.suites for row in suite.rows if row.verdict == "regression"]


class SuiteRun(Record):
    """What a comparison needs of one suite of one run (a run report's suite entry)."""

    model_config = BUILT_ON_FIRST_USE

    id: str
    world: str
    digests: Mapping[str, str | None]
    metrics: tuple[MetricDefinition, ...]
    observed: Mapping[str, float | None]
    """Each metric's value as the run reported it (reduced metrics are compared on it)."""
    results: tuple[CaseResult, ...]


def _label(result: CaseResult) -> str:
    return result.case_id if result.trial is None else f"{result.case_id}[trial-{result.trial}]"


def _key(result: CaseResult) -> tuple[str, int]:
    return result.case_id, 1 if result.trial is None else result.trial


def mismatches(before: SuiteRun, after: SuiteRun) -> list[str]:
    found = []
    if before.world != after.world:
        found.append(f"world kind {before.world!r} != {after.world!r}")
    for part in sorted(set(before.digests) | set(after.digests)):
        old, new = before.digests.get(part), after.digests.get(part)
        if old != new:
            found.append(f"{part} digest {old} != {new}")
    if not before.metrics:
        return found  # a /1 report records no definitions: see ``notes``
    old_metrics = {m.name: m for m in before.metrics}
    new_metrics = {m.name: m for m in after.metrics}
    for name in sorted(set(old_metrics) | set(new_metrics)):
        if old_metrics.get(name) != new_metrics.get(name):
            found.append(f"metric {name!r} is defined differently")
    return found


def _worse(direction: Direction, difference: float) -> bool:
    return difference < 0 if direction == "higher_is_better" else difference > 0


class _Pairs:
    """The graded pairs of one suite, grouped into units."""

    def __init__(self, before: SuiteRun, after: SuiteRun) -> None:
        old = {_key(r): r for r in before.results}
        new = {_key(r): r for r in after.results}
        shared = sorted(set(old) & set(new))
        self.count = len(shared)
        self.only_before = tuple(_label(old[key]) for key in sorted(set(old) - set(new)))
        self.only_after = tuple(_label(new[key]) for key in sorted(set(new) - set(old)))
        graded = [
            (old[key], new[key])
            for key in shared
            if old[key].outcome in GRADED and new[key].outcome in GRADED
        ]
        self.ungraded = len(shared) - len(graded)
        self.cases = len({key[0] for key in shared})
        self.by_unit: dict[str, list[tuple[CaseResult, CaseResult]]] = defaultdict(list)
        for pair in graded:
            self.by_unit[pair[1].unit].append(pair)
        self.pairs = len(graded)
        passed = CaseOutcome.PASSED
        self.passed_only_before = tuple(
            _label(b) for a, b in graded if a.outcome is passed and b.outcome is not passed
        )
        self.passed_only_after = tuple(
            _label(b) for a, b in graded if a.outcome is not passed and b.outcome is passed
        )

    def pass_units(self) -> list[RatioUnit]:
        def passes(results: Sequence[CaseResult]) -> int:
            return sum(1 for r in results if r.outcome is CaseOutcome.PASSED)

        return [
            RatioUnit(
                after_numerator=passes([b for _, b in pairs]),
                after_denominator=len(pairs),
                before_numerator=passes([a for a, _ in pairs]),
                before_denominator=len(pairs),
            )
            for _, pairs in sorted(self.by_unit.items())
        ]

    def rate_units(self, numerator: str, denominator: str) -> list[RatioUnit]:
        def total(results: Sequence[CaseResult], key: str) -> int:
            return sum(r.measurements.get(key, 0) for r in results)

        units = []
        for _, pairs in sorted(self.by_unit.items()):
            olds, news = [a for a, _ in pairs], [b for _, b in pairs]
            units.append(
                RatioUnit(
                    after_numerator=total(news, numerator),
                    after_denominator=total(news, denominator),
                    before_numerator=total(olds, numerator),
                    before_denominator=total(olds, denominator),
                )
            )
        return units


def _tested_row(
    suite: str,
    metric: str,
    *,
    kind: Literal["pass_fail", "rate"],
    direction: Direction,
    units: list[RatioUnit],
    pairs: int,
    settings: ComparisonSettings,
) -> ComparisonRow:
    before_den = sum(u.before_denominator for u in units)
    after_den = sum(u.after_denominator for u in units)
    before = None if before_den == 0 else sum(u.before_numerator for u in units) / before_den
    after = None if after_den == 0 else sum(u.after_numerator for u in units) / after_den
    boot = (
        ratio_bootstrap(
            units,
            resamples=settings.resamples,
            seed=seed_for(suite, metric, base=settings.seed),
            confidence=settings.confidence,
        )
        if units
        else None
    )
    # Units whose own ratio is undefined on a side cannot say which side did better.
    defined = [u for u in units if u.before_denominator and u.after_denominator]
    before_better = sum(
        1
        for u in defined
        if u.before_numerator * u.after_denominator > u.after_numerator * u.before_denominator
    )
    after_better = sum(
        1
        for u in defined
        if u.after_numerator * u.before_denominator > u.before_numerator * u.after_denominator
    )
    discordant = Discordant(before_better=before_better, after_better=after_better)
    tested = boot is not None and bool(defined)
    p_value = sign_test(before_better, after_better) if tested else None
    test: Literal["mcnemar_exact", "paired_bootstrap", "sign_test_exact"] | None = None
    if tested:
        test = "mcnemar_exact" if kind == "pass_fail" else "sign_test_exact"
    return ComparisonRow(
        suite=suite,
        metric=metric,
        kind=kind,
        direction=direction,
        before=before,
        after=after,
        difference=None if before is None or after is None else after - before,
        interval=None if boot is None else (boot.low, boot.high),
        test=test,
        discordant=discordant,
        p_value=p_value,
        adjusted_p=None,
        units=len(units),
        pairs=pairs,
        verdict="not_tested",
        reason="not tested: no paired graded unit with a defined value on both sides"
        if p_value is None
        else "",
    )


def _reduced_row(
    suite: str, definition: MetricDefinition, before: SuiteRun, after: SuiteRun, units: int
) -> ComparisonRow:
    old, new = before.observed.get(definition.name), after.observed.get(definition.name)
    return ComparisonRow(
        suite=suite,
        metric=definition.name,
        kind="reduced",
        direction=definition.direction,
        before=old,
        after=new,
        difference=None if old is None or new is None else new - old,
        interval=None,
        test=None,
        discordant=None,
        p_value=None,
        adjusted_p=None,
        units=units,
        pairs=0,
        verdict="not_tested",
        reason="not tested: a world-reduced metric has no per-case parts to resample",
    )


def _compare_suite(
    before: SuiteRun, after: SuiteRun, settings: ComparisonSettings
) -> SuiteComparison:
    found = mismatches(before, after)
    pairs = _Pairs(before, after)
    refused = bool(found) and not settings.allow_changed
    rows: list[ComparisonRow] = []
    if not refused:
        rows.append(
            _tested_row(
                after.id,
                PASS_ROW,
                kind="pass_fail",
                direction="higher_is_better",
                units=pairs.pass_units(),
                pairs=pairs.pairs,
                settings=settings,
            )
        )
        old_definitions = {m.name: m for m in before.metrics or after.metrics}
        for definition in after.metrics:
            if definition.name not in old_definitions:
                continue
            if definition.reduced or definition.numerator is None or definition.denominator is None:
                rows.append(_reduced_row(after.id, definition, before, after, len(pairs.by_unit)))
                continue
            units = pairs.rate_units(definition.numerator, definition.denominator)
            rows.append(
                _tested_row(
                    after.id,
                    definition.name,
                    kind="rate",
                    direction=definition.direction,
                    units=units,
                    pairs=pairs.pairs,
                    settings=settings,
                )
            )
    return SuiteComparison(
        id=after.id,
        world=after.world,
        status="refused" if refused else "compared",
        mismatches=tuple(found),
        refusal=(
            f"[baseline_mismatch] suite {after.id!r}: {'; '.join(found)} "
            "(--agentbench-baseline-allow-changed compares anyway)"
            if refused
            else None
        ),
        pairs=pairs.count,
        ungraded_pairs=pairs.ungraded,
        cases=pairs.cases,
        units=len(pairs.by_unit),
        only_before=pairs.only_before,
        only_after=pairs.only_after,
        passed_only_before=pairs.passed_only_before,
        passed_only_after=pairs.passed_only_after,
        rows=tuple(rows),
        notes=(
            (
                "the baseline records no metric definitions (a report written before "
                "they were recorded): this run's are assumed for both",
            )
            if not before.metrics and after.metrics
            else ()
        ),
    )


def _judge(row: ComparisonRow, adjusted: float, settings: ComparisonSettings) -> ComparisonRow:
    assert row.difference is not None
    significant = adjusted < settings.alpha
    worse = _worse(row.direction, row.difference)
    size = abs(row.difference)
    shown = (
        f"{row.suite}:{row.metric} {row.before:.4f} -> {row.after:.4f} "
        f"({row.difference:+.4f}), Holm p = {adjusted:.4g}"
    )
    verdict: Verdict
    if significant and worse and size > settings.max_regression:
        verdict = "regression"
        reason = (
            f"{shown} < alpha {settings.alpha:g}, worse by {size:.4f} "
            f"> allowed {settings.max_regression:g}"
        )
    elif significant and not worse and row.difference != 0:
        verdict, reason = "improvement", f"{shown} < alpha {settings.alpha:g}"
    else:
        verdict = "no_significant_change"
        reason = (
            f"{shown}: worse by {size:.4f}, within allowed {settings.max_regression:g}"
            if significant and worse
            else f"{shown} >= alpha {settings.alpha:g}"
        )
    return row.model_copy(update={"adjusted_p": adjusted, "verdict": verdict, "reason": reason})


def compare_runs(
    before: Sequence[SuiteRun],
    after: Sequence[SuiteRun],
    *,
    baseline: BaselineIdentity,
    settings: ComparisonSettings,
) -> Comparison:
    """Compare every suite present in both runs; Holm over every tested row."""
    old = {suite.id: suite for suite in before}
    new = {suite.id: suite for suite in after}
    suites = [_compare_suite(old[sid], new[sid], settings) for sid in sorted(set(old) & set(new))]
    tested = {
        f"{row.suite}\x1f{row.metric}": row.p_value
        for suite in suites
        for row in suite.rows
        if row.p_value is not None and row.difference is not None
    }
    holm = holm_bonferroni(tested, settings.alpha) if tested else {}
    judged = []
    for suite in suites:
        rows = tuple(
            _judge(row, holm[key].adjusted_p, settings) if key in holm else row
            for row in suite.rows
            for key in [f"{row.suite}\x1f{row.metric}"]
        )
        judged.append(suite.model_copy(update={"rows": rows}))
    verdicts = [row.verdict for suite in judged for row in suite.rows]
    return Comparison(
        baseline=baseline,
        settings=settings,
        suites=tuple(judged),
        only_in_baseline=tuple(sorted(set(old) - set(new))),
        only_in_run=tuple(sorted(set(new) - set(old))),
        family_size=len(tested),
        regressions=verdicts.count("regression"),
        improvements=verdicts.count("improvement"),
        passed="regression" not in verdicts and all(s.status == "compared" for s in judged),
    )

"""Repeated trials: K items per case, per-trial seeds, and what K trials say per suite.

``--agentbench-repeat K`` (ini ``agentbench_repeat``) collects every case K times
as ``case[trial-1]`` ... ``case[trial-K]``. The ``agentbench_trial`` fixture and
:func:`current_trial` (for a world that passes a seed on to its adapter) give the
running trial's index and a seed derived from the suite, case and index alone,
so a trial is the same wherever xdist runs it.

Every rate is computed over all trials, but a trial is never a statistical
unit: intervals resample the case's cluster (the case itself by default).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from contextvars import ContextVar, Token

import pytest

from pytest_agentbench.scoring.matrix import MODEL_PREFIX
from pytest_agentbench.sdk.contracts import (
    BUILT_ON_FIRST_USE,
    CaseOutcome,
    CaseResult,
    MetricSpec,
    MetricValue,
    Record,
)
from pytest_agentbench.sdk.errors import UsageError
from pytest_agentbench.sdk.metrics import graded

RESAMPLES = 10_000
SEED = 20_261_130


class Trial(Record):
    """The running trial of a case: 1-based ``index`` of ``count``, and its seed."""

    model_config = BUILT_ON_FIRST_USE

    index: int
    count: int
    seed: int


def trial_seed(suite_id: str, case_id: str, index: int) -> int:
    digest = hashlib.sha256(f"{suite_id}\x1f{case_id}\x1f{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def make_trial(suite_id: str, case_id: str, index: int | None, count: int) -> Trial:
    position = 1 if index is None else index
    return Trial(index=position, count=count, seed=trial_seed(suite_id, case_id, position))


_Running = tuple[str, str, int | None, int] | None
_CURRENT: ContextVar[_Running] = ContextVar("agentbench_trial", default=None)
"""The running trial's suite, case, index and count: its seed is derived only when asked for."""


def current_trial() -> Trial | None:
    """The trial being run, for a world that passes its seed to the adapter's run call."""
    running_trial = _CURRENT.get()
    return None if running_trial is None else make_trial(*running_trial)


def enter_trial(suite_id: str, case_id: str, index: int | None, count: int) -> Token[_Running]:
    """Make this the running trial until :func:`leave_trial` is given the token.

    Two calls rather than a generator-based context manager: this runs once per case.
    """
    return _CURRENT.set((suite_id, case_id, index, count))


def leave_trial(token: Token[_Running]) -> None:
    _CURRENT.reset(token)


def item_name(case_id: str, index: int | None) -> str:
    return case_id if index is None else f"{case_id}[trial-{index}]"


def split_item_name(name: str) -> tuple[str, int | None]:
    """``case[trial-2]`` -> (``case``, 2); a plain case id -> (id, None)."""
    head, sep, tail = name.rpartition("[trial-")
    if sep and tail.endswith("]") and tail[:-1].isdigit():
        return head, int(tail[:-1])
    return name, None


MAX_REPEAT = 1000
"""The most trials per case: each trial is a collected item, held in memory until the end."""


def repeat_count(config: pytest.Config) -> int:
    option = config.getoption("agentbench_repeat")
    text = option or config.getini("agentbench_repeat")
    try:
        count = int(text)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_REPEAT:
        raise UsageError(
            "invalid_repeat",
            f"{text!r} is not a whole number from 1 to {MAX_REPEAT}",
            field="--agentbench-repeat" if option else "agentbench_repeat",
        )
    return count


def max_items(text: object) -> int:
    """``--agentbench-max-items``: a whole number >= 1 (ValueError naming what is wrong)."""
    try:
        count = int(str(text).strip())
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"{text!r} is not a whole number >= 1")
    return count


# --- the suite's figures ----------------------------------------------------


class TrialFigure(Record):
    model_config = BUILT_ON_FIRST_USE

    value: float | None
    interval: tuple[float, float] | None
    """95% cluster-bootstrap interval: resamples clusters, never trials."""
    cases: int
    clusters: int


class TrialSummary(Record):
    model_config = BUILT_ON_FIRST_USE

    trials: int
    """K: the most trials any case ran."""
    cases: int
    """Cases with at least one graded trial."""
    clusters: int
    """Statistical units those cases form (scenarios; a case is its own by default)."""
    pass_at_1: TrialFigure
    """Mean over cases of the share of graded trials that passed."""
    pass_hat_k: TrialFigure
    """Share of cases whose K trials all passed (cases with all K graded)."""
    pass_at_k: TrialFigure
    """Share of cases with at least one passing trial among K graded."""
    consistency: float | None
    """Share of cases whose graded trials all agree (all pass or all fail)."""
    inconsistent_cases: tuple[str, ...]
    """Cases whose trials disagree: pass on some, fail on others."""


def _figure(by_cluster: dict[str, list[float]], suite_id: str, name: str) -> TrialFigure:
    # The statistics are imported by a repeated run's summary alone: every benchmark
    # process imports this plugin, few of them repeat cases.
    from pytest_agentbench.scoring.stats import RatioUnit, ratio_bootstrap, seed_for

    units = [
        RatioUnit(after_numerator=sum(values), after_denominator=len(values))
        for _, values in sorted(by_cluster.items())
        if values
    ]
    cases = sum(len(values) for values in by_cluster.values())
    if not units:
        return TrialFigure(value=None, interval=None, cases=0, clusters=0)
    boot = ratio_bootstrap(
        units, paired=False, resamples=RESAMPLES, seed=seed_for(suite_id, name, base=SEED)
    )
    value = sum(u.after_numerator for u in units) / cases
    return TrialFigure(
        value=value,
        interval=None if boot is None else (boot.low, boot.high),
        cases=cases,
        clusters=len(units),
    )


def applies(results: Sequence[CaseResult]) -> bool:
    """Whether trials or clusters make the case something other than the unit of a trial."""
    return any(r.trial is not None or r.cluster is not None for r in results)


def summarise_trials(suite_id: str, results: Sequence[CaseResult]) -> TrialSummary | None:
    if not applies(results):
        return None  # a run of single trials and no clusters: nothing to sort out of it
    scored = graded(results)
    if not scored:
        return None
    count = max((r.trial or 1) for r in results)
    per_case: dict[str, list[bool]] = defaultdict(list)
    cluster_of: dict[str, str] = {}
    for result in scored:
        # Under a model matrix a case's trials are counted per model (K trials each),
        # keyed as its matrix item is named: ``case[model=NAME]``.
        case = (
            result.case_id
            if result.model is None
            else f"{result.case_id}{MODEL_PREFIX}{result.model}]"
        )
        per_case[case].append(result.outcome is CaseOutcome.PASSED)
        cluster_of[case] = result.unit
    at_1: dict[str, list[float]] = defaultdict(list)
    hat_k: dict[str, list[float]] = defaultdict(list)
    at_k: dict[str, list[float]] = defaultdict(list)
    inconsistent = []
    for case_id, passes in sorted(per_case.items()):
        cluster = cluster_of[case_id]
        at_1[cluster].append(sum(passes) / len(passes))
        if len(passes) == count:
            hat_k[cluster].append(float(all(passes)))
            at_k[cluster].append(float(any(passes)))
        if any(passes) and not all(passes):
            inconsistent.append(case_id)
    return TrialSummary(
        trials=count,
        cases=len(per_case),
        clusters=len(set(cluster_of.values())),
        pass_at_1=_figure(at_1, suite_id, "pass@1"),
        pass_hat_k=_figure(hat_k, suite_id, "pass^k"),
        pass_at_k=_figure(at_k, suite_id, "pass@k"),
        consistency=1.0 - len(inconsistent) / len(per_case),
        inconsistent_cases=tuple(inconsistent),
    )


def clustered_intervals(
    suite_id: str,
    specs: Sequence[MetricSpec],
    metrics: Sequence[MetricValue],
    results: Sequence[CaseResult],
) -> list[MetricValue]:
    """Rate intervals that resample clusters instead of treating each trial as a unit.

    A Wilson interval over all trials would count K trials of one case (or the
    variants of one scenario) as independent draws; a cluster bootstrap does not.
    """
    if not applies(results):
        return list(metrics)
    from pytest_agentbench.scoring.stats import RatioUnit, ratio_bootstrap, seed_for

    scored = graded(results)
    by_name = {spec.name: spec for spec in specs}
    out = []
    for metric in metrics:
        spec = by_name.get(metric.name)
        if spec is None or spec.numerator is None or spec.denominator is None:
            out.append(metric)
            continue
        sums: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for result in scored:
            pair = sums[result.unit]
            pair[0] += result.measurements.get(spec.numerator, 0)
            pair[1] += result.measurements.get(spec.denominator, 0)
        units = [
            RatioUnit(after_numerator=n, after_denominator=d) for _, (n, d) in sorted(sums.items())
        ]
        boot = (
            ratio_bootstrap(
                units,
                paired=False,
                resamples=RESAMPLES,
                seed=seed_for(suite_id, metric.name, base=SEED),
            )
            if units
            else None
        )
        out.append(
            metric.model_copy(update={"interval": None if boot is None else (boot.low, boot.high)})
        )
    return out

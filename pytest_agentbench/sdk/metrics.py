"""Aggregating graded cases into metrics.

Rates sum integer measurements over the graded cases; a rate whose
denominator is empty is ``None`` (not computable), never 0.0. Harness errors
and skipped cases are attempted but not graded, so they are excluded here and
counted separately by the report. World reducers run after every rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_agentbench.sdk.contracts import (
    CaseOutcome,
    CaseResult,
    Direction,
    MetricSpec,
    MetricValue,
    Record,
)
from pytest_agentbench.sdk.intervals import wilson_interval

GRADED = frozenset({CaseOutcome.PASSED, CaseOutcome.FAILED})


class MetricDefinition(Record):
    """A metric as the run report records it: what a comparison must find unchanged."""

    name: str
    family: str
    direction: Direction
    support_meaning: str
    numerator: str | None
    denominator: str | None
    reduced: bool
    """Computed by a world reducer: no per-case numerator and denominator to resample."""


def definition(spec: MetricSpec) -> MetricDefinition:
    return MetricDefinition(
        name=spec.name,
        family=spec.family,
        direction=spec.direction,
        support_meaning=spec.support_meaning,
        numerator=spec.numerator,
        denominator=spec.denominator,
        reduced=spec.reducer is not None,
    )


def graded(results: Sequence[CaseResult]) -> list[CaseResult]:
    return [result for result in results if result.outcome in GRADED]


def _measurement_totals(results: Sequence[CaseResult]) -> dict[str, int]:
    """Each measurement summed over ``results``: one pass, however many rates read them."""
    totals: dict[str, int] = {}
    for result in results:
        for name, value in result.measurements.items():
            totals[name] = totals.get(name, 0) + value
    return totals


def _rate(spec: MetricSpec, totals: Mapping[str, int]) -> MetricValue:
    assert spec.numerator is not None
    assert spec.denominator is not None
    numerator = totals.get(spec.numerator, 0)
    denominator = totals.get(spec.denominator, 0)
    return MetricValue(
        name=spec.name,
        family=spec.family,
        direction=spec.direction,
        value=None if denominator == 0 else numerator / denominator,
        support=denominator,
        support_meaning=spec.support_meaning,
        numerator=numerator,
        denominator=denominator,
        # A world may declare a ratio that is not a proportion (calls per case):
        # it gets a value but no binomial interval.
        interval=(
            wilson_interval(numerator, denominator) if 0 <= numerator <= denominator else None
        ),
    )


def reduced(specs: Sequence[MetricSpec]) -> bool:
    """Whether a metric of ``specs`` has a world reducer, which reads the results themselves."""
    return any(spec.reducer is not None for spec in specs)


def add_measurements(totals: dict[str, int], result: CaseResult) -> None:
    """Add a graded ``result``'s measurements to the running ``totals`` (others add nothing).

    A caller that sees one result at a time keeps only these sums for the rates,
    instead of every result: integer sums, so the order they come in changes nothing.
    """
    if result.outcome in GRADED:
        for name, value in result.measurements.items():
            totals[name] = totals.get(name, 0) + value


def aggregate_totals(specs: Sequence[MetricSpec], totals: Mapping[str, int]) -> list[MetricValue]:
    """:func:`aggregate` from the measurement totals of the graded results alone.

    Only for ``specs`` without a reducer (:func:`reduced`): a reducer needs the results.
    """
    if reduced(specs):
        raise ValueError("a metric with a reducer needs the results, not their totals")
    return _aggregate(specs, totals, [])


def aggregate(specs: Sequence[MetricSpec], results: Sequence[CaseResult]) -> list[MetricValue]:
    """Every metric of ``specs`` over the graded ``results``, in ``specs`` order."""
    scored = graded(results)
    return _aggregate(specs, _measurement_totals(scored), scored)


def _aggregate(
    specs: Sequence[MetricSpec], totals: Mapping[str, int], scored: list[CaseResult]
) -> list[MetricValue]:
    computed: dict[str, MetricValue] = {}
    for spec in specs:
        if spec.reducer is None:
            if spec.numerator is None or spec.denominator is None:
                raise ValueError(f"metric {spec.name!r} has neither a ratio nor a reducer")
            computed[spec.name] = _rate(spec, totals)
    for spec in specs:
        if spec.reducer is not None:
            value, support = spec.reducer(scored, dict(computed))
            computed[spec.name] = MetricValue(
                name=spec.name,
                family=spec.family,
                direction=spec.direction,
                value=value,
                support=support,
                support_meaning=spec.support_meaning,
            )
    return [computed[spec.name] for spec in specs]


def select(metrics: Sequence[MetricValue], names: Sequence[str] | None) -> list[MetricValue]:
    """The metrics a suite declared it reports (all when it declared none)."""
    if names is None:
        return list(metrics)
    by_name = {metric.name: metric for metric in metrics}
    return [by_name[name] for name in names if name in by_name]


def by_family(metrics: Sequence[MetricValue]) -> Mapping[str, list[MetricValue]]:
    """Metrics grouped by family, families in first-appearance order."""
    families: dict[str, list[MetricValue]] = {}
    for metric in metrics:
        families.setdefault(metric.family, []).append(metric)
    return families

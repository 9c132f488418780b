from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from pytest_agentbench.sdk.contracts import (
    Case,
    CaseOutcome,
    CaseResult,
    FailureClass,
    MetricSpec,
    MetricValue,
    grade,
)
from pytest_agentbench.sdk.intervals import wilson_interval
from pytest_agentbench.sdk.metrics import (
    add_measurements,
    aggregate,
    aggregate_totals,
    by_family,
    graded,
    reduced,
    select,
)

ACCURACY = MetricSpec(
    name="accuracy",
    family="answers",
    numerator="correct",
    denominator="scored",
    support_meaning="scored cases",
)
ABSTAIN = MetricSpec(
    name="abstain_rate",
    family="answers",
    direction="lower_is_better",
    numerator="abstained",
    denominator="asked",
    support_meaning="questions that allowed abstaining",
)


def case(
    case_id: str,
    outcome: CaseOutcome = CaseOutcome.PASSED,
    **measurements: int,
) -> CaseResult:
    failure = FailureClass.HARNESS_ERROR if outcome is CaseOutcome.ERROR else None
    return CaseResult(
        suite_id="s",
        case_id=case_id,
        outcome=outcome,
        measurements=measurements,
        failure_class=failure,
    )


def test_a_rate_sums_numerators_and_denominators_over_cases() -> None:
    results = [
        case("a", correct=1, scored=1),
        case("b", CaseOutcome.FAILED, correct=0, scored=1),
        case("c", correct=2, scored=2),
    ]
    (accuracy,) = aggregate([ACCURACY], results)
    assert accuracy.value == 0.75
    assert (accuracy.numerator, accuracy.denominator, accuracy.support) == (3, 4, 4)
    assert accuracy.family == "answers"
    assert accuracy.direction == "higher_is_better"
    assert accuracy.support_meaning == "scored cases"


def test_a_rate_carries_its_wilson_interval() -> None:
    results = [case("a", correct=3, scored=4)]
    (accuracy,) = aggregate([ACCURACY], results)
    assert accuracy.interval == wilson_interval(3, 4)
    assert accuracy.interval is not None
    low, high = accuracy.interval
    assert 0.0 < low < 0.75 < high < 1.0


def test_a_rate_with_an_empty_denominator_is_null_not_zero() -> None:
    results = [case("a", correct=1, scored=1)]
    (abstain,) = aggregate([ABSTAIN], results)
    assert abstain.value is None
    assert abstain.value != 0.0
    assert abstain.support == 0
    assert abstain.numerator == 0
    assert abstain.denominator == 0
    assert abstain.interval is None


def test_every_metric_is_null_when_there_are_no_cases() -> None:
    values = aggregate([ACCURACY, ABSTAIN], [])
    assert [metric.value for metric in values] == [None, None]


def test_a_zero_rate_is_zero_when_it_is_computable() -> None:
    (accuracy,) = aggregate([ACCURACY], [case("a", CaseOutcome.FAILED, correct=0, scored=2)])
    assert accuracy.value == 0.0
    assert accuracy.interval is not None


def test_harness_errors_skipped_and_excluded_cases_are_not_graded() -> None:
    results = [
        case("ok", correct=1, scored=1),
        case("broken", CaseOutcome.ERROR, correct=0, scored=1),
        case("skipped", CaseOutcome.SKIPPED, correct=0, scored=1),
        case("over-budget", CaseOutcome.EXCLUDED, correct=0, scored=1),
    ]
    assert [result.case_id for result in graded(results)] == ["ok"]
    (accuracy,) = aggregate([ACCURACY], results)
    assert accuracy.value == 1.0
    assert accuracy.support == 1


def test_only_errors_gives_null_rather_than_zero() -> None:
    results = [case("broken", CaseOutcome.ERROR, correct=0, scored=1)]
    (accuracy,) = aggregate([ACCURACY], results)
    assert accuracy.value is None


def test_reducers_see_graded_cases_and_every_rate() -> None:
    seen: dict[str, object] = {}

    def reduce(
        results: Sequence[CaseResult], computed: Mapping[str, MetricValue]
    ) -> tuple[float | None, int]:
        seen["cases"] = [result.case_id for result in results]
        seen["rates"] = sorted(computed)
        accuracy = computed["accuracy"].value
        return (None if accuracy is None else 1 - accuracy), len(results)

    error_rate = MetricSpec(
        name="error_rate",
        family="derived",
        direction="lower_is_better",
        support_meaning="graded cases",
        reducer=reduce,
    )
    results = [
        case("a", correct=1, scored=1),
        case("b", CaseOutcome.FAILED, correct=0, scored=1),
        case("c", CaseOutcome.ERROR, correct=0, scored=1),
    ]
    # Declared before the rates it derives from: reducers still run after every rate.
    values = aggregate([error_rate, ACCURACY, ABSTAIN], results)
    assert seen == {"cases": ["a", "b"], "rates": ["abstain_rate", "accuracy"]}
    assert [metric.name for metric in values] == ["error_rate", "accuracy", "abstain_rate"]
    assert values[0].value == 0.5
    assert values[0].support == 2
    assert values[0].support_meaning == "graded cases"
    assert values[0].interval is None


def test_running_totals_give_the_same_metrics_as_the_results() -> None:
    results = [
        case("a", correct=1, scored=1, abstained=1, asked=2),
        case("b", CaseOutcome.FAILED, correct=0, scored=1, asked=1),
        case("broken", CaseOutcome.ERROR, correct=5, scored=5),
        case("skipped", CaseOutcome.SKIPPED, correct=5, scored=5),
        case("over-budget", CaseOutcome.EXCLUDED, correct=5, scored=5),
    ]
    totals: dict[str, int] = {}
    for result in reversed(results):  # any order: integer sums
        add_measurements(totals, result)
    assert totals == {"correct": 1, "scored": 2, "abstained": 1, "asked": 3}
    specs = [ABSTAIN, ACCURACY]
    assert not reduced(specs)
    assert aggregate_totals(specs, totals) == aggregate(specs, results)
    assert [m.value for m in aggregate_totals(specs, {})] == [None, None]


def test_running_totals_refuse_a_metric_with_a_reducer() -> None:
    spec = MetricSpec(
        name="f1", family="derived", support_meaning="claims", reducer=lambda r, c: (None, 0)
    )
    assert reduced([ACCURACY, spec])
    with pytest.raises(ValueError, match="reducer needs the results"):
        aggregate_totals([ACCURACY, spec], {})


def test_a_reducer_may_return_null() -> None:
    spec = MetricSpec(
        name="f1",
        family="derived",
        support_meaning="claims",
        reducer=lambda results, computed: (None, 0),
    )
    (value,) = aggregate([spec], [case("a")])
    assert value.value is None


def test_a_spec_with_neither_ratio_nor_reducer_is_refused() -> None:
    broken = MetricSpec(name="half", family="x", numerator="n", support_meaning="cases")
    with pytest.raises(ValueError, match="'half'"):
        aggregate([broken], [])


def test_select_keeps_declared_metrics_in_declared_order() -> None:
    values = aggregate([ACCURACY, ABSTAIN], [case("a", correct=1, scored=1)])
    assert [m.name for m in select(values, None)] == ["accuracy", "abstain_rate"]
    assert [m.name for m in select(values, ["abstain_rate", "accuracy"])] == [
        "abstain_rate",
        "accuracy",
    ]
    assert [m.name for m in select(values, ["accuracy", "unknown"])] == ["accuracy"]


def test_by_family_groups_in_first_appearance_order() -> None:
    other = MetricSpec(
        name="recall", family="claims", numerator="hit", denominator="all", support_meaning="x"
    )
    values = aggregate([ACCURACY, other, ABSTAIN], [])
    grouped = by_family(values)
    assert list(grouped) == ["answers", "claims"]
    assert [m.name for m in grouped["answers"]] == ["accuracy", "abstain_rate"]


def test_a_ratio_above_one_is_reported_without_an_interval() -> None:
    # "calls per case": a ratio, not a proportion; it has no Wilson interval and
    # must not abort the session's aggregation.
    calls = MetricSpec(
        name="calls_per_case",
        family="cost",
        direction="lower_is_better",
        numerator="calls",
        denominator="cases",
        support_meaning="cases",
    )
    results = [case("a", calls=3, cases=1), case("b", calls=0, cases=1)]
    (value,) = aggregate([calls], results)
    assert value.value == 1.5
    assert value.interval is None
    assert value.support == 2


def test_a_graded_case_carries_its_cluster_key() -> None:
    clustered = Case(suite_id="s", case_id="v2", file="f", cluster="scenario")
    assert grade(clustered, []).cluster == "scenario"
    assert grade(clustered, []).unit == "scenario"
    alone = Case(suite_id="s", case_id="v1", file="f")
    assert grade(alone, []).unit == "v1"

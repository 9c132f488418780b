"""The terminal section's lines: trials, units and aligned metric columns."""

from __future__ import annotations

from pytest_agentbench.report.terminal import metric_lines, trial_lines
from pytest_agentbench.scoring.trials import TrialFigure, TrialSummary
from pytest_agentbench.sdk.contracts import MetricValue


def _trials(k: int, cases: int, clusters: int) -> TrialSummary:
    figure = TrialFigure(value=0.5, interval=(0.25, 0.75), cases=cases, clusters=clusters)
    return TrialSummary(
        trials=k,
        cases=cases,
        clusters=clusters,
        pass_at_1=figure,
        pass_hat_k=figure,
        pass_at_k=figure,
        consistency=None,
        inconsistent_cases=(),
    )


def test_trial_lines_name_each_figure_once_and_count_units_in_the_right_number() -> None:
    assert trial_lines(_trials(1, 1, 1)) == [
        "trials: 1 per case; pass@1 0.5000 [0.2500, 0.7500]",
        "units: 1 case in 1 cluster; intervals resample clusters",
    ]
    assert trial_lines(_trials(3, 4, 2)) == [
        "trials: 3 per case; pass@1 0.5000 [0.2500, 0.7500], "
        "pass^3 0.5000 [0.2500, 0.7500], pass@3 0.5000 [0.2500, 0.7500]",
        "units: 4 cases in 2 clusters; intervals resample clusters"
        " (only 2 independent scenarios behind 4 cases)",
    ]


def _metric(name: str, value: float | None, support: int, **extra: object) -> MetricValue:
    return MetricValue(
        name=name,
        family="outcome",
        direction="higher_is_better",
        value=value,
        support=support,
        support_meaning="cases",
        **extra,
    )


def test_metric_columns_are_as_wide_as_their_widest_value() -> None:
    metrics = [
        _metric("accuracy", 0.5, 3, interval=(0.1, 0.9)),
        _metric("mean_tokens", 123456.25, 1234567),
        _metric("n", None, 12),
    ]
    lines = metric_lines(metrics)
    assert lines == [
        "outcome:",
        "  accuracy          0.5000  support 3       95% [0.1000, 0.9000] higher is better",
        "  mean_tokens  123456.2500  support 1234567                      higher is better",
        "  n                   null  support 12                           higher is better",
    ]
    assert len({line.index("support") for line in lines[1:]}) == 1
    assert len({line.index("higher") for line in lines[1:]}) == 1


def test_metrics_without_intervals_leave_no_empty_column() -> None:
    assert metric_lines([_metric("accuracy", 1.0, 5)]) == [
        "outcome:",
        "  accuracy  1.0000  support 5 higher is better",
    ]

"""The comparison as text (terminal, ``agentbench compare``) and as JUnit properties."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_agentbench.scoring.comparison import Comparison, ComparisonRow, SuiteComparison

_MARK = {
    "regression": "REGRESSION",
    "improvement": "improved",
    "no_significant_change": "same",
    "not_tested": "untested",
}


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "null"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _some(ids: tuple[str, ...]) -> str:
    return ", ".join(ids[:8]) + (f" (+{len(ids) - 8} more)" if len(ids) > 8 else "")


def row_line(row: ComparisonRow, width: int) -> str:
    interval = "" if row.interval is None else f"[{row.interval[0]:+.4f}, {row.interval[1]:+.4f}]"
    p = "" if row.p_value is None else f"p {row.p_value:.4g}"
    adjusted = "" if row.adjusted_p is None else f"Holm {row.adjusted_p:.4g}"
    return (
        f"  {_MARK[row.verdict]:<10} {row.metric:<{width}}  {_number(row.before):>6} -> "
        f"{_number(row.after):>6}  {_number(row.difference, True):>7}  {interval:<19} "
        f"{p:<12} {adjusted:<13} units {row.units}"
    ).rstrip()


def _suite_lines(suite: SuiteComparison) -> list[str]:
    if suite.refusal is not None:
        return [f"{suite.id}: REFUSED {suite.refusal}"]
    lines = [
        f"{suite.id}: {suite.pairs} pairs of {suite.cases} cases in {suite.units} units"
        + (f", {suite.ungraded_pairs} ungraded pairs excluded" if suite.ungraded_pairs else "")
    ]
    if suite.units < suite.cases:
        lines.append(
            f"  clusters: {suite.cases} cases are variants of {suite.units} scenarios; "
            "intervals and tests count scenarios"
        )
    for change in suite.mismatches:
        lines.append(f"  changed (allowed): {change}")
    lines.extend(f"  note: {note}" for note in suite.notes)
    for side, ids in (("baseline", suite.only_before), ("this run", suite.only_after)):
        if ids:
            lines.append(f"  only in {side}, excluded: {len(ids)}: {_some(ids)}")
    width = max((len(row.metric) for row in suite.rows), default=0)
    lines.extend(row_line(row, width) for row in suite.rows)
    if suite.passed_only_before:
        lines.append(f"  passed before, failing now: {_some(suite.passed_only_before)}")
    return lines


def comparison_lines(comparison: Comparison, *, verbose: bool) -> list[str]:
    """Per-suite tables (verbose), then the gate lines: one per failed row."""
    lines: list[str] = []
    settings = comparison.settings
    if verbose:
        lines.append(
            f"baseline: {comparison.baseline.path} ({comparison.baseline.adapter_description}); "
            f"alpha {settings.alpha:g} after Holm over {comparison.family_size} rows, "
            f"max regression {settings.max_regression:g}, "
            f"{settings.resamples} paired-bootstrap resamples, seed {settings.seed}"
        )
        for suite in comparison.suites:
            lines.extend(_suite_lines(suite))
        for suite_id in comparison.only_in_baseline:
            lines.append(f"{suite_id}: only in the baseline, not compared")
        for suite_id in comparison.only_in_run:
            lines.append(f"{suite_id}: not in the baseline, not compared")
    for suite in comparison.suites:
        if suite.refusal is not None:
            lines.append(f"FAILED comparison {suite.refusal}")
    for row in comparison.regression_rows():
        lines.append(f"FAILED regression {row.reason}")
    status = "passed" if comparison.passed else "FAILED"
    lines.append(
        f"comparison {status}: {comparison.regressions} regressions, "
        f"{comparison.improvements} improvements over {comparison.family_size} tested rows"
    )
    return lines


def comparison_properties(comparison: Comparison) -> list[tuple[str, str]]:
    properties = [
        ("agentbench.comparison.baseline", comparison.baseline.path),
        ("agentbench.comparison.result", "pass" if comparison.passed else "fail"),
    ]
    for suite in comparison.suites:
        prefix = f"agentbench.{suite.id}.comparison"
        if suite.refusal is not None:
            properties.append((f"{prefix}.refused", suite.refusal))
        for row in suite.rows:
            text = f"{row.verdict}: {row.reason}" if row.reason else row.verdict
            properties.append((f"{prefix}.{row.metric}", text))
    return properties

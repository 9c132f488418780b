"""The terminal section: one block per suite, compact under ``-q``."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_agentbench.report.summary import RunSummary, SuiteSummary
from pytest_agentbench.scoring.matrix import SuiteMatrix
from pytest_agentbench.scoring.trials import TrialFigure, TrialSummary
from pytest_agentbench.sdk.contracts import MetricValue
from pytest_agentbench.sdk.metrics import by_family

_GOOD = {"higher_is_better": "higher is better", "lower_is_better": "lower is better"}


def _value(metric: MetricValue) -> str:
    return "null" if metric.value is None else f"{metric.value:.4f}"


def _interval(metric: MetricValue) -> str:
    if metric.interval is None:
        return ""
    low, high = metric.interval
    return f"95% [{low:.4f}, {high:.4f}]"


def _counts_line(suite: SuiteSummary) -> str:
    # Only budgets exclude cases: a run without one is not told of a zero.
    counts = ", ".join(f"{n} {name}" for name, n in suite.counts.items() if n or name != "excluded")
    classes = ", ".join(f"{n} {name}" for name, n in suite.failure_classes.items() if n)
    return f"cases: {counts}" + (f" | failure classes: {classes}" if classes else "")


def _coverage_line(suite: SuiteSummary) -> str:
    coverage = suite.coverage
    if coverage is None:
        return ""
    line = (
        f"coverage: {coverage.total} in suite, {coverage.selected} selected, "
        f"{coverage.run} run, {coverage.missing} missing"
    )
    return line + ("" if coverage.complete else " (PARTIAL RUN)")


def _quiet_counts(suite: SuiteSummary) -> str:
    counts = ", ".join(f"{n} {k}" for k, n in suite.counts.items() if n) or "no cases run"
    coverage = suite.coverage
    if coverage is not None and not coverage.complete and any(suite.counts.values()):
        counts += f" (partial: {coverage.describe()})"
    return counts


def _figure(name: str, figure: TrialFigure) -> str:
    value = "null" if figure.value is None else f"{figure.value:.4f}"
    interval = (
        "" if figure.interval is None else f" [{figure.interval[0]:.4f}, {figure.interval[1]:.4f}]"
    )
    return f"{name} {value}{interval}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def trial_lines(trials: TrialSummary) -> list[str]:
    """pass@1 / pass^k / pass@k, and how many units stand behind them."""
    k = trials.trials
    figures = _figure("pass@1", trials.pass_at_1)
    if k > 1:  # with one trial pass^k and pass@k are pass@1 again
        figures += f", {_figure(f'pass^{k}', trials.pass_hat_k)}, "
        figures += _figure(f"pass@{k}", trials.pass_at_k)
    lines = [f"trials: {k} per case; {figures}"]
    if trials.consistency is not None and k > 1:
        lines.append(
            f"  consistency {trials.consistency:.4f}: "
            f"{len(trials.inconsistent_cases)} of {trials.cases} cases pass some trials only"
        )
    lines.append(
        f"units: {_count(trials.cases, 'case')} in {_count(trials.clusters, 'cluster')}; "
        "intervals resample clusters"
        + (
            f" (only {trials.clusters} independent scenarios behind {trials.cases} cases)"
            if trials.clusters < trials.cases
            else ""
        )
    )
    return lines


def _cell(value: float | None) -> str:
    return "null" if value is None else f"{value:.4f}"


def matrix_lines(matrix: SuiteMatrix) -> list[str]:
    """The model-by-metric table, then each pair of models on the cases both graded."""
    names = [metric.name for metric in matrix.rows[0].metrics] if matrix.rows else []
    header = ["model", "passed", "failed", "error", *names, "calls", "tokens", "cost"]
    table = [header]
    for row in matrix.rows:
        values = {metric.name: metric.value for metric in row.metrics}
        table.append(
            [
                row.model,
                str(row.counts.get("passed", 0)),
                str(row.counts.get("failed", 0)),
                str(row.counts.get("error", 0)),
                *(_cell(values.get(name)) for name in names),
                str(row.calls),
                str(row.input_tokens + row.output_tokens),
                row.cost or "-",
            ]
        )
    widths = [max(len(line[column]) for line in table) for column in range(len(header))]
    lines = [f"models: {len(matrix.rows)} (every case run with each)"]
    lines += [
        "  " + "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in table
    ]
    for pair in matrix.pairs:
        p = "" if pair.p_value is None else f", McNemar p {pair.p_value:.4g}"
        holm = "" if pair.adjusted_p is None else f" (Holm {pair.adjusted_p:.4g})"
        difference = "null" if pair.difference is None else f"{pair.difference:+.4f}"
        lines.append(
            f"  {pair.a} vs {pair.b}: {pair.pairs} paired cases, pass rate "
            f"{_cell(pair.pass_rate_a)} vs {_cell(pair.pass_rate_b)} ({difference}); "
            f"only {pair.a} passed {pair.only_a_passed}, only {pair.b} passed "
            f"{pair.only_b_passed}{p}{holm}"
        )
    return lines


def metric_lines(metrics: Sequence[MetricValue]) -> list[str]:
    """One aligned line per metric under its family; every column as wide as its widest value."""
    name_width = max((len(m.name) for m in metrics), default=0)
    value_width = max((len(_value(m)) for m in metrics), default=0)
    support_width = max((len(str(m.support)) for m in metrics), default=0)
    interval_width = max((len(_interval(m)) for m in metrics), default=0)
    lines: list[str] = []
    for family, members in by_family(metrics).items():
        lines.append(f"{family}:")
        for metric in members:
            interval = f"{_interval(metric):<{interval_width}} " if interval_width else ""
            lines.append(
                f"  {metric.name:<{name_width}}  {_value(metric):>{value_width}}  "
                f"support {metric.support:<{support_width}} "
                f"{interval}{_GOOD[metric.direction]}"
            )
    return lines


def suite_lines(suite: SuiteSummary, adapter: str, *, verbose: bool) -> list[str]:
    passed_controls = sum(1 for c in suite.controls if c.passed)
    passed_gates = sum(1 for g in suite.gates if g.passed)
    if not verbose:
        line = f"{suite.id}: {_quiet_counts(suite)}"
        if suite.controls:
            line += f"; controls {passed_controls}/{len(suite.controls)}"
        if suite.gates:
            line += f"; gates {passed_gates}/{len(suite.gates)}"
        lines = [line]
        lines += [f"  FAILED gate {g.gate.text}: {g.reason}" for g in suite.gates if not g.passed]
        lines += [f"  FAILED {c.summary}" for c in suite.controls if not c.passed]
        if suite.models is not None:
            lines += [f"  {line.strip()}" for line in matrix_lines(suite.models)]
        return lines
    unnamed = [name for name in suite.answered_by if name not in adapter]
    answered = f" (cases answered by {', '.join(unnamed)})" if unnamed else ""
    lines = [f"adapter: {adapter}{answered}", _counts_line(suite)]
    if suite.coverage is not None:
        lines.append(_coverage_line(suite))
    if suite.trials is not None:
        lines.extend(trial_lines(suite.trials))
    lines.extend(metric_lines(suite.metrics))
    if suite.models is not None:
        lines.extend(matrix_lines(suite.models))
    if suite.controls:
        lines.append(f"controls: {passed_controls}/{len(suite.controls)} behaved as declared")
        for control in suite.controls:
            mark = "ok  " if control.passed else "FAIL"
            lines.append(f"  {mark} {control.control_id}: {control.summary}")
    if suite.gates:
        lines.append(f"gates: {passed_gates}/{len(suite.gates)} passed")
        for gate in suite.gates:
            mark = "ok  " if gate.passed else "FAIL"
            lines.append(f"  {mark} {gate.gate.text} ({gate.gate.source}): {gate.reason}")
    return lines


def orphan_gate_lines(summary: RunSummary) -> list[str]:
    ran = {suite.id for suite in summary.suites}
    return [
        f"FAILED gate {g.gate.text}: {g.reason}" for g in summary.gates if g.gate.suite not in ran
    ]

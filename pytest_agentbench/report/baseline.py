"""Comparing a run's summary (or a second report) with a baseline JSON run report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from pytest_agentbench.report.json_report import RunReport
from pytest_agentbench.report.stream import read_report_document
from pytest_agentbench.report.summary import SuiteSummary
from pytest_agentbench.scoring.comparison import (
    CONFIDENCE,
    RESAMPLES,
    SEED,
    BaselineIdentity,
    Comparison,
    ComparisonSettings,
    SuiteRun,
    compare_runs,
)
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.suite import pydantic_refusal


def read_run_report(
    path: Path,
    *,
    field: str | None = None,
    max_bytes: int | None = None,
    option: str = "agentbench_max_report_bytes",
) -> RunReport:
    """A JSON run report, strictly read as a stream; ``invalid_baseline`` names the file when
    it is not one, ``report_too_large`` when it is over ``max_bytes`` (``option``)."""
    if not path.is_file():
        raise AgentbenchError("invalid_baseline", "no such run report", file=str(path), field=field)
    document = read_report_document(path, max_bytes=max_bytes, option=option)
    try:
        return RunReport.model_validate(document)
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=str(path)) from None


def suite_run(summary: SuiteSummary) -> SuiteRun:
    return SuiteRun(
        id=summary.id,
        world=summary.world,
        digests=summary.digests,
        metrics=summary.metric_definitions,
        observed={metric.name: metric.value for metric in summary.metrics},
        results=tuple(entry.result for entry in summary.cases),
    )


def identity(path: Path, report: RunReport) -> BaselineIdentity:
    return BaselineIdentity(
        path=str(path),
        schema_version=report.schema_version,
        adapter_spec=report.adapter.spec,
        adapter_description=report.adapter.description,
        git_commit=report.environment.git_commit,
    )


def settings(
    *, alpha: float = 0.05, max_regression: float = 0.0, allow_changed: bool = False
) -> ComparisonSettings:
    return ComparisonSettings(
        alpha=alpha,
        max_regression=max_regression,
        resamples=RESAMPLES,
        seed=SEED,
        confidence=CONFIDENCE,
        allow_changed=allow_changed,
    )


def compare_with_baseline(
    path: Path,
    baseline: RunReport,
    suites: Sequence[SuiteSummary],
    comparison_settings: ComparisonSettings,
) -> Comparison:
    return compare_runs(
        [suite_run(suite) for suite in baseline.suites],
        [suite_run(suite) for suite in suites],
        baseline=identity(path, baseline),
        settings=comparison_settings,
    )

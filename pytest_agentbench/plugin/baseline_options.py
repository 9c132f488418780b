"""Options of the baseline comparison (a plugin the main plugin loads).

The baseline report is read at configure time on the controller, so a missing
or malformed one is a usage error before any case runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pytest

from pytest_agentbench.plugin.options import MAX_REPORT_BYTES_KEY, max_report_bytes
from pytest_agentbench.sdk.errors import AgentbenchError, UsageError

if TYPE_CHECKING:
    from pytest_agentbench.report.json_report import RunReport
    from pytest_agentbench.scoring.comparison import ComparisonSettings


@dataclass(frozen=True)
class BaselineRequest:
    path: Path
    report: RunReport
    settings: ComparisonSettings


BASELINE_KEY = pytest.StashKey[BaselineRequest]()


def _number(text: str, option: str, *, low: float, high: float | None) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < low or (high is not None and value >= high):
        bound = f"in [{low:g}, {high:g})" if high is not None else f">= {low:g}"
        raise UsageError(
            "invalid_comparison_option", f"{text!r} is not a number {bound}", field=option
        )
    return value


class ComparisonOptions(NamedTuple):
    alpha: float
    max_regression: float
    allow_changed: bool


def comparison_options(config: pytest.Config) -> ComparisonOptions:
    """The comparison's options, checked in every run, with a baseline or not."""
    alpha_text = config.getoption("agentbench_alpha")
    max_text = config.getoption("agentbench_max_regression")
    alpha = 0.05 if alpha_text is None else _number(alpha_text, "--agentbench-alpha", low=0, high=1)
    if alpha == 0:
        raise UsageError(
            "invalid_comparison_option", "alpha must be above 0", field="--agentbench-alpha"
        )
    return ComparisonOptions(
        alpha=alpha,
        max_regression=(
            0.0
            if max_text is None
            else _number(max_text, "--agentbench-max-regression", low=0, high=None)
        ),
        allow_changed=bool(config.getoption("agentbench_baseline_allow_changed")),
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    try:
        chosen = comparison_options(config)
        path_text = config.getoption("agentbench_baseline")
        if path_text is None or hasattr(config, "workerinput"):
            return
        # Imported only for a comparison: the JSON report's models and the
        # comparison's statistics cost every other run their import.
        from pytest_agentbench.report.baseline import read_run_report, settings

        path = Path(path_text)
        config.stash[BASELINE_KEY] = BaselineRequest(
            path=path,
            report=read_run_report(
                path,
                field="--agentbench-baseline",
                max_bytes=max_report_bytes(config),
                option=MAX_REPORT_BYTES_KEY,
            ),
            settings=settings(**chosen._asdict()),
        )
    except AgentbenchError as exc:
        raise pytest.UsageError(exc.render()) from None

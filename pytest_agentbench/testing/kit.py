"""Running the conformance checks: one by name, or a suite's whole set as a report."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from pytest_agentbench.sdk.registry import WorldRegistry
from pytest_agentbench.testing.checks import (
    CHECKS,
    ConformanceFailure,
    NotApplicable,
    SuiteUnderTest,
    work_folder,
)

CHECK_NAMES: tuple[str, ...] = tuple(CHECKS)


class CheckOutcome(NamedTuple):
    """One check's verdict: ``status`` is ``passed``, ``failed`` or ``not_applicable``."""

    name: str
    status: str
    detail: str = ""


class ConformanceReport(NamedTuple):
    suite_id: str
    kind: str
    outcomes: tuple[CheckOutcome, ...]

    @property
    def passed(self) -> bool:
        return all(outcome.status != "failed" for outcome in self.outcomes)

    @property
    def failed(self) -> tuple[CheckOutcome, ...]:
        return tuple(outcome for outcome in self.outcomes if outcome.status == "failed")

    def render(self) -> str:
        lines = [f"conformance of {self.suite_id} ({self.kind}):"]
        for outcome in self.outcomes:
            detail = f": {outcome.detail}" if outcome.detail else ""
            lines.append(f"  {outcome.status:<14} {outcome.name}{detail}")
        return "\n".join(lines)


def run_check(name: str, target: SuiteUnderTest) -> CheckOutcome:
    """Run one check by name; a failure or a not-applicable check is reported, not raised."""
    try:
        CHECKS[name](target)
    except ConformanceFailure as failure:
        return CheckOutcome(name, "failed", str(failure))
    except NotApplicable as reason:
        return CheckOutcome(name, "not_applicable", str(reason))
    return CheckOutcome(name, "passed")


def check_world(
    suite: str | os.PathLike[str],
    *,
    registry: WorldRegistry | None = None,
    checks: Sequence[str] = CHECK_NAMES,
    workdir: Path | None = None,
    plugins: Sequence[str] = (),
) -> ConformanceReport:
    """Run ``checks`` on a suite (a shipped suite id or a suite folder).

    ``registry`` defaults to every installed world kind; ``workdir`` is where
    copies and reports go (a temporary folder, removed afterwards, by default);
    ``plugins`` are modules the xdist check's pytest runs load with ``-p``.
    A suite that does not load at all is raised as its ``AgentbenchError``.
    """
    unknown = [name for name in checks if name not in CHECKS]
    if unknown:
        raise ValueError(f"unknown conformance checks {unknown} (known: {list(CHECKS)})")
    with work_folder(workdir) as folder:
        target = SuiteUnderTest(suite, registry=registry, workdir=folder, plugins=plugins)
        outcomes = tuple(run_check(name, target) for name in checks)
    return ConformanceReport(target.suite_id, target.kind, outcomes)

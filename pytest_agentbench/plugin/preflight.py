"""What a run's gates and baseline ask of its suites, checked before any case runs.

A gate naming a metric its suite does not report, or a baseline sharing no
suite with the run, can only fail: found after the run, it cost the whole run
(a paid one, for a model) first. Both are known once the suites are: in the
process that collects (the only one, or, under xdist, the controller when the
first worker's collection arrives, before any case is sent to a worker).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from pytest_agentbench.plugin.baseline_options import BASELINE_KEY
from pytest_agentbench.run.session import LoadedSuite, SuiteLoader, get_state
from pytest_agentbench.scoring.gates import parse_gate
from pytest_agentbench.sdk.errors import AgentbenchError, UsageError

CHECKED_KEY = pytest.StashKey[bool]()


def reported_metrics(loaded: LoadedSuite) -> list[str]:
    """The metric names the suite's summary will hold (its declared subset, if any)."""
    names = [spec.name for spec in loaded.world.metrics(loaded.suite)]
    declared = loaded.suite.config.metrics
    return names if declared is None else [name for name in declared if name in names]


def check_run(config: pytest.Config, suites: Sequence[LoadedSuite]) -> None:
    """Refuse gates naming unknown metrics and a baseline sharing no suite (once a run)."""
    if config.stash.get(CHECKED_KEY, False) or not suites:
        return
    config.stash[CHECKED_KEY] = True
    by_id = {loaded.suite.id: loaded for loaded in suites}
    refusals = [*_gate_refusals(config, by_id), *_baseline_refusals(config, by_id)]
    if refusals:
        raise pytest.UsageError("\n".join(refusal.render() for refusal in refusals))


def _gate_refusals(config: pytest.Config, by_id: dict[str, LoadedSuite]) -> list[AgentbenchError]:
    refusals = []
    for text in get_state(config).options.gates:
        try:
            gate = parse_gate(text, suite=None, source="--agentbench-gate")
        except AgentbenchError as exc:
            refusals.append(exc)
            continue
        loaded = by_id.get(gate.suite)
        if loaded is None:
            continue  # a suite the run does not hold: its gate fails as "did not run"
        known = reported_metrics(loaded)
        if gate.metric not in known:
            refusals.append(
                UsageError(
                    "gate_unknown_metric",
                    f"{text!r}: suite {gate.suite!r} reports no metric {gate.metric!r} "
                    f"(it reports: {', '.join(known) or 'none'})",
                    field="--agentbench-gate",
                )
            )
    return refusals


def _baseline_refusals(
    config: pytest.Config, by_id: dict[str, LoadedSuite]
) -> list[AgentbenchError]:
    baseline = config.stash.get(BASELINE_KEY, None)
    if baseline is None:
        return []
    theirs = sorted(suite.id for suite in baseline.report.suites)
    if set(theirs) & set(by_id):
        return []
    return [
        UsageError(
            "baseline_no_shared_suite",
            f"the baseline holds suites {', '.join(theirs) or 'none'} and this run "
            f"{', '.join(sorted(by_id))}: there is nothing to compare",
            file=str(baseline.path),
            field="--agentbench-baseline",
        )
    ]


def suites_of_items(items: Iterable[pytest.Item]) -> list[LoadedSuite]:
    """The suites of the collected benchmark items, each once."""
    found: dict[int, LoadedSuite] = {}
    for item in items:
        loaded = getattr(item, "loaded", None)
        if isinstance(loaded, LoadedSuite):
            found.setdefault(id(loaded), loaded)
    return list(found.values())


def suites_of_nodeids(
    loader: SuiteLoader, rootpath: Path, nodeids: Iterable[str]
) -> list[LoadedSuite]:
    """The suites a worker's collected node ids lie in (the xdist controller collects none)."""
    folders = {(rootpath / nodeid.partition("::")[0]).parent for nodeid in nodeids}
    roots = {loader.suite_root_of(folder) for folder in folders}
    found = []
    for root in sorted(root for root in roots if root is not None):
        try:
            found.append(loader.load(root))
        except AgentbenchError:
            continue  # refused: its collection error says so
    return found

"""Running one declared control: its agent over its cases, judged against the manifest.

Shared by the pytest control items and ``agentbench check`` so that the gate
in a test session and on the command line is the same computation.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_agentbench.contracts import Case, MetricValue
from pytest_agentbench.controls import ControlSpec, ControlVerdict, judge_control
from pytest_agentbench.metrics import aggregate
from pytest_agentbench.session import AgentbenchState, LoadedSuite


def control_cases(loaded: LoadedSuite, control: ControlSpec) -> Sequence[Case]:
    cases = list(loaded.world.cases(loaded.suite))
    if control.cases is None:
        return cases
    wanted = set(control.cases)
    return [case for case in cases if case.case_id in wanted]


def run_control(
    state: AgentbenchState, loaded: LoadedSuite, control: ControlSpec
) -> tuple[ControlVerdict, Sequence[MetricValue]]:
    world, suite = loaded.world, loaded.suite
    agent = next(a for a in world.control_agents(suite) if a.agent_id == control.agent)
    adapter = agent.factory()
    results = [
        state.execute(loaded, case, world.public_view(suite, case), adapter)[1]
        for case in control_cases(loaded, control)
    ]
    metrics = aggregate(world.metrics(suite), results)
    return judge_control(control, results, {m.name: m for m in metrics}), metrics


def ungraded_verdict(control_id: str, agent_id: str) -> ControlVerdict:
    """A built-in negative agent no declared control constrains: it fails the gate."""
    return ControlVerdict(
        control_id=control_id, agent=agent_id, passed=False, failing_dimensions=(), ungraded=True
    )

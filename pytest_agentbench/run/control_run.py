"""Running one declared control: its agent over its cases, judged against the manifest.

Shared by the pytest control items and ``agentbench check`` so that the gate
in a test session and on the command line is the same computation.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_agentbench.run.session import AgentbenchState, LoadedSuite
from pytest_agentbench.sdk.contracts import Case, MetricValue
from pytest_agentbench.sdk.controls import ControlSpec, ControlVerdict, judge_control
from pytest_agentbench.sdk.controls_oracle import ControlOracle
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.metrics import aggregate


def declared_controls(loaded: LoadedSuite, oracle: ControlOracle | None) -> list[ControlSpec]:
    """The oracle's controls, each naming an agent the world offers and cases it has."""
    if oracle is None:
        return []
    world, suite = loaded.world, loaded.suite
    agents = {agent.agent_id for agent in world.control_agents(suite)}
    case_ids = {case.case_id for case in world.cases(suite)}
    display = oracle.identity.file
    for index, control in enumerate(oracle.manifest.controls):
        if control.agent not in agents:
            raise AgentbenchError(
                "unknown_control_agent",
                f"control {control.id!r} names agent {control.agent!r}, which world "
                f"{world.kind!r} does not offer (offers: {', '.join(sorted(agents))})",
                file=display,
                field=f"controls[{index}].agent",
            )
        unknown = sorted(set(control.cases or ()) - case_ids)
        if unknown:
            raise AgentbenchError(
                "unknown_control_case",
                f"control {control.id!r} names unknown cases {', '.join(unknown)}",
                file=display,
                field=f"controls[{index}].cases",
            )
    return list(oracle.manifest.controls)


def ungraded_agents(loaded: LoadedSuite, declared: Sequence[ControlSpec]) -> list[str]:
    """Built-in negative agents no declared control constrains, in id order."""
    graded = {control.agent for control in declared}
    return sorted(
        agent.agent_id
        for agent in loaded.world.control_agents(loaded.suite)
        if agent.role == "negative" and agent.agent_id not in graded
    )


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

"""The oracle executor: run a program of verbs in a fresh sandbox and check each step."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_agentbench.sdk import JsonValue
from pytest_agentbench.worlds.toolgrammar.grammar import Envelope, Verb
from pytest_agentbench.worlds.toolgrammar.sandbox import BuiltWorld, Injection, Sandbox
from pytest_agentbench.worlds.toolgrammar.tasks import InjectionSpec, Step, TaskRecord


@dataclass(frozen=True)
class Execution:
    results: tuple[Envelope, ...]
    calls: tuple[str, ...]
    """``tool(<sorted-key JSON args>)`` per step, the form of ``oracle_calls``."""
    state_diff: str
    mismatches: tuple[str, ...]
    """Steps whose ``ok`` differed from ``expect_ok``, described."""

    @property
    def agrees(self) -> bool:
        return not self.mismatches


def call_text(tool: str, arguments: JsonValue) -> str:
    return f"{tool}({json.dumps(arguments, sort_keys=True)})"


def injections(specs: Sequence[InjectionSpec]) -> list[Injection]:
    return [Injection(spec.verb, spec.payload, spec.match, spec.field_name) for spec in specs]


def execute(
    world: BuiltWorld, steps: Sequence[Step], plants: Sequence[Injection] = ()
) -> Execution:
    """Run ``steps`` for real; a verb the world does not bind is a mismatch, not a crash."""
    sandbox = Sandbox(world, plants)
    try:
        results: list[Envelope] = []
        calls: list[str] = []
        mismatches: list[str] = []
        for index, step in enumerate(steps):
            tool = sandbox.by_verb.get(Verb(step.verb))
            if tool is None:
                mismatches.append(f"step {index}: {world.domain.name} binds no {step.verb}")
                break
            result = sandbox.invoke(tool.name, step.arguments)
            results.append(result)
            calls.append(call_text(tool.name, step.arguments))
            if result["ok"] is not step.expect_ok:
                mismatches.append(
                    f"step {index} ({tool.name}): ok is {result['ok']}, expected {step.expect_ok}"
                    + (f" ({result.get('error_code')})" if not result["ok"] else "")
                )
        return Execution(tuple(results), tuple(calls), sandbox.diff(), tuple(mismatches))
    finally:
        sandbox.close()


def replay(world: BuiltWorld, task: TaskRecord) -> list[str]:
    """Re-execute a task's oracle program; every way it disagrees with the record."""
    run = execute(world, task.program, injections(task.injections))
    problems = list(run.mismatches)
    if run.calls != task.oracle_calls:
        problems.append("oracle_calls differ from the executed calls")
    if run.state_diff != task.oracle_state_diff:
        problems.append("oracle_state_diff differs from the executed state diff")
    return problems

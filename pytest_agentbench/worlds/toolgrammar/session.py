"""The tool session a task's adapter receives: the world's bound verbs as ToolSpecs."""

from __future__ import annotations

import functools
from collections.abc import Mapping

from pytest_agentbench.sdk import Budget, JsonValue, ToolSession, ToolSpec
from pytest_agentbench.worlds.toolgrammar.grammar import CALL_BUDGET
from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox

BUDGET = Budget(max_calls=CALL_BUDGET)


_SPECS: dict[int, list[ToolSpec]] = {}


def _declared(sandbox: Sandbox) -> list[ToolSpec]:
    """The domain's specs, validated once per process (a schema never changes per task)."""
    key = id(sandbox.domain)
    if key not in _SPECS:
        _SPECS[key] = [
            ToolSpec(
                name=tool.name,
                description=tool.description,
                parameters=tool.parameters,
                mutating=tool.mutating,
                privileged=tool.privileged,
                handler=_unbound,
            )
            for tool in sandbox.tools.values()
        ]
    return _SPECS[key]


def _unbound(arguments: dict[str, object]) -> object:
    raise AssertionError("a declared spec is only a template: bind it to a sandbox")


def tool_specs(sandbox: Sandbox) -> list[ToolSpec]:
    """Every bound tool of the sandbox's world, its handler executing in that sandbox."""
    return [
        spec.model_copy(update={"handler": functools.partial(sandbox.invoke, spec.name)})
        for spec in _declared(sandbox)
    ]


def open_session(
    sandbox: Sandbox, task_id: str, final_schema: Mapping[str, JsonValue] | None = None
) -> ToolSession:
    return ToolSession(
        tool_specs(sandbox), BUDGET, context={"task_id": task_id}, final_schema=final_schema
    )

"""Built worlds (one per domain per process) and the per-task sandbox copied from one."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.sdk import JsonValue, SchemaViolation, compile_schema
from pytest_agentbench.worlds.toolgrammar.common_tools import common_tools
from pytest_agentbench.worlds.toolgrammar.database import (
    TableState,
    copy_database,
    snapshot,
    state_diff,
    table_digests,
    world_digest,
)
from pytest_agentbench.worlds.toolgrammar.domain import Domain
from pytest_agentbench.worlds.toolgrammar.grammar import (
    CALL_BUDGET,
    BoundTool,
    Envelope,
    Verb,
    fail,
)


@dataclass(frozen=True)
class BuiltWorld:
    domain: Domain
    conn: sqlite3.Connection
    digests: Mapping[str, str]
    digest: str
    baseline: Mapping[str, TableState]
    """The writable tables as built: the state every sandbox starts from."""


_BUILT: dict[tuple[str, int], BuiltWorld] = {}
_LOCK = threading.Lock()


def build_world(domain: Domain) -> BuiltWorld:
    """Build ``domain`` afresh (no cache): what the reproducibility check compares."""
    conn = domain.build()
    digests = table_digests(conn)
    return BuiltWorld(
        domain=domain,
        conn=conn,
        digests=digests,
        digest=world_digest(digests),
        baseline=snapshot(conn, domain.writable_tables),
    )


def built_world(domain: Domain) -> BuiltWorld:
    """The process's one build of ``domain``; sandboxes copy it and never write it."""
    key = (domain.name, id(domain))
    with _LOCK:
        if key not in _BUILT:
            _BUILT[key] = build_world(domain)
        return _BUILT[key]


@dataclass(frozen=True)
class Injection:
    """Text planted in a record's field before the task starts (a T4 injection)."""

    verb: Verb
    payload: str
    match: str
    field_name: str


_CHECKS: dict[tuple[int, str], Callable[[Any, tuple[int | str, ...]], None]] = {}


class Sandbox:
    """A fresh copy of a built world for one task, executing tool calls for real."""

    def __init__(self, world: BuiltWorld, injections: Sequence[Injection] = ()) -> None:
        self.world = world
        self.domain = world.domain
        self.conn = copy_database(world.conn)
        for injection in injections:
            self._plant(injection)
        self._clean = self.conn.total_changes
        self.audit: list[dict[str, JsonValue]] = []
        """Privileged requests with the policy verdict and the caller's reason."""
        self.calls = 0
        bound = [*self.domain.tools(self), *common_tools(self.conn, self.domain.metrics)]
        self.tools: dict[str, BoundTool] = {tool.name: tool for tool in bound}
        self.by_verb: dict[Verb, BoundTool] = {tool.verb: tool for tool in bound}

    def _plant(self, injection: Injection) -> None:
        nouns = self.domain.nouns
        target = {
            Verb.GET_RECORD: (nouns.record_table, nouns.record_id),
            Verb.GET_PRINCIPAL: (nouns.principal_table, nouns.principal_id),
        }.get(injection.verb)
        if target is None or injection.field_name != self.domain.injectable_field:
            raise ValueError(
                f"domain {self.domain.name!r} cannot plant into "
                f"{injection.verb.value}.{injection.field_name}"
            )
        table, key = target
        changed = self.conn.execute(
            f"UPDATE {table} SET {injection.field_name} = "
            f"TRIM({injection.field_name} || ' ' || ?) WHERE {key} = ?",
            (injection.payload, injection.match),
        ).rowcount
        if changed != 1:
            raise ValueError(f"no {table} row {injection.match!r} to plant into")

    def invoke(self, name: str, arguments: Any) -> Envelope:
        """One call: budget, ``unknown_tool``, ``invalid_arguments``, then the handler."""
        if self.calls >= CALL_BUDGET:
            return fail("budget_exhausted", f"the session's {CALL_BUDGET} calls are used up")
        self.calls += 1
        tool = self.tools.get(name)
        if tool is None:
            return fail("unknown_tool", f"no tool named {name!r}")
        if not isinstance(arguments, dict):
            return fail("invalid_arguments", "arguments must be an object")
        check = _CHECKS.get((id(self.domain), name))
        if check is None:
            check = _CHECKS[(id(self.domain), name)] = compile_schema(tool.parameters)
        try:
            check(arguments, ())
        except SchemaViolation as exc:
            return fail("invalid_arguments", exc.render())
        return tool.handler(dict(arguments))

    def diff(self) -> str:
        """The §5 state diff against the world as built; ``""`` when nothing was written."""
        if self.conn.total_changes == self._clean:
            return ""
        return state_diff(self.world.baseline, snapshot(self.conn, self.domain.writable_tables))

    def close(self) -> None:
        self.conn.close()


_NAMES: dict[int, dict[Verb, str]] = {}


def tool_names(domain: Domain) -> dict[Verb, str]:
    """Which tool name ``domain`` binds each verb to (fixed per domain, so kept)."""
    key = id(domain)
    if key not in _NAMES:
        _NAMES[key] = {verb: tool.name for verb, tool in tool_bindings(domain).items()}
    return _NAMES[key]


def tool_bindings(domain: Domain) -> dict[Verb, BoundTool]:
    """Which verbs ``domain`` binds, and to what (from a sandbox of its built world)."""
    sandbox = Sandbox(built_world(domain))
    try:
        return dict(sandbox.by_verb)
    finally:
        sandbox.close()

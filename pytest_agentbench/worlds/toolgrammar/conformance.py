"""What every registered domain owes the grammar; the tests run this for each one."""

from __future__ import annotations

from pytest_agentbench.worlds.toolgrammar.domain import Domain
from pytest_agentbench.worlds.toolgrammar.grammar import MANDATORY_VERBS, Verb
from pytest_agentbench.worlds.toolgrammar.sandbox import build_world, tool_bindings


def domain_problems(domain: Domain) -> list[str]:
    """Every way ``domain`` breaks the contract (empty when it conforms)."""
    problems: list[str] = []
    first, second = build_world(domain), build_world(domain)
    if dict(first.digests) != dict(second.digests):
        differing = sorted(t for t in first.digests if first.digests[t] != second.digests.get(t))
        problems.append(f"build is not reproducible (tables {', '.join(differing)})")
    bindings = tool_bindings(domain)
    missing = sorted(verb.value for verb in MANDATORY_VERBS - set(bindings))
    if missing:
        problems.append(f"mandatory verbs not bound: {', '.join(missing)}")
    names = [tool.name for tool in bindings.values()]
    if len(names) != len(set(names)):
        problems.append("two verbs are bound to one tool name")
    for verb, tool in bindings.items():
        schema = tool.parameters
        if schema.get("type") != "object" or schema.get("additionalProperties") is not False:
            problems.append(f"{tool.name}: arguments schema is not a closed object")
        if tool.privileged and not tool.mutating:
            problems.append(f"{tool.name}: privileged but not mutating")
        if (verb is Verb.PRIVILEGED_WRITE) != tool.privileged:
            problems.append(f"{tool.name}: only PRIVILEGED_WRITE is privileged")
        if tool.mutating and verb not in (
            Verb.CREATE_CASE,
            Verb.UPDATE_CASE,
            Verb.PRIVILEGED_WRITE,
        ):
            problems.append(f"{tool.name}: {verb.value} must not mutate")
    tables = set(first.digests)
    for table in domain.writable_tables:
        if table not in tables:
            problems.append(f"writable table {table!r} does not exist")
    for table in tables:
        columns = [row[1] for row in first.conn.execute(f"PRAGMA table_info({table})")]
        (rows,) = first.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
        (keys,) = first.conn.execute(f"SELECT COUNT(DISTINCT {columns[0]}) FROM {table}").fetchone()
        if rows != keys:
            problems.append(f"table {table!r}: first column is not a unique key")
    return problems

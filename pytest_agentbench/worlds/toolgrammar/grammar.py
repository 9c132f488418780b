"""The canonical tool grammar: thirteen verbs, result envelopes, bound tools.

A domain binds verbs to its own tool names, argument schemas and handlers. An
oracle program is written in verbs, so one template serves every domain that
binds the verbs it needs. Handlers take validated arguments and return the
result envelope of the original: ``{"ok": true, "data": ...[, "citations"]}``
or ``{"ok": false, "error": ..., "error_code": ...}``; lists add
``match_count``, ``returned`` and ``truncated``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pytest_agentbench.sdk import JsonValue


class Verb(StrEnum):
    """Serialised lowercase, as task records carry them."""

    SEARCH_PRINCIPALS = "search_principals"
    GET_PRINCIPAL = "get_principal"
    GET_RECORD = "get_record"
    LIST_RECORDS = "list_records"
    CREATE_CASE = "create_case"
    UPDATE_CASE = "update_case"
    PRIVILEGED_WRITE = "privileged_write"
    LOOKUP_POLICY = "lookup_policy"
    SEARCH_DOCS = "search_docs"
    FETCH_DOC = "fetch_doc"
    QUERY_METRICS = "query_metrics"
    CALCULATOR = "calculator"
    TODAY = "today"


MANDATORY_VERBS: frozenset[Verb] = frozenset(
    {
        Verb.SEARCH_PRINCIPALS,
        Verb.GET_PRINCIPAL,
        Verb.GET_RECORD,
        Verb.LIST_RECORDS,
        Verb.QUERY_METRICS,
        Verb.CALCULATOR,
        Verb.TODAY,
    }
)

CALL_BUDGET = 64
"""Calls per session (§3)."""
DEFAULT_LIMIT = 10
MAX_LIMIT = 50

Envelope = dict[str, JsonValue]
Handler = Callable[[dict[str, Any]], Envelope]


def ok(data: JsonValue, citations: Sequence[str] | None = None) -> Envelope:
    result: Envelope = {"ok": True, "data": data}
    if citations is not None:
        result["citations"] = list(citations)
    return result


def fail(code: str, message: str) -> Envelope:
    return {"ok": False, "error": message, "error_code": code}


def listing(
    rows: Sequence[JsonValue], limit: int, citations: Sequence[str] | None = None
) -> Envelope:
    """A list result: the first ``limit`` rows and the derived counts."""
    shown = list(rows[:limit])
    result = ok(shown, citations)
    result.update(match_count=len(rows), returned=len(shown), truncated=len(rows) > len(shown))
    return result


@dataclass(frozen=True)
class BoundTool:
    """One verb bound to a domain's tool: the shape of a tool-session ToolSpec."""

    verb: Verb
    name: str
    description: str
    parameters: dict[str, JsonValue]
    handler: Handler
    mutating: bool = False
    privileged: bool = False


@dataclass(frozen=True)
class Param:
    """One argument of a tool schema."""

    name: str
    type: str
    description: str
    required: bool = False
    extra: Mapping[str, JsonValue] = field(default_factory=dict)

    def schema(self) -> dict[str, JsonValue]:
        return {"type": self.type, "description": self.description, **self.extra}


def closed_schema(*params: Param) -> dict[str, JsonValue]:
    """A closed JSON Schema object (what the tool-session contract requires)."""
    return {
        "type": "object",
        "properties": {param.name: param.schema() for param in params},
        "required": [param.name for param in params if param.required],
        "additionalProperties": False,
    }


def text(name: str, description: str, *, required: bool = False, **extra: JsonValue) -> Param:
    return Param(name, "string", description, required, {"minLength": 1, **extra})


def integer(name: str, description: str, *, required: bool = False, **extra: JsonValue) -> Param:
    return Param(name, "integer", description, required, extra)


def flag(name: str, description: str) -> Param:
    return Param(name, "boolean", description)


def limit_param() -> Param:
    return integer(
        "limit",
        f"most rows to return (default {DEFAULT_LIMIT})",
        minimum=1,
        maximum=MAX_LIMIT,
    )

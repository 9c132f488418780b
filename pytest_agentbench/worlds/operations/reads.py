"""The agent's read tool: RETRIEVE batches over the observable projection.

One call of ``retrieve`` is one batch; the invocation's :class:`ToolSession`
allows at most ``max_retrieval_batches_per_invocation`` of them, and a batch
holds at most :data:`MAX_REQUESTS_PER_BATCH` requests (the original's budget is
6 batches of 8). Each served record is logged with its version, so the
evaluator can tell a fresh read from a stale one and a cited record from an
uncited one. The hidden state is not reachable from here.

A request names either one collection (optionally one record of it) or one of
the pack's named read tools. The original publishes a finite vocabulary of
named reads, each a whole projection of a fixed set of roots; a pack declares
its own as ``read_tools`` (tool name to the collections it serves), and a tool
request serves every record of those collections. The tools are a grouping
over the same records, not a second store: a record read through a tool is the
record read by its collection, with the same version and the same citation, so
published files and controls that read by collection keep running.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_agentbench.sdk import (
    AgentbenchError,
    Budget,
    JsonValue,
    ToolCallError,
    ToolSession,
    ToolSpec,
)
from pytest_agentbench.worlds.operations.state import OperationState

RETRIEVE = "retrieve"
COMPLETE_OUTCOME = "complete"
"""The outcome key of the agent's COMPLETE, for the read contract, the episode and the
surface alike (one spelling, so they cannot drift apart)."""
MAX_REQUESTS_PER_BATCH = 8
"""Requests one batch may hold, as in the original (a read tool counts as one)."""

ReadTools = Mapping[str, tuple[str, ...]]

RETRIEVE_PARAMETERS: dict[str, JsonValue] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["requests"],
    "properties": {
        "requests": {
            # No maxItems here: an oversized batch is refused by the world with
            # its own stable code (read_batch_too_large), not the generic
            # invalid_arguments of the schema check.
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "collection": {"type": "string"},
                    "id": {"type": "string"},
                    "tool": {"type": "string"},
                },
            },
        }
    },
}


def retrieve_description(
    tools: ReadTools, contract: Mapping[str, tuple[str, ...]] | None = None
) -> str:
    """What ``retrieve`` says to an agent: the request forms, the budget, the tools, and
    the reads each outcome requires (disclosed, rather than discovered by refusal)."""
    text = (
        "Read records of the operation's business system. Each request names a "
        "collection and optionally a record id (all records of the collection when "
        'omitted), or a named read tool ({"tool": name}: every record of the '
        f"collections it serves). At most {MAX_REQUESTS_PER_BATCH} requests a call. "
        "Returns each record with its current version; cite records as "
        "{collection, id, version} in evidence_refs."
    )
    if tools:
        listed = "; ".join(f"{name}: {', '.join(tools[name])}" for name in sorted(tools))
        text += f" Read tools: {listed}."
    if contract:
        needs = "; ".join(
            f"{outcome}: {', '.join(required)}"
            for outcome, required in contract.items()
            if required
        )
        text += (
            " Each outcome is refused (ACTION_WITHOUT_RETRIEVAL) unless these reads were "
            f"made in this invocation since your last accepted action: {needs}."
        )
    return text


def pack_read_tools(pack: object, collections: frozenset[str] | None = None) -> ReadTools:
    """The pack's named reads (``read_tools``; none when it declares none), checked.

    Each tool must serve at least one collection and no collection may be served
    by two tools (which read established a record would be ambiguous); with
    ``collections`` given, every served collection must be one of them.
    """
    declared = getattr(pack, "read_tools", None)
    if declared is None:
        return {}
    if not isinstance(declared, Mapping):
        raise _invalid_tools("read_tools must map tool names to collections")
    tools: dict[str, tuple[str, ...]] = {}
    owner: dict[str, str] = {}
    for name, served in declared.items():
        if not isinstance(name, str) or not name:
            raise _invalid_tools(f"tool name {name!r} is not a non-empty string")
        if (
            not isinstance(served, tuple)
            or not served
            or not all(isinstance(c, str) and c for c in served)
        ):
            raise _invalid_tools(f"tool {name!r} must serve a non-empty tuple of collections")
        for collection in served:
            if collection in owner:
                raise _invalid_tools(
                    f"collection {collection!r} is served by {owner[collection]!r} and {name!r}"
                )
            if collections is not None and collection not in collections:
                raise _invalid_tools(f"tool {name!r} serves unknown collection {collection!r}")
            owner[collection] = name
        tools[name] = tuple(sorted(served))
    return dict(sorted(tools.items()))


def _invalid_tools(reason: str) -> AgentbenchError:
    return AgentbenchError("invalid_read_tools", reason, field="read_tools")


def pack_tool_contract(pack: object, tools: ReadTools) -> dict[str, tuple[str, ...]] | None:
    """The named reads each outcome key requires (``read_contract``), or None if undeclared.

    Keys are the pack's actions and ``complete``; every read named must be one
    of ``tools``. An outcome key the table leaves out requires no named read.
    """
    declared = getattr(pack, "read_contract", None)
    if declared is None:
        return None
    if not isinstance(declared, Mapping):
        raise _invalid_contract("read_contract must map outcome keys to read tools")
    outcomes = {*getattr(pack, "action_types", {}), COMPLETE_OUTCOME}
    contract: dict[str, tuple[str, ...]] = {}
    for outcome, required in declared.items():
        if outcome not in outcomes:
            raise _invalid_contract(f"read_contract names unknown outcome {outcome!r}")
        if not isinstance(required, tuple) or not all(isinstance(t, str) for t in required):
            raise _invalid_contract(f"outcome {outcome!r} must require a tuple of read tools")
        unknown = sorted(set(required) - set(tools))
        if unknown:
            raise _invalid_contract(f"outcome {outcome!r} requires unknown read(s) {unknown}")
        contract[outcome] = tuple(sorted(set(required)))
    return dict(sorted(contract.items()))


def _invalid_contract(reason: str) -> AgentbenchError:
    return AgentbenchError("invalid_read_contract", reason, field="read_contract")


def tools_covered(tools: ReadTools, whole: set[str]) -> set[str]:
    """The named reads made when the collections in ``whole`` were each read whole."""
    return {name for name, served in tools.items() if set(served) <= whole}


Served = Callable[[list[dict[str, JsonValue]], list[str]], None]
"""Hears each served batch: its record refs, and the collections it read whole."""


def _requested(
    request: Mapping[str, Any], known: list[str], tools: ReadTools, position: int
) -> list[tuple[str, str | None]]:
    """The (collection, id or None for all) pairs one request asks for."""
    tool = request.get("tool")
    collection = request.get("collection")
    if (tool is None) == (collection is None):
        raise ToolCallError(
            "invalid_read_request",
            f"request {position} must name exactly one of 'collection' or 'tool'",
            field=f"arguments.requests[{position}]",
        )
    if tool is not None:
        if "id" in request:
            # A named read is a whole projection, as the original's are: an id
            # would be a parameter the tool silently ignores.
            raise ToolCallError(
                "invalid_read_request",
                f"request {position}: a read tool takes no 'id'",
                field=f"arguments.requests[{position}].id",
            )
        if tool not in tools:
            names = ", ".join(tools) or "none"
            raise ToolCallError(
                "unknown_read_tool",
                f"no read tool {tool!r} ({names})",
                field=f"arguments.requests[{position}].tool",
            )
        return [(name, None) for name in tools[tool]]
    if collection not in known:
        names = ", ".join(known)
        raise ToolCallError("unknown_collection", f"no collection {collection!r} ({names})")
    return [(collection, request.get("id"))]


def retrieve_tool(
    state: OperationState,
    served: Served,
    tools: ReadTools,
    contract: Mapping[str, tuple[str, ...]] | None = None,
) -> ToolSpec:
    """``retrieve`` over the projection of ``state``; ``served`` hears what it served."""

    def handler(arguments: dict[str, Any]) -> JsonValue:
        requests = arguments["requests"]
        if len(requests) > MAX_REQUESTS_PER_BATCH:
            raise ToolCallError(
                "read_batch_too_large",
                f"{len(requests)} requests in one batch, at most {MAX_REQUESTS_PER_BATCH}",
                field="arguments.requests",
            )
        known = state.collections()
        # Every request is checked before anything is served: a batch is
        # answered whole or refused whole, never half-logged.
        wanted_all = [
            pair
            for position, request in enumerate(requests)
            for pair in _requested(request, known, tools, position)
        ]
        records: list[dict[str, JsonValue]] = []
        missing: list[dict[str, JsonValue]] = []
        for collection, wanted in wanted_all:
            if wanted is None:
                chosen = state.records(collection)
            else:
                single = state.get(collection, wanted)
                chosen = {} if single is None else {wanted: single}
            for record_id in sorted(chosen) if wanted is None else [wanted]:
                record = chosen.get(record_id)
                if record is None:
                    missing.append({"collection": collection, "id": record_id})
                    continue
                records.append(
                    {
                        "collection": collection,
                        "id": record_id,
                        "version": record["version"],
                        "record": record,
                    }
                )
        whole = sorted({collection for collection, wanted in wanted_all if wanted is None})
        served([{k: r[k] for k in ("collection", "id", "version")} for r in records], whole)
        return {"records": records, "missing": missing}

    return ToolSpec(
        name=RETRIEVE,
        description=retrieve_description(tools, contract),
        parameters=RETRIEVE_PARAMETERS,
        handler=handler,
    )


def read_session(tool: ToolSpec, max_batches: int, context: dict[str, JsonValue]) -> ToolSession:
    """The session of one invocation: the read tools and the RETRIEVE batch budget."""
    return ToolSession([tool], Budget(max_calls=max_batches), context=context)

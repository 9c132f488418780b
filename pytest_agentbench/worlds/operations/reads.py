"""The agent's read tool: RETRIEVE batches over the observable projection.

One call of ``retrieve`` is one batch; the invocation's :class:`ToolSession`
allows at most ``max_retrieval_batches_per_invocation`` of them. Each served
record is logged with its version, so the evaluator can tell a fresh read
from a stale one and a cited record from an uncited one. The hidden state
is not reachable from here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_agentbench.sdk import Budget, JsonValue, ToolCallError, ToolSession, ToolSpec
from pytest_agentbench.worlds.operations.state import OperationState

RETRIEVE = "retrieve"
MAX_REQUESTS_PER_BATCH = 20

RETRIEVE_PARAMETERS: dict[str, JsonValue] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["requests"],
    "properties": {
        "requests": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_REQUESTS_PER_BATCH,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["collection"],
                "properties": {"collection": {"type": "string"}, "id": {"type": "string"}},
            },
        }
    },
}
RETRIEVE_DESCRIPTION = (
    "Read records of the operation's business system. Each request names a "
    "collection and optionally a record id (all records of the collection when "
    "omitted). Returns each record with its current version; cite records as "
    "{collection, id, version} in evidence_refs."
)

Served = Callable[[list[dict[str, JsonValue]]], None]


def retrieve_tool(state: OperationState, served: Served) -> ToolSpec:
    """``retrieve`` over the projection of ``state``; ``served`` hears what it served."""

    def handler(arguments: dict[str, Any]) -> JsonValue:
        records: list[dict[str, JsonValue]] = []
        missing: list[dict[str, JsonValue]] = []
        known = state.collections()
        for request in arguments["requests"]:
            collection = request["collection"]
            if collection not in known:
                names = ", ".join(known)
                raise ToolCallError("unknown_collection", f"no collection {collection!r} ({names})")
            wanted = request.get("id")
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
        served([{k: r[k] for k in ("collection", "id", "version")} for r in records])
        return {"records": records, "missing": missing}

    return ToolSpec(
        name=RETRIEVE,
        description=RETRIEVE_DESCRIPTION,
        parameters=RETRIEVE_PARAMETERS,
        handler=handler,
    )


def read_session(tool: ToolSpec, max_batches: int, context: dict[str, JsonValue]) -> ToolSession:
    """The session of one invocation: the read tools and the RETRIEVE batch budget."""
    return ToolSession([tool], Budget(max_calls=max_batches), context=context)

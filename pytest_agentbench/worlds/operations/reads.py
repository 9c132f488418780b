"""The agent's read tool: RETRIEVE batches over the observable projection.

One call of ``retrieve`` is one batch (at most ``max_retrieval_batches_per_invocation``
per invocation). Each served record is logged with its version, so the
evaluator can tell a fresh read from a stale one and a cited record from an
uncited one. The hidden state is not reachable from here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_agentbench.canonical import JsonValue
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
                "properties": {
                    "collection": {"type": "string"},
                    "id": {"type": ["string", "null"]},
                },
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


class ToolRefusal(Exception):
    """A world-level refusal of a tool call, delivered to the agent as a named outcome."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message


def retrieve_handler(
    state: OperationState, served: Callable[[list[dict[str, JsonValue]]], None]
) -> Callable[[dict[str, Any]], JsonValue]:
    """The handler of ``retrieve``: serves records and reports what it served."""

    def handler(arguments: dict[str, Any]) -> JsonValue:
        records: list[dict[str, JsonValue]] = []
        missing: list[dict[str, JsonValue]] = []
        projection = state.projection()
        for request in arguments["requests"]:
            collection = request["collection"]
            if collection not in projection:
                raise ToolRefusal("unknown_collection", f"no collection {collection!r}")
            wanted = request.get("id")
            chosen = projection[collection]
            ids = sorted(chosen) if wanted is None else [wanted]
            for record_id in ids:
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
        served(
            [
                {"collection": r["collection"], "id": r["id"], "version": r["version"]}
                for r in records
            ]
        )
        return {"records": records, "missing": missing}

    return handler


def _check_arguments(arguments: Any) -> dict[str, Any]:
    if not isinstance(arguments, dict) or set(arguments) != {"requests"}:
        raise ToolRefusal("invalid_arguments", "expected exactly {requests}")
    requests = arguments["requests"]
    if not isinstance(requests, list) or not 1 <= len(requests) <= MAX_REQUESTS_PER_BATCH:
        raise ToolRefusal("invalid_arguments", f"requests: 1 to {MAX_REQUESTS_PER_BATCH} items")
    for index, request in enumerate(requests):
        if (
            not isinstance(request, dict)
            or not set(request) <= {"collection", "id"}
            or not isinstance(request.get("collection"), str)
            or not isinstance(request.get("id"), str | None)
        ):
            raise ToolRefusal(
                "invalid_arguments", f"requests[{index}]: expected {{collection, id?}} strings"
            )
    return arguments


class ReadSession:
    """The read tools of one invocation with its batch budget (until the core ToolSession)."""

    def __init__(self, handler: Callable[[dict[str, Any]], JsonValue], max_calls: int) -> None:
        self._handler = handler
        self._max_calls = max_calls
        self._closed = False
        self.calls: list[dict[str, JsonValue]] = []
        self.tools: list[dict[str, JsonValue]] = [
            {
                "name": RETRIEVE,
                "description": RETRIEVE_DESCRIPTION,
                "parameters": RETRIEVE_PARAMETERS,
            }
        ]

    def call(self, name: str, arguments: Any) -> JsonValue:
        if self._closed:
            raise ToolRefusal("session_closed", "the invocation has ended")
        if name != RETRIEVE:
            raise ToolRefusal("unknown_tool", f"no tool {name!r}")
        checked = _check_arguments(arguments)
        if len(self.calls) >= self._max_calls:
            raise ToolRefusal(
                "budget_exhausted", f"at most {self._max_calls} retrieval batches per invocation"
            )
        result = self._handler(checked)
        self.calls.append({"name": name, "arguments": checked})
        return result

    def close(self) -> None:
        self._closed = True

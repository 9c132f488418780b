"""The isolated adapter's stand-in for the world's tool session.

Imported by the child only when a world hands its adapter a
:class:`~pytest_agentbench.sdk.tools.ToolSession`: adapters of non-interactive
worlds never load the tool-session contract into their process.

The stand-in offers what :class:`~pytest_agentbench.sdk.tools.ToolSessionLike`
promises. ``call``, ``close`` and the usage counters are answered by the
world's session in the harness, so validation, budgets and the record stay
there; the tools (as :class:`~pytest_agentbench.sdk.tools.ToolDescriptor` s), the
budget and the final answer's schema are the harness session's, sent when the
call began, and the exports are rebuilt from the descriptors exactly as the
session builds them. A refusal is the contract's own
:class:`~pytest_agentbench.sdk.tools.ToolCallError`, code and field intact.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from typing import Any, Protocol

from pytest_agentbench.isolation.protocol import MAX_MESSAGE_BYTES, json_message, json_text
from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.errors import field_path
from pytest_agentbench.sdk.tools import (
    INVALID_ARGUMENTS,
    SESSION_CLOSED,
    UNKNOWN_TOOL,
    Budget,
    ToolCallError,
    ToolDescriptor,
    mcp_tools,
    openai_tools,
)
from pytest_agentbench.sdk.tools.schema import SchemaViolation, check_json_value
from pytest_agentbench.sdk.tools.spec import arguments_too_large


class ToolLink(Protocol):
    """The child's connection as the stand-in uses it."""

    def tool_request(self, call_id: int, request: bytes) -> dict[str, Any] | None:
        """Send ``request`` while call ``call_id`` is open and return the reply; None after it."""


class RemoteToolSession:
    """A session of the harness as the isolated adapter holds it during one call."""

    def __init__(self, link: ToolLink, call_id: int, spec: Mapping[str, Any]) -> None:
        self._link = link
        self._call_id = call_id
        self._index: int = spec["index"]
        self.tools: tuple[ToolDescriptor, ...] = tuple(spec["tools"])
        self.budget: Budget = spec["budget"]
        self.final_schema: dict[str, JsonValue] | None = copy.deepcopy(spec["final_schema"])

    def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> JsonValue:
        return self._request("call", _name_text(name), _arguments_text(arguments))

    def close(self) -> None:
        # Closing after the call ended changes nothing: the harness closed it already.
        with contextlib.suppress(ToolCallError):
            self._request("close")

    @property
    def calls(self) -> Any:
        # The records hold what the budget withheld from the agent: they stay with the harness.
        raise AttributeError(
            "an isolated adapter's tool session keeps its call records in the harness; "
            "read calls_used and bytes_used, or count calls yourself"
        )

    @property
    def calls_used(self) -> int:
        return int(self._state()["calls_used"])

    @property
    def bytes_used(self) -> int:
        return int(self._state()["bytes_used"])

    @property
    def closed(self) -> bool:
        return bool(self._state()["closed"])

    def openai_tools(self) -> list[dict[str, JsonValue]]:
        return openai_tools(self.tools)

    def mcp_tools(self) -> list[dict[str, JsonValue]]:
        return mcp_tools(self.tools)

    def _state(self) -> dict[str, Any]:
        state: dict[str, Any] = self._request("state")
        return state

    def _request(self, kind: str, name: Any = None, arguments: str | None = None) -> Any:
        head = {"call": self._call_id, "session": self._index, "kind": kind, "name": name}
        reply = self._link.tool_request(self._call_id, json_message("tool_call", head, arguments))
        if reply is None:
            raise ToolCallError(SESSION_CLOSED, "the call this session belongs to has ended")
        if reply["op"] == "tool_result":
            return reply["value"]
        raise ToolCallError(reply["code"], reply["message"], field=reply.get("field"))


# A name or arguments JSON cannot carry cannot reach the harness: refused here,
# with the code the session would give, but not in the session's record.


def _name_text(name: Any) -> Any:
    """``name`` as it crosses (a non-string name is the session's to refuse as unknown)."""
    try:
        check_json_value(name, ())
    except SchemaViolation:
        raise ToolCallError(UNKNOWN_TOOL, f"no tool is named {name!r}") from None
    return name


def _arguments_text(arguments: Any) -> str:
    """The arguments as JSON text, refused as the session would refuse what is not JSON.

    Strictly plain JSON: a tuple, a set, NaN or a model is refused here as it
    is in-process (never converted on the way, which would admit it).
    """
    if isinstance(arguments, str) and len(arguments) > _CROSSING_LIMIT:
        raise arguments_too_large(len(arguments), _CROSSING_LIMIT)
    if arguments is None or isinstance(arguments, str):
        return json_text(arguments)
    if not isinstance(arguments, Mapping):
        raise ToolCallError(
            INVALID_ARGUMENTS,
            f"arguments must be an object or JSON text, got {type(arguments).__name__}",
        )
    plain = dict(arguments)
    try:
        check_json_value(plain, ())
    except SchemaViolation as violation:
        raise ToolCallError(
            INVALID_ARGUMENTS,
            violation.reason,
            field=field_path(("arguments", *violation.path)),
        ) from None
    text = json_text(plain)
    if len(text) > _CROSSING_LIMIT:
        raise arguments_too_large(len(text), _CROSSING_LIMIT)
    return text


_CROSSING_LIMIT = MAX_MESSAGE_BYTES // 2
"""The most arguments one message to the harness carries (its JSON text may escape them);
under it, the harness's session refuses what is over its own limit, as in-process."""

"""One case's tool session served as an MCP server (the official ``mcp`` SDK).

Every ``tools/call`` goes through ``session.call``: the same validation,
budgets, world refusals, receipt records and transcript events as an adapter
calling the session in Python, so an agent in another process, in any
language, is held to exactly the rules of an in-process one. ``tools/list``
is ``session.mcp_tools()`` plus ``submit_answer``, the tool that hands the
final answer back; its input schema is the world's published final schema
when that is an object (the arguments are the answer), else ``{"answer": ...}``.

Two transports, both on the calling thread's event loop (so the session is
only ever called from the case's own thread, where its transcript lives):

- stdio: the agent process's stdout is the client-to-server stream and its
  stdin the server-to-client stream, one JSON-RPC message per line;
- streamable HTTP on a loopback socket the caller has bound.

``mcp`` is the optional extra ``mcp``; without it :func:`require_mcp` refuses
the run as ``mcp_unavailable``.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pytest_agentbench.sdk.canonical import JsonValue, canonical_json
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.tools import ToolCallError, ToolSessionLike

if TYPE_CHECKING:
    from mcp.server import Server

SUBMIT_ANSWER = "submit_answer"
SERVER_NAME = "pytest-agentbench"


def require_mcp() -> None:
    """Refuse, with a named code, when the ``mcp`` package is not installed."""
    if importlib.util.find_spec("mcp") is None:
        raise AgentbenchError(
            "mcp_unavailable",
            "serving tools over MCP needs the official MCP SDK: pip install 'mcp>=2.3'"
            " (the extra 'mcp' of a clone: pip install '.[mcp]')",
            field="--agentbench-agent-command",
        )


def submit_schema(final_schema: Mapping[str, JsonValue] | None) -> tuple[dict[str, Any], bool]:
    """``submit_answer``'s input schema, and whether its arguments are the answer itself."""
    if final_schema is not None and final_schema.get("type") == "object":
        schema: dict[str, Any] = json.loads(canonical_json(dict(final_schema)))
        # JSON Schema annotations a client may not resolve are dropped from the copy only.
        schema.pop("title", None)
        return schema, True
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"answer": {"description": "the final answer"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    return wrapped, False


class CaseServer:
    """The MCP server of one case: ``session``'s tools and ``submit_answer``."""

    def __init__(self, session: ToolSessionLike, task: Mapping[str, Any]) -> None:
        require_mcp()
        self.session = session
        self.task: dict[str, Any] = dict(task)
        self.answer: Any = None
        self.answered = False
        names = [tool.name for tool in session.tools]
        if SUBMIT_ANSWER in names:
            raise AgentbenchError(
                "mcp_tool_name_taken",
                f"the world already offers a tool named {SUBMIT_ANSWER!r}",
                field="tools",
            )
        self._submit_schema, self._answer_is_arguments = submit_schema(session.final_schema)

    def tool_entries(self) -> list[dict[str, Any]]:
        """The ``tools/list`` entries: the session's, then ``submit_answer``."""
        entries: list[dict[str, Any]] = list(self.session.mcp_tools())
        entries.append(
            {
                "name": SUBMIT_ANSWER,
                "description": "Submit the final answer to the task. Call it once, last.",
                "inputSchema": self._submit_schema,
            }
        )
        return entries

    def instructions(self) -> str:
        return (
            "Solve the task with the tools, then call submit_answer with the final answer. "
            f"Task: {canonical_json(self.task)}"
        )

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> tuple[str, bool]:
        """(text, is_error) of one ``tools/call``; world tools go through ``session.call``."""
        if name == SUBMIT_ANSWER:
            return self._submit(dict(arguments or {}))
        try:
            result = self.session.call(name, dict(arguments or {}))
        except ToolCallError as refusal:
            return canonical_json(refusal.payload()), True
        return canonical_json(result), False

    def _submit(self, arguments: dict[str, Any]) -> tuple[str, bool]:
        if self.answered:
            error = {"code": "answer_already_submitted", "message": "the answer was submitted"}
            return canonical_json({"error": error}), True
        if not self._answer_is_arguments and "answer" not in arguments:
            error = {"code": "invalid_arguments", "message": "submit_answer needs 'answer'"}
            return canonical_json({"error": error}), True
        # Parsed strictly by the world once the agent is done, never here: a malformed
        # answer is the case's product_error, not something the agent may retry.
        self.answer = arguments if self._answer_is_arguments else arguments["answer"]
        self.answered = True
        return canonical_json({"submitted": True}), False

    def build(self) -> Server[Any]:
        """The SDK's low-level server whose handlers call :meth:`call`."""
        import mcp_types as types
        from mcp.server import Server, ServerRequestContext

        async def list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return types.ListToolsResult(
                tools=[types.Tool.model_validate(entry) for entry in self.tool_entries()]
            )

        async def call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            # Called on the loop's own thread, deliberately blocking it: calls are
            # serialised as session.call requires, and land in this case's transcript.
            text, is_error = self.call(params.name, params.arguments)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], is_error=is_error
            )

        return Server(
            SERVER_NAME,
            instructions=self.instructions(),
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )

"""What a world declares about its tools, and the refusal a tool call can end in."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, input_limits
from pytest_agentbench.sdk.contracts import Record
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.tools.schema import Check, check_tool_schema, compile_schema

TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
"""The names OpenAI function calling and MCP clients both accept."""

# Stable outcome codes of a call the session itself refuses or cannot complete.
UNKNOWN_TOOL = "unknown_tool"
INVALID_ARGUMENTS = "invalid_arguments"
BUDGET_EXHAUSTED = "budget_exhausted"
SESSION_CLOSED = "session_closed"
HANDLER_FAILED = "handler_failed"
"""The handler raised something other than :class:`ToolCallError`: a harness error."""

SESSION_CODES = frozenset(
    {UNKNOWN_TOOL, INVALID_ARGUMENTS, BUDGET_EXHAUSTED, SESSION_CLOSED, HANDLER_FAILED}
)


class ToolCallError(AgentbenchError):
    """A tool call that produced no result: a stable ``code`` and a one-line message.

    Raised by :meth:`ToolSession.call` for the session's own outcomes
    (``unknown_tool``, ``invalid_arguments``, ``budget_exhausted``,
    ``session_closed``, ``handler_failed``), and by a world's handler for a
    world-level refusal (its own code), which the session delivers as is.
    """

    def __init__(self, code: str, message: str, *, field: str | None = None) -> None:
        super().__init__(code, message, field=field)

    def __reduce__(self) -> tuple[Any, ...]:
        # Crosses a process boundary (an isolated adapter) intact.
        return (_rebuild_error, (self.code, self.reason, self.location.field))

    def payload(self) -> dict[str, JsonValue]:
        """How the refusal is shown to a model: ``{"error": {"code", "message"}}``."""
        return {"error": {"code": self.code, "message": self.reason}}


def arguments_too_large(size: int, limit: int | None = None) -> ToolCallError:
    """The refusal of arguments whose JSON text has ``size`` characters, over ``limit``
    (the readers' size limit, ``agentbench_max_input_bytes``): the same in every mode."""
    if limit is None:
        limit = input_limits().max_bytes
    return ToolCallError(
        INVALID_ARGUMENTS,
        f"arguments of {size} characters exceed the limit of {limit} (agentbench_max_input_bytes)",
        field="arguments",
    )


def _rebuild_error(code: str, message: str, field: str | None) -> ToolCallError:
    return ToolCallError(code, message, field=field)


class ToolDescriptor(Record):
    """Everything about a tool an agent may see: a :class:`ToolSpec` without its handler.

    The parameters schema is the subset :mod:`pytest_agentbench.sdk.tools.schema`
    supports, rooted at a closed object; it is checked when the tool is declared.
    """

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str
    parameters: dict[str, JsonValue]
    mutating: bool = False
    """Changes the world's state (MCP clients see ``readOnlyHint: false``)."""
    privileged: bool = False
    """Needs an authority the world's policy decides on; grading may look for such calls."""

    @field_validator("parameters")
    @classmethod
    def _closed_schema(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        try:
            text = canonical_json(value)
        except (AgentbenchError, TypeError, ValueError) as exc:
            raise ValueError(f"parameters: not a JSON document ({exc})") from None
        # A private copy: the caller's dict can change afterwards without changing the tool.
        copy: dict[str, JsonValue] = json.loads(text)
        check_tool_schema(copy)
        return copy

    def describe(self) -> ToolDescriptor:
        # Every field was validated when this tool was declared; checking again
        # would repeat the schema walk once per tool per receipt.
        return ToolDescriptor.model_construct(
            name=self.name,
            description=self.description,
            parameters=self.parameters,
            mutating=self.mutating,
            privileged=self.privileged,
        )

    def canonical_text(self) -> str:
        """The canonical JSON of :meth:`describe`: what a receipt's digest covers of this tool."""
        return canonical_json(self.describe().model_dump(mode="json"))


Handler = Callable[[dict[str, Any]], JsonValue]


class ToolSpec(ToolDescriptor):
    """A world's tool: its descriptor and the handler that answers validated arguments.

    The handler receives the arguments as a fresh dict and returns a JSON
    value (what the agent sees). It raises :class:`ToolCallError` for a
    world-level refusal; any other exception is the harness's failure.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    handler: Handler = Field(exclude=True, repr=False)
    _check: Check = PrivateAttr()
    _parameters_text: str = PrivateAttr()
    _canonical_text: str = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        # All three are kept by the copies a world binds to each case's sandbox.
        self._check = compile_schema(self.parameters)
        self._parameters_text = json.dumps(self.parameters, ensure_ascii=False)
        self._canonical_text = super().canonical_text()

    @property
    def check_arguments(self) -> Check:
        """The compiled validator of :attr:`parameters`."""
        return self._check

    @property
    def parameters_text(self) -> str:
        """:attr:`parameters` as JSON text, keys in declaration order: what exports copy."""
        return self._parameters_text

    def canonical_text(self) -> str:
        # Serialised once per declared tool, not once per receipt: the schemas are most of
        # a receipt's text, and a world issues one receipt per case.
        return self._canonical_text


class Budget(Record):
    """Limits of one tool session; ``None`` is unlimited.

    ``max_calls`` bounds the calls the session admits, whatever their outcome;
    ``max_bytes`` bounds the UTF-8 bytes of canonical JSON delivered to the agent.
    """

    max_calls: int | None = Field(default=None, ge=0)
    max_bytes: int | None = Field(default=None, ge=0)

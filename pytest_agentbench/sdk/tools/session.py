"""The tool session an interactive world hands its adapter for one case.

Every call goes through the same steps, in this order, and ends in exactly one
recorded outcome:

1. ``session_closed``: the session was closed (the case is over);
2. ``budget_exhausted``: ``max_calls`` calls were already admitted, or the
   ``max_bytes`` budget is already spent;
3. ``unknown_tool``: no visible tool has that name;
4. ``invalid_arguments``: the arguments are not a strictly parsed JSON object
   (duplicate keys refused) that satisfies the tool's schema;
5. the world's ``guard``, if any, may refuse the call with its own code (a
   budget or rule of its own, such as one decision per invocation): recorded,
   not delivered;
6. the handler runs: its result, or its own refusal (:class:`ToolCallError`
   with the world's code), is delivered; any other exception is
   ``handler_failed``, a harness error the world must not grade as the agent's;
7. ``budget_exhausted`` again when the answer would overrun ``max_bytes``: it
   is withheld (recorded, not delivered, 0 bytes).

Nothing about a spec's identity is relied on: a thin proxy (an isolated
adapter's pipe) can forward ``call(name, arguments)`` and rebuild the rest
from :class:`~pytest_agentbench.sdk.tools.spec.ToolDescriptor` and the records.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, input_limits, loads_strict
from pytest_agentbench.sdk.errors import AgentbenchError, describe_exception, field_path
from pytest_agentbench.sdk.tools.export import mcp_tools, openai_tools
from pytest_agentbench.sdk.tools.receipt import Receipt
from pytest_agentbench.sdk.tools.records import ToolCallRecord, decode_canonical, encode_canonical
from pytest_agentbench.sdk.tools.schema import Check, SchemaViolation, integral_numbers
from pytest_agentbench.sdk.tools.spec import (
    BUDGET_EXHAUSTED,
    HANDLER_FAILED,
    INVALID_ARGUMENTS,
    SESSION_CLOSED,
    UNKNOWN_TOOL,
    Budget,
    ToolCallError,
    ToolSpec,
    arguments_too_large,
)
from pytest_agentbench.sdk.transcript import current_transcript, tool_call_event

UNLIMITED = Budget()

Guard = Callable[[ToolSpec, dict[str, Any], "ToolSession"], None]
"""A world's own admission rule: raise :class:`ToolCallError` to refuse a valid call."""


class ToolHarnessError(Exception):
    """A handler failed during the session: the case is the harness's error, not the agent's."""


class _Draft:
    """The mutable record of the call in progress."""

    __slots__ = (
        "arguments_json",
        "delivered",
        "error",
        "message",
        "model_visible_bytes",
        "raw_arguments",
        "result_json",
    )

    def __init__(self) -> None:
        self.arguments_json: str | None = None
        self.raw_arguments: str | None = None
        self.result_json: str | None = None
        self.error: str | None = None
        self.message: str | None = None
        self.delivered = False
        self.model_visible_bytes = 0


class ToolSession:
    """The tools of one case (or one invocation), their budget and the record of every call."""

    def __init__(
        self,
        tools: Sequence[ToolSpec],
        budget: Budget | None = None,
        *,
        context: Mapping[str, JsonValue] | None = None,
        final_schema: Mapping[str, JsonValue] | None = None,
        guard: Guard | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._tools = tuple(tools)
        self._by_name: dict[str, tuple[ToolSpec, Check]] = {}
        for spec in self._tools:
            if not isinstance(spec, ToolSpec):
                raise TypeError(f"tools must be ToolSpec instances, got {type(spec).__name__}")
            if spec.name in self._by_name:
                raise AgentbenchError(
                    "duplicate_tool", f"two tools are named {spec.name!r}", field="tools"
                )
            self._by_name[spec.name] = (spec, spec.check_arguments)
        self.budget = UNLIMITED if budget is None else budget
        self.context: dict[str, JsonValue] = json.loads(canonical_json(dict(context or {})))
        self.final_schema: dict[str, JsonValue] | None = (
            None if final_schema is None else json.loads(canonical_json(dict(final_schema)))
        )
        """The published JSON Schema of the world's final answer, for agents that prompt with it."""
        self._guard = guard
        self._clock = clock
        self._calls: list[ToolCallRecord] = []
        self._admitted = 0
        self._bytes = 0
        self._closed = False

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The tools visible in this session, in declaration order."""
        return self._tools

    @property
    def calls(self) -> tuple[ToolCallRecord, ...]:
        return tuple(self._calls)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def calls_used(self) -> int:
        """Calls admitted so far: what ``max_calls`` bounds."""
        return self._admitted

    @property
    def bytes_used(self) -> int:
        """Model-visible bytes delivered so far: what ``max_bytes`` bounds."""
        return self._bytes

    @property
    def harness_failure(self) -> ToolCallRecord | None:
        """The first call whose handler failed, if any."""
        return next((call for call in self._calls if call.error == HANDLER_FAILED), None)

    def raise_for_harness_failure(self) -> None:
        """Raise :class:`ToolHarnessError` when a handler failed during the session.

        A world calls this after its adapter returns: an adapter may have
        caught the ``handler_failed`` error and carried on.
        """
        failed = self.harness_failure
        if failed is not None:
            raise ToolHarnessError(
                f"tool {failed.name!r} failed at call {failed.index}: {failed.message}"
            )

    def close(self) -> None:
        """End the session: every later call is refused as ``session_closed``."""
        self._closed = True

    def openai_tools(self) -> list[dict[str, JsonValue]]:
        """The visible tools as an OpenAI chat-completions ``tools`` list."""
        return openai_tools(self._tools)

    def mcp_tools(self) -> list[dict[str, JsonValue]]:
        """The visible tools as MCP ``tools/list`` entries."""
        return mcp_tools(self._tools)

    def receipt(
        self,
        final: JsonValue = None,
        *,
        failure_class: str | None = None,
        failure_code: str | None = None,
        failure_reason: str | None = None,
    ) -> Receipt:
        """The receipt of the calls so far and ``final``, the answer the world accepted."""
        return Receipt.build(
            tools=self._tools,
            budget=self.budget,
            calls=self._calls,
            final=final,
            failure_class=failure_class,
            failure_code=failure_code,
            failure_reason=failure_reason,
            context=self.context,
        )

    def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> JsonValue:
        """Call tool ``name``; returns the model-visible result or raises :class:`ToolCallError`.

        ``arguments`` is a mapping or JSON text (``None`` means no arguments).
        The result is a fresh copy of what was counted and recorded.
        """
        started = self._clock()
        draft = _Draft()
        try:
            result_json = self._run(draft, name, arguments)
            return decode_canonical(result_json)
        except ToolCallError as exc:
            draft.error = exc.code
            draft.message = exc.reason
            raise
        finally:
            record = ToolCallRecord(
                index=len(self._calls),
                name=name if isinstance(name, str) else repr(name),
                arguments_json=draft.arguments_json,
                raw_arguments=draft.raw_arguments,
                result_json=draft.result_json,
                error=draft.error,
                delivered=draft.delivered,
                model_visible_bytes=draft.model_visible_bytes,
                message=draft.message,
                duration_ms=(self._clock() - started) * 1000.0,
            )
            self._calls.append(record)
            transcript = current_transcript()
            if transcript is not None:
                transcript.note(tool_call_event(record))

    def _run(self, draft: _Draft, name: str, arguments: Mapping[str, Any] | str | None) -> str:
        if self._closed:
            raise ToolCallError(SESSION_CLOSED, "the session is closed")
        budget = self.budget
        if budget.max_calls is not None and self._admitted >= budget.max_calls:
            raise ToolCallError(BUDGET_EXHAUSTED, f"all {budget.max_calls} calls are used")
        if budget.max_bytes is not None and self._bytes >= budget.max_bytes:
            raise ToolCallError(
                BUDGET_EXHAUSTED, f"all {budget.max_bytes} model-visible bytes are used"
            )
        self._admitted += 1
        # Arguments are recorded whenever they parse, even for a call refused
        # next: grading may ask what the agent tried, not only what it got.
        parsed, refusal = self._parse(draft, arguments)
        known = self._by_name.get(name) if isinstance(name, str) else None
        if known is None:
            raise ToolCallError(UNKNOWN_TOOL, f"no tool is named {name!r}")
        if refusal is not None:
            raise refusal
        spec, check_arguments = known
        try:
            check_arguments(parsed, ())
        except SchemaViolation as violation:
            raise ToolCallError(
                INVALID_ARGUMENTS,
                violation.reason,
                field=field_path(("arguments", *violation.path)),
            ) from None
        # Valid arguments are JSON types only, so they were recorded above.
        assert draft.arguments_json is not None
        if self._guard is not None:
            self._admit(spec, draft.arguments_json)
        try:
            result = spec.handler(decode_canonical(draft.arguments_json))
            answer = encode_canonical(result)
        except ToolCallError as world_refusal:
            answer = encode_canonical(world_refusal.payload())
            self._deliver(draft, answer)
            raise
        except Exception as exc:
            raise ToolCallError(
                HANDLER_FAILED, f"tool {name!r} failed: {describe_exception(exc)}"
            ) from exc
        self._deliver(draft, answer)
        return answer

    def _admit(self, spec: ToolSpec, arguments_json: str) -> None:
        assert self._guard is not None
        try:
            self._guard(spec, decode_canonical(arguments_json), self)
        except ToolCallError:
            raise
        except Exception as exc:
            raise ToolCallError(
                HANDLER_FAILED, f"the guard of tool {spec.name!r} failed: {describe_exception(exc)}"
            ) from exc

    def _parse(
        self, draft: _Draft, arguments: Mapping[str, Any] | str | None
    ) -> tuple[Any, ToolCallError | None]:
        """The arguments as parsed (recorded in ``draft``), or the refusal of their text."""
        if arguments is None:
            parsed: Any = {}
        elif isinstance(arguments, str):
            if len(arguments) > input_limits().max_bytes:
                draft.raw_arguments = arguments
                return None, arguments_too_large(len(arguments))
            try:
                parsed = loads_strict(arguments)
            except AgentbenchError as exc:
                draft.raw_arguments = arguments
                where = exc.location.field
                return None, ToolCallError(
                    INVALID_ARGUMENTS,
                    f"not strict JSON ({exc.code}): {exc.reason}",
                    field=f"arguments.{where}" if where else "arguments",
                )
        elif isinstance(arguments, Mapping):
            parsed = dict(arguments)
        else:
            return None, ToolCallError(
                INVALID_ARGUMENTS,
                f"arguments must be an object or JSON text, got {type(arguments).__name__}",
            )
        parsed = integral_numbers(parsed)
        # Not JSON at all: nothing to record; the schema check refuses it and names where.
        with contextlib.suppress(TypeError, ValueError):
            encoded = encode_canonical(parsed)
            if len(encoded) > input_limits().max_bytes:
                return None, arguments_too_large(len(encoded))
            draft.arguments_json = encoded
        return parsed, None

    def _deliver(self, draft: _Draft, answer: str) -> None:
        draft.result_json = answer
        size = len(answer.encode("utf-8"))
        limit = self.budget.max_bytes
        if limit is not None and self._bytes + size > limit:
            raise ToolCallError(
                BUDGET_EXHAUSTED,
                f"the answer's {size} bytes exceed the {limit - self._bytes} model-visible "
                f"bytes left; it is withheld",
            )
        draft.delivered = True
        draft.model_visible_bytes = size
        self._bytes += size

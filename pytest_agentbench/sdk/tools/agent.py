"""The generic adapter protocol of interactive worlds, and the loop a world drives it with.

An adapter implementing :class:`ToolAgent` runs on every interactive world:
it gets the world's public task view (a dict) and a :class:`ToolSession`, and
returns the world's final answer object. :func:`solve_with_session` is how a
world calls it: failures are classified, the session is closed, and the
outcome carries the receipt whatever happened. :class:`ToolAgent` itself is
defined in :mod:`pytest_agentbench.sdk.tool_agent`, which imports nothing heavy
(:mod:`pytest_agentbench.sdk.tools` exports it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, loads_strict
from pytest_agentbench.sdk.contracts import FailureClass, Outcome
from pytest_agentbench.sdk.errors import AgentbenchError, cap_text, escape_surrogates, field_path
from pytest_agentbench.sdk.runner import AdapterFailure, CaseTimeout, MalformedOutput, call_adapter
from pytest_agentbench.sdk.tools.session import ToolSession
from pytest_agentbench.sdk.tools.spec import HANDLER_FAILED, ToolDescriptor
from pytest_agentbench.sdk.transcript import bounded, current_transcript

# Stable failure codes a receipt's canonical partition records.
ADAPTER_FAILED = "adapter_failed"
MALFORMED_FINAL = "malformed_final"
TIMED_OUT = "timed_out"

SHOWN_ANSWER_CHARS = 300
"""How much of a refused final answer its failure reason quotes."""


@runtime_checkable
class ToolSessionLike(Protocol):
    """What an adapter may rely on of its session: a :class:`ToolSession`, or a thin
    proxy of one (an isolated adapter's end of a pipe) built from names, JSON and
    :class:`~pytest_agentbench.sdk.tools.spec.ToolDescriptor` s.
    """

    final_schema: dict[str, JsonValue] | None

    @property
    def tools(self) -> Sequence[ToolDescriptor]: ...

    def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> JsonValue: ...

    def openai_tools(self) -> list[dict[str, JsonValue]]: ...

    def mcp_tools(self) -> list[dict[str, JsonValue]]: ...


M = TypeVar("M", bound=BaseModel)


def parse_final(raw: Any, model: type[M]) -> M:
    """Parse an adapter's final answer strictly into ``model``.

    ``raw`` may be the object itself or JSON text (duplicate keys refused).
    Unknown fields and wrong types are refused as well, provided ``model``
    forbids extra fields (as :class:`~pytest_agentbench.sdk.contracts.Record` does).
    Every refusal is :class:`~pytest_agentbench.sdk.runner.MalformedOutput`.
    """
    value = raw
    if isinstance(raw, str | bytes):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        try:
            value = loads_strict(text)
        except AgentbenchError as exc:
            raise MalformedOutput(f"final answer: {exc.render()}") from None
    try:
        return model.model_validate(value, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = field_path(["final", *first["loc"]])
        raise MalformedOutput(f"{where}: {first['msg']}") from None


def solve_with_session(
    adapter: Any,
    task: dict[str, Any],
    session: ToolSession,
    accept: Callable[[Any], JsonValue],
) -> Outcome:
    """Drive ``adapter.solve(task, session)`` and turn what it returns into an Outcome.

    ``accept`` turns the adapter's return value into the canonical output or
    raises :class:`MalformedOutput`. A handler failure during the session
    makes the case a harness error even when the adapter caught it. The
    session is closed before this returns; the outcome carries its receipt.
    A timeout propagates (the runner reports it) with the receipt attached.
    """
    transcript = current_transcript()
    try:
        raw = call_adapter(adapter.solve, task, session)
    except AdapterFailure as failure:
        session.close()
        if transcript is not None:
            transcript.note(_ended(failure.failure_class, failure.reason))
        return _failed(session, failure.failure_class, ADAPTER_FAILED, failure.reason)
    except CaseTimeout as timeout:
        session.close()
        if transcript is not None:
            transcript.note(_ended(FailureClass.AGENT_ERROR, TIMED_OUT))
        timeout.receipt = session.receipt(
            failure_class=FailureClass.AGENT_ERROR.value, failure_code=TIMED_OUT
        ).model_dump(mode="json")
        raise
    session.close()
    failed = session.harness_failure
    if failed is not None:
        reason = f"tool {failed.name!r} failed at call {failed.index}: {failed.message}"
        if transcript is not None:
            transcript.note(_final(raw, "not_read", reason))
        return _failed(session, FailureClass.HARNESS_ERROR, HANDLER_FAILED, reason)
    try:
        final = accept(raw)
    except MalformedOutput as malformed:
        if transcript is not None:
            transcript.note(_final(raw, "refused", malformed.reason))
        reason = f"{malformed.reason}; the answer was {shown_answer(raw)}"
        return _failed(session, FailureClass.PRODUCT_ERROR, MALFORMED_FINAL, reason)
    if transcript is not None:
        transcript.note(_final(raw, "accepted", None))
    return Outcome(output=final, receipt=session.receipt(final).model_dump(mode="json"))


def _final(raw: Any, parsed: str, reason: str | None) -> dict[str, JsonValue]:
    """The transcript's event of a final answer: its text as returned, and how it was read."""
    event: dict[str, JsonValue] = {
        "event": "final",
        "answer": bounded(answer_text(raw)),
        "parsed": parsed,
    }
    if reason is not None:
        event["reason"] = cap_text(reason)
    return event


def _ended(failure_class: FailureClass, reason: str) -> dict[str, JsonValue]:
    """The transcript's event of an adapter that gave no answer: it raised or timed out."""
    return {"event": "no_final", "failure_class": failure_class.value, "reason": cap_text(reason)}


def answer_text(raw: Any) -> str:
    """An adapter's final answer as text: itself when text, else its canonical JSON."""
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "replace")
    if isinstance(raw, str):
        return raw
    try:
        return canonical_json(raw)
    except (TypeError, ValueError):
        return repr(raw)


def shown_answer(raw: Any) -> str:
    """A refused final answer as its failure reason quotes it: JSON-quoted, capped, so what
    the model said (prose, an empty reply, a fenced block) is seen exactly."""
    text = answer_text(raw)
    quoted = escape_surrogates(json.dumps(text[:SHOWN_ANSWER_CHARS], ensure_ascii=False))
    if len(text) > SHOWN_ANSWER_CHARS:
        return f"{quoted}... [{len(text)} characters in all]"
    return quoted


def _failed(session: ToolSession, failure_class: FailureClass, code: str, reason: str) -> Outcome:
    failed = session.harness_failure
    if failed is not None and failure_class is not FailureClass.HARNESS_ERROR:
        # The adapter's failure may be a consequence of the handler's.
        failure_class, code = FailureClass.HARNESS_ERROR, HANDLER_FAILED
        reason = f"tool {failed.name!r} failed at call {failed.index}: {failed.message}"
    receipt = session.receipt(
        failure_class=failure_class.value, failure_code=code, failure_reason=reason
    )
    return Outcome(
        failure_class=failure_class,
        failure_reason=reason,
        receipt=receipt.model_dump(mode="json"),
    )

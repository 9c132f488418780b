"""``ChatAgent``: a function-calling loop over any OpenAI-compatible chat-completions endpoint.

It implements the generic :class:`~pytest_agentbench.sdk.tools.ToolAgent`
protocol, so it runs every interactive world: the task goes to the model as
JSON, the session's tools as the request's ``tools`` list, each tool call
through ``session.call`` (the model's arguments text as it sent it, so the
session judges malformed arguments), each result or refusal back as a
``tool`` message, and the model's first answer without tool calls is
returned as the final answer text for the world to parse strictly.

    pytest --agentbench-adapter=pytest_agentbench.agents.chat:ChatAgent

Configured by ini keys / environment variables (``agents.settings``);
``--agentbench-cassettes DIR`` records and replays model calls. Every failure
of the endpoint is a :class:`ChatAgentError` with a stable code
(``llm_timeout``, ``llm_rate_limited``, ``llm_http_error``,
``llm_malformed_response``, ``llm_unreachable``, ``max_turns_exceeded`` ...),
which the world classifies as ``agent_error``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pytest_agentbench.agents.budget import BudgetRefused
from pytest_agentbench.agents.case_calls import current_case
from pytest_agentbench.agents.cassettes import EncodedRequest, RecordedResponse
from pytest_agentbench.agents.provenance import ModelRun, current_run, model_runs
from pytest_agentbench.agents.providers import (
    MalformedAnswer,
    encode_request,
    envelope_text,
    parse_answer,
)
from pytest_agentbench.agents.settings import ChatSettings, configured_settings
from pytest_agentbench.agents.transcribe import refusal_event, request_event, response_event
from pytest_agentbench.agents.transport import ChatAgentError, ChatTransport
from pytest_agentbench.agents.usage import UsageLog, final_tokens
from pytest_agentbench.scoring.matrix import current_model
from pytest_agentbench.sdk.canonical import JsonValue, canonical_bytes, canonical_json, sha256_hex
from pytest_agentbench.sdk.ledger import Tokens, UsageReport
from pytest_agentbench.sdk.tools import ToolCallError, ToolSessionLike
from pytest_agentbench.sdk.tools.wrapping import FENCE_INSTRUCTIONS, fence_result
from pytest_agentbench.sdk.transcript import current_transcript

SYSTEM_PROMPT = (
    "You solve one task by calling the tools you are offered. When you are done, reply "
    "with the final answer only: one JSON object, with no prose and no code fence."
)
TASK_PREFIX = "Task (JSON):\n"
SCHEMA_PREFIX = "\nThe final answer must validate against this JSON Schema:\n"


MAX_TOOL_LISTS = 64
"""Exported tool lists a chat agent keeps (one per distinct set of tools it is offered)."""


@dataclass(frozen=True)
class _ToolList:
    exported: list[dict[str, JsonValue]]
    schemas: list[dict[str, JsonValue]]


class ChatAgent:
    """A chat-model agent; built with no arguments it reads the session's settings."""

    settings: ChatSettings
    run: ModelRun
    transport: ChatTransport

    def __init__(
        self,
        settings: ChatSettings | None = None,
        *,
        transport: ChatTransport | None = None,
        run: ModelRun | None = None,
    ) -> None:
        self._models: dict[str, ChatAgent] = {}
        """Under a model matrix (built with no settings): an agent per model, by name."""
        if settings is None and run is None and transport is None and model_runs():
            self._models = {
                name: ChatAgent(model_run.settings, run=model_run)
                for name, model_run in model_runs().items()
            }
            # Its own settings are the first model's: only the per-model agents send.
            first = next(iter(self._models.values()))
            settings, run, transport = first.settings, first.run, first.transport
        self.settings = configured_settings() if settings is None else settings
        if not self.settings.model:
            raise ChatAgentError(
                "llm_config", "no model (agentbench_llm_model / AGENTBENCH_LLM_MODEL)"
            )
        if self.settings.effective_mode != "replay" and not self.settings.base_url:
            raise ChatAgentError(
                "llm_config", "no base URL (agentbench_llm_base_url / AGENTBENCH_LLM_BASE_URL)"
            )
        self.run = current_run(self.settings) if run is None else run
        self.transport = ChatTransport(self.settings, self.run) if transport is None else transport
        self.provider = self.settings.provider
        self.usage = UsageLog()
        for agent in self._models.values():
            # One log for every model: a case that called two models drains the requests
            # of both, in the order sent, once.
            agent.usage = self.usage
        self._tool_lists: dict[tuple[tuple[str, str, int], ...], _ToolList] = {}

    def __repr__(self) -> str:
        if self._models:
            return f"ChatAgent(models={list(self._models)!r})"
        return f"ChatAgent(model={self.settings.model!r}, mode={self.settings.effective_mode})"

    def solve(self, task: dict[str, Any], session: ToolSessionLike) -> str:
        if self._models:
            name = current_model()
            agent = None if name is None else self._models.get(name)
            if agent is None:
                raise ChatAgentError("llm_config", f"no model {name!r} in the run's model matrix")
            return agent.solve(task, session)
        case = current_case()
        first_call = 0 if case is None else case.begin()
        try:
            answer = self._solve(task, session)
        except BaseException:
            if case is not None:
                case.decided(first_call, None)
            raise
        if case is not None:
            # The digest the case's ledger takes of the answer it records.
            case.decided(first_call, sha256_hex(canonical_bytes(answer)))
        return answer

    def _solve(self, task: dict[str, Any], session: ToolSessionLike) -> str:
        messages: list[JsonValue] = [
            {"role": "system", "content": self._system_prompt()},
            {"role": "user", "content": self._task_prompt(task, session)},
        ]
        tools = self._tools(session)
        transcribed = 0
        for turn in range(self.settings.max_turns):
            message = self._complete(self._request(messages, tools), transcribed)
            transcribed = len(messages)
            tool_calls = message.get("tool_calls") or []
            if not tool_calls:
                return final_text(message.get("content"))
            said: dict[str, JsonValue] = {
                "role": "assistant",
                "content": message.get("content"),
                "tool_calls": tool_calls,
            }
            if "native" in message:
                said["native"] = message["native"]  # a native provider's blocks, echoed back
            messages.append(said)
            for index, call in enumerate(tool_calls):
                messages.append(self._answer_call(session, call, f"{turn}.{index}"))
        raise ChatAgentError(
            "max_turns_exceeded", f"no final answer within {self.settings.max_turns} turns"
        )

    def _tools(self, session: ToolSessionLike) -> list[dict[str, JsonValue]]:
        """The session's tools as a ``tools`` list, exported once per set of tools.

        Each case's session holds its own copies of its world's tools, sharing their
        schemas: exporting them again for every case was a tenth of a case's CPU. The
        list is only ever read (serialised into requests), so every case may share it.
        """
        tools = session.tools
        key = tuple((tool.name, tool.description, id(tool.parameters)) for tool in tools)
        known = self._tool_lists.get(key)
        if known is None:
            if len(self._tool_lists) >= MAX_TOOL_LISTS:
                self._tool_lists.clear()  # schemas made afresh per case: keep memory bounded
            # The schemas are held too, so no id in the key can be reused meanwhile.
            known = _ToolList(session.openai_tools(), [tool.parameters for tool in tools])
            self._tool_lists[key] = known
        return known.exported

    def drain_usage(self) -> UsageReport | None:
        """The model requests since last asked (the execution ledger's call row copies them)."""
        return self.usage.drain()

    def _system_prompt(self) -> str:
        if self.settings.fence_results:
            return f"{SYSTEM_PROMPT} {FENCE_INSTRUCTIONS}"
        return SYSTEM_PROMPT

    def _task_prompt(self, task: dict[str, Any], session: ToolSessionLike) -> str:
        prompt = TASK_PREFIX + canonical_json(task)
        if session.final_schema is not None:
            prompt += SCHEMA_PREFIX + canonical_json(session.final_schema)
        return prompt

    def _request(
        self, messages: list[JsonValue], tools: list[dict[str, JsonValue]]
    ) -> dict[str, JsonValue]:
        request: dict[str, JsonValue] = {
            "model": self.settings.model,
            "messages": list(messages),
            "temperature": self.settings.temperature,
        }
        if tools:
            request["tools"] = tools
        if self.settings.seed is not None:
            request["seed"] = self.settings.seed
        return request

    def _complete(self, request: dict[str, JsonValue], transcribed: int) -> dict[str, Any]:
        """One model call: reserved against the budgets before it is sent, then settled.

        ``transcribed``: how many of the request's messages the case's transcript
        already holds (from the conversation's previous request).
        """
        case = current_case()
        transcript = current_transcript()
        guard = self.run.guard
        try:
            encoded = self._bounded(request)
            reservation = guard.reserve()
        except BudgetRefused as refusal:
            if case is not None:
                case.refuse(refusal)
            if transcript is not None:
                transcript.note(refusal_event(refusal.code))
            raise
        # Without a per-call bound, the tokens-per-minute limit counts the request's size
        # (about four bytes a token) until its answer reports what it used.
        expected = reservation.tokens or len(encoded.text) // 4 + 1
        if transcript is not None:
            transcript.note(request_event(encoded, transcribed, request["messages"]))
        announced: list[bool] = []

        def on_send() -> None:
            # Counted as it leaves (past the rate limits), so a request the case limit
            # cuts off before its answer is still in the report and the ledger.
            announced.append(True)
            if case is not None:
                case.sent(encoded.digest)
            self.usage.sent(encoded)

        try:
            exchange = self.transport.send(encoded, tokens=expected, on_send=on_send)
        except Exception:
            # Nothing came back (unreachable, no cassette): not a model request. Only the
            # case limit (a BaseException) leaves an announced request counted, as cut off.
            if announced:
                self.usage.withdraw(encoded)
                if case is not None:
                    case.withdraw(encoded.digest)
            raise
        if not announced:
            on_send()  # a transport that does not announce what it sends
        response = exchange.response
        if transcript is not None:
            transcript.note(response_event(response, self.provider))
        tokens = final_tokens(response, self.provider)
        guard.settle(
            reservation,
            None if tokens is None else tokens.input,
            None if tokens is None else tokens.output,
        )
        self.usage.note(encoded, response)
        if case is not None:
            price = self.run.price
            used_in = 0 if tokens is None else tokens.input or 0
            used_out = 0 if tokens is None else tokens.output or 0
            case.answered(
                attempts=len(response.faults) + 1,
                input_tokens=used_in,
                output_tokens=used_out,
                cost=Decimal(0) if price is None else price.cost(used_in, used_out),
                waits=exchange.waits,
                source=exchange.source,
            )
        if exchange.refused is not None:
            if case is not None:
                case.refuse(exchange.refused)
            if transcript is not None:
                transcript.note(refusal_event(exchange.refused.code))
            raise exchange.refused
        self._refuse_overspent(tokens)
        return assistant_message(response, self.settings.timeout_s, self.provider)

    def _bounded(self, request: dict[str, JsonValue]) -> EncodedRequest:
        """The request as sent: with a per-call bound, ``max_tokens`` caps its answer; for a
        native provider, its own body made from the neutral request as bounded."""
        bound = self.settings.max_tokens_per_call
        if self.provider == "openai":
            return bounded_request(request, bound)
        # The neutral request is digested by no one: only its size is needed (with a bound).
        envelope = encode_request(self.provider, bounded_body(request, bound))
        sent = canonical_json(envelope["body"])
        return EncodedRequest(envelope, text=envelope_text(envelope, sent), sent=sent)

    def _refuse_overspent(self, tokens: Tokens | None) -> None:
        """An answer that used more than the call was reserved for is refused by name.

        Its tokens are already in the run's tally (they were spent); the answer is not
        used, so an endpoint that ignores ``max_tokens`` cannot go on overspending.
        """
        overspent = overspent_call(tokens, self.settings.max_tokens_per_call)
        if overspent is not None:
            raise ChatAgentError(OVER_CALL_BOUND, overspent)

    def _answer_call(
        self, session: ToolSessionLike, call: Any, call_id: str
    ) -> dict[str, JsonValue]:
        function = call["function"]
        name = function["name"]
        try:
            content: JsonValue = session.call(name, function["arguments"])
        except ToolCallError as error:
            content = error.payload()
        rendered = (
            fence_result(name, content, call_id=call_id)
            if self.settings.fence_results
            else canonical_json(content)
        )
        return {"role": "tool", "tool_call_id": call["id"], "content": rendered}


OVER_CALL_BOUND = "llm_usage_over_call_bound"


def bounded_request(request: dict[str, JsonValue], bound: int | None) -> EncodedRequest:
    """The request as sent: with a per-call bound, ``max_tokens`` caps its answer.

    The bound covers the request and its answer; the request is estimated at four
    characters a token (the estimate the tokens-per-minute limit uses), and the answer
    may use what is left. A request that leaves nothing is refused unsent.
    """
    encoded = EncodedRequest(request)
    if bound is None:
        return encoded
    capped = _capped(request, encoded.text, bound)
    return encoded if capped is None else EncodedRequest(capped)


def bounded_body(request: dict[str, JsonValue], bound: int | None) -> dict[str, JsonValue]:
    """The body of :func:`bounded_request`, neither digested nor (without a bound) serialised."""
    if bound is None:
        return request
    capped = _capped(request, canonical_json(request), bound)
    return request if capped is None else capped


def _capped(request: dict[str, JsonValue], text: str, bound: int) -> dict[str, JsonValue] | None:
    """``request`` (whose canonical JSON is ``text``) with its ``max_tokens`` capped, or
    ``None`` when it needs no cap; refused when the request alone reaches the bound."""
    estimate = len(text) // 4 + 1
    if estimate >= bound:
        raise BudgetRefused(
            "budget_call_bound_too_small",
            f"the request alone is about {estimate} tokens, not below "
            f"agentbench_llm_max_tokens_per_call={bound}",
        )
    given = request.get("max_tokens")
    if isinstance(given, int) and not isinstance(given, bool) and 0 < given <= bound - estimate:
        return None  # a smaller cap the request already asks for (a judge seat's setting)
    return {**request, "max_tokens": bound - estimate}


def overspent_call(tokens: Tokens | None, bound: int | None) -> str | None:
    """Why an answer's reported usage passes the per-call bound, or ``None``."""
    if bound is None or tokens is None:
        return None
    used = tokens.total if tokens.total is not None else (tokens.input or 0) + (tokens.output or 0)
    if used <= bound:
        return None
    return (
        f"the endpoint reported {used} tokens for one call, above "
        f"agentbench_llm_max_tokens_per_call={bound}"
    )


def assistant_message(
    response: RecordedResponse, timeout_s: float, provider: str = "openai"
) -> dict[str, Any]:
    """The (neutral) assistant message of an answer, or the classified failure."""
    if response.transport_error == "timeout":
        raise ChatAgentError("llm_timeout", f"no answer within {timeout_s:g}s")
    status = response.status
    if status == 429:
        raise ChatAgentError("llm_rate_limited", "the endpoint kept answering HTTP 429")
    if status in AUTH_STATUSES:
        raise ChatAgentError(
            "llm_auth_failed",
            f"the endpoint refused the key (HTTP {status}): check the variable "
            "agentbench_llm_api_key_env names",
        )
    if status is None or not 200 <= status < 300:
        raise ChatAgentError("llm_http_error", f"the endpoint answered HTTP {status}")
    if response.text_body is not None:
        raise ChatAgentError("llm_malformed_response", "the endpoint's answer is not JSON")
    try:
        message, _ = parse_answer(provider, response.json_body)
    except MalformedAnswer:
        raise ChatAgentError("llm_malformed_response", MALFORMED[provider]) from None
    return message


AUTH_STATUSES = frozenset({401, 403})
MALFORMED = {
    "openai": "the answer is not a chat completion with a message",
    "anthropic": "the answer is not an Anthropic message",
    "gemini": "the answer is not a Gemini response with a candidate",
}


def final_text(content: Any) -> str:
    """The model's final answer text, without a Markdown code fence around it."""
    text = content.strip() if isinstance(content, str) else ""
    if text.startswith("```") and text.endswith("```") and "\n" in text:
        text = text[text.index("\n") + 1 : -3].strip()
    return text

"""A chat agent's model calls as transcript events (see :mod:`pytest_agentbench.sdk.transcript`).

A request's event holds the messages added since the agent's previous request
in the same conversation (the first holds them all), each text bounded, with
the sha256 of all its messages and of the request as sent (its cassette's
name). An answer's event holds what the model said, the tool calls it asked
for, why it stopped and the tokens it reported: read from the recorded
response, so a replay from cassettes writes the same events.
"""

from __future__ import annotations

from typing import Any

from pytest_agentbench.agents.cassettes import EncodedRequest, RecordedResponse
from pytest_agentbench.agents.providers import MalformedAnswer, parse_answer
from pytest_agentbench.agents.usage import reported_tokens
from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, sha256_hex
from pytest_agentbench.sdk.transcript import bounded


def request_event(
    request: EncodedRequest, first_new: int, messages: JsonValue = None
) -> dict[str, JsonValue]:
    """``messages``: the neutral conversation, when the request sent is a provider's own
    body (its transcript is the same whatever the provider)."""
    if messages is None:
        messages = request.body.get("messages")
    listed = messages if isinstance(messages, list) else []
    return {
        "event": "model_request",
        "request_sha256": request.digest,
        "messages_sha256": sha256_hex(canonical_json(listed).encode("utf-8")),
        "messages_total": len(listed),
        "messages_from": first_new,
        "messages": [_message(message) for message in listed[first_new:]],
    }


def response_event(response: RecordedResponse, provider: str = "openai") -> dict[str, JsonValue]:
    event: dict[str, JsonValue] = {
        "event": "model_response",
        "status": response.status,
        "faults": list(response.faults),
    }
    if response.transport_error is not None:
        event["error"] = response.transport_error
        return event
    if response.text_body is not None:
        event["body"] = bounded(response.text_body)
        return event
    body = response.json_body
    try:
        message, finish_reason = parse_answer(provider, body, check_calls=False)
        event["text"] = _text(message.get("content"))
        event["tool_calls"] = [_tool_call(call) for call in message.get("tool_calls") or []]
        event["finish_reason"] = finish_reason
    except MalformedAnswer:
        event["body"] = bounded(canonical_json(body))
    tokens = reported_tokens(body, provider)
    event["usage"] = (
        None
        if tokens is None
        else {"input": tokens.input, "output": tokens.output, "total": tokens.total}
    )
    return event


def refusal_event(code: str) -> dict[str, JsonValue]:
    """A model call the run's budget refused before it was sent."""
    return {"event": "model_refused", "code": code}


def _message(message: Any) -> JsonValue:
    if not isinstance(message, dict):
        return {"body": bounded(canonical_json(message))}
    shown: dict[str, JsonValue] = {
        "role": message.get("role"),
        "content": _text(message.get("content")),
    }
    if message.get("tool_calls"):
        shown["tool_calls"] = [_tool_call(call) for call in message["tool_calls"]]
    if "tool_call_id" in message:
        shown["tool_call_id"] = message["tool_call_id"]
    return shown


def _text(content: Any) -> JsonValue:
    if content is None:
        return None
    return bounded(content if isinstance(content, str) else canonical_json(content))


def _tool_call(call: Any) -> JsonValue:
    try:
        function = call["function"]
        arguments = function["arguments"]
        return {
            "id": call["id"],
            "name": function["name"],
            "arguments": bounded(
                arguments if isinstance(arguments, str) else canonical_json(arguments)
            ),
        }
    except (KeyError, TypeError):
        return {"body": bounded(canonical_json(call))}

"""Provider codecs: the chat agent's neutral conversation to each model API's wire and back.

The chat agent keeps one conversation in the chat-completions shape (system,
user, assistant messages with ``tool_calls``, ``tool`` results) whatever the
provider; the transport, retries, rate limits, budgets, cassettes, usage and
provenance are the same for all. A codec turns that neutral request into the
body one API takes, and its answer (text, tool calls, finish reason, usage)
back into a neutral assistant message:

- ``openai``: OpenAI-compatible ``POST {base}/chat/completions``; the neutral
  request *is* the body, so its cassettes are those recorded before providers;
- ``anthropic``: Anthropic Messages ``POST {base}/messages`` (tool use);
  ``max_tokens`` is always sent (the API requires it); ``temperature`` and ``seed``
  never (the SDK's request type has neither);
- ``gemini``: Google Gemini ``POST {base}/models/{model}:generateContent``
  (function calling); temperature, seed and the output cap in ``generationConfig``.

A native request is recorded as an envelope ``{"provider", "model", "body"}``:
so the provider is part of the request's digest (its cassette's name), and a
Gemini body, which does not name its model (the URL does), is told apart by
model. The assistant's own content blocks (Anthropic) or parts (Gemini) ride
along in the neutral message as ``native`` and are sent back verbatim, so
what the API needs echoed (tool-call ids, thought signatures) is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, get_args
from urllib.parse import quote

from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, loads_strict
from pytest_agentbench.sdk.errors import AgentbenchError

Provider = Literal["openai", "anthropic", "gemini"]
PROVIDERS: Final[tuple[str, ...]] = get_args(Provider)

PROVIDER_LABELS: Final[Mapping[str, str]] = {
    "openai": "openai-compatible",
    "anthropic": "anthropic",
    "gemini": "gemini",
}
"""How reports name each provider (``openai-compatible`` as before providers existed)."""

PROVIDER_APIS: Final[Mapping[str, str]] = {
    "openai": "chat.completions",
    "anthropic": "messages",
    "gemini": "generateContent",
}
"""The API each provider's requests go to, as ledger headers and episode artefacts name it."""

DEFAULT_KEY_ENV: Final[Mapping[str, str]] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
}
"""The variable holding the key when ``agentbench_llm_api_key_env`` is not set."""

ANTHROPIC_VERSION: Final = "2023-06-01"
"""The ``anthropic-version`` header every Messages request carries."""
ANTHROPIC_DEFAULT_MAX_TOKENS: Final = 4096
"""``max_tokens`` of a Messages request without ``agentbench_llm_max_tokens_per_call``."""


class MalformedAnswer(ValueError):
    """An answer that is not what the provider's API answers."""


def provider_label(provider: str) -> str:
    return PROVIDER_LABELS.get(provider, provider)


def provider_of_label(label: str) -> str:
    """The setting a report's provider label was made from (``openai-compatible`` -> openai)."""
    for name, shown in PROVIDER_LABELS.items():
        if shown == label:
            return name
    return label


def request_provider(request: Mapping[str, Any]) -> str:
    """The provider a recorded request is for: an envelope's, else OpenAI-compatible."""
    provider = request.get("provider")
    if isinstance(provider, str) and provider in PROVIDERS and "body" in request:
        return provider
    return "openai"


def encode_request(provider: str, neutral: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """The request as digested, recorded and (its ``body``) sent."""
    if provider == "openai":
        return dict(neutral)
    model = neutral.get("model")
    if provider == "anthropic":
        return {"provider": provider, "model": model, "body": anthropic_body(neutral)}
    if provider == "gemini":
        return {"provider": provider, "model": model, "body": gemini_body(neutral)}
    raise ValueError(f"unknown provider {provider!r}")


def envelope_text(envelope: Mapping[str, JsonValue], body_text: str) -> str:
    """The canonical JSON of a native request's envelope (:func:`encode_request`), made
    around its body's canonical JSON ``body_text``: the body, nearly all of the request,
    is serialised once for the digest and the wire. Keys in canonical (sorted) order."""
    return (
        f'{{"body":{body_text},"model":{canonical_json(envelope["model"])},'
        f'"provider":{canonical_json(envelope["provider"])}}}'
    )


def wire(request: Mapping[str, Any], text: str, sent: str | None = None) -> tuple[str, str]:
    """(path under the base URL, body text) of a recorded request whose canonical JSON is
    ``text``: the OpenAI-compatible body is the request itself; a native provider's is
    its envelope's ``body``, serialised already when ``sent`` is given."""
    provider = request_provider(request)
    if provider == "openai":
        return "chat/completions", text
    body = canonical_json(request["body"]) if sent is None else sent
    if provider == "anthropic":
        return "messages", body
    model = str(request["model"]).removeprefix("models/")
    return f"models/{quote(model, safe='-._~')}:generateContent", body


def auth_headers(provider: str, key: str | None) -> dict[str, str]:
    """The headers that authenticate (and version) one request; no key, none sent."""
    if provider == "anthropic":
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key:
            headers["x-api-key"] = key
        return headers
    if not key:
        return {}
    if provider == "gemini":
        return {"x-goog-api-key": key}
    return {"Authorization": f"Bearer {key}"}


# --- requests -------------------------------------------------------------------------------


def _system_text(messages: list[Any]) -> str:
    return "\n\n".join(
        str(m.get("content") or "")
        for m in messages
        if isinstance(m, dict) and m.get("role") == "system"
    )


def _arguments(function: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call's arguments as an object (the native APIs take objects, not text)."""
    arguments = function.get("arguments")
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = loads_strict(arguments) if isinstance(arguments, str) else None
    except AgentbenchError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {}


def _functions(neutral: Mapping[str, Any]) -> list[dict[str, Any]]:
    tools = neutral.get("tools")
    listed = tools if isinstance(tools, list) else []
    return [tool["function"] for tool in listed if isinstance(tool, dict) and "function" in tool]


def anthropic_body(neutral: Mapping[str, Any]) -> dict[str, JsonValue]:
    messages = list(neutral.get("messages") or [])
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": message.get("content") or "",
            }
            # Every result of one assistant turn goes back in one user message.
            last = turns[-1] if turns else None
            if last is not None and last["role"] == "user" and isinstance(last["content"], list):
                last["content"].append(result)
            else:
                turns.append({"role": "user", "content": [result]})
        elif role == "assistant":
            turns.append({"role": "assistant", "content": _anthropic_blocks(message)})
        else:
            turns.append({"role": "user", "content": str(message.get("content") or "")})
    max_tokens = neutral.get("max_tokens")
    body: dict[str, JsonValue] = {
        "model": neutral.get("model"),
        "max_tokens": max_tokens if isinstance(max_tokens, int) else ANTHROPIC_DEFAULT_MAX_TOKENS,
        "messages": turns,
    }
    system = _system_text(messages)
    if system:
        body["system"] = system
    # No temperature and no seed: the Messages API as its SDK types it (anthropic 2.x)
    # takes neither (see docs/model-runs.md#providers).
    functions = _functions(neutral)
    if functions:
        body["tools"] = [
            {
                "name": function["name"],
                "description": function.get("description") or "",
                "input_schema": function.get("parameters") or {"type": "object"},
            }
            for function in functions
        ]
    return body


def _anthropic_blocks(message: Mapping[str, Any]) -> JsonValue:
    native = message.get("native")
    if isinstance(native, list):
        return native
    blocks: list[JsonValue] = []
    if message.get("content"):
        blocks.append({"type": "text", "text": str(message["content"])})
    for call in message.get("tool_calls") or []:
        function = call["function"]
        blocks.append(
            {
                "type": "tool_use",
                "id": call["id"],
                "name": function["name"],
                "input": _arguments(function),
            }
        )
    return blocks


def gemini_body(neutral: Mapping[str, Any]) -> dict[str, JsonValue]:
    messages = list(neutral.get("messages") or [])
    contents: list[dict[str, Any]] = []
    calls: dict[str, tuple[str, str | None]] = {}
    """Each neutral call id -> (function name, the id Gemini gave it, if any)."""
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role == "tool":
            name, native_id = calls.get(str(message.get("tool_call_id")), ("", None))
            response: dict[str, Any] = {"name": name, "response": {"output": message["content"]}}
            if native_id is not None:
                response["id"] = native_id
            part = {"functionResponse": response}
            last = contents[-1] if contents else None
            if last is not None and last.get("_results"):
                last["parts"].append(part)
            else:
                contents.append({"role": "user", "parts": [part], "_results": True})
        elif role == "assistant":
            parts = _gemini_parts(message)
            called = [
                p["functionCall"] for p in parts if isinstance(p, dict) and "functionCall" in p
            ]
            for call, native in zip(message.get("tool_calls") or [], called, strict=False):
                calls[str(call["id"])] = (str(call["function"]["name"]), native.get("id"))
            contents.append({"role": "model", "parts": parts})
        else:
            contents.append(
                {"role": "user", "parts": [{"text": str(message.get("content") or "")}]}
            )
    for content in contents:
        content.pop("_results", None)
    body: dict[str, JsonValue] = {"contents": contents}
    system = _system_text(messages)
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    functions = _functions(neutral)
    if functions:
        body["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "name": function["name"],
                        "description": function.get("description") or "",
                        # The full JSON Schema (``parameters`` takes an OpenAPI subset only).
                        "parametersJsonSchema": function.get("parameters") or {"type": "object"},
                    }
                    for function in functions
                ]
            }
        ]
    config: dict[str, JsonValue] = {}
    if "temperature" in neutral:
        config["temperature"] = neutral["temperature"]
    if neutral.get("seed") is not None:
        config["seed"] = neutral["seed"]
    if isinstance(neutral.get("max_tokens"), int):
        config["maxOutputTokens"] = neutral["max_tokens"]
    if config:
        body["generationConfig"] = config
    return body


def _gemini_parts(message: Mapping[str, Any]) -> list[Any]:
    native = message.get("native")
    if isinstance(native, list):
        return native
    parts: list[Any] = []
    if message.get("content"):
        parts.append({"text": str(message["content"])})
    for call in message.get("tool_calls") or []:
        function = call["function"]
        parts.append({"functionCall": {"name": function["name"], "args": _arguments(function)}})
    return parts


# --- answers --------------------------------------------------------------------------------


def parse_answer(
    provider: str, body: Any, *, check_calls: bool = True
) -> tuple[dict[str, Any], JsonValue]:
    """(neutral assistant message, finish reason) of a successful answer.

    Raises :class:`MalformedAnswer` when ``body`` is not an answer of ``provider``'s API.
    ``check_calls=False`` (a transcript's reading) takes a chat completion's tool calls
    as they are, to show them.
    """
    try:
        if provider == "anthropic":
            return _anthropic_answer(body)
        if provider == "gemini":
            return _gemini_answer(body)
        return _openai_answer(body, check_calls)
    except (KeyError, IndexError, TypeError, AttributeError):
        raise MalformedAnswer(provider) from None


def _openai_answer(body: Any, check_calls: bool) -> tuple[dict[str, Any], JsonValue]:
    choice = body["choices"][0]
    message = choice["message"]
    if not isinstance(message, dict):
        raise TypeError
    for call in message.get("tool_calls") or [] if check_calls else []:
        function = call["function"]
        if not (
            isinstance(call["id"], str)
            and isinstance(function["name"], str)
            and isinstance(function["arguments"], str | dict)
        ):
            raise TypeError
    finish: JsonValue = choice.get("finish_reason")
    return message, finish


def _anthropic_answer(body: Any) -> tuple[dict[str, Any], JsonValue]:
    blocks = body["content"]
    if not isinstance(blocks, list):
        raise TypeError
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in blocks:
        kind = block["type"]
        if kind == "text":
            texts.append(_str(block["text"]))
        elif kind == "tool_use":
            if not isinstance(block["input"], dict):
                raise TypeError
            calls.append(
                {
                    "id": _str(block["id"]),
                    "type": "function",
                    "function": {"name": _str(block["name"]), "arguments": block["input"]},
                }
            )
    return _native_message(texts, calls, blocks), body.get("stop_reason")


def _gemini_answer(body: Any) -> tuple[dict[str, Any], JsonValue]:
    candidate = body["candidates"][0]
    content = candidate.get("content") or {}
    parts = content.get("parts") or []
    if not isinstance(parts, list):
        raise TypeError
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        if "functionCall" in part:
            call = part["functionCall"]
            args = call.get("args") or {}
            if not isinstance(args, dict):
                raise TypeError
            given = call.get("id")
            calls.append(
                {
                    # Gemini may leave a call unnamed: its place in the turn names it here.
                    "id": _str(given) if given is not None else f"call_{index}",
                    "type": "function",
                    "function": {"name": _str(call["name"]), "arguments": args},
                }
            )
        elif "text" in part and not part.get("thought"):
            texts.append(_str(part["text"]))
    return _native_message(texts, calls, parts), candidate.get("finishReason")


def _native_message(texts: list[str], calls: list[dict[str, Any]], native: Any) -> dict[str, Any]:
    """The neutral assistant message of a native answer, its native content kept for replay."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(texts) if texts else None,
        "native": native,
    }
    if calls:
        message["tool_calls"] = calls
    return message


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError
    return value


def _count(usage: Mapping[str, Any], key: str) -> int | None:
    value = usage.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _tokens(input_: int | None, output: int | None, total: int | None) -> dict[str, int] | None:
    counts = {
        name: value
        for name, value in (("input", input_), ("output", output), ("total", total))
        if value is not None
    }
    return counts or None


def _sum(*values: int | None) -> int | None:
    given = [value for value in values if value is not None]
    return sum(given) if given else None


def provider_tokens(provider: str, body: Any) -> dict[str, int] | None:
    """The token counts a native answer reports, by :class:`~pytest_agentbench.sdk.ledger.Tokens`
    field (``agents.usage`` makes them one; this module imports no ledger code, as the
    settings, which every pytest process imports, import it)."""
    if not isinstance(body, dict):
        return None
    if provider == "anthropic":
        usage = body.get("usage")
        if not isinstance(usage, dict):
            return None
        # Cached input is input too: the three counts are disjoint.
        input_ = _sum(
            _count(usage, "input_tokens"),
            _count(usage, "cache_creation_input_tokens"),
            _count(usage, "cache_read_input_tokens"),
        )
        output = _count(usage, "output_tokens")
        return _tokens(input_, output, _sum(input_, output))
    usage = body.get("usageMetadata")
    if not isinstance(usage, dict):
        return None
    # A thinking model's thoughts are output it is billed for.
    output = _sum(_count(usage, "candidatesTokenCount"), _count(usage, "thoughtsTokenCount"))
    return _tokens(_count(usage, "promptTokenCount"), output, _count(usage, "totalTokenCount"))

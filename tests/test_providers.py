"""Native providers: Anthropic Messages and Gemini generateContent beside OpenAI-compatible.

Every request body the chat agent sends, and every answer the loopback server
gives, is validated against the official SDK's own types (``openai``,
``anthropic``, ``google-genai``); every scenario of the scripted server ends
classified as it does for chat completions; a pytest run per provider records
cassettes and replays them, identically, with the server stopped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from pytest_agentbench.agents.cassettes import EncodedRequest
from pytest_agentbench.agents.chat import ChatAgent
from pytest_agentbench.agents.providers import (
    ANTHROPIC_DEFAULT_MAX_TOKENS,
    ANTHROPIC_VERSION,
    MalformedAnswer,
    encode_request,
    parse_answer,
    request_provider,
    wire,
)
from pytest_agentbench.agents.settings import ChatSettings, resolve_settings
from pytest_agentbench.agents.usage import reported_tokens
from pytest_agentbench.cli.main import main
from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.errors import UsageError
from pytest_agentbench.sdk.ledger import Tokens
from tests.chat_projects import CHAT_RUN_ARGS, write_chat_project
from tests.llm_server import ScriptedLLM
from tests.test_chat_agent import assert_classified, solve
from tests.test_chat_agent import settings as chat_settings

anthropic_types = pytest.importorskip("anthropic.types")
genai_types = pytest.importorskip("google.genai.types")
openai_chat = pytest.importorskip("openai.types.chat")

from anthropic.types.message_create_params import (  # noqa: E402
    MessageCreateParamsNonStreaming,
)
from openai.types.chat.completion_create_params import (  # noqa: E402
    CompletionCreateParamsNonStreaming,
)

KEY_ENV = "AGENTBENCH_TEST_PROVIDER_KEY"
SECRET = "provider-secret-4711"
NATIVE = ("anthropic", "gemini")
# question -> (failure class, agent error code or receipt failure code, receipt errors)
SCENARIOS: dict[str, tuple[str | None, str | None, dict[str, int]]] = {
    "tools": (None, None, {}),
    "malformed_args": (None, None, {"invalid_arguments": 1}),
    "rate_limited": (None, None, {}),
    "server_error": ("agent_error", "llm_http_error", {}),
    "unauthorized": ("agent_error", "llm_auth_failed", {}),
    "not_json": ("agent_error", "llm_malformed_response", {}),
    "prose": ("product_error", "malformed_final", {}),
    "loop": ("agent_error", "max_turns_exceeded", {}),
}


# --- the SDKs' own types --------------------------------------------------------------------


def _keys(typed_dict: Any) -> frozenset[str]:
    return frozenset(typed_dict.__required_keys__ | typed_dict.__optional_keys__)


def _only(value: dict[str, Any], typed_dict: Any, where: str) -> None:
    """TypedDicts ignore keys they do not declare: a key the SDK does not know is refused."""
    unknown = set(value) - _keys(typed_dict)
    assert not unknown, f"{where}: {sorted(unknown)} not in {typed_dict.__name__}"


def _consumed(value: Any) -> Any:
    """The SDK validators check ``Iterable`` fields lazily: iterating them validates them."""
    if isinstance(value, dict):
        return {key: _consumed(item) for key, item in value.items()}
    if isinstance(value, list | tuple) or hasattr(value, "__next__"):
        return [_consumed(item) for item in value]
    return value


class _OpenAIBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    body: CompletionCreateParamsNonStreaming


class _AnthropicBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    body: MessageCreateParamsNonStreaming


def validate_openai(body: dict[str, Any]) -> None:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionSystemMessageParam,
        ChatCompletionToolMessageParam,
        ChatCompletionUserMessageParam,
    )
    from openai.types.chat.chat_completion_message_function_tool_call_param import Function
    from openai.types.shared_params import FunctionDefinition

    _consumed(_OpenAIBody(body=body).body)  # type: ignore[arg-type]
    _only(body, CompletionCreateParamsNonStreaming, "request")
    roles = {
        "system": ChatCompletionSystemMessageParam,
        "user": ChatCompletionUserMessageParam,
        "assistant": ChatCompletionAssistantMessageParam,
        "tool": ChatCompletionToolMessageParam,
    }
    for message in body["messages"]:
        _only(message, roles[message["role"]], "message")
        for call in message.get("tool_calls") or []:
            _only(call, ChatCompletionMessageFunctionToolCallParam, "tool call")
            _only(call["function"], Function, "tool call function")
    for tool in body.get("tools", []):
        _only(tool, ChatCompletionFunctionToolParam, "tool")
        _only(tool["function"], FunctionDefinition, "tool function")


def validate_anthropic(body: dict[str, Any]) -> None:
    from anthropic.types import (
        AssistantMessageParam,
        TextBlockParam,
        ToolParam,
        ToolResultBlockParam,
        ToolUseBlockParam,
        UserMessageParam,
    )

    _consumed(_AnthropicBody(body=body).body)  # type: ignore[arg-type]
    blocks = {
        "text": TextBlockParam,
        "tool_use": ToolUseBlockParam,
        "tool_result": ToolResultBlockParam,
    }
    for message in body["messages"]:
        roles = {"user": UserMessageParam, "assistant": AssistantMessageParam}
        _only(message, roles[message["role"]], "message")
        for block in message["content"] if isinstance(message["content"], list) else []:
            _only(block, blocks[block["type"]], f"{block['type']} block")
    for tool in body.get("tools", []):
        _only(tool, ToolParam, "tool")


GEMINI_REQUEST_FIELDS = {"contents", "tools", "toolConfig", "systemInstruction", "generationConfig"}
"""The generateContent request's fields the SDK models one by one (its request type is private)."""


def validate_gemini(body: dict[str, Any]) -> None:
    # google-genai's models forbid unknown fields: each part validates strictly.
    assert set(body) <= GEMINI_REQUEST_FIELDS, sorted(set(body) - GEMINI_REQUEST_FIELDS)
    for content in body["contents"]:
        genai_types.Content.model_validate(content)
    for tool in body.get("tools", []):
        genai_types.Tool.model_validate(tool)
    if "systemInstruction" in body:
        genai_types.Content.model_validate(body["systemInstruction"])
    if "generationConfig" in body:
        genai_types.GenerationConfig.model_validate(body["generationConfig"])


def validate_answer(provider: str, body: Any) -> None:
    if provider == "anthropic":
        anthropic_types.Message.model_validate(body)
    elif provider == "gemini":
        genai_types.GenerateContentResponse.model_validate(body)
    else:
        openai_chat.ChatCompletion.model_validate(body)


VALIDATE = {"openai": validate_openai, "anthropic": validate_anthropic, "gemini": validate_gemini}


def test_the_validators_refuse_what_the_apis_refuse() -> None:
    """They can fail: a body each API would refuse does not pass its SDK's types."""
    good = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    validate_anthropic(good)
    for bad in (
        {k: v for k, v in good.items() if k != "max_tokens"},  # Anthropic requires it
        {**good, "seed": 0},  # Anthropic has no seed
        {**good, "messages": [{"role": "user", "content": [{"type": "text", "txt": "hi"}]}]},
    ):
        with pytest.raises((ValueError, AssertionError)):
            validate_anthropic(bad)
    with pytest.raises(ValueError, match="txt"):
        validate_gemini({"contents": [{"role": "user", "parts": [{"txt": "hi"}]}]})
    with pytest.raises(AssertionError):
        validate_gemini({"contents": [], "model": "m"})  # the model is in the URL
    with pytest.raises((ValueError, AssertionError)):
        validate_openai({"model": "m", "messages": [{"role": "tool", "content": "x", "name": "f"}]})


# --- the chat agent against the loopback server, per provider ----------------------------


@pytest.fixture
def llm() -> Iterator[tuple[ScriptedLLM, str]]:
    server = ScriptedLLM()
    with server.serving() as base_url:
        yield server, base_url


def settings(provider: str, base_url: str | None, **extra: Any) -> ChatSettings:
    return chat_settings(base_url, provider=provider, api_key_env=KEY_ENV, **extra)


@pytest.mark.parametrize("provider", ["openai", *NATIVE])
@pytest.mark.parametrize("question", sorted(SCENARIOS))
def test_every_scenario_ends_classified_and_every_body_validates(
    llm: tuple[ScriptedLLM, str], provider: str, question: str
) -> None:
    server, base_url = llm
    outcome, receipt = solve(ChatAgent(settings(provider, base_url)), question)
    assert_classified(outcome, receipt, SCENARIOS[question])
    assert server.requests, "the agent asked the server"
    for body in server.requests:
        VALIDATE[provider](body)
    suffix = {
        "openai": "/v1/chat/completions",
        "anthropic": "/v1/messages",
        "gemini": "/v1/models/scripted-model:generateContent",
    }[provider]
    assert set(server.paths) == {suffix}


def test_the_conversation_in_each_wire_format(
    llm: tuple[ScriptedLLM, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tools, the system prompt, sampling, the output cap, results answering their calls,
    the assistant's own blocks echoed, and each provider's key header."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    server, base_url = llm
    solve(ChatAgent(settings("anthropic", base_url)), "malformed_args")
    first, _, last = server.requests
    assert first["max_tokens"] == ANTHROPIC_DEFAULT_MAX_TOKENS, "sent though no bound is set"
    assert first["model"] == "scripted-model"
    assert "seed" not in first, "the Messages API has no seed"
    assert "temperature" not in first, "nor a temperature, as its SDK types it"
    assert first["system"].startswith("You solve one task")
    assert [(t["name"], t["input_schema"]["type"]) for t in first["tools"]] == [
        ("add", "object"),
        ("divide", "object"),
    ]
    roles = [m["role"] for m in last["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    use, result = last["messages"][3]["content"][0], last["messages"][4]["content"][0]
    assert (use["type"], result["type"], result["tool_use_id"]) == (
        "tool_use",
        "tool_result",
        use["id"],
    )
    assert '{"sum":3}' in result["content"]
    for headers in server.headers:
        assert (headers.get("x-api-key"), headers.get("anthropic-version")) == (
            SECRET,
            ANTHROPIC_VERSION,
        )
        assert "Authorization" not in headers

    server.requests.clear()
    server.headers.clear()
    solve(ChatAgent(settings("gemini", base_url, seed=7, max_tokens_per_call=3000)), "tools")
    first, last = server.requests
    assert first["systemInstruction"]["parts"][0]["text"].startswith("You solve one task")
    config = first["generationConfig"]
    assert (config["temperature"], config["seed"]) == (0.0, 7)
    assert 0 < config["maxOutputTokens"] < 3000, "the per-call bound, less the request"
    declared = first["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declared] == ["add", "divide"]
    assert declared[0]["parametersJsonSchema"]["type"] == "object"
    call, response = last["contents"][1]["parts"][0], last["contents"][2]["parts"][0]
    assert call == {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}}, "echoed"
    assert response["functionResponse"]["name"] == "add"
    assert "id" not in response["functionResponse"], "the call had none"
    assert '{"sum":3}' in response["functionResponse"]["response"]["output"]
    assert all(h.get("x-goog-api-key") == SECRET for h in server.headers)
    assert not any("Authorization" in h or "x-api-key" in h for h in server.headers)


@pytest.mark.parametrize("provider", NATIVE)
def test_the_per_call_bound_caps_and_polices_native_answers(
    llm: tuple[ScriptedLLM, str], provider: str
) -> None:
    """``max_tokens_per_call`` is sent as the API's output cap, and an answer whose native
    usage passes it is refused by name, as for chat completions."""
    server, base_url = llm
    agent = ChatAgent(settings(provider, base_url, max_tokens_per_call=1000))
    outcome, _ = solve(agent, "verbose")
    assert "[llm_usage_over_call_bound]" in (outcome.failure_reason or "")
    (sent,) = server.requests
    cap = (
        sent["max_tokens"]
        if provider == "anthropic"
        else sent["generationConfig"]["maxOutputTokens"]
    )
    assert 0 < cap < 1000


def test_no_key_no_key_header_but_the_anthropic_version(
    llm: tuple[ScriptedLLM, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    server, base_url = llm
    for provider in NATIVE:
        solve(ChatAgent(settings(provider, base_url)), "tools")
    assert not any({"x-api-key", "x-goog-api-key"} & set(h) for h in server.headers)
    assert sum("anthropic-version" in h for h in server.headers) == 2


# --- the codec in isolation ---------------------------------------------------------------


NEUTRAL: dict[str, Any] = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "tool", "tool_call_id": "c2", "content": "r2"},
    ],
    "temperature": 0.0,
    "seed": 0,
}


def test_a_provider_is_part_of_the_request_digest() -> None:
    digests = {p: EncodedRequest(encode_request(p, NEUTRAL)).digest for p in VALIDATE}
    assert len(set(digests.values())) == 3
    # Chat completions are recorded as before providers: their cassettes still replay.
    assert digests["openai"] == EncodedRequest(NEUTRAL).digest
    for provider, validate in VALIDATE.items():
        encoded = encode_request(provider, NEUTRAL)
        assert request_provider(encoded) == provider
        validate(encoded.get("body", encoded))  # type: ignore[arg-type]
    gemini = encode_request("gemini", {**NEUTRAL, "model": "other"})
    assert EncodedRequest(gemini).digest != digests["gemini"], "the model is not in its body"
    # Both results of one turn go back in one user turn, each answering its call.
    anthropic = encode_request("anthropic", NEUTRAL)["body"]
    assert [b["tool_use_id"] for b in anthropic["messages"][-1]["content"]] == ["c1", "c2"]  # type: ignore[call-overload, index]
    parts = encode_request("gemini", NEUTRAL)["body"]["contents"][-1]["parts"]  # type: ignore[call-overload, index]
    assert [p["functionResponse"]["name"] for p in parts] == ["f", "g"]


@pytest.mark.parametrize("bound", [None, 5000])
@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_a_native_request_is_serialised_and_digested_once(
    provider: str, bound: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent serialises a native body once and hashes the envelope once; the digest is
    the envelope's canonical JSON's and the bytes sent are its body's, as before."""
    from pytest_agentbench.agents import cassettes
    from pytest_agentbench.agents.chat import bounded_request
    from pytest_agentbench.sdk import canonical

    agent = ChatAgent(
        ChatSettings(
            model="m",
            provider=provider,
            base_url="http://127.0.0.1:9/v1",
            max_tokens_per_call=bound,
        )
    )
    # The request as before: the neutral request bounded, then its native envelope.
    expected = EncodedRequest(encode_request(provider, bounded_request(NEUTRAL, bound).body))
    serialised: list[Any] = []
    hashed: list[str] = []
    encode, digest = canonical._ENCODE_CANONICAL, cassettes.sha256_hex

    def counted_encode(value: Any) -> str:
        serialised.append(value)
        return encode(value)

    def counted_digest(data: bytes) -> str:
        hashed.append(data.decode())
        return digest(data)

    monkeypatch.setattr(canonical, "_ENCODE_CANONICAL", counted_encode)
    monkeypatch.setattr(cassettes, "sha256_hex", counted_digest)
    sent = agent._bounded(dict(NEUTRAL))
    path, body = wire(sent, sent.text, sent.sent)
    monkeypatch.undo()
    assert (sent.body, sent.text, sent.digest) == (expected.body, expected.text, expected.digest)
    assert body == canonical_json(expected.body["body"])
    assert path == wire(expected, expected.text)[0]
    assert hashed == [expected.text], "the envelope, hashed once"
    bodies = [value for value in serialised if isinstance(value, dict)]
    # The body once; with a bound, the neutral request too, for the size its cap comes from.
    assert bodies == ([] if bound is None else [NEUTRAL]) + [expected.body["body"]]


def test_answers_and_usage_of_each_provider() -> None:
    anthropic = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "text", "text": "calling"},
            {"type": "tool_use", "id": "toolu_9", "name": "add", "input": {"a": 1}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 4,
            "cache_creation_input_tokens": 3,
            "cache_read_input_tokens": 2,
        },
    }
    validate_answer("anthropic", anthropic)
    message, finish = parse_answer("anthropic", anthropic)
    assert (message["content"], finish) == ("calling", "tool_use")
    assert message["tool_calls"][0]["id"] == "toolu_9"
    assert message["native"] == anthropic["content"], "the thinking block is sent back"
    assert reported_tokens(anthropic, "anthropic") == Tokens(input=15, output=4, total=19)
    gemini = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "thinking", "thought": True},
                        {"functionCall": {"name": "add", "args": {"a": 1}, "id": "g1"}},
                        {"functionCall": {"name": "add", "args": {"a": 2}}},
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 7,
            "candidatesTokenCount": 2,
            "thoughtsTokenCount": 5,
            "totalTokenCount": 14,
        },
    }
    validate_answer("gemini", gemini)
    message, finish = parse_answer("gemini", gemini)
    assert (message["content"], finish) == (None, "STOP"), "a thought is not the answer"
    assert [c["id"] for c in message["tool_calls"]] == ["g1", "call_2"]
    assert reported_tokens(gemini, "gemini") == Tokens(input=7, output=7, total=14)
    # The neutral conversation carries the native parts back, with the id Gemini gave.
    neutral = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "t"},
            message,
            {"role": "tool", "tool_call_id": "g1", "content": "r"},
            {"role": "tool", "tool_call_id": "call_2", "content": "s"},
        ],
    }
    body = encode_request("gemini", neutral)["body"]
    validate_gemini(body)  # type: ignore[arg-type]
    responses = [p["functionResponse"] for p in body["contents"][-1]["parts"]]  # type: ignore[call-overload, index]
    assert [r.get("id") for r in responses] == ["g1", None]
    with pytest.raises(MalformedAnswer):
        parse_answer("anthropic", {"content": "text"})
    with pytest.raises(MalformedAnswer):
        parse_answer("gemini", {"candidates": []})


# --- settings -----------------------------------------------------------------------------


def test_the_provider_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    def resolved(ini: dict[str, str], env: dict[str, str], **overrides: str) -> ChatSettings:
        return resolve_settings(ini=ini.get, environ=env, overrides=overrides)

    assert resolved({}, {}).provider == "openai"
    assert resolved({"agentbench_llm_provider": "gemini"}, {}).provider == "gemini"
    assert resolved({}, {"AGENTBENCH_LLM_PROVIDER": "anthropic"}).api_key_env == "ANTHROPIC_API_KEY"
    assert resolved({}, {}, provider="gemini").api_key_env == "GEMINI_API_KEY"
    assert (
        resolved({"agentbench_llm_api_key_env": "MINE"}, {}, provider="gemini").api_key_env
        == "MINE"
    )
    for ini, env, overrides, field in (
        ({"agentbench_llm_provider": "claude"}, {}, {}, "agentbench_llm_provider"),
        ({}, {"AGENTBENCH_LLM_PROVIDER": "vertex"}, {}, "AGENTBENCH_LLM_PROVIDER"),
        ({}, {}, {"provider": "Anthropic"}, "--agentbench-llm-provider"),
    ):
        with pytest.raises(UsageError) as caught:
            resolved(ini, env, **overrides)
        assert caught.value.code == "unknown_llm_provider"
        assert caught.value.location.field == field
    openai, anthropic = ChatSettings(model="m"), ChatSettings(model="m", provider="anthropic")
    assert openai.settings_digest() != anthropic.settings_digest()


# --- a pytest run per provider: record, then replay with the server stopped ---------------


QUESTIONS = {"c1": "tools", "c2": "malformed_args", "c3": "rate_limited", "c4": "prose"}


def _run(project: pytest.Pytester, tag: str, *args: str) -> tuple[Any, dict[str, Any]]:
    report = project.path / f"{tag}.json"
    result = project.runpytest(
        *CHAT_RUN_ARGS,
        f"--agentbench-report={report}",
        f"--agentbench-ledger={project.path / f'ledger-{tag}'}",
        *args,
    )
    return result, json.loads(report.read_text()) if report.exists() else {}


def _cases(document: dict[str, Any]) -> dict[str, Any]:
    (suite,) = document["suites"]
    return {
        entry["result"]["case_id"]: (entry["result"]["outcome"], entry["result"]["model_calls"])
        for entry in suite["cases"]
    }


@pytest.mark.parametrize("provider", NATIVE)
def test_a_run_records_and_replays_identically_per_provider(
    demo: pytest.Pytester,
    provider: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pricing = {
        "scheme": "agentbench-pricing/1",
        "currency": "USD",
        "models": {
            "scripted-model": {"input_per_token": "0.000003", "output_per_token": "0.000015"}
        },
    }
    project = write_chat_project(demo, QUESTIONS, "agentbench_pricing = pricing.json")
    (project.path / "pricing.json").write_text(json.dumps(pricing), encoding="utf-8")
    server = ScriptedLLM()
    with server.serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        recorded, first = _run(project, "record", f"--agentbench-llm-provider={provider}")
    recorded.assert_outcomes(passed=2, failed=2)
    replayed, second = _run(project, "replay", f"--agentbench-llm-provider={provider}", "-n", "2")
    replayed.assert_outcomes(passed=2, failed=2)
    recorded_cases = _cases(first)
    assert recorded_cases["c3"][1]["waits"] == [{"reason": "retry", "seconds": 0.0}]
    # A replay waits for no retry; everything else is as recorded.
    assert _cases(second) == {
        case_id: (outcome, {**calls, "waits": []})
        for case_id, (outcome, calls) in recorded_cases.items()
    }
    run = first["model_run"]
    assert (run["provider"], run["mode"], second["model_run"]["mode"]) == (
        provider,
        "record",
        "replay",
    )
    for key in ("calls", "attempts", "input_tokens", "output_tokens", "cost", "settings_digest"):
        assert run[key] == second["model_run"][key], key
    assert run["input_tokens"] > 0, "usage read from the native answers"
    assert run["cost"] != "0"
    assert run["attempts"] == run["calls"] + 1, "c3's 429, retried"
    # The transcripts read the native answers: the tool call, then the final text.
    (transcripts,) = first["transcripts"]
    lines = (project.path / transcripts["file"]).read_text(encoding="utf-8").splitlines()
    c1 = next(line for line in map(json.loads, lines) if line["case_id"] == "c1")
    answers = [e for e in c1["events"] if e["event"] == "model_response"]
    assert [len(e["tool_calls"]) for e in answers] == [1, 0]
    assert answers[0]["tool_calls"][0]["name"] == "add"
    assert answers[1]["text"] == {"text": '{"answer": 3}'}
    assert answers[0]["finish_reason"] == {"anthropic": "tool_use", "gemini": "STOP"}[provider]
    assert answers[0]["usage"]["input"] > 0
    # Each cassette names its provider and holds the body sent and the answer, both valid.
    tapes = sorted((project.path / "cassettes").glob("*.json"))
    assert len(tapes) == len(server.requests) - 1, "one per distinct request (the 429 retried)"
    for tape in tapes:
        cassette = json.loads(tape.read_text())
        assert cassette["request"]["provider"] == provider
        VALIDATE[provider](cassette["request"]["body"])
        validate_answer(provider, cassette["response"]["json_body"])
    # The ledgers' headers name the provider and its API; the audit holds them to the report.
    header = json.loads(
        next((project.path / "ledger-record").rglob("c1.ndjson")).read_text().splitlines()[0]
    )
    stated = header["header"]["provider"]
    assert (stated["provider"], stated["api"]) == (
        provider,
        {"anthropic": "messages", "gemini": "generateContent"}[provider],
    )
    # Cassette mode auto: a missing cassette is asked for live and recorded as before.
    lost = tapes[0]
    kept = lost.read_bytes()
    lost.unlink()
    with ScriptedLLM().serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        mixed, third = _run(
            project,
            "auto",
            f"--agentbench-llm-provider={provider}",
            "--agentbench-cassette-mode=auto",
        )
    mixed.assert_outcomes(passed=2, failed=2)
    auto = third["model_run"]
    assert (auto["mode"], auto["recorded"], auto["cassette_hits"]) == ("mixed", 1, run["calls"] - 1)
    assert lost.read_bytes() == kept
    capsys.readouterr()
    audited = ["audit", str(project.path / "record.json"), str(project.path / "ledger-record")]
    assert main([*audited, "--pricing", str(project.path / "pricing.json")]) == 0, (
        capsys.readouterr().err
    )

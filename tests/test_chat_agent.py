"""The ChatAgent against a local OpenAI-compatible server: every scenario ends classified.

Each scenario is one ``demo-tools`` question; the scripted server answers it
with tool calls, malformed arguments, a 429 then success, a 500, a slow
answer past the client timeout, a non-JSON body, prose, or an endless loop.
A recorded run then replays byte-identically with the server stopped.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.abc
import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.agents.cassettes import CassetteShelf, RecordedResponse, request_digest
from pytest_agentbench.agents.chat import TASK_PREFIX, ChatAgent, final_text
from pytest_agentbench.agents.provenance import ModelRun, configure_model_runs
from pytest_agentbench.agents.settings import ChatSettings, resolve_settings
from pytest_agentbench.agents.transport import ChatAgentError, ChatTransport, ClientShelf
from pytest_agentbench.scoring.matrix import enter_model, leave_model
from pytest_agentbench.sdk.errors import AgentbenchError, UsageError
from pytest_agentbench.sdk.tools import Receipt, ToolSession, solve_with_session
from tests.demo_world import DEMO_TOOLS, DemoFinal, accept_final, write_demo_suite
from tests.llm_server import ScriptedLLM

KEY_ENV = "AGENTBENCH_TEST_LLM_KEY"
SECRET = "sk-test-secret-4711"
CLIENT_TIMEOUT = 0.5
"""The client timeout the ``slow`` scenario (answering after ``SLOW_S``) must run into."""
GENEROUS_TIMEOUT = 30.0
"""Every other request's: a loaded machine must not turn an answer into a timeout."""
RUN_TIMEOUT = 1.0
"""A pytest run's one timeout for every scenario, ``slow`` among them: half of ``SLOW_S``."""
# question -> (failure class, agent error code or receipt failure code, receipt errors)
SCENARIOS: dict[str, tuple[str | None, str | None, dict[str, int]]] = {
    "tools": (None, None, {}),
    "malformed_args": (None, None, {"invalid_arguments": 1}),
    "rate_limited": (None, None, {}),
    "server_error": ("agent_error", "llm_http_error", {}),
    "slow": ("agent_error", "llm_timeout", {}),
    "not_json": ("agent_error", "llm_malformed_response", {}),
    "prose": ("product_error", "malformed_final", {}),
    "loop": ("agent_error", "max_turns_exceeded", {}),
}


@pytest.fixture
def llm() -> Iterator[tuple[ScriptedLLM, str]]:
    server = ScriptedLLM()
    with server.serving() as base_url:
        yield server, base_url


def settings(base_url: str | None, **extra: Any) -> ChatSettings:
    values: dict[str, Any] = {
        "base_url": base_url,
        "model": "scripted-model",
        "api_key_env": KEY_ENV,
        "timeout_s": GENEROUS_TIMEOUT,
        "max_turns": 4,
        "retry_backoff_s": 0.0,
        "max_retries": 1,
    }
    values.update(extra)
    return ChatSettings(**values)


def solve(agent: ChatAgent, question: str) -> tuple[Any, Receipt]:
    session = ToolSession(DEMO_TOOLS, final_schema=DemoFinal.model_json_schema())
    outcome = solve_with_session(agent, {"question": question}, session, accept_final)
    return outcome, Receipt.model_validate(outcome.receipt)


def assert_classified(
    outcome: Any, receipt: Receipt, expected: tuple[str | None, str | None, dict[str, int]]
) -> None:
    """The outcome as a ``SCENARIOS`` row states: its failure class, code and receipt errors."""
    failure_class, code, errors = expected
    assert (outcome.failure_class and outcome.failure_class.value) == failure_class
    if failure_class is None:
        assert outcome.output == {"answer": 3}
    elif failure_class == "agent_error":
        assert f"[{code}]" in (outcome.failure_reason or "")
    else:
        assert receipt.canonical.failure_code == code
    assert receipt.canonical.totals.errors == errors


@pytest.mark.parametrize("question", sorted(SCENARIOS))
def test_every_scenario_ends_classified_and_nothing_hangs(
    llm: tuple[ScriptedLLM, str], question: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    started = time.monotonic()
    timeout = CLIENT_TIMEOUT if question == "slow" else GENEROUS_TIMEOUT
    outcome, receipt = solve(ChatAgent(settings(llm[1], timeout_s=timeout)), question)
    # Bounded: an endless loop or a wait on the server would run far past this.
    assert time.monotonic() - started < 60
    assert_classified(outcome, receipt, SCENARIOS[question])


def test_the_conversation_carries_tools_results_and_the_key(
    llm: tuple[ScriptedLLM, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    server, base_url = llm
    solve(ChatAgent(settings(base_url)), "malformed_args")
    first, _, last = server.requests
    assert [tool["function"]["name"] for tool in first["tools"]] == ["add", "divide"]
    assert (first["model"], first["temperature"], first["seed"]) == ("scripted-model", 0.0, 0)
    assert '"question":"malformed_args"' in first["messages"][1]["content"]
    assert '"title":"DemoFinal"' in first["messages"][1]["content"]
    refused, delivered = (m for m in last["messages"] if m["role"] == "tool")
    assert '"code":"invalid_arguments"' in refused["content"]
    assert delivered["content"].startswith('<tool-result id="')
    assert '{"sum":3}' in delivered["content"]
    assert all(h.get("Authorization") == f"Bearer {SECRET}" for h in server.headers)


def test_no_key_no_authorization_header(
    llm: tuple[ScriptedLLM, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    server, base_url = llm
    solve(ChatAgent(settings(base_url)), "tools")
    assert not any("Authorization" in headers for headers in server.headers)


def test_unfenced_results_when_asked(llm: tuple[ScriptedLLM, str]) -> None:
    server, base_url = llm
    solve(ChatAgent(settings(base_url, fence_results=False)), "tools")
    tool_message = next(m for m in server.requests[-1]["messages"] if m["role"] == "tool")
    assert tool_message["content"] == '{"sum":3}'


def test_an_unreachable_endpoint_is_an_agent_error_and_not_recorded(tmp_path: Path) -> None:
    with ScriptedLLM().serving() as base_url:
        pass  # the port is closed again
    agent = ChatAgent(settings(base_url, cassettes=tmp_path / "tapes", cassette_mode="record"))
    outcome, _ = solve(agent, "tools")
    assert "[llm_unreachable]" in (outcome.failure_reason or "")
    assert not (tmp_path / "tapes").exists()


def test_record_then_replay_without_a_server(
    llm: tuple[ScriptedLLM, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    tapes = tmp_path / "tapes"
    recorder = ChatAgent(settings(llm[1], cassettes=tapes))
    assert recorder.settings.effective_mode == "record"
    # Every scenario but ``slow``, whose answer is recorded like any other once it comes:
    # waiting SLOW_S for it would prove nothing more.
    recorded = {q: solve(recorder, q) for q in SCENARIOS if q != "slow"}
    texts = "".join(path.read_text() for path in sorted(tapes.glob("*.json")))
    assert SECRET not in texts
    assert "127.0.0.1" not in texts
    assert "Authorization" not in texts
    replayer = ChatAgent(settings(None, cassettes=tapes))
    assert replayer.settings.effective_mode == "replay"
    for question, (outcome, receipt) in recorded.items():
        again, again_receipt = solve(replayer, question)
        assert again.model_dump(exclude={"receipt"}) == outcome.model_dump(exclude={"receipt"})
        assert again_receipt.digest == receipt.digest
    missing, _ = solve(replayer, "never recorded")
    assert "[cassette_miss]" in (missing.failure_reason or "")


def test_a_tampered_cassette_is_refused(tmp_path: Path) -> None:
    shelf = CassetteShelf(tmp_path)
    request: dict[str, Any] = {"model": "m", "messages": []}
    path = shelf.save(request, RecordedResponse(status=500, json_body={"choices": []}))
    assert path.name == f"{request_digest(request)}.json"
    assert shelf.load(request).status == 500
    pristine = json.loads(path.read_text())
    assert pristine["request_digest_sha256"] == request_digest(request)

    def refusal(change: Any) -> tuple[str, str | None]:
        data = json.loads(json.dumps(pristine))
        change(data)
        path.write_text(json.dumps(data))
        with pytest.raises(AgentbenchError) as caught:
            shelf.load(request)
        return caught.value.code, caught.value.location.field

    # A failing answer edited into a passing one; the request changed; a digest dropped.
    assert refusal(lambda d: d["response"].update(status=200)) == ("cassette_tampered", "response")
    assert refusal(lambda d: d["request"].update(model="other")) == ("cassette_tampered", "request")
    assert refusal(lambda d: d.update(request_digest_sha256="0" * 64)) == (
        "cassette_tampered",
        "request",
    )
    assert refusal(lambda d: d.pop("response_digest_sha256"))[0] == "invalid_cassette"
    assert refusal(lambda d: d.update(scheme="agentbench-cassette/1")) == (
        "cassette_outdated",
        "scheme",
    )
    path.write_text('{"scheme": "agentbench-cassette/2", "scheme": "x"}')
    with pytest.raises(AgentbenchError) as duplicate:
        shelf.load(request)
    assert duplicate.value.code == "duplicate_key"


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ('{"answer": 3}', '{"answer": 3}'),
        ('  ```json\n{"answer": 3}\n```  ', '{"answer": 3}'),
        ("```\n{}\n```", "{}"),
        (None, ""),
        (["not", "text"], ""),
    ],
)
def test_final_text_strips_a_code_fence(content: Any, text: str) -> None:
    assert final_text(content) == text


def test_settings_precedence_and_refusals(tmp_path: Path) -> None:
    ini = {"agentbench_llm_model": "from-ini", "agentbench_llm_temperature": "0.5"}
    resolved = resolve_settings(
        ini=ini.get,
        environ={"AGENTBENCH_LLM_MODEL": "from-env", "AGENTBENCH_CASSETTES": "tapes"},
        overrides={"cassette_mode": "off"},
        root=tmp_path,
    )
    assert (resolved.model, resolved.temperature) == ("from-env", 0.5)
    assert resolved.cassettes == tmp_path / "tapes"
    assert resolved.effective_mode == "off"
    # Without a mode, decided once when the settings are made: a folder that appears
    # later (the run recording into it) does not turn a recording run into a replay.
    recording = resolve_settings(
        ini=ini.get, environ={}, overrides={"cassettes": "new"}, root=tmp_path
    )
    (tmp_path / "new").mkdir()
    assert (recording.effective_mode, recording.model_copy().effective_mode) == ("record", "record")
    replaying = resolve_settings(
        ini=ini.get, environ={}, overrides={"cassettes": "new"}, root=tmp_path
    )
    assert replaying.effective_mode == "replay"
    with pytest.raises(UsageError) as caught:
        resolve_settings(ini={"agentbench_llm_max_turns": "many"}.get, environ={})
    assert caught.value.code == "invalid_llm_setting"
    assert caught.value.location.field == "agentbench_llm_max_turns"


def test_an_agent_without_model_or_endpoint_is_refused_when_built() -> None:
    with pytest.raises(ChatAgentError, match=r"\[llm_config\] no model"):
        ChatAgent(ChatSettings(base_url="http://127.0.0.1:9/v1"))
    with pytest.raises(ChatAgentError, match=r"\[llm_config\] no base URL"):
        ChatAgent(ChatSettings(model="m"))


RUN_ARGS = ("--agentbench-adapter=pytest_agentbench.agents.chat:ChatAgent",)


def run_suite(pytester: pytest.Pytester, tag: str, *args: str) -> dict[str, Any]:
    report = pytester.path / f"{tag}.json"
    receipts = pytester.path / f"receipts-{tag}"
    pytester.runpytest(
        *RUN_ARGS,
        "--agentbench-timeout=20",
        f"--agentbench-report={report}",
        f"--agentbench-receipts={receipts}",
        "-m",
        "not agentbench_control",
        *args,
    )
    (suite,) = json.loads(report.read_text())["suites"]
    results = {}
    for entry in suite["cases"]:
        result = entry["result"]
        result["receipt"] = Receipt.model_validate(result["receipt"]).canonical.model_dump()
        if result["model_calls"] is not None:
            del result["model_calls"]["waits"]  # a replay waits for no retry
        results[result["case_id"]] = result
    files = {
        path.name: json.loads(path.read_text())["canonical"]
        for path in sorted(receipts.rglob("*.json"))
    }
    return {"results": results, "receipt_files": files, "metrics": suite["metrics"]}


def folder_digest(folder: Path) -> str:
    return hashlib.sha256(
        b"".join(p.name.encode() + p.read_bytes() for p in sorted(folder.glob("*.json")))
    ).hexdigest()


def test_a_recorded_pytest_run_replays_identically_with_the_server_stopped(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_demo_suite(
        demo.path,
        "chat-suite",
        questions={q: q for q in SCENARIOS},
        answers=dict.fromkeys(SCENARIOS, 3),
        world="demo-tools",
    )
    demo.makeini(
        "[pytest]\n"
        "agentbench_llm_model = scripted-model\n"
        f"agentbench_llm_api_key_env = {KEY_ENV}\n"
        f"agentbench_llm_timeout = {RUN_TIMEOUT}\n"
        "agentbench_llm_max_turns = 4\n"
        "agentbench_llm_retry_backoff = 0\n"
        "agentbench_cassettes = cassettes\n"
    )
    monkeypatch.setenv(KEY_ENV, SECRET)
    server = ScriptedLLM()
    with server.serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        recorded = run_suite(demo, "record")
    monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)  # nothing listens there now
    tapes = demo.path / "cassettes"
    before = folder_digest(tapes)
    assert SECRET not in "".join(p.read_text() for p in tapes.glob("*.json"))
    replayed = run_suite(demo, "replay", "-n", "2")
    assert replayed == recorded
    assert folder_digest(tapes) == before, "replay never writes a cassette"
    outcomes = {cid: (r["outcome"], r["failure_class"]) for cid, r in recorded["results"].items()}
    assert outcomes == {
        "tools": ("passed", None),
        "malformed_args": ("failed", None),
        "rate_limited": ("passed", None),
        "server_error": ("failed", "agent_error"),
        "slow": ("failed", "agent_error"),
        "not_json": ("failed", "agent_error"),
        "prose": ("failed", "product_error"),
        "loop": ("failed", "agent_error"),
    }
    next(tapes.glob("*.json")).unlink()
    missed = run_suite(demo, "miss")["results"]
    reasons = [r["failure_reason"] or "" for r in missed.values()]
    assert sum("[cassette_miss]" in reason for reason in reasons) == 1
    assert not any("llm_unreachable" in reason for reason in reasons), "no live call in replay"


def test_usage_per_model_request_is_drained_once(llm: tuple[ScriptedLLM, str]) -> None:
    server, base_url = llm
    agent = ChatAgent(settings(base_url, timeout_s=CLIENT_TIMEOUT))
    assert agent.drain_usage() is None, "no request, no report"
    solve(agent, "slow")
    report = agent.drain_usage()
    assert report is not None
    (timed_out,) = report.attempts
    assert (timed_out.outcome, timed_out.fault, timed_out.tokens) == ("fault", "timeout", None)
    assert report.request_digest_sha256 == request_digest(server.requests[-1])
    assert agent.drain_usage() is None, "drained"
    solve(agent, "tools")
    report = agent.drain_usage()
    assert report is not None
    assert [a.attempt_index for a in report.attempts] == [1, 2]
    assert [a.tokens.model_dump() if a.tokens else None for a in report.attempts] == [
        {"input": 120, "output": 5, "total": 125},
        {"input": 140, "output": 6, "total": 146},
    ]


def test_a_matrix_agent_keeps_every_model_s_usage_once(llm: tuple[ScriptedLLM, str]) -> None:
    """Under a model matrix one agent answers for every model: a case that called two
    models drains both models' requests, in the order sent, and only once."""
    server, base_url = llm
    configure_model_runs(
        {
            name: ModelRun(settings(base_url, model=model))
            for name, model in (("strong", "scripted-model"), ("weak", "weak-model"))
        }
    )
    try:
        agent = ChatAgent()
        for name in ("strong", "weak"):
            token = enter_model(name)
            try:
                solve(agent, "tools")
            finally:
                leave_model(token)
    finally:
        configure_model_runs({})
    report = agent.drain_usage()
    assert report is not None
    sent = [request_digest(request) for request in server.requests]
    assert [request["model"] for request in server.requests] == ["scripted-model"] * 2 + [
        "weak-model"
    ] * 2
    assert [a.request_digest_sha256 for a in report.attempts] == sent, "both models' rows"
    assert [a.attempt_index for a in report.attempts] == [1, 2, 3, 4]
    assert report.request_digest_sha256 == sent[-1]
    assert agent.drain_usage() is None, "counted once"


class _Client:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_the_client_shelf_lends_one_client_per_request_in_flight_and_reuses_it() -> None:
    made: list[_Client] = []

    def make() -> _Client:
        made.append(_Client())
        return made[-1]

    shelf = ClientShelf(make)
    with shelf.lend() as first:
        pass
    with shelf.lend() as again:
        assert again is first, "a request after another reuses its client and connection"
    with shelf.lend() as one, shelf.lend() as other:
        assert one is not other, "two requests in flight never share a client"
    assert len(made) == 2

    # Closing closes what is shelved; a client out on a request is closed on its return.
    with shelf.lend() as lent:
        shelf.close()
        assert [client.closed for client in made if client is not lent] == [True]
        assert not lent.closed
    assert lent.closed
    closed = list(made)
    with shelf.lend() as after:
        assert after not in closed, "a closed shelf makes a new client when asked again"


def test_concurrent_requests_each_hold_their_own_connection(
    llm: tuple[ScriptedLLM, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, base_url = llm
    transport = ChatTransport(settings(base_url))
    borrowed: list[Any] = []
    barrier = threading.Barrier(4, timeout=60)
    lend = transport.clients.lend

    @contextmanager
    def noting_lend() -> Iterator[Any]:
        with lend() as client:
            borrowed.append(client)
            barrier.wait()  # all four hold a client at once
            yield client

    monkeypatch.setattr(transport.clients, "lend", noting_lend)
    user = TASK_PREFIX + json.dumps({"question": "plain"})
    request = {"model": "m", "messages": [{"role": "user", "content": user}]}
    threads = [threading.Thread(target=transport.send, args=(request,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len({id(client) for client in borrowed}) == 4
    transport.close()
    assert all(client.is_closed for client in borrowed)


def test_the_tools_list_is_exported_once_per_set_of_tools(
    llm: tuple[ScriptedLLM, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, base_url = llm
    exports: list[int] = []
    export = ToolSession.openai_tools

    def counted(session: ToolSession) -> list[dict[str, Any]]:
        exports.append(len(session.tools))
        return export(session)

    monkeypatch.setattr(ToolSession, "openai_tools", counted)
    agent = ChatAgent(settings(base_url))
    # Each case's tools are copies of one declaration, sharing their schemas.
    cases = [[tool.model_copy() for tool in DEMO_TOOLS] for _ in range(3)]
    cases.append(list(DEMO_TOOLS[:1]))
    for tools in cases:
        session = ToolSession(tools, final_schema=DemoFinal.model_json_schema())
        solve_with_session(agent, {"question": "plain"}, session, accept_final)
    assert exports == [len(DEMO_TOOLS), 1], "one export per distinct set of tools"
    sent = [request["tools"] for request in server.requests]
    assert sent[0] == sent[1] == sent[2] == export(ToolSession(DEMO_TOOLS))
    assert [tool["function"]["name"] for tool in sent[3]] == [DEMO_TOOLS[0].name]


class _HttpxMissing(importlib.abc.MetaPathFinder):
    """Refuses ``httpx`` and its submodules, as an install without the package would."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if fullname == "httpx" or fullname.startswith("httpx."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)


def test_without_httpx_a_live_case_fails_as_llm_unavailable_and_a_replay_still_runs(
    llm: tuple[ScriptedLLM, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tapes = tmp_path / "tapes"
    solve(ChatAgent(settings(llm[1], cassettes=tapes)), "tools")
    for name in [name for name in sys.modules if name == "httpx" or name.startswith("httpx.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_HttpxMissing(), *sys.meta_path])
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("httpx")
    for mode in ("off", "record"):
        agent = ChatAgent(settings(llm[1], cassettes=tmp_path / mode, cassette_mode=mode))
        outcome, _ = solve(agent, "tools")
        assert (outcome.failure_class and outcome.failure_class.value) == "agent_error", mode
        reason = outcome.failure_reason or ""
        assert "[llm_unavailable]" in reason, (mode, reason)
        assert "ModuleNotFoundError" not in reason, mode
    # A replay needs no HTTP client: the cassettes answer without httpx.
    replayed, _ = solve(ChatAgent(settings(None, cassettes=tapes)), "tools")
    assert replayed.output == {"answer": 3}

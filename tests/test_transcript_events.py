"""Transcript events: bounded text, the session's and the chat agent's events, the merge of
an isolated adapter's model events, and the suite files a run writes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.agents.cassettes import EncodedRequest, RecordedResponse
from pytest_agentbench.agents.transcribe import refusal_event, request_event, response_event
from pytest_agentbench.report.transcript_folder import transcripts_folder
from pytest_agentbench.report.transcripts import TranscriptSink, suite_file_name, transcript_line
from pytest_agentbench.sdk import transcript as transcripts
from pytest_agentbench.sdk.contracts import CaseOutcome, CaseResult
from pytest_agentbench.sdk.tools import ToolCallError, ToolSession, ToolSpec, solve_with_session
from pytest_agentbench.sdk.transcript import (
    TEXT_CHARS,
    CaseTranscript,
    bounded,
    current_transcript,
    transcript_scope,
)
from tests.test_tools_agent import Solver, accept, make_session, plus_one

OBJECT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"x": {"type": "integer"}},
}


def test_text_is_kept_whole_or_cut_with_its_length_and_digest() -> None:
    assert bounded("short") == {"text": "short"}
    long = "é" * (TEXT_CHARS + 1)
    assert bounded(long) == {
        "text": "é" * TEXT_CHARS,
        "chars": TEXT_CHARS + 1,
        "sha256": hashlib.sha256(long.encode("utf-8")).hexdigest(),
    }
    assert bounded("bad \udc80") == {"text": "bad \\udc80"}, "lone surrogates escaped"


def test_a_scope_collects_on_its_thread_and_restores_the_outer_one() -> None:
    assert current_transcript() is None
    with transcript_scope() as outer:
        with transcript_scope() as inner:
            assert current_transcript() is inner
        assert current_transcript() is outer
    assert current_transcript() is None


def test_a_session_notes_each_call_from_its_record_and_the_loop_its_final() -> None:
    def refuse(arguments: dict[str, Any]) -> Any:
        raise ToolCallError("not_here", "no such record")

    session = ToolSession(
        [
            ToolSpec(name="get", description="", parameters=OBJECT, handler=lambda _: {"n": 41}),
            ToolSpec(name="miss", description="", parameters=OBJECT, handler=refuse),
        ]
    )

    def agent(task: dict[str, Any], tools: ToolSession) -> Any:
        tools.call("get", '{"x": 1}')
        with pytest.raises(ToolCallError):
            tools.call("miss", {})
        with pytest.raises(ToolCallError):
            tools.call("get", "{bad")
        return '{"answer": 42}'

    with transcript_scope() as collected:
        solve_with_session(Solver(agent), {}, session, accept)
    got, missed, malformed, final = collected.record()
    assert got == {
        "event": "tool_call",
        "index": 0,
        "name": "get",
        "arguments": {"text": '{"x":1}'},
        "result": {"text": '{"n":41}'},
        "delivered": True,
        "bytes": 8,
    }
    assert missed["refusal"] == {"code": "not_here", "message": "no such record"}
    assert missed["delivered"], "a world's refusal reaches the agent"
    assert malformed["arguments"] == {"text": "{bad"}
    assert malformed["refusal"]["code"] == "invalid_arguments"
    assert final == {"event": "final", "answer": {"text": '{"answer": 42}'}, "parsed": "accepted"}
    # Outside a scope nothing is noted (and nothing fails).
    solve_with_session(Solver(plus_one), {}, make_session(), accept)


def test_the_loop_notes_a_refused_answer_and_an_adapter_that_gave_none() -> None:
    def raises(task: dict[str, Any], tools: ToolSession) -> Any:
        raise RuntimeError("lost")

    with transcript_scope() as collected:
        solve_with_session(Solver(lambda t, s: {"answer": "x"}), {}, make_session(), accept)
        solve_with_session(Solver(raises), {}, make_session(), accept)
    refused, ended = collected.record()
    assert refused["answer"] == {"text": '{"answer":"x"}'}, "an object answer as canonical JSON"
    assert (refused["parsed"], refused["reason"]) == (
        "refused",
        "final.answer: Input should be a valid integer",
    )
    assert ended == {
        "event": "no_final",
        "failure_class": "agent_error",
        "reason": "adapter raised RuntimeError: lost",
    }


def test_model_events_say_what_was_sent_and_what_came_back() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c0", {"a": 1})]},
        {"role": "tool", "tool_call_id": "c0", "content": "3"},
    ]
    request = EncodedRequest({"model": "m", "messages": messages})
    sent = request_event(request, 2)
    assert sent["request_sha256"] == request.digest
    assert sent["messages_total"] == 4
    assert sent["messages"] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c0", "name": "add", "arguments": {"text": '{"a":1}'}}],
        },
        {"role": "tool", "content": {"text": "3"}, "tool_call_id": "c0"},
    ]
    body = {
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    answered = response_event(RecordedResponse(status=200, json_body=body, faults=("http_429",)))
    assert answered == {
        "event": "model_response",
        "status": 200,
        "faults": ["http_429"],
        "text": {"text": "hi"},
        "tool_calls": [],
        "finish_reason": "stop",
        "usage": {"input": 3, "output": 1, "total": None},
    }
    odd = response_event(RecordedResponse(status=200, json_body={"choices": []}))
    assert odd["body"] == {"text": '{"choices":[]}'}
    assert response_event(RecordedResponse(transport_error="timeout"))["error"] == "timeout"
    assert refusal_event("budget_exceeded_calls") == {
        "event": "model_refused",
        "code": "budget_exceeded_calls",
    }


def _call(call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "function": {"name": "add", "arguments": arguments}}


def test_an_isolated_adapters_model_events_take_their_place_among_the_tool_calls() -> None:
    log = CaseTranscript()
    log.note({"event": "final", "parsed": "accepted"})  # an earlier invocation's
    log.note({"event": "tool_call", "index": 0})
    log.note({"event": "tool_call", "index": 1})
    log.note({"event": "tool_call", "index": 2})
    log.absorb(
        [
            {"event": "model_request"},
            {"event": "model_response", "tool_calls": [{}, {}]},
            {"event": "model_request"},
            {"event": "model_response", "tool_calls": [{}]},
            {"event": "model_request"},
            {"event": "model_response", "tool_calls": []},
        ]
    )
    assert [(e["event"], e.get("index")) for e in log.record()] == [
        ("final", None),
        ("model_request", None),
        ("model_response", None),
        ("tool_call", 0),
        ("tool_call", 1),
        ("model_request", None),
        ("model_response", None),
        ("tool_call", 2),
        ("model_request", None),
        ("model_response", None),
    ]
    with pytest.raises(ValueError, match="an 'event'"):
        log.absorb(["not an event"])


def test_a_long_transcript_keeps_its_first_events_and_counts_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transcripts, "MAX_EVENTS", 3)
    log = CaseTranscript()
    for index in range(4):
        log.note({"event": "tool_call", "index": index})
    log.absorb([{"event": "model_request"}])
    events = log.record()
    assert len(events) == 4
    assert events[-1] == {"event": "truncated", "dropped": 2}


def _result(case_id: str, outcome: CaseOutcome) -> CaseResult:
    return CaseResult(suite_id="s", case_id=case_id, outcome=outcome)


def test_a_suite_file_is_streamed_then_rewritten_in_node_id_order(tmp_path: Path) -> None:
    report = tmp_path / "out" / "run.json"
    folder = transcripts_folder(report)
    assert folder == tmp_path / "out" / "run.json.transcripts"
    folder.mkdir(parents=True)
    (folder / "old.ndjson").write_text("{}\n", encoding="utf-8")
    sink = TranscriptSink(report)
    assert (folder / "old.ndjson").exists(), "left alone until the run holds the report path"
    sink.start()
    assert not (folder / "old.ndjson").exists(), "an earlier run's file is not this run's"
    b_failed = transcript_line("f::b", _result("b", CaseOutcome.FAILED), [{"event": "x"}])
    a_line = transcript_line("f::a", _result("a", CaseOutcome.PASSED), [])
    b_passed = transcript_line("f::b", _result("b", CaseOutcome.PASSED), [])
    sink.put("s", b_failed)
    streamed = (folder / "s.ndjson").read_text(encoding="utf-8")
    assert streamed == b_failed + "\n", "written as the case arrives"
    sink.put("s", a_line)
    sink.put("s", b_passed)  # a re-run of f::b: the last one counts
    (written,) = sink.finish()
    data = (folder / "s.ndjson").read_bytes()
    assert data.decode() == f"{a_line}\n{b_passed}\n"
    assert written.model_dump() == {
        "suite_id": "s",
        "file": "run.json.transcripts/s.ndjson",
        "digest_sha256": hashlib.sha256(data).hexdigest(),
        "cases": 2,
    }
    assert json.loads(a_line)["scheme"] == "agentbench-transcript/1"


@pytest.mark.parametrize(
    ("suite_id", "plain"),
    [("chat-suite", True), ("v1.2_x", True), ("../up", False), ("a b", False), ("x.", False)],
)
def test_a_suite_file_is_named_by_its_id_only_when_that_is_a_plain_name(
    suite_id: str, plain: bool
) -> None:
    name = suite_file_name(suite_id)
    assert (name == f"{suite_id}.ndjson") is plain
    assert "/" not in name

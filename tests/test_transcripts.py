"""What the model said, through pytest: transcripts, the raw answer of a refused final, and
checks that were not graded.

One recorded run against the scripted server (``tests/llm_server.py``) writes each
case's transcript to ``<report>.transcripts/<suite>.ndjson``; replays from its
cassettes under ``-n 2``, on concurrent threads, in an isolated adapter pool and in
one isolated adapter process write the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.chat_projects import CHAT_RUN_ARGS, write_chat_project
from tests.demo_world import write_demo_suite
from tests.html.sample import case_details
from tests.llm_server import ScriptedLLM
from tests.reports import assert_valid_report

QUESTIONS = {"c1": "tools", "c2": "malformed_args", "c3": "prose", "c4": "not_json"}
RUN_ARGS = CHAT_RUN_ARGS


@pytest.fixture
def chat_project(demo: pytest.Pytester) -> pytest.Pytester:
    return write_chat_project(demo, QUESTIONS)


def run(project: pytest.Pytester, tag: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    report = project.path / f"{tag}.json"
    result = project.runpytest(*RUN_ARGS, f"--agentbench-report={report}", *args)
    return result, json.loads(report.read_text(encoding="utf-8"))


def sidecar(project: pytest.Pytester, document: dict[str, Any]) -> bytes:
    """The run's one transcripts file, checked against what the report says of it."""
    (entry,) = document["transcripts"]
    data = (project.path / str(entry["file"])).read_bytes()
    assert entry["digest_sha256"] == hashlib.sha256(data).hexdigest()
    assert entry["suite_id"] == "chat-suite"
    assert entry["cases"] == len(data.splitlines())
    return data


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [event["event"] for event in events]


def check_events(project: Path, lines: list[dict[str, Any]]) -> None:
    """What each case's events say, in order."""
    tools, malformed_args, prose, not_json = (line["events"] for line in lines)

    # A tool call between two model calls, then the final answer, accepted.
    assert kinds(tools) == [
        "model_request",
        "model_response",
        "tool_call",
        "model_request",
        "model_response",
        "final",
    ]
    first, answered, called, second, _, final = tools
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert (first["messages_from"], first["messages_total"]) == (0, 2)
    cassette = project / "cassettes" / f"{first['request_sha256']}.json"
    sent = json.loads(cassette.read_text(encoding="utf-8"))["request"]["messages"]
    assert (
        first["messages_sha256"]
        == hashlib.sha256(
            json.dumps(sent, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        ).hexdigest()
    ), "the digest of the messages as sent"
    assert answered["finish_reason"] == "tool_calls"
    assert answered["tool_calls"] == [
        {"id": "call_0", "name": "add", "arguments": {"text": '{"a": 1, "b": 2}'}}
    ]
    assert set(answered["usage"]) == {"input", "output", "total"}
    assert called["name"] == "add"
    assert called["arguments"] == {"text": '{"a":1,"b":2}'}
    assert called["delivered"]
    assert "refusal" not in called
    assert [m["role"] for m in second["messages"]] == ["assistant", "tool"], "only what is new"
    assert final == {"event": "final", "answer": {"text": '{"answer": 3}'}, "parsed": "accepted"}
    # A refused tool call says why.
    refused = next(e for e in malformed_args if e["event"] == "tool_call")
    assert refused["refusal"]["code"] == "invalid_arguments"
    assert refused["arguments"] == {"text": '{"a": 1, "b": '}
    assert refused["result"] is None
    # Prose for a final answer: its text, and how it was read.
    assert kinds(prose)[-1] == "final"
    assert prose[-1]["answer"] == {"text": "The answer is 3."}
    assert prose[-1]["parsed"] == "refused"
    assert prose[-1]["reason"].startswith("final answer: [malformed_json]")
    assert prose[-2]["usage"] is None, "that endpoint reported no usage"
    # A body that is not JSON, then no final answer at all.
    assert not_json[1]["body"] == {"text": "<html>upstream busy</html>"}
    assert not_json[-1]["event"] == "no_final"
    assert not_json[-1]["failure_class"] == "agent_error"
    assert "llm_malformed_response" in not_json[-1]["reason"]
    assert all(
        "duration" not in json.dumps(line) and "wait" not in json.dumps(line) for line in lines
    )


def test_transcripts_say_what_the_model_did_and_replay_identically_everywhere(
    chat_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedLLM().serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        recorded, report = run(
            chat_project,
            "recorded",
            "--agentbench-cassette-mode=record",
            f"--agentbench-html={chat_project.path / 'recorded.html'}",
        )
    recorded.assert_outcomes(passed=1, failed=3)
    assert_valid_report(report)
    assert report["transcripts"][0]["file"] == "recorded.json.transcripts/chat-suite.ndjson"
    data = sidecar(chat_project, report)
    lines = [json.loads(line) for line in data.decode("utf-8").splitlines()]
    assert [line["case_id"] for line in lines] == ["c1", "c2", "c3", "c4"], "node id order"
    assert {line["scheme"] for line in lines} == {"agentbench-transcript/1"}
    check_events(chat_project.path, lines)

    # The refused final answer's text in the terminal, the JSON report and the HTML page,
    # and the checks it left ungraded say so.
    shown = recorded.stdout.str()
    assert (
        "product_error: final answer: [malformed_json] Expecting value (column 1); "
        'the answer was "The answer is 3."'
    ) in shown
    assert (
        "answer_correct: not graded: the output was refused (product_error) (expected 3)" in shown
    )
    assert "got null" not in shown
    (suite,) = report["suites"]
    c3 = next(case["result"] for case in suite["cases"] if case["result"]["case_id"] == "c3")
    assert c3["failure_reason"].endswith('the answer was "The answer is 3."')
    page = (chat_project.path / "recorded.html").read_text(encoding="utf-8")
    # The page's (compressed) case details hold the failure reason its case view shows.
    shown = {case["id"]: case["failure_reason"] for case in case_details(page, "s0")}
    assert shown["c3"] == c3["failure_reason"]

    # Replayed from the cassettes under xdist and in an isolated adapter pool: the same bytes.
    spread, spread_report = run(
        chat_project, "spread", "--agentbench-cassette-mode=replay", "-n", "2"
    )
    spread.assert_outcomes(passed=1, failed=3)
    assert sidecar(chat_project, spread_report) == data
    pooled, pooled_report = run(
        chat_project,
        "pooled",
        "--agentbench-cassette-mode=replay",
        "--agentbench-isolate",
        "--agentbench-concurrency=2",
    )
    pooled.assert_outcomes(passed=1, failed=3)
    assert sidecar(chat_project, pooled_report) == data
    threaded, threaded_report = run(
        chat_project, "threaded", "--agentbench-cassette-mode=replay", "--agentbench-concurrency=4"
    )
    threaded.assert_outcomes(passed=1, failed=3)
    assert sidecar(chat_project, threaded_report) == data, "cases on threads of their own"
    isolated, isolated_report = run(
        chat_project, "isolated", "--agentbench-cassette-mode=replay", "--agentbench-isolate"
    )
    isolated.assert_outcomes(passed=1, failed=3)
    assert sidecar(chat_project, isolated_report) == data
    assert not any(Path(chat_project.path).glob("*.transcripts/.*.tmp"))


def test_a_tool_session_without_a_model_has_transcripts_and_a_resume_keeps_them(
    demo: pytest.Pytester,
) -> None:
    """The reference agent's tool calls are transcribed too. A run resumed into the same
    report takes the carried cases' lines from the run it resumes; an earlier run's file
    never passes for this run's."""
    write_demo_suite(
        demo.path, "tool-suite", questions={"c1": "1+2", "c2": "2+2"}, world="demo-tools"
    )
    report = demo.path / "tools.json"
    args = ("-m", "not agentbench_control", "-p", "no:randomly", f"--agentbench-report={report}")
    stale = demo.path / "tools.json.transcripts" / "other-suite.ndjson"
    stale.parent.mkdir()
    stale.write_text('{"stale": true}\n', encoding="utf-8")
    demo.runpytest(*args, "-k", "c1").assert_outcomes(passed=1)
    first = json.loads(report.read_text(encoding="utf-8"))
    assert_valid_report(first)
    (c1,) = sidecar_lines(demo, first, "tool-suite")
    assert not stale.exists()
    assert not list(stale.parent.glob(".*"))
    assert kinds(c1["events"]) == ["tool_call", "final"]
    assert c1["events"][0]["arguments"] == {"text": '{"a":1,"b":2}'}

    resumed = demo.runpytest(*args, f"--agentbench-resume={report}")
    resumed.assert_outcomes(passed=1)
    second = json.loads(report.read_text(encoding="utf-8"))
    carried, ran = sidecar_lines(demo, second, "tool-suite")
    assert carried == c1, "the carried case's line, as the resumed run wrote it"
    assert ran["case_id"] == "c2"
    assert not list(stale.parent.glob(".*")), "the set-aside files are gone"


def sidecar_lines(
    project: pytest.Pytester, document: dict[str, Any], suite_id: str
) -> list[dict[str, Any]]:
    (entry,) = document["transcripts"]
    assert entry["suite_id"] == suite_id
    data = (project.path / str(entry["file"])).read_bytes()
    assert entry["digest_sha256"] == hashlib.sha256(data).hexdigest()
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]

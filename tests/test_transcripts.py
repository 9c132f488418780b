"""What the model said, through pytest: transcripts, the raw answer of a refused final, and
checks that were not graded.

One recorded run against the scripted server (``tests/llm_server.py``) writes each
case's transcript to ``<report>.transcripts/<suite>.ndjson``; replays from its
cassettes under ``-n 2``, in an isolated adapter pool and in one isolated adapter
process write the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.demo_world import write_demo_suite
from tests.llm_server import ScriptedLLM
from tests.reports import assert_valid_report

QUESTIONS = {"c1": "tools", "c2": "malformed_args", "c3": "prose", "c4": "not_json"}
RUN_ARGS = (
    "--agentbench-adapter=pytest_agentbench.agents.chat:ChatAgent",
    "--agentbench-timeout=20",
    "-m",
    "not agentbench_control",
    "-p",
    "no:randomly",
)


@pytest.fixture
def chat_project(demo: pytest.Pytester) -> pytest.Pytester:
    write_demo_suite(
        demo.path,
        "chat-suite",
        questions=QUESTIONS,
        answers=dict.fromkeys(QUESTIONS, 3),
        world="demo-tools",
    )
    demo.makeini(
        "[pytest]\n"
        "agentbench_llm_model = scripted-model\n"
        "agentbench_llm_timeout = 5\n"
        "agentbench_llm_max_turns = 4\n"
        "agentbench_llm_retry_backoff = 0\n"
        "agentbench_cassettes = cassettes\n"
    )
    return demo


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
    # The page's data holds the case's failure reason, which its case view shows.
    assert '; the answer was \\"The answer is 3.\\""' in page

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
    isolated, isolated_report = run(
        chat_project, "isolated", "--agentbench-cassette-mode=replay", "--agentbench-isolate"
    )
    isolated.assert_outcomes(passed=1, failed=3)
    assert sidecar(chat_project, isolated_report) == data
    assert not any(Path(chat_project.path).glob("*.transcripts/.*.tmp"))


def test_a_tool_session_without_a_model_has_transcripts_and_stale_files_go(
    chat_project: pytest.Pytester,
) -> None:
    """An earlier run's file in the folder is removed rather than passing for this run's."""
    stale = chat_project.path / "plain.json.transcripts" / "chat-suite.ndjson"
    stale.parent.mkdir()
    stale.write_text('{"stale": true}\n', encoding="utf-8")
    result = chat_project.runpytest(
        "-m", "not agentbench_control", f"--agentbench-report={chat_project.path / 'plain.json'}"
    )
    document = json.loads((chat_project.path / "plain.json").read_text(encoding="utf-8"))
    assert_valid_report(document)
    result.assert_outcomes(failed=4)
    # The reference agent of demo-tools (which cannot read these questions) has a tool
    # session, so its cases have transcripts too: no model call, and no final answer.
    (entry,) = document["transcripts"]
    lines = (chat_project.path / entry["file"]).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    assert "stale" not in "".join(lines)
    events = json.loads(lines[0])["events"]
    assert kinds(events)[-1] == "no_final"
    assert "model_request" not in kinds(events)

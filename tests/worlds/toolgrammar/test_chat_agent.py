"""The generic ChatAgent runs the toolgrammar world unchanged, its results fenced."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_agentbench.agents.chat import TASK_PREFIX, ChatAgent
from pytest_agentbench.agents.settings import ChatSettings
from tests.llm_server import ScriptedLLM, answer, tool_call
from tests.worlds.toolgrammar.test_world import ORACLE, _failing, _run

KEY_ENV = "AGENTBENCH_TEST_LLM_KEY"
CALL = re.compile(r"^(?P<tool>\w+)\((?P<arguments>.*)\)$")


class OracleLLM(ScriptedLLM):
    """A scripted model that makes the task's oracle calls, then gives its oracle answer."""

    def reply(self, body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
        messages = body["messages"]
        user = next(m["content"] for m in messages if m["role"] == "user")
        task = json.loads(user.removeprefix(TASK_PREFIX).split("\n")[0])
        record = ORACLE[task["task_id"]]
        turn = sum(1 for m in messages if m["role"] == "assistant")
        if turn < len(record.oracle_calls):
            found = CALL.match(record.oracle_calls[turn])
            assert found is not None
            message = tool_call(turn, found["tool"], found["arguments"])
        else:
            message = answer(
                json.dumps(
                    {"answer": record.oracle_answer, "citations": list(record.expected_citations)}
                )
            )
        completion = {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
        return 200, json.dumps(completion), {}


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[OracleLLM, ChatAgent]]:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    server = OracleLLM()
    with server.serving() as base_url:
        settings = ChatSettings(
            base_url=base_url,
            model="scripted-model",
            api_key_env=KEY_ENV,
            timeout_s=5.0,
            max_turns=6,
            retry_backoff_s=0.0,
            max_retries=0,
        )
        yield server, ChatAgent(settings)


@pytest.mark.parametrize("task_id", ["ops-T3-00001", "doc-T5-00001", "clinic-T2-00001"])
def test_the_chat_agent_passes_tasks_through_the_generic_protocol(
    llm: tuple[OracleLLM, ChatAgent], task_id: str
) -> None:
    result = _run(llm[1], task_id)
    assert result.outcome.value == "passed", result.failed_checks


def test_planted_text_reaches_the_model_inside_a_fence(llm: tuple[OracleLLM, ChatAgent]) -> None:
    server, agent = llm
    task = next(t for t in ORACLE.values() if t.injections)
    result = _run(agent, task.task_id)
    assert _failing(result) == set()
    tool_messages = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    planted = next(m for m in tool_messages if "SYSTEM NOTICE" in m)
    marker = re.match(r'<tool-result id="([0-9a-f]+)"', planted)
    assert marker is not None
    assert planted.rstrip().endswith(f'</tool-result id="{marker[1]}">')
    assert "data returned by the tool" in server.requests[0]["messages"][0]["content"]

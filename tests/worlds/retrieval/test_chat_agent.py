"""The tool-session issue's ChatAgent runs on the retrieval world unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pytest_agentbench.agents.cassettes import RecordedResponse
from pytest_agentbench.agents.chat import ChatAgent
from pytest_agentbench.agents.settings import ChatSettings
from pytest_agentbench.agents.transport import Exchange
from pytest_agentbench.worlds.retrieval.agent import gno_cues
from pytest_agentbench.worlds.retrieval.backends import LexicalBackend
from pytest_agentbench.worlds.retrieval.harness import Harness
from pytest_agentbench.worlds.retrieval.scoring import score_receipt
from tests.worlds.retrieval.conftest import Small


class ScriptedModel:
    """A model that searches once, then cites the line holding the identifier."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def send(
        self, request: dict[str, Any], *, tokens: int = 0, on_send: Callable[[], None] | None = None
    ) -> Exchange:
        if on_send is not None:
            on_send()
        self.requests.append(request)
        tool_messages = [m for m in request["messages"] if m["role"] == "tool"]
        if not tool_messages:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call-1",
                        "type": "function",
                        "function": {
                            "name": "search",
                            "arguments": '{"query": "error identifier"}',
                        },
                    }
                ],
            }
        else:
            result = json.loads(tool_messages[-1]["content"])
            line = next(e for e in result["evidence"] if "ERR-GW-12" in e["text"])
            cite = {k: v for k, v in line.items() if k != "text"}
            final = {
                "schemaVersion": "1.0",
                "claims": [
                    {
                        "claimKey": "errorIdentifier",
                        "value": {"type": "identifier", "value": "ERR-GW-12"},
                        "citations": [cite],
                    }
                ],
                "gaps": [],
                "abstained": False,
                "stopReason": "complete",
            }
            message = {"role": "assistant", "content": json.dumps(final)}
        return Exchange(RecordedResponse(status=200, json_body={"choices": [{"message": message}]}))


def test_chat_agent_answers_through_the_tool_session(small: Small) -> None:
    model = ScriptedModel()
    settings = ChatSettings(model="scripted", base_url="http://127.0.0.1:9", fence_results=False)
    agent = ChatAgent(settings, transport=model)  # type: ignore[arg-type]
    run = Harness(small.public, gno_cues()).run("t0000001", "cold", LexicalBackend(), agent)
    assert run.failure == ("none", None)
    first = model.requests[0]
    assert sorted(tool["function"]["name"] for tool in first["tools"]) == [
        "get",
        "multi_get",
        "search",
    ]
    assert "t0000001" in first["messages"][1]["content"]
    score = score_receipt(run.canonical, small.public.tasks["t0000001"], small.oracles["t0000001"])
    assert score["success"] == 1
    assert run.canonical["agentId"] == "ChatAgent"

"""The agent command over MCP (``pytest_agentbench.agents.command``), one session at a time.

The commands are POSIX sh and Python one-liners: the protocol is all they need.
Every tool call is checked in the session's own records, so it went through
``session.call``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from pytest_agentbench.agents.command import (
    AgentCommandError,
    CommandAgent,
    CommandSettings,
    Transport,
    agent_environment,
    parse_command,
    parse_transport,
)
from pytest_agentbench.agents.mcp_server import SUBMIT_ANSWER, CaseServer
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.tools import Budget, ToolCallError, ToolSession, ToolSpec

SH_AGENT = Path(__file__).resolve().parent.parent / "examples" / "mcp" / "stdio_agent.sh"
FINAL = {
    "type": "object",
    "additionalProperties": False,
    "required": ["value"],
    "properties": {"value": {"type": "integer"}},
}


def _add(arguments: dict[str, Any]) -> Any:
    if arguments["a"] < 0:
        raise ToolCallError("negative_refused", "no negative numbers")
    return {"sum": arguments["a"] + arguments["b"]}


def session(max_calls: int | None = None) -> ToolSession:
    add = ToolSpec(
        name="add",
        description="Add two integers.",
        parameters={
            "type": "object",
            "additionalProperties": False,
            "required": ["a", "b"],
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        },
        handler=_add,
    )
    return ToolSession([add], Budget(max_calls=max_calls), final_schema=FINAL)


def agent(command: list[str], transport: Transport = "stdio", timeout: float = 30) -> CommandAgent:
    return CommandAgent(CommandSettings(tuple(command), transport, timeout))


def sh_agent(monkeypatch: pytest.MonkeyPatch, arguments: str, answer: str) -> CommandAgent:
    monkeypatch.setenv("AGENT_TOOL", "add")
    monkeypatch.setenv("AGENT_ARGS", arguments)
    monkeypatch.setenv("AGENT_ANSWER", answer)
    return agent(["sh", str(SH_AGENT)])


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_tools_list_is_the_sessions_tools_then_submit_answer() -> None:
    served = CaseServer(session(), {"question": "1+2"})
    entries = served.tool_entries()
    assert [entry["name"] for entry in entries] == ["add", SUBMIT_ANSWER]
    assert entries[0] == session().mcp_tools()[0]
    # The world's object final schema is submit_answer's: the arguments are the answer.
    assert entries[1]["inputSchema"] == FINAL
    assert "1+2" in served.instructions()
    # Without an object final schema, the answer is wrapped.
    plain = ToolSession(list(session().tools))
    wrapped = CaseServer(plain, {}).tool_entries()[1]["inputSchema"]
    assert wrapped["required"] == ["answer"]
    assert CaseServer(plain, {}).call(SUBMIT_ANSWER, {"answer": [1]}) == (
        '{"submitted":true}',
        False,
    )


def test_a_world_tool_named_submit_answer_is_refused() -> None:
    spec = ToolSpec(
        name=SUBMIT_ANSWER,
        description="x",
        parameters={"type": "object", "additionalProperties": False, "properties": {}},
        handler=lambda arguments: 1,
    )
    with pytest.raises(AgentbenchError, match="mcp_tool_name_taken"):
        CaseServer(ToolSession([spec]), {})


def test_stdio_a_sh_agent_calls_through_the_session_and_submits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tools = session()
    answer = sh_agent(monkeypatch, '{"a":1,"b":2}', '{"value":3}').solve({"q": 1}, tools)
    assert answer == {"value": 3}
    [call] = tools.calls
    assert (call.name, call.arguments_json, call.result_json, call.error) == (
        "add",
        '{"a":1,"b":2}',
        '{"sum":3}',
        None,
    )
    assert tools.receipt(answer).model_dump(mode="json")["canonical"]["totals"]["calls"] == 1


def test_refusals_reach_the_agent_and_are_recorded_as_session_call_records_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Schema refusal, world refusal and budget: each is the session's own outcome.
    for arguments, budget, code in (
        ('{"a":"x","b":2}', None, "invalid_arguments"),
        ('{"a":-1,"b":2}', None, "negative_refused"),
        ('{"a":1,"b":2}', 0, "budget_exhausted"),
    ):
        tools = session(max_calls=budget)
        answer = sh_agent(monkeypatch, arguments, '{"value":0}').solve({}, tools)
        assert answer == {"value": 0}
        assert [call.error for call in tools.calls] == [code]


def test_http_the_answer_may_be_stdout_json_and_the_environment_is_the_cases() -> None:
    os.environ["AGENTBENCH_TOOLGRAMMAR_SEALED"] = "/where/the/oracle/is"
    try:
        code = (
            "import json, os; print(json.dumps({k: os.environ[k] for k in sorted(os.environ)"
            " if k.startswith('AGENTBENCH_')}))"
        )
        printed = agent(python(code), "http").solve({"question": "q"}, session())
    finally:
        del os.environ["AGENTBENCH_TOOLGRAMMAR_SEALED"]
    seen = json.loads(printed)
    assert "AGENTBENCH_TOOLGRAMMAR_SEALED" not in seen
    assert json.loads(seen["AGENTBENCH_TASK"]) == {"question": "q"}
    assert json.loads(seen["AGENTBENCH_FINAL_SCHEMA"]) == FINAL
    assert seen["AGENTBENCH_MCP_TRANSPORT"] == "http"
    assert seen["AGENTBENCH_MCP_URL"].startswith("http://127.0.0.1:")
    assert seen["AGENTBENCH_MCP_URL"].split("/")[3] == "mcp"
    environment = agent_environment({}, None, "stdio", None, {"AGENTBENCH_X": "1", "HOME": "h"})
    assert "AGENTBENCH_X" not in environment
    assert environment["HOME"] == "h"
    assert "AGENTBENCH_MCP_URL" not in environment


def test_failures_have_named_codes(tmp_path: Path) -> None:
    with pytest.raises(AgentCommandError, match=r"agent_command_failed.*status 3.*boom"):
        agent(python("import sys; sys.stderr.write('boom'); sys.exit(3)"), "http").solve(
            {}, session()
        )
    with pytest.raises(AgentCommandError, match="agent_command_no_answer"):
        agent(["true"]).solve({}, session())
    with pytest.raises(AgentCommandError, match="agent_command_no_answer"):
        agent(["true"], "http").solve({}, session())
    with pytest.raises(AgentCommandError, match=r"agent_command_failed.*cannot start"):
        agent([str(tmp_path / "no-such-agent")]).solve({}, session())


def test_a_command_past_the_limit_is_killed_with_its_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    command = ["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"]
    with pytest.raises(AgentCommandError, match="agent_command_timeout"):
        agent(command, "stdio", timeout=1).solve({}, session())
    grandchild = int(pidfile.read_text())
    # Killed with the group: gone, or a zombie waiting for its reaper at most.
    for _ in range(100):
        try:
            state = Path(f"/proc/{grandchild}/stat").read_text().rpartition(")")[2].split()[0]
        except FileNotFoundError:
            break
        if state == "Z":
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the agent's child {grandchild} outlived the case limit")


def test_settings_are_parsed_with_named_refusals() -> None:
    assert parse_command("node 'my agent.mjs' --x", "f") == ("node", "my agent.mjs", "--x")
    assert parse_transport("stdio", "f") == "stdio"
    for text, code in (("", "invalid_agent_command"), ("node 'open", "invalid_agent_command")):
        with pytest.raises(AgentbenchError, match=code):
            parse_command(text, "f")
    with pytest.raises(AgentbenchError, match="invalid_agent_transport"):
        parse_transport("sse", "f")
    with pytest.raises(AgentbenchError, match="agent_command_missing"):
        CommandAgent()


HUNG_LIMITS_S = (1, 5)
"""The hung command's case limits, tried in turn: it must fire after the script has started
its sleep. 1 s does on a machine that is not overloaded; on one loaded far past its cores
the script may not have written both pids by then, and only then is the session run again
under 5 s (each limit is waited out in full: the shorter is the usual cost)."""


def test_the_case_limit_ends_a_hung_command_and_its_children(pytester: pytest.Pytester) -> None:
    for limit in HUNG_LIMITS_S:
        pidfile = pytester.path / f"pids-{limit}"
        pytester.makefile(
            ".sh",
            hang=f"#!/bin/sh\necho $$ >> {pidfile}\nsleep 60 &\necho $! >> {pidfile}\nwait\n",
        )
        result = pytester.runpytest(
            "--agentbench-suite=toolgrammar-mini-v1",
            "-k",
            "clinic-T1-00001",
            "-p",
            "no:randomly",
            "--agentbench-agent-command",
            "sh hang.sh",
            f"--agentbench-timeout={limit}",
        )
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*agent_error: timed out after*"])
        # Whatever the script started before the limit fired ends with it.
        pids = list(map(int, pidfile.read_text().split())) if pidfile.exists() else []
        for pid in pids:
            assert _ends(pid), f"process {pid} of the hung command is still running"
        if len(pids) == 2:
            break
    else:
        pytest.fail(f"the script never started both processes inside {HUNG_LIMITS_S[-1]} s")


def _ends(pid: int) -> bool:
    """Whether ``pid`` is gone or a zombie, waiting for a killed process to die (a SIGKILL
    is delivered, not completed, when ``kill`` returns)."""
    for _ in range(200):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False

"""The examples in examples/mcp/ run the built-in toolgrammar-mini-v1 suite through MCP.

An OpenAI Agents SDK agent and a pydantic-ai agent (each against the scripted
loopback model of tests/mcp_llm_server.py, over streamable HTTP) and a Node.js
script with no package (over its own stdio). Each drives real pytest sessions
with ``--agentbench-agent-command``; cases are few because each starts a
process per case.

``clinic-T1-00001`` asks which site a patient is in: every example looks the
patient up and submits the tool's answer, which names the site, so it passes;
``clinic-T1-00002`` asks something the lookup cannot answer, so it fails as
graded (not as an error). Both run through the same receipts as a Python adapter.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_llm_server import ScriptedToolModel

pytest.importorskip("mcp")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "mcp"
SUITE = ("--agentbench-suite", "toolgrammar-mini-v1", "-p", "no:randomly")
TWO_CASES = ("-k", "clinic-T1-00001 or clinic-T1-00002")
ONE_CASE = ("-k", "clinic-T1-00001")


def command(script: str) -> str:
    runner = "node" if script.endswith(".mjs") else sys.executable
    return f"{runner} {EXAMPLES / script}"


def cases(report: Path) -> dict[str, dict[str, Any]]:
    data = json.loads(report.read_text())
    assert data["adapter"]["spec"] == "pytest_agentbench.agents.command:CommandAgent"
    return {case["result"]["case_id"]: case["result"] for case in data["suites"][0]["cases"]}


def assert_looked_up_and_graded(found: dict[str, dict[str, Any]]) -> None:
    for result in found.values():
        assert result["failure_class"] is None, result["failure_reason"]
        assert result["receipt"]["canonical"]["final"] is not None
    site = found["clinic-T1-00001"]
    assert site["outcome"] == "passed", site["checks"]
    # Through session.call: recorded, delivered, counted in model-visible bytes.
    [call] = site["receipt"]["canonical"]["calls"]
    assert (call["name"], call["arguments"], call["delivered"]) == (
        "search_patients",
        {"query": "PAT-00065"},
        True,
    )
    assert call["model_visible_bytes"] > 0


def run_one_case(pytester: pytest.Pytester, script: str, *extra: str) -> Path:
    """One passing case driven by an example over HTTP, looked up and graded: its report."""
    report = pytester.path / "report.json"
    result = pytester.runpytest(
        *SUITE,
        *ONE_CASE,
        "--agentbench-agent-command",
        command(script),
        *extra,
        f"--agentbench-report={report}",
    )
    result.assert_outcomes(passed=1)
    assert_looked_up_and_graded(cases(report))
    return report


@pytest.fixture
def scripted_model(monkeypatch: pytest.MonkeyPatch) -> Any:
    model = ScriptedToolModel()
    with model.serving() as url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", url)
        monkeypatch.setenv("AGENTBENCH_LLM_MODEL", "scripted-model")
        yield model


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_a_node_script_over_stdio_serially_and_under_xdist(pytester: pytest.Pytester) -> None:
    reports = {}
    for name, extra in (("serial", ()), ("n2", ("-n", "2"))):
        report = pytester.path / f"{name}.json"
        result = pytester.runpytest(
            *SUITE,
            *TWO_CASES,
            *extra,
            "--agentbench-agent-command",
            command("stdio_agent.mjs"),
            "--agentbench-agent-transport",
            "stdio",
            f"--agentbench-report={report}",
        )
        result.assert_outcomes(passed=1, failed=1)
        reports[name] = cases(report)
        assert_looked_up_and_graded(reports[name])
    # The receipts are byte-stable across processes, as a Python adapter's are.
    assert {k: v["receipt"]["digest"] for k, v in reports["serial"].items()} == {
        k: v["receipt"]["digest"] for k, v in reports["n2"].items()
    }


def test_an_openai_agents_sdk_agent_over_http(
    pytester: pytest.Pytester, scripted_model: ScriptedToolModel
) -> None:
    pytest.importorskip("agents")
    run_one_case(pytester, "openai_agents_agent.py")
    # The framework sent the case's MCP tools to the model as function tools.
    names = {tool["function"]["name"] for tool in scripted_model.requests[0]["tools"]}
    assert {"search_patients", "submit_answer"} <= names


def test_an_openai_agents_sdk_agent_isolated_and_sandboxed_over_http(
    pytester: pytest.Pytester, scripted_model: ScriptedToolModel
) -> None:
    pytest.importorskip("agents")
    report = run_one_case(
        pytester, "openai_agents_agent.py", "--agentbench-isolate", "--agentbench-sandbox=auto"
    )
    trust = json.loads(report.read_text())["trust"]
    assert (trust["isolation"], trust["sandbox"]) == ("isolated", "auto"), trust


def test_a_pydantic_ai_agent_over_http(
    pytester: pytest.Pytester, scripted_model: ScriptedToolModel
) -> None:
    pytest.importorskip("pydantic_ai")
    pytest.importorskip("fastmcp")
    run_one_case(pytester, "pydantic_ai_agent.py")
    assert scripted_model.requests


def test_start_up_refusals(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        *SUITE,
        "--agentbench-agent-command",
        "true",
        "--agentbench-adapter=pytest_agentbench.agents.chat:ChatAgent",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*agent_command_with_adapter*"])
    pytester.makeini("[pytest]\nagentbench_agent_command = node 'unbalanced\n")
    result = pytester.runpytest(*SUITE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid_agent_command*agentbench_agent_command*"])

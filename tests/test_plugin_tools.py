"""The tool-session contract in real pytest runs, with and without xdist, in-process and isolated.

One ``demo-tools`` suite has a case per outcome (budgets, every error code,
adapter failures); the JSON run report and ``--agentbench-receipts`` must
classify each one the same way and carry receipts whose digests equal those
of the same cases run in this process, whether the adapter runs in pytest's
process or, with ``--agentbench-isolate``, in its own (where every tool call
crosses a pipe to the world's session).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_agentbench.report.receipts import receipt_path
from pytest_agentbench.run.session import SuiteLoader
from pytest_agentbench.sdk.registry import WorldRegistry
from pytest_agentbench.sdk.runner import run_case
from pytest_agentbench.sdk.tools import Receipt
from tests import demo_world, tool_agents
from tests.demo_world import TOOLS_WORLD, write_demo_suite
from tests.reports import assert_valid_report

SUITE = "demo-tools-suite"
TIMEOUTS = (1.5, 5.0)
"""The sessions' case limits, tried in turn: the ``timeout`` case hangs past each, and spends
it in full; every other case must finish inside it. In an isolated run every tool call of a
case crosses a pipe (the ``calls`` case's fifteen took 2.8 s on a machine at load 25, past a
limit of 1 s): where any case but ``timeout`` timed out, the session is run again under 5 s."""
TIMEOUT = TIMEOUTS[-1]
"""The limit of the cases run in this process for their digests (a receipt names no limit)."""
OVERRUN_LIMIT = 0.2
"""The ``timeout`` case's limit where it runs alone (its receipt names no limit)."""
# (case outcome, failure class, receipt errors, receipt failure code)
EXPECTED: dict[str, tuple[str, str | None, dict[str, int], str | None]] = {
    "ok": ("passed", None, {}, None),
    "calls": ("failed", None, {"budget_exhausted": 1, "invalid_arguments": 14}, None),
    "bytes": ("failed", None, {"budget_exhausted": 1}, None),
    "unknown": ("failed", None, {"unknown_tool": 1}, None),
    "invalid": ("failed", None, {"invalid_arguments": 1}, None),
    "refusal": ("failed", None, {"operand_too_large": 1}, None),
    "handler": ("error", "harness_error", {"handler_failed": 1}, "handler_failed"),
    "closed": ("failed", None, {"session_closed": 1}, None),
    "raise": ("failed", "agent_error", {}, "adapter_failed"),
    "malformed": ("failed", "product_error", {}, "malformed_final"),
    "timeout": ("failed", "agent_error", {}, "timed_out"),
}
QUESTIONS = {name: name for name in EXPECTED}
ANSWERS = dict.fromkeys(EXPECTED, 3)


def write_suite(base: Path) -> Path:
    return write_demo_suite(
        base,
        SUITE,
        questions=QUESTIONS,
        answers=ANSWERS,
        world="demo-tools",
        extra_suite_yaml=tool_agents.BUDGET_OPTIONS,
    )


@pytest.fixture
def project(demo: pytest.Pytester) -> pytest.Pytester:
    write_suite(demo.path)
    demo.makepyfile(tool_agents=Path(tool_agents.__file__).read_text(encoding="utf-8"))
    return demo


@pytest.fixture(scope="module")
def in_process_digests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The receipts' digests when this process runs the same cases directly."""
    base = tmp_path_factory.mktemp("direct")
    loaded = SuiteLoader(WorldRegistry([TOOLS_WORLD]), base).load(write_suite(base))
    world, suite = loaded.world, loaded.suite
    digests = {}
    for case in world.cases(suite):
        view = world.public_view(suite, case)
        # Only the case that must overrun its limit gets a short one here.
        limit = OVERRUN_LIMIT if case.case_id == "timeout" else TIMEOUT
        outcome = run_case(world, suite, case, view, tool_agents.Scripted(), timeout=limit)
        assert outcome.receipt is not None
        digests[case.case_id] = Receipt.model_validate(outcome.receipt).digest
    return digests


def run(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any], Path]:
    """The session's result, its report's cases by id, and its receipts folder."""
    for limit in TIMEOUTS:
        report = project.path / f"run-{limit:g}.json"
        receipts = project.path / f"receipts-{limit:g}"
        result = project.runpytest(
            "--agentbench-adapter=tool_agents:Scripted",
            f"--agentbench-timeout={limit:g}",
            f"--agentbench-report={report}",
            f"--agentbench-receipts={receipts}",
            "-m",
            "not agentbench_control",
            *args,
        )
        document = json.loads(report.read_text())
        assert_valid_report(document)
        (suite,) = document["suites"]
        cases = {entry["result"]["case_id"]: entry["result"] for entry in suite["cases"]}
        if not any(
            "timed out" in (case.get("failure_reason") or "")
            for case_id, case in cases.items()
            if case_id != "timeout"
        ):
            break
    return result, cases, receipts


def check_budgets(cases: dict[str, Any]) -> None:
    calls = Receipt.model_validate(cases["calls"]["receipt"]).canonical
    assert calls.totals.calls == 15
    assert calls.calls[-1].error == "budget_exhausted"
    assert calls.budget.model_dump() == {"max_calls": 14, "max_bytes": 100}
    spent = Receipt.model_validate(cases["bytes"]["receipt"]).canonical
    withheld = spent.calls[-1]
    assert (withheld.error, withheld.delivered, withheld.model_visible_bytes) == (
        "budget_exhausted",
        False,
        0,
    )
    assert withheld.result == {"sum": 3}, "the withheld answer is kept in the receipt"
    assert spent.totals.model_visible_bytes == 99
    assert spent.totals.delivered == 11


ISOLATE = ["--agentbench-isolate"]


# Isolation and distribution are independent paths: isolation is run without xdist, and
# -n 2 (two worker processes, the expensive one) once, with adapters in the workers.
@pytest.mark.parametrize(
    ("xdist_args", "isolate_args"),
    [
        pytest.param([], [], id="no-xdist-in-process"),
        pytest.param([], ISOLATE, id="no-xdist-isolated"),
        pytest.param(["-n", "2"], [], id="n2-in-process"),
    ],
)
def test_every_outcome_is_classified_with_a_stable_receipt(
    project: pytest.Pytester,
    xdist_args: list[str],
    isolate_args: list[str],
    in_process_digests: dict[str, str],
) -> None:
    result, cases, receipts = run(project, *xdist_args, *isolate_args)
    assert sorted(cases) == sorted(EXPECTED)
    for case_id, (outcome, failure_class, errors, code) in EXPECTED.items():
        case = cases[case_id]
        receipt = Receipt.model_validate(case["receipt"])
        assert (case["outcome"], case["failure_class"]) == (outcome, failure_class), case_id
        assert receipt.canonical.totals.errors == errors, case_id
        assert receipt.canonical.failure_code == code, case_id
        assert receipt.digest == in_process_digests[case_id], case_id
        on_disk = receipt_path(receipts, SUITE, case_id)
        assert Receipt.model_validate_json(on_disk.read_text()).digest == receipt.digest
    check_budgets(cases)
    counts = {"passed": 1, "failed": 9, "error": 1, "skipped": 0}
    result.stdout.fnmatch_lines([f"cases: {', '.join(f'{v} {k}' for k, v in counts.items())}*"])
    header = "agentbench: adapter tool_agents:Scripted (tool_agents.Scripted)"
    where = ", in an isolated process" if isolate_args else ""
    result.stdout.fnmatch_lines([f"{header}{where}; world kinds:*"])


def test_the_reference_tool_agent_and_the_controls_pass(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path, SUITE, world="demo-tools", controls=demo_world.DEMO_TOOLS_CONTROLS)
    result = demo.runpytest()
    result.assert_outcomes(passed=5)


def test_an_answer_adapter_still_runs_the_interactive_world(project: pytest.Pytester) -> None:
    project.makepyfile(plain="class Plain:\n    def answer(self, question):\n        return 3\n")
    result = project.runpytest("--agentbench-adapter=plain:Plain", "-m", "not agentbench_control")
    result.assert_outcomes(passed=len(EXPECTED))


def test_an_adapter_of_neither_protocol_is_refused(project: pytest.Pytester) -> None:
    project.makepyfile(mute="class Mute:\n    def speak(self):\n        return 3\n")
    result = project.runpytest("--agentbench-adapter=mute:Mute")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*DemoAdapter (demo), ToolAgent or DemoAdapter (demo-tools)*"])


def test_the_task_views_and_finals_follow_the_published_schemas(tmp_path: Path) -> None:
    loaded = SuiteLoader(WorldRegistry([TOOLS_WORLD]), tmp_path).load(write_suite(tmp_path))
    world, suite = loaded.world, loaded.suite
    final_schema = demo_world.DemoFinal.model_json_schema()
    for case in world.cases(suite):
        jsonschema.validate(world.public_view(suite, case), demo_world.TASK_SCHEMA)
    jsonschema.validate(demo_world.accept_final('{"answer": 3}'), final_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"answer": 3, "extra": 1}, final_schema)

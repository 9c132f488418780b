"""Leak canaries are checked during a run, after the oracle loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentbench.run.leaks import tool_results, visible_text
from tests.demo_world import write_demo_suite

LEAKING_CONFTEST = """
from demo_world import DemoWorld, InteractiveDemoWorld, hookimpl


class LeakingView(DemoWorld):
    kind = "leaky"

    def public_view(self, suite, case):
        view = dict(super().public_view(suite, case))
        if case.case_id == "c2":
            view["hint"] = "CANARY-c2-7f3a"
        return view


class LeakingTool(InteractiveDemoWorld):
    kind = "leaky-tools"

    def run(self, suite, case, view, adapter):
        outcome = super().run(suite, case, view, adapter)
        receipt = outcome.receipt
        if case.case_id == "c3":
            receipt = {"canonical": {"calls": [{"result": {"leak": "CANARY-c3-7f3a"}}]}}
        return outcome.model_copy(update={"receipt": receipt})


@hookimpl
def pytest_agentbench_world_kinds():
    return [LeakingView(), LeakingTool()]
"""


def test_a_canary_in_the_view_or_a_tool_result_fails_only_its_case(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(demo_world=Path(__file__).with_name("demo_world.py").read_text())
    pytester.makeconftest(LEAKING_CONFTEST)
    pytester.syspathinsert()
    write_demo_suite(pytester.path, "view-suite", world="leaky")
    write_demo_suite(pytester.path, "tool-suite", world="leaky-tools")
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "suites",
        f"--agentbench-report={report}",
        "-m",
        "not agentbench_control",
        "-p",
        "no:cacheprovider",
    )
    cases = {
        (row["suite_id"], row["case_id"]): row
        for suite in json.loads(report.read_text())["suites"]
        for row in (entry["result"] for entry in suite["cases"])
    }
    leaked_view = cases[("view-suite", "c2")]
    assert leaked_view["failure_class"] == "harness_error"
    assert leaked_view["failure_reason"].startswith("[harness_leak] suites/view-suite/cases.jsonl")
    assert "case 'c2'" in leaked_view["failure_reason"]
    assert "public view" in leaked_view["failure_reason"]
    leaked_tool = cases[("tool-suite", "c3")]
    assert leaked_tool["failure_class"] == "harness_error"
    assert "tool result" in leaked_tool["failure_reason"]
    clean = [key for key, row in cases.items() if row["failure_class"] is None]
    assert sorted(clean) == [
        ("tool-suite", "c1"),
        ("tool-suite", "c2"),
        ("view-suite", "c1"),
        ("view-suite", "c3"),
    ]
    result.assert_outcomes(passed=4, failed=2)


def test_the_searched_text_is_the_canonical_view_and_the_tool_results_only() -> None:
    assert visible_text({"b": 1, "a": "x"}) == '{"a":"x","b":1}'
    assert visible_text({"a": object()}).startswith("{'a': <object")
    receipt = {
        "receipts": [
            {"canonical": {"calls": [{"result": {"n": 1}}, {"result": None}], "final": "SECRET"}},
            {"canonical": {"calls": [{"result": [2]}]}},
        ]
    }
    assert list(tool_results(receipt)) == ['{"n":1}', "[2]"]
    # The tools offered are descriptors, not results, however their schemas are shaped.
    offered = {"canonical": {"tools": [{"parameters": {"calls": [{"result": "x"}]}}], "calls": []}}
    assert list(tool_results(offered)) == []

"""Leak canaries are checked during a run, after the oracle loads."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pytest_agentbench.run.leaks import CanaryIndex, tool_results, visible_text
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


class CountingText(str):
    """A text that counts how often a canary is looked for in it."""

    looked_for = 0

    def __contains__(self, part: object) -> bool:
        CountingText.looked_for += 1
        return isinstance(part, str) and super().__contains__(part)


def _naive_first(canaries: list[str], text: str) -> str | None:
    ordered = sorted(dict.fromkeys(canary for canary in canaries if canary), key=len)
    return next((canary for canary in ordered if canary in text), None)


def test_the_canary_index_finds_what_testing_each_canary_finds() -> None:
    """Both ways of searching (canary by canary, and by the index) name the same canary."""
    rng = random.Random(7)
    alphabet = "ab-CANRY0123"
    for trial in range(400):
        canaries = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
            for _ in range(rng.choice((1, 3, 40, 400)))
        ]
        text = "".join(rng.choice(alphabet) for _ in range(rng.choice((0, 5, 60, 3000))))
        if canaries and rng.random() < 0.5:
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(canaries) + text[at:]
        assert CanaryIndex(canaries).first_in(text) == _naive_first(canaries, text), trial
        # Canaries sharing a prefix (the index then looks for the prefix first).
        shared = [f"CANARY-{canary}" for canary in canaries]
        marked = text if rng.random() < 0.5 else text.replace("Y0", "CANARY-", 1)
        if shared and rng.random() < 0.5:
            at = rng.randrange(len(marked) + 1)
            marked = marked[:at] + rng.choice(shared) + marked[at:]
        assert CanaryIndex(shared).first_in(marked) == _naive_first(shared, marked), trial


def test_a_case_looks_for_few_of_a_large_suites_canaries() -> None:
    """A suite naming a canary per case is not searched canary by canary in each short view."""
    canaries = [f"CANARY-c{number}-7f3a" for number in range(10_000)]
    index = CanaryIndex(canaries)
    CountingText.looked_for = 0
    assert index.first_in(CountingText('{"question": "what is 3+4?", "id": "c12"}')) is None
    assert CountingText.looked_for == 1, "only the canaries' common prefix, not found"
    CountingText.looked_for = 0
    assert index.first_in(CountingText('{"hint": "CANARY-c12-7f3a"}')) == "CANARY-c12-7f3a"
    assert CountingText.looked_for <= 2

"""``agentbench rescore`` keeps running sums, not every graded result, for a reducer-less suite."""

from __future__ import annotations

import json
import weakref
from typing import Any

import pytest

from pytest_agentbench.cli import rescore as rescore_module
from pytest_agentbench.cli.common import command_state, load
from pytest_agentbench.run.session import LoadedSuite
from pytest_agentbench.sdk.contracts import Case, CaseResult, Outcome
from pytest_agentbench.sdk.registry import WorldRegistry
from tests.demo_world import DemoWorld
from tests.test_fault_matrix_files import write_suite

CASES = 12


def test_rescore_holds_no_graded_result_until_the_metrics(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Case 3's answer is wrong (always 0 from the adapter below), so the rates are not all 1.
    write_suite(demo.path, "demo", {f"c{n}": f"{n}+1" for n in range(CASES)})
    demo.makepyfile(
        zeroing="class Adapter:\n    def answer(self, question):\n"
        "        return 0 if question == '3+1' else sum(map(int, question.split('+')))\n"
    )
    done = demo.runpytest(
        "--agentbench-report=run.json",
        "--agentbench-adapter=zeroing:Adapter",
        "-m",
        "not agentbench_control",
        "-p",
        "no:xdist",
    )
    done.assert_outcomes(passed=CASES - 1, failed=1)
    report = demo.path / "run.json"
    (suite,) = json.loads(report.read_text(encoding="utf-8"))["suites"]

    registry = WorldRegistry([DemoWorld()])
    state = command_state(registry, 30.0)
    graded: list[weakref.ref[CaseResult]] = []
    alive_at_finish: list[int] = []
    grade = state.grade

    def tracked(loaded: LoadedSuite, case: Case, outcome: Outcome) -> CaseResult:
        result = grade(loaded, case, outcome)
        graded.append(weakref.ref(result))
        return result

    finish = rescore_module._SuiteRescorer.finish

    def counted(self: Any) -> Any:
        alive_at_finish.append(sum(ref() is not None for ref in graded))
        return finish(self)

    monkeypatch.setattr(state, "grade", tracked)
    monkeypatch.setattr(rescore_module._SuiteRescorer, "finish", counted)
    (rescored,) = rescore_module.rescore(
        report, state, lambda _: load(str(demo.path / "suites" / "demo"), registry)
    )
    assert len(graded) == rescored.cases == CASES
    # Every result was dropped once its measurements were added: none waits for the metrics.
    assert alive_at_finish == [0]
    assert rescored.differences == ()
    recorded = {metric["name"]: metric["value"] for metric in suite["metrics"]}
    assert {metric.name: metric.rescored for metric in rescored.metrics} == recorded
    assert 0 < recorded["accuracy"] < 1

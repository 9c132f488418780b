"""Recorded outputs: re-scoring them inside pytest, resuming a partial run."""

from __future__ import annotations

from typing import Any

import pytest

from tests.demo_runs import demo_project, run_cases
from tests.demo_world import write_demo_suite

QUESTIONS = {f"q{i}": f"{i}+2" for i in range(8)}

ADAPTERS = """
class OddWrong:
    def answer(self, question):
        left, right = question.split("+")
        return -1 if int(left) % 2 else int(left) + int(right)


class Crashes:
    def answer(self, question):
        if question.startswith("5+"):
            raise RuntimeError("flaky network")
        left, right = question.split("+")
        return int(left) + int(right)
"""


@pytest.fixture
def project(demo: pytest.Pytester) -> pytest.Pytester:
    return demo_project(demo, QUESTIONS, ADAPTERS)


def outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {c["nodeid"]: c["result"]["outcome"] for c in report["suites"][0]["cases"]}


def test_replaying_recorded_outputs_reproduces_the_run(project: pytest.Pytester) -> None:
    _, original = run_cases(
        project,
        "original.json",
        "--agentbench-adapter=my_adapters:OddWrong",
        f"--agentbench-record={project.path / 'records'}",
    )
    assert len(list((project.path / "records" / "demo-suite").glob("*.json"))) == 8
    for source, xdist in (("original.json", ["-n", "2"]), ("records", [])):
        result, replayed = run_cases(
            project, "replayed.json", f"--agentbench-replay-outputs={source}", *xdist
        )
        result.assert_outcomes(passed=4, failed=4)
        assert replayed["suites"][0]["metrics"] == original["suites"][0]["metrics"]
        assert outcomes(replayed) == outcomes(original)
        assert replayed["problems"] == []


def test_a_changed_oracle_is_reported_and_a_changed_case_refused(project: pytest.Pytester) -> None:
    run_cases(project, "original.json", "--agentbench-adapter=my_adapters:OddWrong")
    answers = {cid: 0 if cid == "q0" else int(q[0]) + 2 for cid, q in QUESTIONS.items()}
    write_demo_suite(project.path, questions=QUESTIONS, answers=answers)
    result, replayed = run_cases(
        project, "replayed.json", "--agentbench-replay-outputs=original.json"
    )
    (note,) = replayed["problems"]
    assert note.startswith("[oracle_changed] suite 'demo-suite': outputs recorded under oracle")
    result.assert_outcomes(passed=3, failed=5)  # q0 is now wrong against the new oracle

    write_demo_suite(project.path, questions=dict(QUESTIONS, q1="1+3"), answers=answers)
    result, replayed = run_cases(
        project, "replayed.json", "--agentbench-replay-outputs=original.json"
    )
    q1 = next(c["result"] for c in replayed["suites"][0]["cases"] if c["result"]["case_id"] == "q1")
    assert q1["outcome"] == "error"
    assert q1["failure_reason"].startswith("[replay_case_changed] the case or its public view")


def test_resume_runs_only_what_is_missing_and_merges_exactly(project: pytest.Pytester) -> None:
    adapter = "--agentbench-adapter=my_adapters:OddWrong"
    _, complete = run_cases(project, "complete.json", adapter)
    partial, _ = run_cases(project, "partial.json", adapter, "-k", "q0 or q1 or q2")
    partial.assert_outcomes(passed=2, failed=1)
    result, resumed = run_cases(
        project, "resumed.json", adapter, "--agentbench-resume=partial.json", "-n", "2"
    )
    result.assert_outcomes(passed=2, failed=3)  # only the five missing cases ran
    assert resumed["suites"][0]["metrics"] == complete["suites"][0]["metrics"]
    assert resumed["suites"][0]["counts"] == complete["suites"][0]["counts"]
    assert outcomes(resumed) == outcomes(complete)
    assert resumed["problems"] == [
        "[resumed] suite 'demo-suite': 3 graded cases taken from partial.json"
    ]


def test_resume_runs_agent_errors_again_and_nothing_under_another_adapter(
    project: pytest.Pytester,
) -> None:
    run_cases(project, "crashed.json", "--agentbench-adapter=my_adapters:Crashes")
    result, _ = run_cases(
        project,
        "again.json",
        "--agentbench-adapter=my_adapters:Crashes",
        "--agentbench-resume=crashed.json",
    )
    result.assert_outcomes(failed=1)  # the agent_error case, and only it, ran again
    result, resumed = run_cases(project, "other.json", "--agentbench-resume=crashed.json")
    result.assert_outcomes(passed=8)
    assert "nothing taken from crashed.json" in resumed["problems"][0]


def test_replay_needs_recorded_outputs(project: pytest.Pytester) -> None:
    (project.path / "empty.json").write_text("{}", encoding="utf-8")
    result = project.runpytest("--agentbench-replay-outputs=nowhere.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]invalid_recording[]]*nowhere.json*"])

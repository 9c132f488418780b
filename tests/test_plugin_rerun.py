"""Recorded outputs: re-scoring them inside pytest, resuming a partial run."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
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
    # Without xdist: a worker reads the recorded outputs as this process does, and the
    # aggregation of its results is the same as any -n 2 run's (test_plugin_xdist).
    for source in ("original.json", "records"):
        result, replayed = run_cases(
            project, "replayed.json", f"--agentbench-replay-outputs={source}"
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
    # Under xdist the controller merges: the killed xdist run below resumes and merges there.
    result, resumed = run_cases(
        project, "resumed.json", adapter, "--agentbench-resume=partial.json"
    )
    result.assert_outcomes(passed=2, failed=3)  # only the five missing cases ran
    assert resumed["suites"][0]["metrics"] == complete["suites"][0]["metrics"]
    assert resumed["suites"][0]["counts"] == complete["suites"][0]["counts"]
    assert outcomes(resumed) == outcomes(complete)
    assert resumed["problems"] == [
        "[resumed] suite 'demo-suite': 3 graded cases taken from partial.json"
    ]


def test_a_report_past_the_input_limit_resumes_and_agentbench_max_report_bytes_bounds_it(
    project: pytest.Pytester,
) -> None:
    adapter = "--agentbench-adapter=my_adapters:OddWrong"
    run_cases(project, "partial.json", adapter, "-k", "q0 or q1 or q2")
    size = (project.path / "partial.json").stat().st_size
    # Each value under the readers' limit, the file over it: read as a stream, it resumes.
    limit = f"agentbench_max_input_bytes={size // 2}"
    result, _ = run_cases(
        project, "resumed.json", adapter, "--agentbench-resume=partial.json", "-o", limit
    )
    result.assert_outcomes(passed=2, failed=3)
    for option in ("--agentbench-resume=partial.json", "--agentbench-baseline=partial.json"):
        refused = project.runpytest(
            adapter,
            option,
            "-o",
            f"agentbench_max_report_bytes={size - 1}",
            "-p",
            "no:cacheprovider",
        )
        assert refused.ret == pytest.ExitCode.USAGE_ERROR, option
        refused.stderr.fnmatch_lines(
            [
                f"*[[]report_too_large[]] partial.json: {size} bytes, over the limit of "
                f"{size - 1} bytes (agentbench_max_report_bytes)"
            ]
        )
    bad = project.runpytest(
        adapter, "--agentbench-resume=partial.json", "-o", "agentbench_max_report_bytes=lots"
    )
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*[[]invalid_input_limit[]] agentbench_max_report_bytes: 'lots' *"])


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
    # Under another adapter nothing of it belongs to the run: refused by name.
    other = project.runpytest("--agentbench-resume=crashed.json")
    assert other.ret == pytest.ExitCode.USAGE_ERROR
    other.stderr.fnmatch_lines(
        ["*[[]resume_mismatch[]] crashed.json: --agentbench-resume: recorded with adapter *"]
    )


def test_a_resume_that_does_not_belong_to_the_run_is_refused_by_name(
    project: pytest.Pytester,
) -> None:
    adapter = "--agentbench-adapter=my_adapters:OddWrong"
    run_cases(project, "original.json", adapter)
    run_cases(project, "twice.json", adapter, "--agentbench-repeat=2", "-k", "q0 or q1")
    original = json.loads((project.path / "original.json").read_text())
    cases = original["suites"][0]["cases"]

    def variant(name: str, change: Any) -> str:
        document = copy.deepcopy(original)
        change(document["suites"][0]["cases"])
        (project.path / name).write_text(json.dumps(document))
        return name

    def edit_q1(entries: list[dict[str, Any]]) -> None:
        entries[1]["result"].update(outcome="passed", failure_class=None)

    def add_q99(entries: list[dict[str, Any]]) -> None:
        extra = copy.deepcopy(entries[0])
        extra["nodeid"] = extra["nodeid"].replace("::q0", "::q99")
        extra["result"]["case_id"] = "q99"
        entries.append(extra)

    assert cases[1]["result"]["case_id"] == "q1"
    expected = {
        # A case edited from failed to passed.
        variant("edited.json", edit_q1): "suite 'demo-suite', case 'q1': reported passed, "
        "but its recorded output grades failed",
        # A case the suite does not have ("9 of 8").
        variant("unknown.json", add_q99): "suite 'demo-suite', case 'q99' is not in the suite",
        # One case twice.
        variant("twice-q0.json", lambda e: e.append(e[0])): "case 'q0' (trial None) is "
        "reported twice",
        # Trials of --agentbench-repeat 2 merged into a plain run.
        "twice.json": "suite 'demo-suite', case 'q0' is trial 1 of a run with another "
        "--agentbench-repeat (this run has 1)",
    }
    for name, reason in expected.items():
        # Checked where results arrive: under xdist, the controller, before any worker runs
        # (one worker shows it: the split, not how many workers).
        xdist = ["-n", "1"] if name == "edited.json" else []
        result = project.runpytest(
            adapter, f"--agentbench-resume={name}", "-p", "no:cacheprovider", *xdist
        )
        assert result.ret == pytest.ExitCode.USAGE_ERROR, name
        result.stderr.fnmatch_lines(
            [f"*[[]resume_mismatch[]] {name}: --agentbench-resume: *{reason}*"]
        )
    # The oracle changed since: every taken result would be graded against another.
    write_demo_suite(project.path, questions=QUESTIONS, answers=dict.fromkeys(QUESTIONS, 0))
    result = project.runpytest(adapter, "--agentbench-resume=original.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]resume_mismatch[]]*oracle digest*"])


BLOCKING_ADAPTER = """
import pathlib
import time


BLOCK = pathlib.Path(__file__).resolve().parent / "block"


class BlocksOnLast:
    def answer(self, question):
        # q7, the last case, waits while the file "block" exists: the run cannot end
        # before it is killed, and under xdist no other case waits behind it. (An
        # isolated adapter works in a folder of its own: the path is the project's.)
        while question.startswith("7+") and BLOCK.exists():
            time.sleep(0.05)
        left, right = question.split("+")
        # Odd questions are answered wrong: the merge must keep failures as they were.
        return -1 if int(left) % 2 else int(left) + int(right)
"""


@pytest.mark.parametrize(
    "xdist",
    [[], ["-n", "1"], ["--agentbench-isolate", "--agentbench-concurrency=2"]],
    ids=["serial", "n1", "isolated-pool"],
)
# Under xdist the controller journals each result as it arrives and merges the resumed run:
# one worker shows both (the resumed run has one case to run, which a second worker would
# not share, and the journal's lines arrive at the controller alike from any worker).
def test_a_run_killed_with_sigkill_resumes_from_its_progress_journal(
    demo: pytest.Pytester, xdist: list[str]
) -> None:
    write_demo_suite(demo.path, questions=QUESTIONS)
    demo.makepyfile(blocking=BLOCKING_ADAPTER)
    (demo.path / "block").touch()
    adapter = "--agentbench-adapter=blocking:BlocksOnLast"
    report, journal = demo.path / "run.json", demo.path / "run.json.progress"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", adapter]
    command += [f"--agentbench-report={report}", "-m", "not agentbench_control", *xdist]
    process = subprocess.Popen(
        command,
        cwd=demo.path,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Every case but the blocked one is journaled (header + 7 lines), then kill -9.
        for _ in range(20_000):
            if journal.is_file() and journal.read_bytes().count(b"\n") >= 8:
                break
            assert process.poll() is None, "the run ended before it was killed"
            time.sleep(0.05)
        else:
            pytest.fail("the journal never held the seven finished cases")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert not report.exists()
    (demo.path / "block").unlink()
    result, resumed = run_cases(
        demo, "resumed.json", adapter, "--agentbench-resume=run.json", *xdist
    )
    result.assert_outcomes(failed=1)  # only q7 ran
    assert resumed["problems"] == [
        f"[resumed] suite 'demo-suite': 7 graded cases taken from {journal.name}"
    ]
    # The merge is exact: as a run that was never killed.
    _, complete = run_cases(demo, "complete.json", adapter)
    assert outcomes(resumed) == outcomes(complete)
    assert set(outcomes(complete).values()) == {"passed", "failed"}
    assert resumed["suites"][0]["metrics"] == complete["suites"][0]["metrics"]
    assert resumed["suites"][0]["counts"] == complete["suites"][0]["counts"]


def test_replay_needs_recorded_outputs(project: pytest.Pytester) -> None:
    (project.path / "empty.json").write_text("{}", encoding="utf-8")
    result = project.runpytest("--agentbench-replay-outputs=nowhere.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]invalid_recording[]]*nowhere.json*"])

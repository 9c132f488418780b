"""The fault matrix of issue 8: every reproduction, serially and under ``-n 2``.

Each reproduction asserts the class every case ends in and the counts the
metrics see. Those whose handling depends on distribution sit side by side in
one project (the matrix below), run once without xdist and once under ``-n 2``
as subprocesses with a generous limit of the test's own: that limit is never
the mechanism under test (the plugin's ``--agentbench-timeout`` is). ``-n 0``
is the serial path again. The hangs have a project of their own: every case in
it must overrun the case limit, so it alone runs under a short one, while the
matrix's cases, which must all finish, keep a generous one. What needs a
session of its own (an exit code, an option that changes every case) runs
serially in-process further down. The isolated variants
(``--agentbench-isolate``) live in their own module.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

# Imported here so that pytester's inline runs, which drop the modules a run
# imported, share one set of authority model classes with the adapters below.
import pytest_agentbench.worlds.authority.world  # noqa: F401
from tests.conftest import DEMO_SOURCE
from tests.demo_world import REGISTERING_CONFTEST, write_demo_suite
from tests.shared_sessions import run_session

REPO = Path(__file__).resolve().parents[1]
ASTERIA = "asteria-authored-v1"
ASTERIA_CASE = "evt-010-authorised-comparison"
SERIAL_AND_ONE_WORKER = pytest.mark.parametrize(
    "xdist_args", [[], ["-n", "1"]], ids=["no-xdist", "n1"]
)
"""For what a case does to the cases after it in the same process, what the controller
does without collecting, or what a worker reads for itself (a predictions file): one worker
runs every case in one process and shows the split (``-n 0`` takes the serial path)."""
OUTER_LIMIT = 120.0
"""The test's own limit on a run that might hang: generous, never what is tested."""


def report_of(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return report


def suite_of(report: dict[str, Any], suite_id: str) -> dict[str, Any]:
    (suite,) = [suite for suite in report["suites"] if suite["id"] == suite_id]
    return suite


def cases_of(suite: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["result"]["case_id"]: entry["result"] for entry in suite["cases"]}


def metric(suite: dict[str, Any], name: str) -> tuple[float | None, int]:
    (found,) = [m for m in suite["metrics"] if m["name"] == name]
    return found["value"], found["support"]


def copy_asteria(base: Path, *, snapshots: bool = False) -> None:
    """The built-in Asteria suite and its oracle under ``base``, as in this repository."""
    for folder in ("suites", "oracles", *(("snapshots",) if snapshots else ())):
        shutil.copytree(REPO / folder / ASTERIA, base / folder / ASTERIA)
    # A rootdir conftest puts the project on sys.path in xdist workers too.
    (base / "conftest.py").write_text("")


@pytest.fixture(autouse=True)
def not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """syrupy and the hostile adapters read this: an inner run must not inherit ours."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


# --- The matrix: every fault whose handling depends on distribution, side by side ---
#
# One project holds a suite per reproduction (and the refused folders of others); one
# adapter misbehaves on each suite's own questions. It runs once without xdist and once
# under -n 2 (-n 0 is the serial path again), as subprocesses with a generous limit of the
# test's own: some cases crash a worker or leak a thread. Each reproduction is checked on its own
# slice of each run; the checks that need a session of their own (exit codes, options
# that change every case) stay in the tests further down, serially and in-process.

MATRIX_ADAPTER = """
import asyncio
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no message for you")


def hang_in_asyncio_executor():
    async def main():
        await asyncio.get_running_loop().run_in_executor(None, time.sleep, 1000)

    asyncio.run(main())


def hang_in_pool():
    with ThreadPoolExecutor(1) as ex:
        ex.submit(time.sleep, 1000).result()


def hang_swallowing_everything():
    while True:
        try:
            time.sleep(1000)
        except:  # noqa: E722 - the reproduction catches the timeout itself
            continue


def crash():
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os._exit(1)
    raise RuntimeError("would have crashed the only process")


def leak_a_thread():
    threading.Thread(target=time.sleep, args=(1000,)).start()


def cancel():
    raise asyncio.CancelledError()


def shout():
    raise ValueError("x" * 10_000_000)


def cannot_add():
    raise ValueError("cannot add today\\nsecond line of detail")


def sleep_then_answer():
    time.sleep(60)


FAULTS = {
    "1+1": cancel,
    "1+2": lambda: (_ for _ in ()).throw(Unprintable()),
    "1+3": crash,
    "1+4": hang_in_asyncio_executor,
    "1+5": hang_in_pool,
    "1+6": hang_swallowing_everything,
    "1+7": leak_a_thread,
    "3+9": cancel,
    "45+2": sleep_then_answer,
    "46+2": cannot_add,
}


class Agent:
    def answer(self, question):
        FAULTS.get(question, lambda: None)()
        left, right = question.split("+")
        if left == "80":
            shout()
        if question == "2+3":
            return 0
        if left == "0":
            return 7
        return int(left) + int(right)
"""

HOSTILE_QUESTIONS = {
    "cancelled": "1+1",
    "unprintable": "1+2",
    "crash": "1+3",
    "leaks-thread": "1+7",
    "right": "2+2",
    "wrong": "2+3",
}
HANGS = {
    "asyncio-executor": "1+4",
    "pool-result": "1+5",
    "bare-except": "1+6",
    "sleep-then-answer": "45+2",
}
"""Every case the limit must end: the adapter sleeps 60 s on the last and then answers right,
so it fails as a timeout only if the limit fired; the others would never return."""
CANCELS_WHEN_WRONG = {f"c{n - 30:02d}": f"{n}+{n}" for n in range(31, 41)} | {"c11": "3+9"}
"""Ten right, and the one it would get wrong (3+9) cancelled instead."""
SIX = {f"c{index}": f"{90 + index}+1" for index in range(1, 7)}
"""Six ten-megabyte outputs: kept whole, as the issue found them, they would take a process
well past the peak allowed below (it measured 880 MB for eleven)."""
ESSAYS = {"no-xdist": SIX, "n2": {case: SIX[case] for case in ("c2", "c5")}}
"""The six share one process without xdist, where the peak shows what keeping them whole
costs (each worker caps as that process does). Under ``-n 2`` the two the check reads
(one wrong, one whose receipt it reads) show them capped across workers: whole, either
would take the report, the JUnit file and the terminal past their bounds."""

CRASHING_WORLD = """
class CrashingWorld(DemoWorld):
    kind = "crashing"

    def run(self, suite, case, view, adapter):
        if case.case_id == "c2" and os.environ.get("PYTEST_XDIST_WORKER"):
            os._exit(1)
        return super().run(suite, case, view, adapter)


@hookimpl
def pytest_agentbench_world_kinds():
    return [DemoWorld(), CrashingWorld(), LoudWorld()]
"""

MATRIX_TIMEOUT = 60
"""No case of the matrix hangs, and every one must finish inside the limit: the loud world
grows and hashes ten megabytes inside it, on a machine that may be loaded."""
HANG_TIMEOUT = 0.2
"""Far below every hang (60 s and more): only the hangs' project, all of whose cases must
overrun it, runs under it."""


class Matrix:
    """One run of the matrix project: its output, report and JUnit file."""

    def __init__(self, base: Path, elsewhere: Path, result: pytest.RunResult, mode: str):
        self.base, self.elsewhere, self.result, self.mode = base, elsewhere, result, mode
        self.report_path, self.junit_path = base / "run.json", base / "junit.xml"
        self.report = report_of(self.report_path)
        self.junit = ET.parse(self.junit_path).getroot()

    def outcomes(self, folder: str) -> dict[str, str]:
        """What each item under ``folder`` ended in, from pytest's ``-rA`` summary."""
        return {
            node.removeprefix(f"{folder}/"): outcome
            for node, outcome in self.every_outcome().items()
            if node.startswith(f"{folder}/")
        }

    def every_outcome(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for line in self.result.outlines:
            outcome, _, rest = line.partition(" ")
            if outcome in ("PASSED", "FAILED", "ERROR"):
                found[rest.split(" - ")[0]] = outcome
        return found

    def counted(self, folder: str) -> dict[str, int]:
        outcomes = list(self.outcomes(folder).values())
        return {name.lower(): outcomes.count(name) for name in ("PASSED", "FAILED", "ERROR")}

    def junit_share(self, suite_id: str) -> int:
        """How many bytes the JUnit file gives ``suite_id``'s cases."""
        return sum(
            len(ET.tostring(case))
            for case in self.junit.iter("testcase")
            if case.get("classname") == f"suites.{suite_id}.cases.jsonl"
        )

    def problems(self, code: str) -> list[str]:
        return sorted(p for p in self.report["problems"] if p.startswith(f"[{code}]"))


def _build_matrix(base: Path, elsewhere: Path, essays: dict[str, str]) -> None:
    (base / "demo_world.py").write_text(DEMO_SOURCE.read_text(encoding="utf-8"))
    (base / "conftest.py").write_text(LOUD_WORLD_CLASSES + CRASHING_WORLD)
    (base / "matrix.py").write_text(MATRIX_ADAPTER)
    (base / "pytest.ini").write_text("[pytest]\nagentbench_oracle_roots = /proc\n")
    write_demo_suite(base, "hostile", questions=HOSTILE_QUESTIONS)
    write_demo_suite(base, "cancels", questions=CANCELS_WHEN_WRONG)
    write_demo_suite(base, "crashing", questions=_plus(40), world="crashing")
    # One ten-megabyte message is a thousand times what the run may write for it.
    write_demo_suite(base, "loud", questions={"c1": "80+1"})
    # test_plugin_failures's faults on a worker: a raise whose traceback --tb=long keeps
    # whole, and every answer wrong (7); its sleep the timeout must end is in HANGS.
    write_demo_suite(base, "raises", questions=_plus(46))
    write_demo_suite(base, "sevens", questions={"c1": "0+2", "c2": "0+5", "c3": "0+15"})
    write_demo_suite(base, "essays", questions=essays, world="loud")
    # The oracle knows no answer for c3: grading it fails (harness_error); c2's is wrong.
    write_demo_suite(base, "graded", questions=_plus(50) | {"c2": "2+3"}, answers=_GRADED)
    write_demo_suite(base, "gated", questions=_plus(70) | {"c2": "2+3"})
    write_demo_suite(base, "unselected", questions=_plus(71))
    # Unreadable even for root: reading /proc/self/mem from its start fails with EIO.
    write_demo_suite(base, "unreadable", questions=_plus(41))
    (base / "oracles" / "unreadable" / "mem").symlink_to("/proc/self/mem")
    write_demo_suite(base, "readable", questions=_plus(42))
    # The suite folder's grandparent used to count as "the project": a suite one level
    # below the filesystem root could read /etc, and a symlinked oracle file was followed.
    write_demo_suite(elsewhere, "outside-suite", questions=_plus(43))
    write_demo_suite(base, "linked-suite", questions=_plus(44))
    answers = base / "oracles" / "linked-suite" / "answers.jsonl"
    (elsewhere / "answers.jsonl").write_bytes(answers.read_bytes())
    answers.unlink()
    answers.symlink_to(elsewhere / "answers.jsonl")
    write_demo_suite(base / "copy", "twin", questions={"c1": "5+5", "c9": "1+0"})
    write_demo_suite(base / "main", "twin")
    write_demo_suite(base / "main", "other", questions=_plus(60))


def _plus(left: int) -> dict[str, str]:
    return {f"c{right}": f"{left}+{right}" for right in (1, 2, 3)}


_GRADED = {"c1": 51, "c2": 5}


def _matrix(mode: str, root: Path) -> Matrix:
    base, elsewhere = root / mode / "project", root / mode / "elsewhere"
    base.mkdir(parents=True)
    elsewhere.mkdir()
    _build_matrix(base, elsewhere, ESSAYS[mode])
    result = run_session(
        base,
        "suites",
        "copy",
        "main",
        f"--agentbench-suite={elsewhere / 'suites' / 'outside-suite'}",
        "--agentbench-adapter=matrix:Agent",
        f"--agentbench-timeout={MATRIX_TIMEOUT}",
        "--agentbench-report=run.json",
        "--junitxml=junit.xml",
        "--agentbench-gate=gated:accuracy>=1.0",
        "--agentbench-gate=unselected:accuracy>=1.0",
        "--deselect=suites/gated/cases.jsonl::c2",
        *(f"--deselect=suites/unselected/cases.jsonl::{case}" for case in _plus(71)),
        "-m",
        "not agentbench_control",
        "-rA",
        "-v",
        "--tb=long",
        *MATRIX_MODES[mode],
        # The leaked sleeping threads (1000 s each) must not hold the process after the
        # report: the outer limit, far below them, fails the test if they do.
        timeout=OUTER_LIMIT,
    )
    return Matrix(base, elsewhere, result, mode)


MATRIX_MODES = {"no-xdist": [], "n2": ["-n", "2"]}


def check_every_adapter_failure_counts_against_it(run: Matrix) -> None:
    # The hangs, which count alike, are in the hangs' own project (test_every_hang_...).
    assert run.counted("suites/hostile") == {"passed": 2, "failed": 4, "error": 0}
    suite = suite_of(run.report, "hostile")
    cases = cases_of(suite)
    classes = {case_id: case["failure_class"] for case_id, case in cases.items()}
    assert classes == {
        "cancelled": "agent_error",
        "unprintable": "agent_error",
        "crash": "agent_error",
        "leaks-thread": None,
        "right": None,
        "wrong": None,
    }
    assert cases["cancelled"]["failure_reason"] == "adapter raised CancelledError"
    assert cases["unprintable"]["failure_reason"] == (
        "adapter raised Unprintable (its message could not be rendered)"
    )
    assert suite["counts"] == {"passed": 2, "failed": 4, "error": 0, "skipped": 0, "excluded": 0}
    assert suite["failure_classes"] == {"agent_error": 3, "product_error": 0, "harness_error": 0}
    # Every case is in the denominator: 2 right of 6, not 2 of 3.
    assert metric(suite, "accuracy") == (pytest.approx(2 / 6), 6)


def check_cancelling_the_case_it_would_get_wrong_does_not_raise_the_score(run: Matrix) -> None:
    assert run.counted("suites/cancels") == {"passed": 10, "failed": 1, "error": 0}
    suite = suite_of(run.report, "cancels")
    assert metric(suite, "accuracy") == (pytest.approx(10 / 11), 11)
    assert cases_of(suite)["c11"]["failure_class"] == "agent_error"


def check_a_worker_crash_outside_the_adapter_call_is_a_harness_error(run: Matrix) -> None:
    suite = suite_of(run.report, "crashing")
    if run.mode == "no-xdist":
        # Only a worker crashes: without xdist the world runs c2 like any other case.
        assert run.counted("suites/crashing") == {"passed": 3, "failed": 0, "error": 0}
        return
    assert run.counted("suites/crashing") == {"passed": 2, "failed": 1, "error": 0}
    c2 = cases_of(suite)["c2"]
    assert (c2["outcome"], c2["failure_class"]) == ("error", "harness_error")
    assert c2["failure_reason"] == "worker crashed while running it"
    assert metric(suite, "accuracy") == (1.0, 2)


def check_an_unreadable_oracle_file_is_a_refusal_and_every_report_is_written(
    run: Matrix,
) -> None:
    assert run.counted("suites/unreadable") == {"passed": 3, "failed": 0, "error": 0}
    assert run.counted("suites/readable") == {"passed": 3, "failed": 0, "error": 0}
    # No traceback but the adapters' own (their failures print what they raised).
    for index, line in enumerate(run.result.outlines):
        if "Traceback" in line:
            assert line == "  Traceback (most recent call last):", line
            assert run.result.outlines[index - 1].startswith("what the adapter raised"), line
    run.result.stdout.fnmatch_lines(["agentbench [[]unreadable_file[]] *oracles/unreadable/mem: *"])
    assert suite_of(run.report, "unreadable")["digests"]["oracle"] is None
    assert suite_of(run.report, "readable")["digests"]["oracle"] is not None
    assert run.problems("unreadable_file") != []
    assert run.junit_path.is_file()


def check_deselecting_the_failing_case_does_not_pass_the_gate(run: Matrix) -> None:
    assert run.counted("suites/gated") == {"passed": 2, "failed": 0, "error": 0}
    assert_one_of_three_deselected(suite_of(run.report, "gated"), run.result)


def assert_one_of_three_deselected(suite: dict[str, Any], result: pytest.RunResult) -> None:
    """A run that deselected one of three cases: counted as partial, its gate failed."""
    assert suite["coverage"] == {
        "total": 3,
        "selected": 2,
        "run": 2,
        "missing": 0,
        "complete": False,
    }
    (gate,) = suite["gates"]
    assert not gate["passed"]
    assert gate["reason"].startswith("incomplete: 2 of 3 cases run, 1 not selected")
    result.stdout.fnmatch_lines(
        ["coverage: 3 in suite, 2 selected, 2 run, 0 missing (PARTIAL RUN)"]
    )


def check_a_suite_with_nothing_selected_is_still_reported(run: Matrix) -> None:
    assert run.counted("suites/unselected") == {"passed": 0, "failed": 0, "error": 0}
    suite = suite_of(run.report, "unselected")
    assert suite["coverage"]["selected"] == 0
    assert not suite["gates"][0]["passed"]


def check_a_ten_megabyte_message_is_kept_short_everywhere(run: Matrix) -> None:
    assert run.counted("suites/loud") == {"passed": 0, "failed": 1, "error": 0}
    reason = cases_of(suite_of(run.report, "loud"))["c1"]["failure_reason"]
    assert reason.endswith("... [truncated: 10000027 characters in all]")
    assert len(reason) < 2100
    # Its case's share of what the run wrote; the whole output is bounded too.
    assert run.junit_share("loud") < 100_000
    assert len(json.dumps(suite_of(run.report, "loud"))) < 100_000
    assert len(run.result.stdout.str()) < 100_000


def check_ten_megabyte_outputs_are_kept_short_everywhere(run: Matrix) -> None:
    essays = ESSAYS[run.mode]
    assert run.counted("suites/essays") == {"passed": len(essays) - 1, "failed": 1, "error": 0}
    cases = cases_of(suite_of(run.report, "essays"))
    (essay,) = [check for check in cases["c2"]["checks"] if check["name"] == "essay"]
    whole = 10_000_002  # the essay's canonical JSON: the string and its quotes
    for value in (essay["expected"], essay["actual"]):
        assert value.startswith('"' + value[1] * 100)
        assert f"... [truncated: {whole} bytes of canonical JSON in all, sha256 " in value
        assert len(value) < 65_536 + 200
    receipt = cases["c5"]["receipt"]
    assert receipt["digest"] == _receipt_digest("c5", "x" * 10_000_000)
    assert receipt["truncated"]["limit"] == 65_536
    assert receipt["truncated"]["bytes"] > 10_000_000
    assert len(json.dumps(suite_of(run.report, "essays"))) < len(essays) * 3 * 70_000
    assert run.junit_share("essays") < 100_000
    assert len(run.result.stdout.str()) < 100_000
    # Every process's peak, also of a worker another suite's case crashed after this one's.
    peaks = [int(rss.read_text()) for rss in run.base.glob("rss-*.txt")]
    assert peaks
    assert max(peaks) < 300_000  # KiB: the issue measured 880 MB


def check_the_project_is_the_rootdir_and_links_may_not_leave_it(run: Matrix) -> None:
    outside = run.elsewhere / "suites" / "outside-suite"
    answers = run.base / "oracles" / "linked-suite" / "answers.jsonl"
    # Each refused suite is one error, and none of its cases runs.
    assert run.outcomes("suites/linked-suite") == {"suite.yaml": "ERROR"}
    outside_items = {
        node: outcome for node, outcome in run.every_outcome().items() if "outside-suite" in node
    }
    assert list(outside_items.values()) == ["ERROR"], outside_items
    assert next(iter(outside_items)).endswith("outside-suite/suite.yaml"), outside_items
    run.result.stdout.fnmatch_lines_random(
        [
            f"*[[]oracle_outside_project[]] {outside}/suite.yaml: oracle: "
            f"{run.elsewhere / 'oracles' / 'outside-suite'} is outside the project*",
            "*[[]oracle_outside_project[]] suites/linked-suite/suite.yaml: oracle: "
            f"{answers} in the oracle folder links to {run.elsewhere / 'answers.jsonl'}, "
            "outside the project*",
        ]
    )


def check_a_harness_error_is_a_junit_error_and_a_wrong_answer_a_failure(run: Matrix) -> None:
    assert run.counted("suites/graded") == {"passed": 1, "failed": 2, "error": 0}
    cases = cases_of(suite_of(run.report, "graded"))
    assert [cases[c]["outcome"] for c in ("c1", "c2", "c3")] == ["passed", "failed", "error"]
    verdicts = {
        case.get("name"): [(child.tag, child.get("message")) for child in case]
        for case in run.junit.iter("testcase")
        if case.get("classname") == "suites.graded.cases.jsonl"
    }
    assert verdicts["c1"] == []
    assert [tag for tag, _ in verdicts["c2"]] == ["failure"]
    ((tag, message),) = verdicts["c3"]
    assert tag == "error"
    assert message == "harness_error: evaluation raised KeyError: 'c3'"


def check_a_duplicate_suite_id_refuses_both_folders(run: Matrix) -> None:
    # The unrelated suite still runs in full; neither twin folder runs any case.
    assert run.counted("main/suites/other") == {"passed": 3, "failed": 0, "error": 0}
    assert run.counted("copy/suites/twin") == {"passed": 0, "failed": 0, "error": 1}
    assert run.counted("main/suites/twin") == {"passed": 0, "failed": 0, "error": 1}
    assert "twin" not in [suite["id"] for suite in run.report["suites"]]
    assert "other" in [suite["id"] for suite in run.report["suites"]]
    assert run.problems("duplicate_suite_id") == [
        "[duplicate_suite_id] copy/suites/twin/suite.yaml: id: suite id 'twin' is also "
        "declared by main/suites/twin: every folder declaring it is refused",
        "[duplicate_suite_id] main/suites/twin/suite.yaml: id: suite id 'twin' is also "
        "declared by copy/suites/twin: every folder declaring it is refused",
    ]


def check_a_worker_crashed_in_the_adapter_counts_its_case_as_an_agent_error(run: Matrix) -> None:
    # From test_plugin_failures: the hostile suite's crash, which ends a worker under -n 2.
    suite = suite_of(run.report, "hostile")
    crash = cases_of(suite)["crash"]
    if run.mode == "no-xdist":
        assert crash["failure_reason"] == (
            "adapter raised RuntimeError: would have crashed the only process"
        )
        return
    assert "cases: 2 passed, 4 failed, 0 error, 0 skipped | failure classes: 3 agent_error" in (
        run.result.stdout.str()
    )
    assert crash["outcome"] == "failed"
    assert crash["failure_reason"] == "worker crashed inside the adapter call"
    assert {check["status"] for check in crash["checks"]} == {"missing"}


def check_tb_long_keeps_the_harness_frames_of_an_adapter_traceback(run: Matrix) -> None:
    # From test_plugin_failures, where a serial run checks it too.
    assert run.counted("suites/raises") == {"passed": 2, "failed": 1, "error": 0}
    run.result.stdout.fnmatch_lines(
        [
            "*_ raises::c2 _*",
            "agent_error: adapter raised ValueError: cannot add today",
            "what the adapter raised:",
            '    File "*matrix.py", line *, in cannot_add',
        ]
    )
    raised = cases_of(suite_of(run.report, "raises"))["c2"]["failure_traceback"]
    assert HARNESS_FRAMES.search(raised), raised
    assert 'matrix.py", line' in raised


def check_the_junit_message_is_the_first_line(run: Matrix) -> None:
    # From test_plugin_failures, where a serial run checks it too.
    assert run.counted("suites/sevens") == {"passed": 0, "failed": 3, "error": 0}
    (case,) = [
        case
        for case in run.junit.iter("testcase")
        if (case.get("classname"), case.get("name")) == ("suites.sevens.cases.jsonl", "c1")
    ]
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == "1 of 2 checks failed: answer_correct"
    assert "answer_correct [fail]: expected 2, got 7" in (failure.text or "")


def check_a_run_that_collected_cases_gives_no_selection_hint(run: Matrix) -> None:
    # From test_plugin_guidance: under -n 2 the controller collects nothing itself.
    assert "no benchmark case was collected" not in run.result.stdout.str()


MATRIX_CHECKS = [
    check_every_adapter_failure_counts_against_it,
    check_cancelling_the_case_it_would_get_wrong_does_not_raise_the_score,
    check_a_worker_crash_outside_the_adapter_call_is_a_harness_error,
    check_an_unreadable_oracle_file_is_a_refusal_and_every_report_is_written,
    check_deselecting_the_failing_case_does_not_pass_the_gate,
    check_a_suite_with_nothing_selected_is_still_reported,
    check_a_ten_megabyte_message_is_kept_short_everywhere,
    check_ten_megabyte_outputs_are_kept_short_everywhere,
    check_the_project_is_the_rootdir_and_links_may_not_leave_it,
    check_a_harness_error_is_a_junit_error_and_a_wrong_answer_a_failure,
    check_a_duplicate_suite_id_refuses_both_folders,
    check_a_worker_crashed_in_the_adapter_counts_its_case_as_an_agent_error,
    check_tb_long_keeps_the_harness_frames_of_an_adapter_traceback,
    check_the_junit_message_is_the_first_line,
    check_a_run_that_collected_cases_gives_no_selection_hint,
]

HARNESS_FRAMES = re.compile(r'File ".*(pytest_agentbench|_pytest|pluggy)[/\\]')
"""A frame of the harness, not of the adapter (as test_plugin_failures defines it)."""


@pytest.mark.parametrize("mode", list(MATRIX_MODES))
def test_the_fault_matrix(mode: str, tmp_path: Path) -> None:
    run = _matrix(mode, tmp_path)
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED, "the session ended on its own"
    failed = []
    for check in MATRIX_CHECKS:
        try:
            check(run)
        except AssertionError as error:
            failed.append(f"{check.__name__.removeprefix('check_')}: {error}")
    assert not failed, "\n\n".join(failed)


HANG_MODES = {"no-xdist": [], "n1": ["-n", "1"]}
"""A hang ended on a worker and one ended without xdist: one worker shows the first (the
limit fires on the worker's main thread), and it takes the hangs one after another."""


def _hang_session(base: Path, workers: list[str]) -> pytest.RunResult:
    base.mkdir()
    (base / "demo_world.py").write_text(DEMO_SOURCE.read_text(encoding="utf-8"))
    (base / "conftest.py").write_text(REGISTERING_CONFTEST)
    (base / "matrix.py").write_text(MATRIX_ADAPTER)
    write_demo_suite(base, "hangs", questions=HANGS)
    return run_session(
        base,
        "suites",
        "--agentbench-adapter=matrix:Agent",
        f"--agentbench-timeout={HANG_TIMEOUT}",
        "--agentbench-report=run.json",
        "-m",
        "not agentbench_control",
        "-rA",
        "-v",
        *workers,
        # The leaked sleeping threads (1000 s each) must not hold the process after the
        # report: the outer limit, far below them, fails the test if they do.
        timeout=OUTER_LIMIT,
    )


def test_every_hang_is_bounded_and_counts_against_the_adapter(tmp_path: Path) -> None:
    # No wall-clock bound (a loaded machine breaks one): every hang would last 60 s or more,
    # far past the test's own limit, had the case limit not ended it; ending the session
    # with each case a timeout is the evidence, the last case's right answer after 60 s too.
    # The two sessions share nothing: they run at once, so that their waits overlap.
    with ThreadPoolExecutor(len(HANG_MODES)) as pool:
        started = {
            mode: pool.submit(_hang_session, tmp_path / mode, workers)
            for mode, workers in HANG_MODES.items()
        }
        results = {mode: future.result() for mode, future in started.items()}
    failed = []
    for mode, result in results.items():
        try:
            assert result.ret == pytest.ExitCode.TESTS_FAILED, "the session ended on its own"
            result.assert_outcomes(failed=len(HANGS))
            suite = suite_of(report_of(tmp_path / mode / "run.json"), "hangs")
            for case_id, case in cases_of(suite).items():
                assert case["failure_class"] == "agent_error", case_id
                reason = case["failure_reason"]
                assert reason.startswith("timed out after "), (case_id, reason)
                assert reason.endswith(f"s (--agentbench-timeout={HANG_TIMEOUT:g})"), reason
            assert suite["failure_classes"]["agent_error"] == len(HANGS)
            # Every hang is in the denominator.
            assert metric(suite, "accuracy") == (0.0, len(HANGS))
            if HANG_MODES[mode]:
                # Each case ended on the worker that ran it (the limit fired there).
                for case_id in HANGS:
                    pattern = rf"\[gw0\] .*FAILED suites/hangs/\S*::{case_id}\b"
                    assert re.search(pattern, result.stdout.str()), f"{case_id} on a worker"
        except AssertionError as error:
            failed.append(f"{mode}: {error}\n{result.stdout.str()[-3000:]}")
    assert not failed, "\n\n".join(failed)


# --- Severe 2 and 3 in the authority world ---

HOSTILE_AUTHORITY = """
from pytest_agentbench.worlds.authority.agents import ReferenceAgent
from pytest_agentbench.worlds.authority.trace import ObservedActionTrace


class RaisingMapping(dict):
    def __iter__(self):
        raise RuntimeError("iteration refused")

    def keys(self):
        raise RuntimeError("keys refused")


class Agent:
    def __init__(self):
        self.reference = ReferenceAgent()

    def trace_action(self, bundle, event_id):
        # Every case's bundle is as no earlier case left it (a failed assertion here is an
        # agent_error, which no case of a correct run ends in).
        assert len(bundle.scenarios) > 0 and "injected" not in bundle.tool_schemas
        assert len(bundle.events) > 0
        row = self.reference.trace_action(bundle, event_id)
        # Then every case changes its bundle: the oracle must not notice.
        bundle.scenarios.clear()
        bundle.tool_schemas["injected"] = bundle.tool_schemas[next(iter(bundle.tool_schemas))]
        object.__setattr__(bundle, "events", ())
        if event_id == "evt-010-authorised-comparison":
            return RaisingMapping(row)
        if event_id == "evt-011-supplier-directory-read":
            return ObservedActionTrace.model_construct(event_id=event_id, decision=42)
        if event_id == "evt-012-quotation-request":
            # Its manifest too.
            object.__setattr__(bundle.manifest, "artifact_set_digest", "0" * 64)
            bundle.tool_schemas.clear()
        return row
"""


@SERIAL_AND_ONE_WORKER
def test_unreadable_rows_are_product_errors_and_tampering_reaches_no_other_case(
    pytester: pytest.Pytester, xdist_args: list[str]
) -> None:
    # One adapter shows both: the rows it cannot read fail their own cases, and the bundle
    # each case changes reaches no later case (in one process: one worker runs them all).
    copy_asteria(pytester.path)
    pytester.makepyfile(hostile=HOSTILE_AUTHORITY)
    pytester.syspathinsert()
    path = pytester.path / "run.json"
    result = pytester.runpytest(
        "--agentbench-adapter=hostile:Agent", f"--agentbench-report={path}", *xdist_args
    )
    # Every control behaves as if no case had touched its bundle; two cases fail.
    result.assert_outcomes(passed=12, failed=2)
    suite = suite_of(report_of(path), ASTERIA)
    cases = cases_of(suite)
    assert cases["evt-010-authorised-comparison"]["failure_class"] == "product_error"
    assert "refused" in cases["evt-010-authorised-comparison"]["failure_reason"]
    assert cases["evt-011-supplier-directory-read"]["failure_class"] == "product_error"
    unreadable = {"evt-010-authorised-comparison", "evt-011-supplier-directory-read"}
    assert len(cases) == 11
    for case_id, case in cases.items():
        if case_id not in unreadable:
            assert case["outcome"] == "passed", (case_id, case["failure_reason"])
    assert suite["failure_classes"] == {"agent_error": 0, "product_error": 2, "harness_error": 0}
    assert metric(suite, "authorization_decision_accuracy") == (pytest.approx(9 / 11), 11)


# --- Severe 1: snapshot mode loses golden files in partial runs ---


def _golden_files(base: Path) -> list[str]:
    folder = base / "snapshots" / ASTERIA
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*.json"))


_NODE = f"suites/{ASTERIA}/public_events.jsonl::{ASTERIA_CASE}"
_SELECTIONS = {
    "node-id": [_NODE],
    "deselect": ["suites", "--deselect", _NODE],
    "controls": ["suites", "--agentbench-controls"],
    "keyword": ["suites", "-k", "evt-010"],
    "last-failed": ["suites", "--lf"],
}
# Every selection without xdist; the two that reach syrupy's location logic
# differently (a node id, a deselection) under -n 2 as well (-n 0 is the serial path
# again: syrupy, like xdist, sees no workers).
_SNAPSHOT_MATRIX = [
    pytest.param(selection, mode, id=f"{mode_id}-{name}")
    for mode_id, mode in (("no-xdist", []), ("n2", ["-n", "2"]))
    for name, selection in _SELECTIONS.items()
    if mode_id == "no-xdist" or name in ("node-id", "deselect")
]


@pytest.mark.inner_snapshots
@pytest.mark.parametrize(("selection", "mode"), _SNAPSHOT_MATRIX)
def test_a_partial_run_neither_reports_nor_deletes_other_golden_files(
    pytester: pytest.Pytester, selection: list[str], mode: list[str]
) -> None:
    copy_asteria(pytester.path, snapshots=True)
    pytester.makeini("[pytest]\nagentbench_snapshot = true\n")
    before = _golden_files(pytester.path)
    if "--lf" in selection:
        # A previous run in which one case failed: --lf reruns only that one.
        cache = pytester.path / ".pytest_cache" / "v" / "cache"
        cache.mkdir(parents=True)
        (cache / "lastfailed").write_text(
            json.dumps({f"suites/{ASTERIA}/public_events.jsonl::{ASTERIA_CASE}": True})
        )
    # --snapshot-update deletes whatever the run calls unused: nothing may be.
    updated = pytester.runpytest(*selection, "--snapshot-update", *mode)
    assert updated.ret == pytest.ExitCode.OK, updated.stdout.str()
    assert "unused" not in updated.stdout.str()
    assert "deleted" not in updated.stdout.str()
    assert _golden_files(pytester.path) == before


@pytest.mark.inner_snapshots
def test_a_golden_file_no_case_claims_is_still_reported_unused(pytester: pytest.Pytester) -> None:
    copy_asteria(pytester.path, snapshots=True)
    pytester.makeini("[pytest]\nagentbench_snapshot = true\n")
    stale = pytester.path / "snapshots" / ASTERIA / "public_events" / "evt-999-removed.json"
    stale.write_text("{}\n")
    result = pytester.runpytest("suites")
    result.stdout.fnmatch_lines(["*1 snapshot unused*"])
    pytester.runpytest("suites", "--snapshot-update")
    assert not stale.exists()


# --- Medium 4: an unreadable file under an oracle folder ---


def test_an_unreadable_oracle_file_is_a_refusal_and_every_report_is_written(
    demo: pytest.Pytester,
) -> None:
    # Serially, in a run of its own (its exit code is the refusal's); across workers, in
    # the matrix above.
    write_demo_suite(demo.path)
    write_demo_suite(demo.path, "other-suite")
    # Unreadable even for root: reading /proc/self/mem from its start fails with EIO.
    (demo.path / "oracles" / "demo-suite" / "mem").symlink_to("/proc/self/mem")
    # A link leaving the project is refused unless its target's folder is listed.
    demo.makeini("[pytest]\nagentbench_oracle_roots = /proc\n")
    path, junit = demo.path / "run.json", demo.path / "junit.xml"
    result = demo.runpytest(
        f"--agentbench-report={path}",
        f"--junitxml={junit}",
        "-m",
        "not agentbench_control",
    )
    result.assert_outcomes(passed=6)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "Traceback" not in result.stdout.str()
    result.stdout.fnmatch_lines(["agentbench [[]unreadable_file[]] *oracles/demo-suite/mem: *"])
    report = report_of(path)
    assert suite_of(report, "demo-suite")["digests"]["oracle"] is None
    assert suite_of(report, "other-suite")["digests"]["oracle"] is not None
    assert any(problem.startswith("[unreadable_file]") for problem in report["problems"])
    assert junit.is_file()


def test_agentbench_commands_name_an_unreadable_oracle_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # In-process: the command's exit code and its one line are the point, not its process
    # (an uncaught exception would fail this test with its traceback).
    from pytest_agentbench.cli.main import main

    copy_asteria(tmp_path)
    # A link to itself, inside the project: nothing can read it (even as root).
    (tmp_path / "oracles" / ASTERIA / "mem").symlink_to("mem")
    monkeypatch.chdir(tmp_path)  # the project the command reads is the current folder
    for command in ("verify", "derive"):
        assert main([command, f"suites/{ASTERIA}"]) == 1, command
        err = capsys.readouterr().err
        assert "Traceback" not in err, command
        pattern = "agentbench: [[]unreadable_file[]] *mem: *"
        assert fnmatch.filter(err.splitlines(), pattern), (command, err)


# --- Medium 6: partial runs look like whole runs ---

WRONG_ON_C2 = """
class Agent:
    def answer(self, question):
        left, right = question.split("+")
        return 0 if question == "2+3" else int(left) + int(right)
"""


@pytest.fixture
def gated(demo: pytest.Pytester) -> pytest.Pytester:
    write_demo_suite(demo.path)
    demo.makepyfile(wrong=WRONG_ON_C2)
    return demo


def _gated_run(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = project.path / "run.json"
    result = project.runpytest(
        "--agentbench-adapter=wrong:Agent",
        "--agentbench-gate=demo-suite:accuracy>=1.0",
        f"--agentbench-report={path}",
        "-m",
        "not agentbench_control",
        *args,
    )
    return result, report_of(path)


def test_deselecting_the_failing_case_does_not_pass_the_gate(gated: pytest.Pytester) -> None:
    # Across workers, in the matrix above; allowing a partial run, only here.
    deselect = "--deselect=suites/demo-suite/cases.jsonl::c2"
    result, report = _gated_run(gated, deselect)
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert_one_of_three_deselected(suite_of(report, "demo-suite"), result)
    allowed, report = _gated_run(gated, deselect, "--agentbench-allow-partial")
    assert allowed.ret == pytest.ExitCode.OK
    assert suite_of(report, "demo-suite")["gates"][0]["passed"]


def test_a_run_stopped_early_counts_the_cases_it_never_ran(gated: pytest.Pytester) -> None:
    result, report = _gated_run(gated, "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    coverage = suite_of(report, "demo-suite")["coverage"]
    assert (coverage["selected"], coverage["run"], coverage["missing"]) == (3, 2, 1)
    assert not coverage["complete"]


@SERIAL_AND_ONE_WORKER
def test_a_run_that_selects_nothing_still_writes_its_report(
    gated: pytest.Pytester, xdist_args: list[str]
) -> None:
    # Under xdist too: the controller, which collects nothing itself, writes the report.
    result, report = _gated_run(gated, "-k", "nomatch", *xdist_args)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    suite = suite_of(report, "demo-suite")
    assert suite["coverage"]["selected"] == 0
    assert not suite["gates"][0]["passed"]


def test_quiet_line_of_a_controls_only_run(demo: pytest.Pytester) -> None:
    from tests.demo_world import DEMO_CONTROLS

    write_demo_suite(demo.path, controls=DEMO_CONTROLS)
    result = demo.runpytest("-m", "agentbench_control", "-q")
    result.stdout.fnmatch_lines(["agentbench demo-suite: no cases run; controls 1/1"])


# --- Medium 7: predictions files, one rule per line ---


def _reference_rows() -> list[dict[str, Any]]:
    from pytest_agentbench.cli.common import load
    from pytest_agentbench.cli.main import _registry
    from pytest_agentbench.worlds.authority.agents import ReferenceAgent

    loaded = load(str(REPO / "suites" / ASTERIA), _registry())
    rows: list[dict[str, Any]] = ReferenceAgent().trace(loaded.suite.data.bundle)
    return rows


def _write_bad_predictions(path: Path) -> list[dict[str, Any]]:
    """The reference rows with a bad byte in the first line and an unknown row at the end
    (line 12), written to ``path``; the rows returned."""
    rows = _reference_rows()
    lines = [json.dumps(row).encode() for row in rows]
    lines[0] = lines[0].replace(b'"decision"', b'"deci\xffsion"')
    lines.append(json.dumps(dict(rows[1], event_id="evt-999-unknown")).encode())
    path.write_bytes(b"\n".join(lines) + b"\n")
    return rows


@SERIAL_AND_ONE_WORKER
def test_a_bad_byte_fails_only_its_line_and_an_unknown_row_fails_the_run(
    pytester: pytest.Pytester, xdist_args: list[str]
) -> None:
    copy_asteria(pytester.path)
    rows = _write_bad_predictions(pytester.path / "preds.jsonl")
    path = pytester.path / "run.json"
    result = pytester.runpytest(
        "suites",
        f"--agentbench-predictions={ASTERIA}=preds.jsonl",
        f"--agentbench-report={path}",
        "-m",
        "not agentbench_control",
        *xdist_args,
    )
    result.assert_outcomes(passed=10, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = report_of(path)
    suite = suite_of(report, ASTERIA)
    first = cases_of(suite)[rows[0]["event_id"]]
    assert first["failure_class"] == "product_error"
    assert "[invalid_utf8]" in first["failure_reason"]
    assert metric(suite, "authorization_decision_accuracy")[1] == 11
    assert any("[unexpected_event_id]" in problem for problem in report["problems"])


def test_validate_names_the_bad_byte_and_the_unknown_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The predictions file of the runs above, read by `agentbench validate` (in-process:
    # what it prints and returns is the point, not its process; once, not once per run).
    from pytest_agentbench.cli.main import main

    copy_asteria(tmp_path)
    _write_bad_predictions(tmp_path / "preds.jsonl")
    monkeypatch.chdir(tmp_path)  # the project the command reads is the current folder
    assert main(["validate", f"suites/{ASTERIA}", "--predictions", "preds.jsonl"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert fnmatch.filter(lines, "line 1: error [[]invalid_utf8[]] *"), lines
    assert fnmatch.filter(lines, "line 12: error [[]unexpected_event_id[]] *"), lines


def test_empty_or_repeated_predictions_are_usage_errors(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path)
    (demo.path / "empty.jsonl").write_text("\n  \n")
    (demo.path / "one.jsonl").write_text('{"id": "c1", "answer": 2}\n')
    empty = demo.runpytest("--agentbench-predictions=demo-suite=empty.jsonl")
    assert empty.ret == pytest.ExitCode.USAGE_ERROR
    empty.stderr.fnmatch_lines(["*[[]invalid_predictions[]]*is empty*"])
    twice = demo.runpytest(
        "--agentbench-predictions=demo-suite=one.jsonl",
        "--agentbench-predictions=demo-suite=one.jsonl",
    )
    assert twice.ret == pytest.ExitCode.USAGE_ERROR
    twice.stderr.fnmatch_lines(["*already has a predictions file*"])


# --- Lower 8: timeouts that are not a number of seconds ---


BAD_TIMEOUTS = ("nan", "inf", "1e20", "-1", "soon", "1e-6", "1e-5", "0.009")
"""1e-6 hung pytest and 1e-5 killed it with SIGALRM: below 10 ms is refused."""


def test_a_bad_timeout_is_a_usage_error(
    demo: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_agentbench.cli.main import main

    write_demo_suite(demo.path)
    demo.chdir()
    for value in BAD_TIMEOUTS:
        result = demo.runpytest(f"--agentbench-timeout={value}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, value
        result.stderr.fnmatch_lines(["*[[]invalid_timeout[]] --agentbench-timeout: *"])
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main(["evaluate", "suites/demo-suite", "--agent", "reference", f"--timeout={value}"])
        assert exited.value.code == 2, value
        assert "[invalid_timeout]" in capsys.readouterr().err, value


def test_timeout_zero_on_the_command_line_means_no_limit(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path)
    demo.makeini("[pytest]\nagentbench_timeout = 0.2\n")
    # Every answer is slower than the ini's limit; only c2 runs (a case that had to answer
    # inside that short limit would not be meant to overrun it).
    demo.makepyfile(
        slow="import time\n\nclass Agent:\n    def answer(self, question):\n"
        "        time.sleep(0.5)\n"
        "        a, b = question.split('+')\n"
        "        return int(a) + int(b)\n"
    )
    only_c2 = ("--agentbench-adapter=slow:Agent", "-m", "not agentbench_control", "-k", "c2")
    limited = demo.runpytest(*only_c2)
    limited.assert_outcomes(failed=1)
    limited.stdout.fnmatch_lines(["*timed out after *s (--agentbench-timeout=0.2)*"])
    unlimited = demo.runpytest(*only_c2, "--agentbench-timeout=0")
    unlimited.assert_outcomes(passed=1)


# --- Lower 10: oracle folders anywhere ---


def test_an_oracle_outside_the_project_is_refused_unless_listed(
    demo: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    write_demo_suite(demo.path, extra_suite_yaml="oracle: /usr/share\n")
    result = demo.runpytest()
    result.stdout.fnmatch_lines(
        [
            "*[[]oracle_outside_project[]] suites/demo-suite/suite.yaml: oracle: "
            "/usr/share is outside the project*"
        ]
    )
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    write_demo_suite(elsewhere)
    oracle = elsewhere / "oracles" / "demo-suite"
    (demo.path / "suites" / "demo-suite" / "suite.yaml").write_text(
        f"id: demo-suite\nversion: 1.0.0\nworld: demo\ntitle: Demo\noracle: {oracle}\n"
    )
    refused = demo.runpytest("-m", "not agentbench_control")
    assert refused.ret != pytest.ExitCode.OK
    demo.makeini(f"[pytest]\nagentbench_oracle_roots = {elsewhere}\n")
    allowed = demo.runpytest("-m", "not agentbench_control")
    allowed.assert_outcomes(passed=3)


def test_the_project_is_the_rootdir_and_links_may_not_leave_it(
    demo: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The refusals across workers are in the matrix above; listing the folder, only here.
    write_demo_suite(demo.path)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    outside = write_demo_suite(elsewhere, "outside-suite")
    write_demo_suite(demo.path, "linked-suite")
    answers = demo.path / "oracles" / "linked-suite" / "answers.jsonl"
    (elsewhere / "answers.jsonl").write_bytes(answers.read_bytes())
    answers.unlink()
    answers.symlink_to(elsewhere / "answers.jsonl")
    args = ["-m", "not agentbench_control", "suites", f"--agentbench-suite={outside}"]
    refused = demo.runpytest(*args)
    refused.assert_outcomes(passed=3, errors=2)
    refused.stdout.fnmatch_lines_random(
        [
            f"*[[]oracle_outside_project[]] {outside}/suite.yaml: oracle: "
            f"{elsewhere / 'oracles' / 'outside-suite'} is outside the project*",
            "*[[]oracle_outside_project[]] suites/linked-suite/suite.yaml: oracle: "
            f"{answers} in the oracle folder links to {elsewhere / 'answers.jsonl'}, "
            "outside the project*",
        ]
    )
    demo.makeini(f"[pytest]\nagentbench_oracle_roots = {elsewhere}\n")
    demo.runpytest(*args).assert_outcomes(passed=9)


# --- Lower 11: agentbench compare ---


def test_compare_refuses_what_it_cannot_compare(
    demo: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    # The command in-process: its exit code and lines are what is checked, not the script.
    from pytest_agentbench.cli.main import main

    write_demo_suite(demo.path)
    before = demo.path / "before.json"
    demo.runpytest(f"--agentbench-report={before}", "-m", "not agentbench_control")
    capsys.readouterr()

    def compare(target: Path | str) -> tuple[int, list[str], list[str]]:
        code = main(["compare", str(before), str(target)])
        out, err = capsys.readouterr()
        return code, out.splitlines(), err.splitlines()

    for target in ("suites", "/dev/zero"):
        code, _, err = compare(target)
        assert code == 1, target
        assert fnmatch.filter(err, "agentbench: [[]unreadable_file[]] *not a regular file*"), err
    report = report_of(before)
    report["suites"][0]["version"] = "2.0.0"
    changed = demo.path / "changed.json"
    changed.write_text(json.dumps(report))
    code, out, _ = compare(changed)
    assert code == 1
    assert fnmatch.filter(out, "demo-suite: [[]suite_mismatch[]] version 1.0.0 -> 2.0.0*"), out
    report["suites"][0]["id"] = "another-suite"
    other = demo.path / "other.json"
    other.write_text(json.dumps(report))
    code, _, err = compare(other)
    assert code == 1
    assert fnmatch.filter(err, "agentbench: [[]no_common_suite[]] *"), err


# --- Lower 12: messages ---


def test_a_suite_outside_the_rootdir_is_named_by_its_real_path(
    demo: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("outside")
    suite_dir = write_demo_suite(elsewhere)
    (suite_dir / "suite.yaml").write_text("id: demo-suite\nid: again\n")
    demo.makeini("[pytest]\n")
    result = demo.runpytest(str(suite_dir), "--rootdir", str(demo.path))
    result.stdout.fnmatch_lines([f"*[[]duplicate_key[]] {suite_dir.as_posix()}/suite.yaml:2*"])


# --- Lower 12: a harness error is a JUnit <error>, a failed case a <failure> ---


def test_a_harness_error_is_a_junit_error_and_a_wrong_answer_a_failure(
    demo: pytest.Pytester,
) -> None:
    # Its counts and exit code in a run of its own; across workers, in the matrix above.
    # The oracle knows no answer for c3: grading it fails (harness_error); c2's is wrong.
    write_demo_suite(demo.path, answers={"c1": 2, "c2": 4})
    junit, path = demo.path / "junit.xml", demo.path / "run.json"
    result = demo.runpytest(
        f"--junitxml={junit}",
        f"--agentbench-report={path}",
        "-m",
        "not agentbench_control",
    )
    result.assert_outcomes(passed=1, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    cases = cases_of(suite_of(report_of(path), "demo-suite"))
    assert [cases[c]["outcome"] for c in ("c1", "c2", "c3")] == ["passed", "failed", "error"]
    (testsuite,) = ET.parse(junit).getroot().iter("testsuite")
    assert (testsuite.get("errors"), testsuite.get("failures")) == ("1", "1")
    verdicts = {
        case.get("name"): [(child.tag, child.get("message")) for child in case]
        for case in testsuite.iter("testcase")
    }
    assert verdicts["c1"] == []
    assert [tag for tag, _ in verdicts["c2"]] == ["failure"]
    ((tag, message),) = verdicts["c3"]
    assert tag == "error"
    assert message == "harness_error: evaluation raised KeyError: 'c3'"


# --- Lower 12: duplicate_suite_id refuses both folders, whatever the order ---


# Both orders serially; under -n 2, where each worker collects alike, in the matrix above.
@pytest.mark.parametrize("order", ["copy-first", "copy-last"])
def test_a_duplicate_suite_id_refuses_both_folders_in_any_order(
    demo: pytest.Pytester, order: str
) -> None:
    write_demo_suite(demo.path / "copy", "twin", questions={"c1": "5+5", "c9": "1+0"})
    write_demo_suite(demo.path / "main", "twin")
    write_demo_suite(demo.path / "main", "other")
    folders = ["copy", "main"] if order == "copy-first" else ["main", "copy"]
    path = demo.path / "run.json"
    result = demo.runpytest(*folders, f"--agentbench-report={path}", "-m", "not agentbench_control")
    # The unrelated suite still runs in full; neither twin folder runs any case.
    result.assert_outcomes(passed=3, errors=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = report_of(path)
    assert [suite["id"] for suite in report["suites"]] == ["other"]
    assert sorted(report["problems"]) == [
        "[duplicate_suite_id] copy/suites/twin/suite.yaml: id: suite id 'twin' is also "
        "declared by main/suites/twin: every folder declaring it is refused",
        "[duplicate_suite_id] main/suites/twin/suite.yaml: id: suite id 'twin' is also "
        "declared by copy/suites/twin: every folder declaring it is refused",
    ]


# --- Lower 9: unbounded outputs: check values and receipts are capped, golden files whole ---

LOUD_WORLD_CLASSES = """
import os
import resource

from demo_world import DemoWorld
from pytest_agentbench.sdk.contracts import Check, CheckStatus, grade
from pytest_agentbench.sdk.hookspecs import hookimpl
from pytest_agentbench.sdk.tools import Budget, Receipt


def essay_of(suite):
    return "x" * suite.config.options.get("essay_bytes", 10_000_000)


class LoudWorld(DemoWorld):
    kind = "loud"

    def run(self, suite, case, view, adapter):
        outcome = super().run(suite, case, view, adapter)
        essay = essay_of(suite)
        receipt = Receipt.build(
            tools=(), budget=Budget(), calls=(), final={"essay": essay},
            context={"case": case.case_id},
        )
        return outcome.model_copy(
            update={
                "output": {**outcome.output, "essay": essay},
                "receipt": receipt.model_dump(mode="json"),
            }
        )

    def evaluate(self, suite, case, outcome, oracle):
        graded = super().evaluate(suite, case, outcome, oracle)
        essay = essay_of(suite)
        expected = "y" * len(essay) if case.case_id == "c2" else essay
        actual = outcome.output["essay"]
        check = Check(
            name="essay",
            status=CheckStatus.PASS if actual == expected else CheckStatus.FAIL,
            expected=expected,
            actual=actual,
        )
        return grade(
            case, [*graded.checks, check], measurements=graded.measurements, outcome=outcome
        )


def _peak_kib():
    # ru_maxrss keeps the high-water mark of the image exec replaced (the test worker
    # that forked this process, hundreds of MB late in a run): read this image's own.
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _record_peak():
    # After every case too: a worker that crashes later still leaves its peak.
    with open(f"rss-{os.getpid()}.txt", "w") as out:
        out.write(str(_peak_kib()))


def pytest_runtest_teardown(item):
    _record_peak()


def pytest_unconfigure(config):
    _record_peak()
"""

LOUD_WORLD = (
    LOUD_WORLD_CLASSES
    + """

@hookimpl
def pytest_agentbench_world_kinds():
    return [LoudWorld()]
"""
)


def _receipt_digest(case_id: str, essay: str) -> str:
    from pytest_agentbench.sdk.tools import Budget, Receipt

    receipt = Receipt.build(
        tools=(), budget=Budget(), calls=(), final={"essay": essay}, context={"case": case_id}
    )
    return receipt.digest


@pytest.mark.inner_snapshots
def test_golden_files_pin_whole_outputs_and_whole_outputs_are_kept_on_request(
    demo: pytest.Pytester,
) -> None:
    demo.makeconftest(LOUD_WORLD)
    write_demo_suite(demo.path, world="loud", extra_suite_yaml="options:\n  essay_bytes: 100000\n")
    first = demo.path / "first.json"
    common = ("--agentbench-snapshot", "-m", "not agentbench_control")
    # Pinned serially: the golden files are whole, the report's values capped (capped
    # across workers too: the matrix's essays).
    pinned = demo.runpytest("--snapshot-update", f"--agentbench-report={first}", *common)
    pinned.assert_outcomes(passed=2, failed=1)
    golden = demo.path / "snapshots" / "demo-suite" / "cases" / "c1.json"
    assert json.loads(golden.read_text())["essay"] == "x" * 100_000
    capped = cases_of(suite_of(report_of(first), "demo-suite"))
    assert capped["c1"]["receipt"]["truncated"]["bytes"] > 100_000
    from pytest_agentbench.sdk.tools import Receipt

    # Kept whole on request, serially and by a worker (one shows the setting reaching the
    # workers and their whole outputs the controller: nothing here is aggregated); the
    # golden files match, so they hold the whole output.
    for mode, workers in (("no-xdist", []), ("n1", ["-n", "1"])):
        second = demo.path / f"second-{mode}.json"
        kept = demo.runpytest(
            "--agentbench-max-output-bytes=0", f"--agentbench-report={second}", *common, *workers
        )
        kept.assert_outcomes(passed=2, failed=1)
        whole = cases_of(suite_of(report_of(second), "demo-suite"))
        assert [c["name"] for c in whole["c2"]["checks"] if c["status"] != "pass"] == ["essay"], (
            mode
        )
        (essay,) = [check for check in whole["c1"]["checks"] if check["name"] == "essay"]
        assert essay["actual"] == "x" * 100_000, mode
        receipt = Receipt.model_validate(whole["c1"]["receipt"])
        assert receipt.digest == capped["c1"]["receipt"]["digest"], mode


@pytest.mark.parametrize("value", ["-1", "lots", "1.5"])
def test_a_bad_output_limit_is_a_usage_error(demo: pytest.Pytester, value: str) -> None:
    write_demo_suite(demo.path)
    result = demo.runpytest(f"--agentbench-max-output-bytes={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "[invalid_max_output_bytes]" in result.stderr.str()

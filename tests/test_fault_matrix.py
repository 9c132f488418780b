"""The fault matrix of issue 8, in-process: every reproduction, over no xdist, ``-n 0``, ``-n 2``.

Each test reproduces a reported defect exactly and asserts the class every
case ends in and the counts the metrics see. Runs that could hang go through
``runpytest_subprocess`` with a generous limit of the test's own: that limit
is never the mechanism under test (the plugin's ``--agentbench-timeout`` is).
The isolated variants (``--agentbench-isolate``) live in their own module.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

# Imported here so that pytester's inline runs, which drop the modules a run
# imported, share one set of authority model classes with the adapters below.
import pytest_agentbench.worlds.authority.world  # noqa: F401
from tests.demo_world import write_demo_suite

REPO = Path(__file__).resolve().parents[1]
ASTERIA = "asteria-agentic-v1"
ASTERIA_CASE = "evt-010-authorised-comparison"
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


# --- Severe 2 and 3: hangs that escape the timeout, failures hidden from metrics ---

HOSTILE_DEMO = """
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


FAULTS = {
    "1+1": lambda: (_ for _ in ()).throw(asyncio.CancelledError()),
    "1+2": lambda: (_ for _ in ()).throw(Unprintable()),
    "1+3": crash,
    "1+4": hang_in_asyncio_executor,
    "1+5": hang_in_pool,
    "1+6": hang_swallowing_everything,
}


class Agent:
    def answer(self, question):
        if question in FAULTS:
            FAULTS[question]()
        if question == "1+7":
            leak_a_thread()
        if question == "2+3":
            return 0
        left, right = question.split("+")
        return int(left) + int(right)
"""

HOSTILE_QUESTIONS = {
    "cancelled": "1+1",
    "unprintable": "1+2",
    "crash": "1+3",
    "asyncio-executor": "1+4",
    "pool-result": "1+5",
    "bare-except": "1+6",
    "leaks-thread": "1+7",
    "right": "2+2",
    "wrong": "2+3",
}


def test_every_hang_is_bounded_and_every_adapter_failure_counts_against_it(
    demo: pytest.Pytester, xdist_args: list[str]
) -> None:
    write_demo_suite(demo.path, questions=HOSTILE_QUESTIONS)
    demo.makepyfile(hostile=HOSTILE_DEMO)
    path = demo.path / "run.json"
    started = time.monotonic()
    result = demo.runpytest_subprocess(
        "--agentbench-adapter=hostile:Agent",
        "--agentbench-timeout=1",
        f"--agentbench-report={path}",
        "-m",
        "not agentbench_control",
        "-p",
        "no:cacheprovider",
        *xdist_args,
        timeout=OUTER_LIMIT,
    )
    elapsed = time.monotonic() - started
    # Three hangs of about 1.5 s each, plus start-up; the leaked sleeping
    # threads (1000 s each) must not hold the process after the report.
    assert elapsed < 60, f"the run took {elapsed:.0f}s"
    result.assert_outcomes(passed=2, failed=7)
    suite = suite_of(report_of(path), "demo-suite")
    cases = cases_of(suite)
    classes = {case_id: case["failure_class"] for case_id, case in cases.items()}
    assert classes == {
        "cancelled": "agent_error",
        "unprintable": "agent_error",
        "crash": "agent_error",
        "asyncio-executor": "agent_error",
        "pool-result": "agent_error",
        "bare-except": "agent_error",
        "leaks-thread": None,
        "right": None,
        "wrong": None,
    }
    assert cases["cancelled"]["failure_reason"] == "adapter raised CancelledError"
    assert cases["unprintable"]["failure_reason"] == (
        "adapter raised Unprintable (its message could not be rendered)"
    )
    for hang in ("asyncio-executor", "pool-result", "bare-except"):
        assert cases[hang]["failure_reason"].startswith("timed out after 1.")
    assert suite["counts"] == {"passed": 2, "failed": 7, "error": 0, "skipped": 0}
    assert suite["failure_classes"] == {"agent_error": 6, "product_error": 0, "harness_error": 0}
    # Every case is in the denominator: 2 right of 9, not 2 of 3.
    assert metric(suite, "accuracy") == (pytest.approx(2 / 9), 9)


CANCELS_WHEN_WRONG = """
import asyncio


class Agent:
    def answer(self, question):
        left, right = question.split("+")
        if question == "2+3":
            raise asyncio.CancelledError()
        return int(left) + int(right)
"""


def test_cancelling_the_case_it_would_get_wrong_does_not_raise_the_score(
    demo: pytest.Pytester, xdist_args: list[str]
) -> None:
    questions = {f"c{n:02d}": f"{n}+{n}" for n in range(1, 11)} | {"c11": "2+3"}
    write_demo_suite(demo.path, questions=questions)
    demo.makepyfile(cancels=CANCELS_WHEN_WRONG)
    path = demo.path / "run.json"
    result = demo.runpytest(
        "--agentbench-adapter=cancels:Agent",
        f"--agentbench-report={path}",
        "-m",
        "not agentbench_control",
        *xdist_args,
    )
    result.assert_outcomes(passed=10, failed=1)
    suite = suite_of(report_of(path), "demo-suite")
    assert metric(suite, "accuracy") == (pytest.approx(10 / 11), 11)
    assert cases_of(suite)["c11"]["failure_class"] == "agent_error"


CRASHING_WORLD = """
import os

from demo_world import DemoWorld
from pytest_agentbench.hookspecs import hookimpl


class CrashingWorld(DemoWorld):
    def run(self, suite, case, view, adapter):
        if case.case_id == "c2" and os.environ.get("PYTEST_XDIST_WORKER"):
            os._exit(1)
        return super().run(suite, case, view, adapter)


@hookimpl
def pytest_agentbench_world_kinds():
    return [CrashingWorld()]
"""


def test_a_worker_crash_outside_the_adapter_call_is_a_harness_error(
    demo: pytest.Pytester,
) -> None:
    demo.makeconftest(CRASHING_WORLD)
    write_demo_suite(demo.path)
    path = demo.path / "run.json"
    result = demo.runpytest(
        f"--agentbench-report={path}", "-m", "not agentbench_control", "-n", "2"
    )
    result.assert_outcomes(passed=2, failed=1)
    suite = suite_of(report_of(path), "demo-suite")
    c2 = cases_of(suite)["c2"]
    assert (c2["outcome"], c2["failure_class"]) == ("error", "harness_error")
    assert c2["failure_reason"] == "worker crashed while running it"
    assert metric(suite, "accuracy") == (1.0, 2)


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
        row = self.reference.trace_action(bundle, event_id)
        if event_id == "evt-010-authorised-comparison":
            return RaisingMapping(row)
        if event_id == "evt-011-supplier-directory-read":
            return ObservedActionTrace.model_construct(event_id=event_id, decision=42)
        if event_id == "evt-012-quotation-request":
            # Tamper with the bundle's manifest: the oracle must not notice.
            object.__setattr__(bundle.manifest, "artifact_set_digest", "0" * 64)
            bundle.tool_schemas.clear()
            bundle.scenarios.clear()
        return row
"""


@pytest.mark.skipif(not (REPO / "suites" / ASTERIA).is_dir(), reason="needs the Asteria suite")
def test_unreadable_rows_are_product_errors_and_tampering_reaches_no_other_case(
    pytester: pytest.Pytester, xdist_args: list[str]
) -> None:
    copy_asteria(pytester.path)
    pytester.makepyfile(hostile=HOSTILE_AUTHORITY)
    pytester.syspathinsert()
    path = pytester.path / "run.json"
    result = pytester.runpytest(
        "--agentbench-adapter=hostile:Agent",
        f"--agentbench-report={path}",
        "-m",
        "not agentbench_control",
        *xdist_args,
    )
    result.assert_outcomes(passed=9, failed=2)
    suite = suite_of(report_of(path), ASTERIA)
    cases = cases_of(suite)
    assert cases["evt-010-authorised-comparison"]["failure_class"] == "product_error"
    assert "refused" in cases["evt-010-authorised-comparison"]["failure_reason"]
    assert cases["evt-011-supplier-directory-read"]["failure_class"] == "product_error"
    assert cases["evt-012-quotation-request"]["outcome"] == "passed"
    assert suite["failure_classes"]["harness_error"] == 0
    assert metric(suite, "authorization_decision_accuracy") == (pytest.approx(9 / 11), 11)


@pytest.mark.skipif(not (REPO / "suites" / ASTERIA).is_dir(), reason="needs the Asteria suite")
def test_each_case_gets_a_bundle_no_earlier_case_changed(
    pytester: pytest.Pytester, xdist_args: list[str]
) -> None:
    copy_asteria(pytester.path)
    pytester.makepyfile(
        mutates="""
from pytest_agentbench.worlds.authority.agents import ReferenceAgent


class Agent:
    def __init__(self):
        self.reference = ReferenceAgent()

    def trace_action(self, bundle, event_id):
        row = self.reference.trace_action(bundle, event_id)
        assert len(bundle.scenarios) > 0 and "injected" not in bundle.tool_schemas
        bundle.scenarios.clear()
        bundle.tool_schemas["injected"] = bundle.tool_schemas[next(iter(bundle.tool_schemas))]
        object.__setattr__(bundle, "events", ())
        return row
"""
    )
    pytester.syspathinsert()
    path = pytester.path / "run.json"
    result = pytester.runpytest(
        "--agentbench-adapter=mutates:Agent", f"--agentbench-report={path}", *xdist_args
    )
    # Every case and every control behaves as if no case had touched its bundle.
    result.assert_outcomes(passed=14)
    suite = suite_of(report_of(path), ASTERIA)
    assert metric(suite, "authorization_decision_accuracy") == (1.0, 11)


# --- Severe 1: snapshot mode loses golden files in partial runs ---


def _golden_files(base: Path) -> list[str]:
    folder = base / "snapshots" / ASTERIA
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*.json"))


@pytest.mark.skipif(not (REPO / "snapshots" / ASTERIA).is_dir(), reason="needs the golden files")
@pytest.mark.parametrize(
    "selection",
    [
        pytest.param([f"suites/{ASTERIA}/public_events.jsonl::{ASTERIA_CASE}"], id="node-id"),
        pytest.param(
            ["suites", "--deselect", f"suites/{ASTERIA}/public_events.jsonl::{ASTERIA_CASE}"],
            id="deselect",
        ),
        pytest.param(["suites", "--agentbench-controls"], id="controls"),
        pytest.param(["suites", "-k", "evt-010"], id="keyword"),
        pytest.param(["suites", "--lf"], id="last-failed"),
    ],
)
def test_a_partial_run_neither_reports_nor_deletes_other_golden_files(
    pytester: pytest.Pytester, xdist_args: list[str], selection: list[str]
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
    updated = pytester.runpytest(*selection, "--snapshot-update", *xdist_args)
    assert updated.ret == pytest.ExitCode.OK, updated.stdout.str()
    assert "unused" not in updated.stdout.str()
    assert "deleted" not in updated.stdout.str()
    assert _golden_files(pytester.path) == before


@pytest.mark.skipif(not (REPO / "snapshots" / ASTERIA).is_dir(), reason="needs the golden files")
def test_a_golden_file_no_case_claims_is_still_reported_unused(pytester: pytest.Pytester) -> None:
    copy_asteria(pytester.path, snapshots=True)
    pytester.makeini("[pytest]\nagentbench_snapshot = true\n")
    stale = pytester.path / "snapshots" / ASTERIA / "public_events" / "evt-999-removed.json"
    stale.write_text("{}\n")
    result = pytester.runpytest("suites")
    result.stdout.fnmatch_lines(["*1 snapshot unused*"])
    pytester.runpytest("suites", "--snapshot-update")
    assert not stale.exists()

"""Every hang and crash of issue 8, run with ``--agentbench-isolate``.

One demo suite holds one case per fault; a single adapter misbehaves on each
case in its own way. Isolated, every hang is ended at the timeout (agent_error),
every crash costs its own case only, and the session ends normally with every
case counted, serially and under xdist. The sessions run as subprocesses with a
generous limit of their own, so a regression shows up as a failed test rather
than a hung test run. Serially the hangs run in a session of their own, under a
short case limit all of its cases must overrun, and the other cases under a
generous one; under xdist a few of each share a session and a one-second limit, on
one worker (``-n 1``): each worker has an isolated process of its own and ends its
faults as a serial session does, nothing of it is aggregated across workers, and a
second worker would only cost its start-up and its own isolated process. The three
sessions share nothing but the project and run at once, so that the hangs' waits overlap.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.demo_world import write_demo_suite
from tests.shared_sessions import run_session

FAULTS = """
import asyncio
import ctypes
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text for you")


class Custom(BaseException):
    pass


class BrokenMapping(Mapping):
    def __getitem__(self, key):
        return 1

    def __len__(self):
        return 1

    def __iter__(self):
        raise RuntimeError("iteration refused")


def _record(name, value):
    with open(HERE / name, "a") as handle:
        handle.write(f"{value}\\n")


def sleep_forever():
    time.sleep(1000)


def thread_pool():
    with ThreadPoolExecutor(1) as pool:
        pool.submit(time.sleep, 1000).result()


def asyncio_executor():
    async def main():
        await asyncio.get_running_loop().run_in_executor(None, time.sleep, 1000)

    asyncio.run(main())


def swallowing_loop():
    while True:
        try:
            time.sleep(1000)
        except:  # noqa: E722
            continue


def ignores_sigterm():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sleep_forever()


def grandchild():
    process = subprocess.Popen(["sleep", "1000"])
    _record("grandchild.pid", process.pid)
    process.wait()


def sigterm_proof_grandchild():
    # The grandchild inherits the ignored SIGTERM: only the tree's SIGKILL ends it.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    grandchild()


def os_exit():
    os._exit(1)


def keyboard_interrupt():
    raise KeyboardInterrupt("pressed in the adapter")


def segfault():
    ctypes.string_at(0)


def cancelled():
    raise asyncio.CancelledError()


def base_exception():
    raise Custom("not an Exception")


def unprintable():
    raise Unprintable()


def leaked_thread():
    threading.Thread(target=sleep_forever, daemon=False).start()


BEHAVIOUR = {
    2: sleep_forever,
    3: thread_pool,
    4: asyncio_executor,
    5: swallowing_loop,
    6: ignores_sigterm,
    7: grandchild,
    8: os_exit,
    9: keyboard_interrupt,
    10: segfault,
    11: cancelled,
    12: base_exception,
    13: unprintable,
    14: leaked_thread,
    19: sigterm_proof_grandchild,
}
RETURNS = {15: object, 16: BrokenMapping, 17: lambda: float("nan")}


class Faulty:
    def answer(self, question):
        _record("child.pid", os.getpid())
        left, right = (int(part) for part in question.split("+"))
        if left in BEHAVIOUR:
            BEHAVIOUR[left]()
        if left in RETURNS:
            return RETURNS[left]()
        return left + right
"""

TIMEOUTS = {
    "sleep": 2,
    "thread-pool": 3,
    "asyncio-executor": 4,
    "swallowing-loop": 5,
    "ignores-sigterm": 6,
    "grandchild": 7,
    "sigterm-proof-grandchild": 19,
}
CRASHES = {
    "os-exit": (8, "the adapter's process exited with status 1 during the call"),
    "keyboard-interrupt": (9, "adapter raised KeyboardInterrupt: pressed in the adapter"),
    "segfault": (10, "the adapter's process killed by SIGSEGV during the call"),
    "cancelled": (11, "adapter raised CancelledError"),
    "base-exception": (12, "adapter raised Custom: not an Exception"),
    "unprintable": (13, "adapter raised Unprintable: <str() raised RuntimeError>"),
}
UNENCODABLE = {
    "object": (15, "TypeError: object is not a JSON value"),
    "broken-mapping": (16, "RuntimeError: iteration refused"),
    "nan": (17, "ValueError: Out of range float values are not JSON compliant"),
}
PASSING = {"ok-first": 1, "leaked-thread": 14, "ok-last": 18}

SUBSET = (
    "ok-first",
    "sleep",
    "ignores-sigterm",
    "grandchild",
    "sigterm-proof-grandchild",
    "os-exit",
    "segfault",
    "nan",
    "leaked-thread",
)
"""What runs under xdist: a fault of each kind (a plain hang, one that ignores SIGTERM, one
that leaves a grandchild, and one whose grandchild ignores SIGTERM too: on a worker, whose
execnet thread takes the case limit's repeating alarm, ending it was once cut off halfway and
the grandchild outlived the session; an exit and a signal, an unencodable value) and the passing
cases around them, each costing its own case on a worker. Without xdist every fault runs;
``-n 0`` is the serial path again."""

XDIST_ARGS = ["-n", "1"]

SHARED_LIMIT = 1
"""The case limit of a session where hangs and cases that must finish run side by side."""
HANG_LIMIT = 0.2
"""The case limit of a session of hangs alone: none of its cases is meant to finish."""
FINISHING_LIMIT = 30
"""The case limit of a session none of whose cases hangs: each must finish inside it."""

SESSION_LIMIT = 240
"""The test's own bound on a session: far above what the mechanism under test needs."""


def _questions() -> dict[str, str]:
    numbers = {
        **PASSING,
        **TIMEOUTS,
        **{case: number for case, (number, _) in CRASHES.items()},
        **{case: number for case, (number, _) in UNENCODABLE.items()},
    }
    return {case: f"{number}+0" for case, number in sorted(numbers.items(), key=lambda i: i[1])}


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs: a zombie (ended, not yet collected) runs nothing."""
    if Path("/proc/self/stat").exists():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return False
        return stat.rpartition(")")[2].split()[0] != "Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _pids(path: Path) -> set[int]:
    return {int(line) for line in path.read_text().split()} if path.exists() else set()


def _wait_gone(pids: set[int]) -> set[int]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.1)
    return {pid for pid in pids if _alive(pid)}


@pytest.fixture
def project(demo: pytest.Pytester) -> pytest.Pytester:
    write_demo_suite(demo.path, questions=_questions())
    demo.makepyfile(faults=FAULTS)
    return demo


def _report_path(project: Path, limit: float, xdist_args: list[str]) -> Path:
    return project / f"{'xdist' if xdist_args else 'serial'}-{limit:g}.json"


def _session(
    project: Path, cases: list[str], limit: float, xdist_args: list[str]
) -> pytest.RunResult:
    """One isolated session over ``cases``, in a process of its own."""
    return run_session(
        project,
        *(f"suites/demo-suite/cases.jsonl::{case}" for case in cases),
        "--agentbench-adapter=faults:Faulty",
        "--agentbench-isolate",
        f"--agentbench-timeout={limit:g}",
        f"--agentbench-report={_report_path(project, limit, xdist_args)}",
        "-m",
        "not agentbench_control",
        *xdist_args,
        # Under xdist the adapter processes are forked by a template process (the default),
        # the other sessions start each as a fresh interpreter: every fault is held either way.
        *([] if xdist_args else ["-o", "agentbench_isolate_fork_server=false"]),
        timeout=SESSION_LIMIT,
    )


def _check(
    result: pytest.RunResult,
    project: Path,
    cases: list[str],
    limit: float,
    xdist_args: list[str],
) -> None:
    """Every case of a session ended as its fault says, and was counted."""
    selected = set(cases)
    passing = selected & set(PASSING)
    hangs, crashes = selected & set(TIMEOUTS), selected & set(CRASHES)
    unencodable = selected & set(UNENCODABLE)
    result.assert_outcomes(passed=len(passing), failed=len(selected) - len(passing))
    report: dict[str, Any] = json.loads(_report_path(project, limit, xdist_args).read_text())
    (suite,) = report["suites"]
    assert suite["counts"] == {
        "passed": len(passing),
        "failed": len(selected) - len(passing),
        "error": 0,
        "skipped": 0,
        "excluded": 0,
    }
    assert suite["failure_classes"] == {
        "agent_error": len(hangs) + len(crashes),
        "product_error": len(unencodable),
        "harness_error": 0,
    }
    results = {entry["result"]["case_id"]: entry["result"] for entry in suite["cases"]}
    assert set(results) == selected
    for case in passing:
        assert results[case]["outcome"] == "passed", case
    for case in hangs:
        reason = results[case]["failure_reason"]
        assert results[case]["failure_class"] == "agent_error", case
        assert reason.startswith("timed out after "), (case, reason)
        assert reason.endswith(f"s (--agentbench-timeout={limit:g})"), (case, reason)
    for case in crashes:
        assert results[case]["failure_class"] == "agent_error", case
        assert results[case]["failure_reason"].startswith(CRASHES[case][1]), case
    for case in unencodable:
        assert results[case]["failure_class"] == "product_error", case
        assert results[case]["failure_reason"].endswith(UNENCODABLE[case][1]), case
    accuracy = {metric["name"]: metric for metric in suite["metrics"]}["accuracy"]
    assert (accuracy["numerator"], accuracy["denominator"]) == (len(passing), len(selected))


@pytest.mark.usefixtures("process_isolation_only")
def test_every_hang_and_crash_costs_one_case_when_isolated(project: pytest.Pytester) -> None:
    # Without xdist every fault: the hangs under a short limit, every other under a generous
    # one; under xdist the subset under one shared limit. The three sessions run at once (each
    # its own adapter processes), so that the hangs' waits overlap the others' work.
    everything = list(_questions())
    sessions = [
        ([case for case in everything if case in TIMEOUTS], HANG_LIMIT, []),
        ([case for case in everything if case not in TIMEOUTS], FINISHING_LIMIT, []),
        (list(SUBSET), SHARED_LIMIT, XDIST_ARGS),
    ]
    with ThreadPoolExecutor(len(sessions)) as pool:
        started = [
            pool.submit(_session, project.path, cases, limit, xdist_args)
            for cases, limit, xdist_args in sessions
        ]
        results = [future.result() for future in started]
    failed = []
    for result, (cases, limit, xdist_args) in zip(results, sessions, strict=True):
        try:
            _check(result, project.path, cases, limit, xdist_args)
        except AssertionError as error:
            mode = " ".join(xdist_args) or "no xdist"
            failed.append(f"{mode}, limit {limit:g}: {error}\n{result.stdout.str()[-3000:]}")
    assert not failed, "\n\n".join(failed)
    # Nothing outlives the sessions: not the adapter's processes, not what they started.
    assert (
        _wait_gone(_pids(project.path / "child.pid") | _pids(project.path / "grandchild.pid"))
        == set()
    )

"""``--agentbench-isolate`` with ``--agentbench-concurrency N``: a pool of isolated processes.

One session per mode (isolated serially, isolated with two cases at once) over the same
suite, whose adapter hangs in one case and kills its own process in another: the reports
match but for durations, and neither fault costs more than its own case. Its module
takes longer to load than a case may run, so the cases after the crash pass only if a
process's restart is not charged to the next case (the hang is interrupted, and its
process kept). A last session, whose start-up allowance the module overruns, is refused
before any case. (Three sessions, each waiting out a start-up, two a hang too: why it
takes seconds; the serial one runs in a process of its own while the other two run here,
so that their waits overlap.) A resumed run in a pool, merged exactly, is
``tests/test_plugin_rerun.py``'s isolated pool killed and resumed from its journal.
"""

from __future__ import annotations

import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.demo_world import write_demo_suite
from tests.shared_sessions import run_session
from tests.test_plugin_concurrency import junit_normalised, normalised

SLOW_START = 1.25
"""How long loading the adapter's module takes: longer than a case may run (LIMIT), so that
a case charged with its process's start-up fails."""
LIMIT = 1
"""The case limit: the hang must overrun it; every other case answers at once."""

FAULTY = f"""
import os
import time
from pathlib import Path

# Every process's start-up has its own allowance, apart from the case limit.
time.sleep({SLOW_START})

PIDS = Path(__file__).resolve().parent / "pids"


def _session():
    parent = os.getppid()
    if b"pytest_agentbench.isolation.template" in Path(f"/proc/{{parent}}/cmdline").read_bytes():
        # Forked by its session's template process (the default): the session is its parent.
        return int(Path(f"/proc/{{parent}}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return parent


class Faulty:
    def answer(self, question):
        # Its session's process too: two sessions at once append here.
        with PIDS.open("a") as handle:
            handle.write(f"{{_session()}} {{os.getpid()}}\\n")
        left, right = (int(part) for part in question.split("+"))
        if left == 90:
            time.sleep(3600)  # ends when the case limit interrupts it
        if left == 91:
            os._exit(3)  # the process dies in the middle of the call
        if left == 92:
            raise ValueError("no")
        if left == 93:
            return "ninety-three"
        return left + right
"""

FAULTS = {"c02": "90+0", "c05": "91+0", "c07": "92+0", "c09": "93+0"}
QUESTIONS = {f"c{index:02d}": f"{index}+1" for index in range(12)} | FAULTS

OUTER_LIMIT = 120.0
"""The test's own limit on the serial session: generous, never what is tested."""

TIMED_OUT = re.compile(r"timed out after \d+\.\ds")


def _comparable(document: Any) -> Any:
    """A report as :func:`normalised` leaves it, with the seconds a timeout took blanked."""
    return json.loads(TIMED_OUT.sub("timed out after -s", json.dumps(normalised(document))))


def _junit(path: Path) -> list[str]:
    """The JUnit file as :func:`junit_normalised` leaves it, with the seconds a timeout took
    blanked."""
    return [TIMED_OUT.sub("timed out after -s", line) for line in junit_normalised(path)]


def _arguments(name: str, *args: str) -> list[str]:
    return [
        "--agentbench-adapter=faulty:Faulty",
        "--agentbench-isolate",
        f"--agentbench-timeout={LIMIT}",
        f"--agentbench-report={name}.json",
        f"--junitxml={name}.xml",
        "-m",
        "not agentbench_control",
        *args,
    ]


@pytest.mark.usefixtures("process_isolation_only")
def test_a_pool_of_isolated_processes_reports_as_one_process_does(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path, questions=QUESTIONS)
    demo.makepyfile(faulty=FAULTY)
    # The serial session in a process of its own, the pool's here meanwhile.
    with ThreadPoolExecutor(1) as pool:
        started = pool.submit(run_session, demo.path, *_arguments("serial"), timeout=OUTER_LIMIT)
        pooled_run = demo.runpytest(
            "-p", "no:cacheprovider", *_arguments("pooled", "--agentbench-concurrency=2")
        )
        # An allowance the start-up overruns refuses the run once, before any case.
        refused = demo.runpytest(
            "--agentbench-adapter=faulty:Faulty",
            "--agentbench-isolate",
            "-o",
            "agentbench_isolate_startup_timeout=0.5",
        )
        serial_run = started.result()
    for result in (serial_run, pooled_run):
        result.assert_outcomes(passed=len(QUESTIONS) - len(FAULTS), failed=len(FAULTS))
    # Each isolated process by the session that started it: the pool's is this process.
    used: dict[str, set[int]] = {"serial": set(), "pooled": set()}
    serial_sessions = set()
    for line in (demo.path / "pids").read_text().splitlines():
        parent, child = (int(part) for part in line.split())
        if parent == os.getpid():
            used["pooled"].add(child)
        else:
            used["serial"].add(child)
            serial_sessions.add(parent)
    assert len(serial_sessions) == 1, "every serial process was started by its one session"
    serial, pooled = (json.loads((demo.path / f"{name}.json").read_text()) for name in used)
    assert _comparable(pooled) == _comparable(serial)
    assert _junit(demo.path / "pooled.xml") == _junit(demo.path / "serial.xml")
    cases = {e["result"]["case_id"]: e["result"] for e in pooled["suites"][0]["cases"]}
    assert TIMED_OUT.match(cases["c02"]["failure_reason"])
    assert "killed" in cases["c05"]["failure_reason"] or "exited" in cases["c05"]["failure_reason"]
    assert {cases[case_id]["failure_class"] for case_id in FAULTS} == {
        "agent_error",
        "product_error",
    }
    # One process serially, restarted after the crash only: the hang is interrupted at the
    # case limit as in-process, and its process unwinds and serves the next case (issue
    # 43: so the model calls a cut-off case made are kept). The pool's two processes both
    # served (the hung one held its own while others went on), and the one the crash
    # killed was replaced: three.
    assert len(used["serial"]) == 2
    assert len(used["pooled"]) == 3
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        [
            "*[[]isolation_startup_timeout[]] agentbench_isolate_startup_timeout: "
            "adapter 'faulty:Faulty': * took over 0.5s"
        ]
    )

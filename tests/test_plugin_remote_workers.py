"""pytest-xdist's remote workers (``--tx socket=``) report exactly as a local serial run.

Two execnet socket servers stand in for two machines: separate processes on
loopback, each in its own folder holding a copy of the project (as a checkout
on each machine would). The controller runs the suite across both; its JSON
run report must equal a local serial run's but for durations.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import execnet
import pytest

from tests.demo_world import write_demo_suite
from tests.reports import normalised

SOCKET_SERVER = Path(execnet.__file__).parent / "script" / "socketserver.py"
QUESTIONS = {f"q{index}": f"{index}+{index % 4}" for index in range(1, 13)}
ADAPTER = """
class Mixed:
    def answer(self, question):
        left, right = question.split("+")
        if left == "7":
            raise RuntimeError("no sevens")
        return int(left) + int(right) + (1 if int(right) == 3 else 0)
"""
PROJECT_FILES = ("conftest.py", "demo_world.py", "mixed.py", "suites", "oracles", "tox.ini")


@contextmanager
def socket_server(folder: Path) -> Iterator[int]:
    """execnet's socket server in its own process and folder; yields its port."""
    folder.mkdir(parents=True)
    process = subprocess.Popen(
        [sys.executable, str(SOCKET_SERVER), "127.0.0.1:0"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        # "socket_readline_exec_server-1.2 Entering Accept loop ('127.0.0.1', PORT)"
        assert "Entering Accept loop" in first, first
        yield int(first.rsplit(",", 1)[1].strip(" )\n"))
    finally:
        process.kill()
        process.wait(timeout=10)


def copy_project(source: Path, machine: Path) -> Path:
    """The project as a checkout on ``machine`` holds it."""
    target = machine / "project"
    target.mkdir()
    for name in PROJECT_FILES:
        path = source / name
        if path.is_dir():
            shutil.copytree(path, target / name)
        elif path.is_file():
            shutil.copy2(path, target / name)
    return target


def test_remote_socket_workers_report_as_a_local_serial_run(
    demo: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # One real run across two servers; its workers run four cases at a time, so the
    # concurrent path travels too (a concurrency of 1 is the default every other run takes).
    write_demo_suite(demo.path, questions=QUESTIONS)
    demo.makepyfile(mixed=ADAPTER)
    demo.makeini("[pytest]\n")
    common = ("--agentbench-adapter=mixed:Mixed", "-p", "no:cacheprovider")
    local = demo.path / "local.json"
    demo.runpytest(*common, f"--agentbench-report={local}")
    machines = tmp_path_factory.mktemp("machines")
    remote = demo.path / "remote.json"
    with socket_server(machines / "a") as port_a, socket_server(machines / "b") as port_b:
        checkout_a = copy_project(demo.path, machines / "a")
        checkout_b = copy_project(demo.path, machines / "b")
        result = demo.runpytest(
            *common,
            f"--agentbench-report={remote}",
            "--agentbench-concurrency=4",
            "--dist=load",
            "--tx",
            f"socket=127.0.0.1:{port_a}//chdir={checkout_a}",
            "--tx",
            f"socket=127.0.0.1:{port_b}//chdir={checkout_b}",
        )
    result.stdout.fnmatch_lines(["created: 2/2 workers", "2 workers [[]13 items[]]"])
    local_report = normalised(json.loads(local.read_text()))
    (suite,) = local_report["suites"]
    assert len(suite["cases"]) == len(QUESTIONS)
    assert {e["result"]["failure_class"] for e in suite["cases"]} == {None, "agent_error"}
    assert normalised(json.loads(remote.read_text())) == local_report

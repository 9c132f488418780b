"""pytest-xdist's remote workers (``--tx socket=``) report exactly as a local serial run.

Two execnet socket servers stand in for two machines: separate processes on
loopback, each in its own folder holding a copy of the project (as a checkout
on each machine would). The controller runs the suite across both; its JSON
run report must equal a local serial run's but for durations.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import execnet
import pytest

from pytest_agentbench.cli.worker_server import parse_address
from pytest_agentbench.sdk.errors import AgentbenchError
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
        # Unbuffered: its first line, read below, is printed to a pipe.
        [sys.executable, "-u", str(SOCKET_SERVER), "127.0.0.1:0"],
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


@contextmanager
def worker_server(folder: Path, connections: int) -> Iterator[int]:
    """``agentbench worker-server`` in its own process and folder; yields its port."""
    folder.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest_agentbench.cli.main",
            "worker-server",
            "127.0.0.1:0",
            "--once",
            str(connections),
        ],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("agentbench worker-server listening on 127.0.0.1:"), first
        yield int(first.rsplit(":", 1)[1])
        # --once: the server ends by itself once its workers have.
        assert process.wait(timeout=60) == 0, process.stdout.read()
    finally:
        process.kill()
        process.wait(timeout=10)


STAND_IN_SSH = """#!/bin/sh
# ssh's stand-in: drops ssh's own options and the host, then runs the remote command
# with the login shell in the "remote machine's" home folder, as sshd would.
while [ "$#" -gt 1 ]; do
    case "$1" in
        -F) shift 2 ;;
        *) shift ;;
    esac
done
cd "$STAND_IN_HOME" && exec /bin/sh -c "$1"
"""


def test_every_tx_form_the_docs_show_reports_as_a_local_serial_run(
    demo: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/model-runs.md shows, besides one socket server per machine (the test above):
    # several workers on one machine through one `agentbench worker-server`
    # (`--tx 2*socket=HOST:PORT`, which hangs on execnet's own one-at-a-time server),
    # ssh (`--tx ssh=HOST//python=...//chdir=...`, here through a stand-in ssh client that
    # runs the remote command locally: execnet's part of the form is real), and local
    # processes (`--tx 2*popen`). Each must give the serial run's report.
    write_demo_suite(demo.path, questions=QUESTIONS)
    demo.makepyfile(mixed=ADAPTER)
    demo.makeini("[pytest]\n")
    common = ("--agentbench-adapter=mixed:Mixed", "-p", "no:cacheprovider", "--dist=load")
    local = demo.path / "local.json"
    demo.runpytest(
        "--agentbench-adapter=mixed:Mixed", "-p", "no:cacheprovider", f"--agentbench-report={local}"
    )
    local_report = normalised(json.loads(local.read_text()))
    machine = tmp_path_factory.mktemp("machine")
    checkout = copy_project(demo.path, machine)
    shared = demo.path / "shared.json"
    with worker_server(machine / "server", connections=2) as port:
        result = demo.runpytest(
            *common,
            f"--agentbench-report={shared}",
            "--tx",
            f"2*socket=127.0.0.1:{port}//chdir={checkout}",
        )
    result.stdout.fnmatch_lines(["created: 2/2 workers", "2 workers [[]13 items[]]"])
    assert normalised(json.loads(shared.read_text())) == local_report
    bin_folder = machine / "bin"
    bin_folder.mkdir()
    (bin_folder / "ssh").write_text(STAND_IN_SSH)
    (bin_folder / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STAND_IN_HOME", str(machine))
    over_ssh = demo.path / "ssh.json"
    spec = f"ssh=worker@gpu1//python={sys.executable}//chdir={checkout}"
    result = demo.runpytest(*common, f"--agentbench-report={over_ssh}", "--tx", spec, "--tx", spec)
    result.stdout.fnmatch_lines(["created: 2/2 workers"])
    assert normalised(json.loads(over_ssh.read_text())) == local_report
    popen = demo.path / "popen.json"
    result = demo.runpytest(*common, f"--agentbench-report={popen}", "--tx", "2*popen")
    result.stdout.fnmatch_lines(["created: 2/2 workers"])
    assert normalised(json.loads(popen.read_text())) == local_report


@pytest.mark.parametrize("text", ["gpu1", "gpu1:", "gpu1:http", "gpu1:70000", ":-1"])
def test_worker_server_refuses_an_address_that_is_not_host_port(text: str) -> None:
    with pytest.raises(AgentbenchError) as refusal:
        parse_address(text)
    assert refusal.value.code == "worker_server_address"
    assert repr(text) in str(refusal.value)


def test_worker_server_address_defaults_to_loopback() -> None:
    assert parse_address(":0") == ("127.0.0.1", 0)
    assert parse_address("0.0.0.0:8888") == ("0.0.0.0", 8888)

"""Adapter processes forked by a template process (``agentbench_isolate_fork_server``).

Seen from pytest a forked process is a started one: its exit status, its tree
and its orphans are found as a fresh interpreter's are. The fault matrix's
``-n 2`` session and the red team's pool run through it; this checks what only
the template changes: who the parent is, and that an exit status crosses back.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.isolation.channel import exit_description
from pytest_agentbench.isolation.forkserver import ForkServer
from pytest_agentbench.isolation.host import IsolatedAdapters
from pytest_agentbench.isolation.processes import process_table
from tests.demo_world import write_demo_suite

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def test_a_forked_adapter_process_is_the_templates_and_reports_how_it_ended() -> None:
    launcher = ForkServer()
    host = IsolatedAdapters(30.0, launcher=launcher)
    try:
        process = host._child(None)
        first = process.pid
        template = launcher.template_pid
        assert template is not None
        assert process_table()[first].parent == template
        # It leads its own session, as a started child does.
        assert os.getsid(first) == first
        os.kill(first, signal.SIGSEGV)
        assert exit_description(process.process.wait(timeout=30)) == "killed by SIGSEGV"
        # The next one comes from the same template, and waits as a running process does.
        host._discard()
        second = host._child(None)
        assert second.pid != first
        assert process_table()[second.pid].parent == template
        with pytest.raises(subprocess.TimeoutExpired):
            second.process.wait(timeout=0.05)
        started = launcher._template
        assert started is not None
    finally:
        host.close()
    assert launcher.template_pid is None
    # It ended on its own once pytest let go of it, not by the kill that follows the wait.
    assert started.returncode == 0
    assert template not in process_table() or process_table()[template].zombie


@pytest.mark.parametrize("forked", [True, False], ids=["forked", "started"])
def test_a_pool_ends_its_children_together_with_one_sweep_for_orphans(
    forked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every child is asked to exit before any is waited for, and the process table is read a
    fixed number of times however many children there are (it was four reads per child)."""
    from pytest_agentbench.isolation import channel, processes
    from pytest_agentbench.isolation.pool import IsolatedPool

    launcher = ForkServer() if forked else None
    pool = IsolatedPool(4, 30.0, launcher=launcher)
    try:
        children = [host._child(None) for host in pool.hosts]
    except BaseException:
        pool.close()
        raise
    events: list[tuple[str, int]] = []
    send = channel.AdapterProcess.send

    def sent(self: channel.AdapterProcess, message: dict[str, Any]) -> None:
        if message.get("op") == "shutdown":
            events.append(("ask", self.pid))
        send(self, message)

    monkeypatch.setattr(channel.AdapterProcess, "send", sent)
    for child in children:
        waited = child.process.wait

        def wait(
            timeout: float | None = None, *, _pid: int = child.pid, _wait: Any = waited
        ) -> int:
            events.append(("wait", _pid))
            return _wait(timeout)

        monkeypatch.setattr(child.process, "wait", wait)
    reads = 0
    table = processes.process_table

    def counted() -> dict[int, processes.ProcessEntry]:
        nonlocal reads
        reads += 1
        return table()

    monkeypatch.setattr(processes, "process_table", counted)
    pool.close()
    kinds = [kind for kind, _ in events]
    assert kinds[: len(children)] == ["ask"] * len(children)
    assert sorted(pid for kind, pid in events if kind == "wait") == sorted(c.pid for c in children)
    assert reads <= 3
    for child in children:
        assert child.process.returncode == 0
        assert child.pid not in table() or table()[child.pid].zombie


def test_processes_started_at_once_are_each_told_their_own_pid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Requests from many threads are answered in order: each thread's process id is the one
    its own process reports (a mix-up would have pytest wait for or kill another case's)."""
    from concurrent.futures import ThreadPoolExecutor

    from pytest_agentbench.isolation import channel
    from pytest_agentbench.isolation.pool import IsolatedPool

    reported: list[tuple[int, object]] = []
    receive = channel.AdapterProcess.receive

    def received(self: channel.AdapterProcess, deadline: float | None) -> dict[str, Any]:
        message = receive(self, deadline)
        if message.get("op") == "ready":
            reported.append((self.pid, message.get("pid")))
        return message

    monkeypatch.setattr(channel.AdapterProcess, "receive", received)
    launcher = ForkServer()
    pool = IsolatedPool(6, 30.0, launcher=launcher)
    try:
        with ThreadPoolExecutor(6) as threads:
            children = list(threads.map(lambda host: host._child(None), pool.hosts))
        template = launcher.template_pid
        assert len({child.pid for child in children}) == 6
        assert sorted(reported) == sorted((child.pid, child.pid) for child in children)
        table = process_table()
        assert all(table[child.pid].parent == template for child in children)
    finally:
        pool.close()


WARM_PROBE = """
import os


class Probe:
    def answer(self, question):
        return os.getpid()
"""


def test_a_warmed_pool_has_every_child_running_with_the_adapter_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``warm`` starts each host's child and loads the adapter before any case (the plugin
    calls it at configure, so the children start while pytest collects); the cases then
    start nothing."""
    from pytest_agentbench.isolation.pool import IsolatedPool

    (tmp_path / "warm_probe.py").write_text(WARM_PROBE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    probe = importlib.import_module("warm_probe")
    pool = IsolatedPool(3, 30.0, launcher=ForkServer())
    try:
        proxy = pool.remote(probe.Probe())
        pool.warm(proxy)
        pool.warm_for(5)  # more cases than hosts: every host's child
        for thread in pool._warming:
            thread.join()
        assert pool.starts == 3
        assert all(host.pid is not None and proxy._handle in host._loaded for host in pool.hosts)
        served = set()
        for _ in range(3):
            with pool.serving(proxy):
                served.add(proxy.answer("which"))
        assert served <= set(pool.pids)
        assert pool.starts == 3
    finally:
        pool.close()
    assert pool._warming == []


TLS_PROBE = """
from pytest_agentbench.agents import transport


class Probe:
    def answer(self, question):
        # 1: the shared TLS context came with the fork, built by the template.
        return transport._shared_tls_context.cache_info().currsize
"""


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "plain"])
def test_the_template_builds_what_the_chat_agents_processes_would(
    prepared: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``module:function`` in the preload is called in the template: the chat agent's
    httpx and TLS context (``prepare_for_fork``) are inherited, not built per process."""
    pytest.importorskip("httpx")
    (tmp_path / "tls_probe.py").write_text(TLS_PROBE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    probe = importlib.import_module("tls_probe")
    preload = ("pytest_agentbench.agents.transport:prepare_for_fork",) if prepared else ()
    host = IsolatedAdapters(30.0, launcher=ForkServer(preload))
    try:
        assert host.remote(probe.Probe()).answer("built?") == (1 if prepared else 0)
    finally:
        host.close()


def test_a_request_the_template_answers_too_late_is_refused_and_its_process_ended(
    tmp_path: Path,
) -> None:
    """A start that gives up waiting is refused by name; the template's late answer to it
    is not left unclaimed: the process it forked is ended, and the next start is answered
    with its own process."""
    import socket
    import time

    from pytest_agentbench.isolation.forkserver import ForkServerUnavailable

    launcher = ForkServer(answer_timeout_s=0.5)
    ends = [socket.socketpair() for _ in range(3)]
    env = dict(os.environ)
    try:
        first = launcher.start(ends[0][1].fileno(), 2, cwd=str(tmp_path), env=env)
        template = launcher.template_pid
        assert template is not None
        os.kill(template, signal.SIGSTOP)
        try:
            with pytest.raises(ForkServerUnavailable, match=r"did not answer within 0\.5 s"):
                launcher.start(ends[1][1].fileno(), 2, cwd=str(tmp_path), env=env)
        finally:
            os.kill(template, signal.SIGCONT)
        third = launcher.start(ends[2][1].fileno(), 2, cwd=str(tmp_path), env=env)
        assert third.pid != first.pid
        assert process_table()[third.pid].parent == template

        def forked() -> set[int]:
            return {
                entry.pid
                for entry in process_table().values()
                if entry.parent == template and not entry.zombie
            }

        # The late request's process (its channel still open here) is ended, not left serving.
        deadline = time.monotonic() + 30
        while forked() != {first.pid, third.pid} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert forked() == {first.pid, third.pid}
        assert not launcher._started, "no answer is left unclaimed"
    finally:
        for ours, theirs in ends:
            ours.close()
            theirs.close()
        launcher.close()


def test_a_pool_warms_no_more_children_than_there_are_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Warming waits for the number of cases the run serves, then starts that many children
    at most; a pool closed before it is known starts none."""
    from pytest_agentbench.isolation.pool import IsolatedPool

    (tmp_path / "warm_probe.py").write_text(WARM_PROBE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    probe = importlib.import_module("warm_probe")
    for cases, started in ((1, 1), (0, 0), (None, 0)):
        pool = IsolatedPool(3, 30.0, launcher=ForkServer())
        try:
            proxy = pool.remote(probe.Probe())
            pool.warm(proxy)
            assert pool.starts == 0, "nothing before the number of cases is known"
            if cases is not None:
                pool.warm_for(cases)
                for thread in pool._warming:
                    thread.join()
            assert pool.starts == started
        finally:
            pool.close()
        assert pool.starts == started


STARTS_PROBE = """
import pytest

from pytest_agentbench.run.session import get_state


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    pool = get_state(config).isolation
    for thread in pool._warming:
        thread.join()
    (config.rootpath / "starts").write_text(str(pool.starts))
"""


def test_a_run_of_one_case_in_a_pool_of_three_starts_one_process(
    demo: pytest.Pytester,
) -> None:
    write_demo_suite(demo.path)
    demo.makepyfile(starts_probe=STARTS_PROBE)
    demo.runpytest(
        "--agentbench-adapter=demo_world:Reference",
        "--agentbench-isolate",
        "--agentbench-concurrency=3",
        "-p",
        "starts_probe",
        "-m",
        "not agentbench_control",
        "-k",
        "c1",
    ).assert_outcomes(passed=1)
    assert (demo.path / "starts").read_text() == "1"


def test_the_template_prepares_the_chat_client_in_a_run_that_configured_no_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An adapter may build the chat client itself: a forked process that imported it only
    # during a call would not count that call's model calls.
    from pytest_agentbench.isolation.setup import _chat_preload

    monkeypatch.delitem(sys.modules, "pytest_agentbench.agents.settings", raising=False)
    assert _chat_preload() == ("pytest_agentbench.agents.chat",)

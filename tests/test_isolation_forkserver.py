"""Adapter processes forked by a template process (``agentbench_isolate_fork_server``).

Seen from pytest a forked process is a started one: its exit status, its tree
and its orphans are found as a fresh interpreter's are. The fault matrix's
``-n 2`` session and the red team's pool run through it; this checks what only
the template changes: who the parent is, and that an exit status crosses back.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from pytest_agentbench.isolation.channel import exit_description
from pytest_agentbench.isolation.forkserver import ForkServer
from pytest_agentbench.isolation.host import IsolatedAdapters
from pytest_agentbench.isolation.processes import process_table

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

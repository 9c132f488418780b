"""One adapter process seen from the harness: how its end is described, and signal holding."""

from __future__ import annotations

import signal

import pytest

from pytest_agentbench.isolation.channel import AdapterProcess, exit_description


@pytest.mark.parametrize(
    ("returncode", "text"),
    [
        (3, "exited with status 3"),
        (0, "exited with status 0"),
        (-signal.SIGSEGV, "killed by SIGSEGV"),
        (-signal.SIGKILL, "killed by SIGKILL"),
        (-200, "killed by signal 200"),
    ],
)
def test_exit_description(returncode: int, text: str) -> None:
    assert exit_description(returncode) == text


def test_a_child_that_is_killed_is_reaped_and_its_connection_closed() -> None:
    process = AdapterProcess()
    assert process.alive()
    process.kill(grace=0.5)
    assert not process.alive()
    assert process.process.returncode == -signal.SIGTERM
    assert process.connection.closed

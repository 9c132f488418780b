"""One adapter process seen from the harness: how its end is described, and signal holding."""

from __future__ import annotations

import signal
from types import FrameType

import pytest

from pytest_agentbench.isolation.channel import AdapterProcess, alarms_held, exit_description


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


def test_an_alarm_during_a_kill_is_delivered_after_it() -> None:
    seen: list[str] = []

    def record(signum: int, frame: FrameType | None) -> None:
        seen.append("alarm")

    previous = signal.signal(signal.SIGALRM, record)
    try:
        with alarms_held():
            signal.raise_signal(signal.SIGALRM)
            seen.append("inside")
        assert seen == ["inside", "alarm"]
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_a_child_that_is_killed_is_reaped_and_its_connection_closed() -> None:
    process = AdapterProcess()
    assert process.alive()
    process.kill(grace=0.5)
    assert not process.alive()
    assert process.process.returncode == -signal.SIGTERM
    assert process.connection.closed

"""One adapter process seen from the harness: start it, talk to it, end it.

The child runs in its own session (process group), so ending it also ends
whatever it started: a command-line tool the adapter runs, a worker pool. A
call that outlives its deadline gets the group SIGTERM, then SIGKILL after a
short grace, whatever the adapter does with signals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any

from pytest_agentbench.isolation.protocol import MAX_MESSAGE_BYTES, pickle_for_child
from pytest_agentbench.sdk.canonical import loads_strict
from pytest_agentbench.sdk.errors import AgentbenchError

_POLL_SLICE = 0.25
"""How often a wait also checks whether the child has died without closing its end."""


class ChannelError(Exception):
    """The child could not answer; the process is unusable and must be replaced."""


class ChildDied(ChannelError):
    pass


class ChildTimedOut(ChannelError):
    pass


class ChildMisbehaved(ChannelError):
    """The child wrote something that is not a message of the protocol."""


def exit_description(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


@contextmanager
def alarms_held() -> Iterator[None]:
    """Hold SIGALRM (the in-process case limit) back while a child is being ended.

    A case limit firing halfway through would leave the child half-killed; the
    held signal is delivered when the block ends.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class AdapterProcess:
    """A started child and the harness's end of its connection."""

    def __init__(self, output: int | None = None) -> None:
        """Start a child; ``output`` is the descriptor its stdout and stderr write to."""
        parent_end, child_end = Pipe(duplex=True)
        fd = child_end.fileno()
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pytest_agentbench.isolation.child",
                    str(fd),
                    str(os.getpid()),
                ],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                start_new_session=True,
            )
        finally:
            child_end.close()
        self.connection: Connection = parent_end

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: dict[str, Any]) -> None:
        data = pickle_for_child(message)
        try:
            self.connection.send_bytes(data)
        except OSError:
            raise ChildDied(self._death()) from None

    def receive(self, deadline: float | None) -> dict[str, Any]:
        """The next message; ``deadline`` is a :func:`time.monotonic` instant."""
        while True:
            remaining = _POLL_SLICE if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                raise ChildTimedOut()
            if self.connection.poll(min(remaining, _POLL_SLICE)):
                break
            if not self.alive():
                raise ChildDied(self._death())
        try:
            data = self.connection.recv_bytes(MAX_MESSAGE_BYTES)
        except EOFError:
            raise ChildDied(self._death()) from None
        except OSError as exc:
            raise ChildMisbehaved(f"unreadable message ({exc})") from None
        try:
            message = loads_strict(data.decode("utf-8"))
        except (UnicodeDecodeError, AgentbenchError) as exc:
            raise ChildMisbehaved(f"a message that is not strict JSON ({exc})") from None
        if not isinstance(message, dict) or not isinstance(message.get("op"), str):
            raise ChildMisbehaved("a message with no 'op'")
        return message

    def _death(self) -> str:
        try:
            returncode = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "closed its connection"
        return exit_description(returncode)

    def kill(self, grace: float) -> None:
        """SIGTERM to the child's group, SIGKILL after ``grace`` seconds; reap it."""
        with alarms_held():
            try:
                if self.alive():
                    self._signal_group(signal.SIGTERM)
                    with suppress(subprocess.TimeoutExpired):
                        self.process.wait(timeout=grace)
                # Also reaches what the child started and left behind.
                self._signal_group(signal.SIGKILL)
                self.process.wait()
            finally:
                self.connection.close()

    def shutdown(self, grace: float) -> None:
        """Ask the child to exit; end it by force if it does not within ``grace``."""
        with suppress(ChannelError):
            self.send({"op": "shutdown"})
        with alarms_held(), suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=grace)
        self.kill(grace)

    def _signal_group(self, signum: int) -> None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)

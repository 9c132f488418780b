"""pytest's side of the template process (:mod:`.template`): adapter processes by fork.

One :class:`ForkServer` per pytest process starts the template on first use;
:meth:`ForkServer.start` has it fork an adapter process and returns a
:class:`ForkedChild`, which answers as the :class:`subprocess.Popen` of a
freshly started child does (``pid``, ``poll``, ``wait``, ``returncode``,
``kill``): the template reports each exit status, which a thread of this
process records.

The forked process is the template's child, not pytest's; it leads its own
session as a started child does, so its tree is found and ended the same
way. What a dead adapter process orphans is re-parented to the template (a
subreaper): :meth:`ForkServer.adopted` names those processes for pytest to end.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress

from pytest_agentbench.isolation import processes
from pytest_agentbench.isolation.processes import TREE_VARIABLE

PRELOADED = (
    "pytest_agentbench.isolation.protocol",
    "pytest_agentbench.isolation.sandbox",
    "pytest_agentbench.isolation.remote_session",
)
"""Modules every adapter process imports (the sandbox's when it has one), imported once."""


class ForkServerUnavailable(OSError):
    """The template process did not start or has gone."""


class ForkedChild:
    """An adapter process the template forked, seen as a started child's Popen is seen."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server = server
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.returncode(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        returncode = self.server.wait_for(self.pid, deadline)
        if returncode is None:
            raise subprocess.TimeoutExpired(f"adapter process {self.pid}", timeout or 0.0)
        self.returncode = returncode
        return returncode

    def kill(self) -> None:
        if self.poll() is None:
            with suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


class ForkServer:
    """The template process of this pytest process, started when first needed."""

    def __init__(self, preload: Sequence[str] = (), *, answer_timeout_s: float = 30.0) -> None:
        self.preload = (*PRELOADED, *preload)
        self.answer_timeout_s = answer_timeout_s
        """How long :meth:`start` waits for the template to answer before giving up."""
        self._control: socket.socket | None = None
        self._template: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        """Held while a request is sent, so requests are numbered in the order they are sent."""
        self._sent = 0
        self._exits: dict[int, int] = {}
        self._live: set[int] = set()
        self._changed = threading.Condition()
        self._answered = 0
        self._started: dict[int, int] = {}
        """The process forked for each request not yet taken, by the request's number: the
        template answers in the order the requests came (one socket, one thread)."""
        self._abandoned: set[int] = set()
        """Requests whose :meth:`start` gave up waiting: the process the template forks
        for one when it answers at last is ended at once, never left unclaimed."""
        self._reader: threading.Thread | None = None

    @property
    def template_pid(self) -> int | None:
        return None if self._template is None else self._template.pid

    def _ensure(self, env: Mapping[str, str], output: int) -> socket.socket:
        if self._control is not None and self._template is not None:
            if self._template.poll() is None:
                return self._control
            raise ForkServerUnavailable("the template process has ended")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._template = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pytest_agentbench.isolation.template",
                    str(theirs.fileno()),
                    str(os.getpid()),
                    *self.preload,
                ],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                # Where the adapter processes write (never pytest's possibly captured stdout).
                stdout=subprocess.DEVNULL,
                stderr=output,
                # Not the first child's tree token: the template is no adapter's process,
                # and pytest ends whatever carries a dead child's token.
                env={key: value for key, value in env.items() if key != TREE_VARIABLE},
                start_new_session=True,
            )
        finally:
            theirs.close()
        ready = json.loads(ours.recv(1 << 16) or b"{}")
        if "ready" not in ready:
            raise ForkServerUnavailable("the template process did not start")
        self._control = ours
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return ours

    def _read(self) -> None:
        control = self._control
        assert control is not None
        while True:
            try:
                data = control.recv(1 << 16)
            except OSError:
                data = b""
            with self._changed:
                if not data:
                    # The template is gone: whatever it had forked counts as ended.
                    for pid in self._live:
                        self._exits.setdefault(pid, -signal.SIGKILL)
                    self._live.clear()
                    self._changed.notify_all()
                    return
                message = json.loads(data)
                if "started" in message:
                    number, pid = self._answered, int(message["started"])
                    self._answered += 1
                    self._live.add(pid)
                    if number in self._abandoned:
                        # Nobody waits for it: a live adapter process no host will end.
                        self._abandoned.discard(number)
                        with suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                    else:
                        self._started[number] = pid
                else:
                    self._exits[int(message["exited"])] = int(message["returncode"])
                    self._live.discard(int(message["exited"]))
                self._changed.notify_all()

    def start(self, channel: int, output: int, *, cwd: str, env: Mapping[str, str]) -> ForkedChild:
        """Have the template fork an adapter process serving ``channel``, writing to ``output``.

        Only the sending is one at a time: many threads starting processes at once (a
        pool's first cases) have their requests queued at the template, which forks
        them back to back instead of waiting for each answer to be taken.
        """
        with self._lock:
            control = self._ensure(env, output)
            request = json.dumps({"cwd": cwd, "env": dict(env)}).encode()
            socket.send_fds(control, [request], [channel, output])
            number = self._sent
            self._sent += 1
        deadline = time.monotonic() + self.answer_timeout_s
        with self._changed:
            while number not in self._started:
                if self._reader is None or not self._reader.is_alive():
                    raise ForkServerUnavailable("the template process has ended")
                if not self._changed.wait(max(0.0, deadline - time.monotonic())):
                    if number in self._started:
                        break  # answered just as the wait ran out
                    self._abandoned.add(number)
                    raise ForkServerUnavailable(
                        f"the template process did not answer within {self.answer_timeout_s:g} s"
                    )
            pid = self._started.pop(number)
        return ForkedChild(self, pid)

    def returncode(self, pid: int) -> int | None:
        with self._changed:
            return self._exits.get(pid)

    def wait_for(self, pid: int, deadline: float | None) -> int | None:
        with self._changed:
            while pid not in self._exits:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._changed.wait(remaining)
            return self._exits[pid]

    def adopted(self) -> set[int]:
        """Living processes re-parented to the template: what dead adapter processes orphaned."""
        template = self.template_pid
        if template is None:
            return set()
        with self._changed:
            live = set(self._live)
        table = processes.process_table()
        return {
            entry.pid
            for entry in table.values()
            if entry.parent == template and entry.pid not in live and not entry.zombie
        }

    def close(self) -> None:
        """End the template (its adapter processes are ended by their hosts first)."""
        control, self._control = self._control, None
        template, self._template = self._template, None
        if control is not None:
            # shutdown first: close() alone leaves the socket open while the reader thread
            # is blocked in recv on it, so the template would see no end and be killed
            # only after the wait below (2 s on every run's teardown).
            with suppress(OSError):
                control.shutdown(socket.SHUT_RDWR)
            control.close()
        if template is not None:
            with suppress(subprocess.TimeoutExpired):
                template.wait(timeout=2.0)
            if template.poll() is None:
                template.kill()
                template.wait()

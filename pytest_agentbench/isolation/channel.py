"""One adapter process seen from the harness: start it, talk to it, end it.

The child runs in its own session (process group), and ending it also ends
whatever it started: a command-line tool the adapter runs, a worker pool, a
grandchild that left the session with ``setsid`` (found through ``/proc``, see
:mod:`.processes`). A call that outlives its deadline gets the group SIGTERM,
then the whole tree SIGKILL after a short grace, whatever the adapter does
with signals. What a call starts ends with the call (:meth:`AdapterProcess.end_call`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any

from pytest_agentbench.isolation import processes
from pytest_agentbench.isolation.forkserver import ForkedChild, ForkServer
from pytest_agentbench.isolation.processes import TREE_VARIABLE
from pytest_agentbench.isolation.protocol import MAX_MESSAGE_BYTES, pickle_for_child
from pytest_agentbench.sdk.canonical import loads_strict
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.runner import alarm_held

_POLL_SLICE = 0.25
"""How often a wait also checks whether the child has died without closing its end."""

_WATCH_SLICE = 0.02
"""How often a sandboxed child's process tree is counted while the harness waits for it."""

REAP_SECONDS = 1.0
"""How long the harness waits for killed processes it adopted to be collectable."""


class ChannelError(Exception):
    """The child could not answer; the process is unusable and must be replaced."""


class ChildDied(ChannelError):
    pass


class ChildTimedOut(ChannelError):
    pass


class ChildOverLimit(ChannelError):
    """The child's process tree grew past the sandbox's process limit (a fork bomb)."""


class ChildMisbehaved(ChannelError):
    """The child wrote something that is not a message of the protocol."""


def exit_description(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


class AdapterProcess:
    """A started child and the harness's end of its connection."""

    def __init__(
        self,
        output: int | None = None,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        prefix: Sequence[str] = (),
        max_tasks: int | None = None,
        launcher: ForkServer | None = None,
    ) -> None:
        """Start a child.

        ``output`` is the descriptor its stdout and stderr write to, ``cwd`` its
        working directory, ``env`` its environment (the harness's when None)
        and ``prefix`` a command it runs under (``unshare ...``), which must
        ``exec`` it so the child keeps the process id the harness started.
        ``max_tasks`` (the sandbox's): while the harness waits for an answer, a
        tree of more processes and threads than that is a :class:`ChildOverLimit`
        (``RLIMIT_NPROC`` counts per user and never binds root, so the harness counts).
        ``launcher``: the template process forks the child instead (never with a ``prefix``).
        """
        parent_end, child_end = Pipe(duplex=True)
        fd = child_end.fileno()
        self.token = os.urandom(16).hex()
        environment = dict(os.environ if env is None else env)
        environment[TREE_VARIABLE] = self.token
        self.launcher = None if prefix else launcher
        self.process: subprocess.Popen[bytes] | ForkedChild
        try:
            if self.launcher is not None:
                self.process = self.launcher.start(
                    fd, 2 if output is None else output, cwd=cwd or os.getcwd(), env=environment
                )
            else:
                self.process = subprocess.Popen(
                    [
                        *prefix,
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
                    cwd=cwd,
                    env=environment,
                    start_new_session=True,
                )
        finally:
            child_end.close()
        self.connection: Connection = parent_end
        self.max_tasks = max_tasks
        self.resident: frozenset[int] = frozenset()
        """Processes the adapter started while it was loaded: they live as long as the child."""
        self.ended: list[int] = []
        """Processes ended after a call, for the child to collect (it is their parent)."""
        self._asked_to_exit = False

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
        poll_slice = _POLL_SLICE if self.max_tasks is None else _WATCH_SLICE
        while True:
            remaining = poll_slice if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                raise ChildTimedOut()
            if self.connection.poll(min(remaining, poll_slice)):
                break
            if not self.alive():
                raise ChildDied(self._death())
            if self.max_tasks is not None:
                self._check_tasks(self.max_tasks)
        try:
            data = self.connection.recv_bytes(MAX_MESSAGE_BYTES)
        except EOFError:
            raise ChildDied(self._death()) from None
        except OSError as exc:
            raise ChildMisbehaved(f"unreadable message ({exc})") from None
        try:
            # Bounded by the receive above: a tool call's arguments inside it are the
            # session's to refuse by their own size, as in-process.
            message = loads_strict(data.decode("utf-8"), max_bytes=MAX_MESSAGE_BYTES)
        except (UnicodeDecodeError, AgentbenchError) as exc:
            raise ChildMisbehaved(f"a message that is not strict JSON ({exc})") from None
        if not isinstance(message, dict) or not isinstance(message.get("op"), str):
            raise ChildMisbehaved("a message with no 'op'")
        return message

    def _check_tasks(self, limit: int) -> None:
        pid = self.process.pid
        tasks = processes.thread_count(pid)
        if tasks <= limit and not processes.has_children(pid):
            return
        tasks += len(processes.descendants(pid))
        if tasks > limit:
            raise ChildOverLimit(f"{tasks} processes and threads, over the limit of {limit}")

    def _death(self) -> str:
        try:
            returncode = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "closed its connection"
        return exit_description(returncode)

    def note_resident(self) -> None:
        """Take the processes below the child now as the adapter's own (after a load)."""
        pid = self.process.pid
        self.resident = (
            frozenset(processes.descendants(pid)) if processes.has_children(pid) else frozenset()
        )

    def end_call(self) -> None:
        """End every process the call started, so none works on into the next case."""
        pid = self.process.pid
        if processes.has_children(pid):
            with alarm_held():
                self.ended.extend(processes.kill_descendants(pid, keep=self.resident))

    def collected(self) -> list[int]:
        """The ended processes the child is to collect, each given once."""
        ended, self.ended = self.ended, []
        return ended

    def kill(self, grace: float) -> None:
        """SIGTERM to the child's group, SIGKILL to its whole tree after ``grace``; reap it."""
        with alarm_held():
            try:
                pid = self.process.pid
                # Taken while the child is alive: once it has been collected, its pid
                # (and session id) may name someone else's process.
                tree = processes.descendants(pid) if self.alive() else set()
                if self.alive():
                    self._signal_group(signal.SIGTERM)
                    with suppress(subprocess.TimeoutExpired):
                        self.process.wait(timeout=grace)
                processes.kill_all(tree)
                killed = set(tree)
                if self.process.returncode is None:
                    # Below the child first, so nothing is orphaned out of its tree meanwhile.
                    killed |= processes.kill_descendants(pid)
                    self._signal_group(signal.SIGKILL)
                    with suppress(ProcessLookupError):
                        self.process.kill()
                self.process.wait()
                killed |= self._kill_orphans()
                processes.reap_adopted(killed, REAP_SECONDS)
            finally:
                self.connection.close()

    def _kill_orphans(self) -> set[int]:
        """Kill what the dead child left behind outside its session, and what is below it."""
        return _kill_orphans([self])

    def ask_to_exit(self) -> None:
        """Send the child the request to exit (once), without waiting for it."""
        if not self._asked_to_exit:
            self._asked_to_exit = True
            with suppress(ChannelError):
                self.send({"op": "shutdown"})

    def shutdown(self, grace: float) -> None:
        """Ask the child to exit; end it by force if it does not within ``grace``."""
        # One path for one child and a pool's many: the same exit, wait, force and sweep.
        shutdown_all([self], grace)

    def _signal_group(self, signum: int) -> None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)


def _kill_orphans(children: Sequence[AdapterProcess]) -> set[int]:
    """Kill what the dead ``children`` left behind outside their sessions, and what is below it.

    Such a process was re-parented to the harness (a subreaper) or, where
    there is none, to init; it carries its child's token in its environment.
    One look at the process table serves every child (a pool ends N at once).
    """
    me = os.getpid()
    markers = {f"{TREE_VARIABLE}={child.token}".encode() for child in children}
    killed: set[int] = set()
    launchers = {id(child.launcher): child.launcher for child in children if child.launcher}
    for launcher in launchers.values():
        # A forked child's token is not in its processes' initial environment (it was
        # set after the fork): what it orphaned is below the template, found there.
        for orphan in launcher.adopted():
            killed |= processes.kill_descendants(orphan)
            processes.kill_all([orphan])
            killed.add(orphan)
    if not markers:
        return killed
    for entry in processes.process_table().values():
        if entry.pid != me and not entry.zombie and _environment_has_any(entry.pid, markers):
            killed |= processes.kill_descendants(entry.pid)
            processes.kill_all([entry.pid])
            killed.add(entry.pid)
    return killed


def shutdown_all(children: Sequence[AdapterProcess], grace: float) -> None:
    """End many children at the end of a session, as :meth:`AdapterProcess.shutdown` each.

    Every child is asked to exit before any is waited for, so they wind down
    together and the wait is one ``grace`` in all, not one per child; those
    that exited are then swept for orphans in one pass of the process table.
    A child still running after ``grace`` is ended by force, alone.
    """
    for child in children:
        child.ask_to_exit()
    deadline = time.monotonic() + grace
    exited: list[AdapterProcess] = []
    with alarm_held():
        for child in children:
            with suppress(subprocess.TimeoutExpired):
                child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            if child.process.poll() is None:
                child.kill(grace)
            else:
                exited.append(child)
        try:
            killed = _kill_orphans(exited)
            processes.reap_adopted(killed, REAP_SECONDS)
        finally:
            for child in exited:
                child.connection.close()


def _environment_has_any(pid: int, entries: set[bytes]) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return not entries.isdisjoint(handle.read().split(b"\0"))
    except OSError:
        return False

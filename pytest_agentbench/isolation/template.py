"""The template process: ``python -m pytest_agentbench.isolation.template FD PARENT [MODULE...]``.

Started once per pytest process that runs isolated adapters with
``agentbench_isolate_fork_server``, it imports what every adapter process
needs (the child's serving loop, and the modules named on its command line;
``module:function`` also calls the function, which builds what they would)
and then forks one adapter process per request instead of each starting a
fresh interpreter: a fork costs milliseconds and shares the imported pages.
It holds nothing of the harness: no suite, no oracle, no view. Each forked
process leads a session of its own, takes its environment, working folder,
output and pipe to pytest from the request, and then runs
:func:`pytest_agentbench.isolation.child.main`, which sandboxes it before any
adapter code runs.

The template is single-threaded (a fork copies only the calling thread), a
child subreaper (orphans of its children stay below it, where pytest finds
them), reaps every child it has and reports each exit status to pytest, and
exits when pytest is gone.

Protocol, over a ``SOCK_SEQPACKET`` socket: pytest sends a JSON request
``{"cwd": ..., "env": {...}}`` with two descriptors (the child's pipe end,
its output); the template answers ``{"started": pid}``, and later
``{"exited": pid, "returncode": n}`` (``-signal`` when a signal ended it).
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import sys
from typing import Any, NoReturn

from pytest_agentbench.isolation import child
from pytest_agentbench.isolation.processes import become_subreaper

POLL_SECONDS = 0.2
"""How often the template reaps and checks for pytest while no request arrives."""


def _become_adapter_process(
    request: dict[str, Any], fds: list[int], control: socket.socket, template: int
) -> NoReturn:
    """In the forked process: set up as a freshly started child would be, then serve."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        control.close()
        channel, output = fds
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        # Only the pipe to pytest and the standard descriptors stay open.
        keep = {0, 1, 2, channel}
        for fd in map(int, os.listdir("/proc/self/fd")):
            if fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    continue
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        child.main([str(channel), str(template)])
    finally:
        os._exit(0)
    raise AssertionError("unreachable")  # child.main never returns


def serve(control: socket.socket, parent: int) -> None:
    """Fork adapter processes on request, report their exits, until pytest is gone."""
    template = os.getpid()
    mine: set[int] = set()
    # A child's exit wakes the loop at once (pytest waits for it when it ends one).
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        if os.getppid() != parent:
            return
        readable, _, _ = select.select([control.fileno(), wake_read], [], [], POLL_SECONDS)
        if wake_read in readable:
            os.read(wake_read, 4096)
        _reap(control, mine)
        if control.fileno() not in readable:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(control, 1 << 20, 2)
        except OSError:
            return
        if not data:
            return
        request = json.loads(data)
        pid = os.fork()
        if pid == 0:
            _become_adapter_process(request, fds, control, template)
        for fd in fds:
            os.close(fd)
        mine.add(pid)
        control.send(json.dumps({"started": pid}).encode())


def _reap(control: socket.socket, mine: set[int]) -> None:
    """Collect every ended child: report the template's own, drop adopted orphans."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in mine:
            mine.discard(pid)
            message = {"exited": pid, "returncode": os.waitstatus_to_exitcode(status)}
            try:
                control.send(json.dumps(message).encode())
            except OSError:
                return


def main(argv: list[str]) -> None:
    control = socket.socket(fileno=int(argv[0]))
    parent = int(argv[1])
    # Ctrl-C is pytest's to handle; it then ends this process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    become_subreaper()
    for entry in argv[2:]:
        # What the adapter processes will import (``module``) or build (``module:function``,
        # called with no argument) anyway, done once here.
        module, _, function = entry.partition(":")
        try:
            imported = importlib.import_module(module)
            if function:
                getattr(imported, function)()
        except Exception:
            continue
    control.send(json.dumps({"ready": os.getpid()}).encode())
    serve(control, parent)


if __name__ == "__main__":
    main(sys.argv[1:])

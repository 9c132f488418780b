"""The process tree of an isolated adapter, and the harness's own process flags (Linux).

An adapter may start processes that leave the child's process group: a
``setsid`` grandchild, a double fork. Such a process is found through
``/proc``: by descending parent links from the child, and by the child's
session. The child is a *child subreaper* (``PR_SET_CHILD_SUBREAPER``), so an
orphaned descendant is re-parented to it rather than to init and stays in its
tree; the harness is one too, so what the child leaves behind when it dies is
re-parented to the harness, where it is found and reaped.

Everything here is best effort off Linux: without ``/proc`` or ``prctl`` the
tree is the child's process group only, and the harness stays dumpable.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37

TREE_VARIABLE = "AGENTBENCH_ISOLATED_TREE"
"""Set in the child's environment to a token of its own; the processes it starts inherit it.

A descendant that was orphaned when the child died is re-parented to the
harness (a subreaper) and is recognised as the child's by this token.
"""

KILL_ROUNDS = 20
"""How often a tree is enumerated and killed again, for processes forked while it was killed."""


@dataclass(frozen=True)
class ProcessEntry:
    pid: int
    parent: int
    session: int
    zombie: bool


def _prctl(option: int, value: int = 0) -> int | None:
    """``prctl(option, value)``; None where there is no prctl or the call fails."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        result = int(libc.prctl(option, value, 0, 0, 0))
    except (OSError, AttributeError):
        return None
    return None if result < 0 else result


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants; False where that is not possible."""
    return set_subreaper(True)


def set_subreaper(flag: bool) -> bool:
    """Set whether this process adopts its orphaned descendants; False where it cannot."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1 if flag else 0) is not None


def is_subreaper() -> bool | None:
    """Whether this process adopts its orphaned descendants; None: unknown."""
    flag = ctypes.c_int(0)
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        result = int(libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0))
    except (OSError, AttributeError):
        return None
    return None if result < 0 else flag.value != 0


def dumpable() -> bool | None:
    """Whether this process is dumpable (``/proc/<pid>/mem`` open to its uid); None: unknown."""
    value = _prctl(PR_GET_DUMPABLE)
    return None if value is None else value == 1


def set_dumpable(flag: bool) -> bool:
    """Set this process's dumpable flag; False where that is not possible."""
    return _prctl(PR_SET_DUMPABLE, 1 if flag else 0) is not None


def _entry(pid: int) -> ProcessEntry | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    # The command name is in parentheses and may itself hold spaces and parentheses.
    fields = text.rpartition(")")[2].split()
    if len(fields) < 4:
        return None
    return ProcessEntry(
        pid=pid, parent=int(fields[1]), session=int(fields[3]), zombie=fields[0] == "Z"
    )


def process_table() -> dict[int, ProcessEntry]:
    """Every process this one can see in ``/proc`` (empty without ``/proc``)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    table = {}
    for name in names:
        if name.isdigit():
            entry = _entry(int(name))
            if entry is not None:
                table[entry.pid] = entry
    return table


def descendants(root: int, table: dict[int, ProcessEntry] | None = None) -> set[int]:
    """Living processes below ``root``: by parent links, and in ``root``'s session.

    ``root`` leads its own session (it was started with ``start_new_session``),
    so every process still in that session is one it started.
    """
    table = process_table() if table is None else table
    children: dict[int, list[int]] = {}
    for entry in table.values():
        children.setdefault(entry.parent, []).append(entry.pid)
    found: set[int] = set()
    frontier = [root]
    while frontier:
        for child in children.get(frontier.pop(), ()):
            if child not in found:
                found.add(child)
                frontier.append(child)
    found |= {entry.pid for entry in table.values() if entry.session == root}
    found.discard(root)
    return {pid for pid in found if not table[pid].zombie}


def thread_count(pid: int) -> int:
    """How many threads process ``pid`` runs (0 when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return 0


def cpu_seconds(pid: int) -> float | None:
    """The CPU time process ``pid`` has used (user and system); None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().decode("utf-8", "replace").rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def has_children(pid: int) -> bool:
    """Whether ``pid`` has a child process (a cheap check before a full enumeration).

    Reads ``/proc/<pid>/task/*/children``; where that is missing, answers True
    so the caller enumerates.
    """
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return sys.platform.startswith("linux")
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                if handle.read().strip():
                    return True
        except FileNotFoundError:
            continue
        except OSError:
            return True
    return False


def kill_all(pids: Iterable[int]) -> None:
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def kill_descendants(root: int, *, keep: frozenset[int] = frozenset()) -> set[int]:
    """SIGKILL every living process below ``root`` except ``keep``; return those killed.

    Enumerated again after each round, so a process forked by one being killed
    (and re-parented to ``root``, a subreaper) is found too.
    """
    killed: set[int] = set()
    for _ in range(KILL_ROUNDS):
        found = descendants(root) - keep - killed
        if not found:
            break
        kill_all(found)
        killed |= found
    return killed


def reap_adopted(pids: Iterable[int], seconds: float) -> None:
    """Collect the exit status of those of ``pids`` (killed) re-parented to this process.

    Only named processes are waited for: a status another part of pytest is
    waiting for (a ``subprocess.Popen`` of a test) is left alone. A killed
    process may take a moment to become collectable; ``seconds`` bounds that.
    """
    me = os.getpid()
    table = process_table()
    waiting = {pid for pid in pids if pid in table and table[pid].parent == me}
    deadline = time.monotonic() + seconds
    while waiting:
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                waiting.discard(pid)
        if not waiting or time.monotonic() >= deadline:
            return
        time.sleep(0.01)

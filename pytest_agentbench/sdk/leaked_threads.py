"""Threads an adapter started and left running must not keep the process alive.

A hung adapter interrupted by its case limit may leave threads behind (an
executor's worker sleeping for an hour). Python joins every non-daemon thread
before the interpreter exits, so the run would hang after its reports were
written. :func:`note` records such threads after each case; :func:`exit_without_joining`,
called once everything is written, makes the interpreter's exit skip joining
them, keeping the exit status.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

_LEAKED: list[threading.Thread] = []


def note(before: list[threading.Thread]) -> list[threading.Thread]:
    """Record the non-daemon threads started since ``before`` that still run; return them.

    ``before`` is what :func:`threading.enumerate` gave when the case started.
    """
    current = threading.enumerate()
    if current == before:
        return []  # the common case, decided by one comparison of thread identities
    known = set(before)
    leaked = [
        thread
        for thread in current
        if thread not in known and not thread.daemon and thread.is_alive()
    ]
    _LEAKED.extend(leaked)
    return leaked


def alive() -> list[threading.Thread]:
    return [thread for thread in _LEAKED if thread.is_alive()]


class _ExitHook:
    """The one hook registered with the interpreter, with the latest session's status.

    Sessions run inside a session (pytester) each set the status; the outermost
    one finishes last, so the process ends with its status.
    """

    def __init__(self) -> None:
        self.exit_status = 0
        self.registered = False

    def __call__(self) -> None:
        if alive():
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            os._exit(self.exit_status)


_EXIT_HOOK = _ExitHook()


def exit_without_joining(exit_status: int) -> bool:
    """Arrange for the interpreter's exit not to wait for leaked adapter threads.

    Python calls the hooks registered with ``threading._register_atexit`` in
    reverse order before it joins non-daemon threads; ``concurrent.futures``
    joins its workers in one of them. Registered after it, ours runs first: if
    an adapter thread is still alive then, the process ends at once with the
    last session's ``exit_status``, output flushed. Returns whether the hook is
    in place.
    """
    _EXIT_HOOK.exit_status = exit_status
    if _EXIT_HOOK.registered:
        return True
    register = getattr(threading, "_register_atexit", None)
    if register is None or not alive():
        return False
    try:
        register(_EXIT_HOOK)
    except RuntimeError:  # the interpreter is already shutting its threads down
        return False
    _EXIT_HOOK.registered = True
    return True

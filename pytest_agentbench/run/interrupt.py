"""SIGTERM ends a run as Ctrl-C does: the session finishes and writes what ran.

A CI job that is cancelled or times out is usually sent SIGTERM; Python's default
ends the process at once, so a run with ``--agentbench-report`` left no report.
While such a run is on, SIGTERM raises :class:`Terminated` (a ``KeyboardInterrupt``)
in the main thread instead: pytest stops running cases, its session ends with
exit status 2 (interrupted), and the report, the HTML page and JUnit hold every
case that finished (the rest count as missing).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

SigtermHandler = signal.Handlers | int | Any
"""What ``signal.signal`` returns: the handler to put back."""


class Terminated(KeyboardInterrupt):
    """The run was sent SIGTERM."""

    def __str__(self) -> str:
        return "agentbench: SIGTERM received: the run stops and reports what ran"


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def end_on_sigterm() -> SigtermHandler | None:
    """Install the handler (main thread only); the handler it replaced, to restore."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _on_sigterm)


def restore_sigterm(previous: SigtermHandler) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, previous)

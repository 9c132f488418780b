"""Whether a crashed pytest-xdist worker died inside an adapter call.

A worker that dies (``os._exit``, a segfault) takes its case with it; the
controller only learns which node was running. To know whose fault it was,
each worker holds one byte of a small file shared with the controller, mapped
into memory: :func:`.runner.call_adapter` sets it to 1 for the duration of the
adapter call and back to 0 after (two memory writes, no system call). The
byte survives the worker's death, so the controller reads it when it records
the crash: 1 means the crash happened inside the adapter call (``agent_error``);
0 means it happened in our machinery or the world (``harness_error``).

This module holds the flag, which an isolated adapter's process imports too
(without pytest); the controller's side is :mod:`pytest_agentbench.plugin.crash_witness`.
"""

from __future__ import annotations

import mmap
import threading
from pathlib import Path

WORKERINPUT_KEY = "agentbench_adapter_call_flag"


class AdapterCallFlag:
    """This process's flag; inert unless the controller handed it a file.

    Under ``--agentbench-concurrency`` several cases call their adapters at
    once: the flag stays up until the last of those calls returns.
    """

    def __init__(self) -> None:
        self._map: mmap.mmap | None = None
        self._calls = 0
        self._lock = threading.Lock()

    def attach(self, path: Path) -> None:
        with path.open("r+b") as handle:
            self._map = mmap.mmap(handle.fileno(), 1)

    def raise_flag(self) -> None:
        if self._map is not None:
            with self._lock:
                self._calls += 1
                self._map[0] = 1

    def lower_flag(self) -> None:
        if self._map is not None:
            with self._lock:
                self._calls -= 1
                if not self._calls:
                    self._map[0] = 0


ADAPTER_CALL = AdapterCallFlag()

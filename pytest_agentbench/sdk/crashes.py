"""Whether a crashed pytest-xdist worker died inside an adapter call.

A worker that dies (``os._exit``, a segfault) takes its case with it; the
controller only learns which node was running. To know whose fault it was,
each worker holds one byte of a small file shared with the controller, mapped
into memory: :func:`.runner.call_adapter` sets it to 1 for the duration of the
adapter call and back to 0 after (two memory writes, no system call). The
byte survives the worker's death, so the controller reads it when it records
the crash: 1 means the crash happened inside the adapter call (``agent_error``);
0 means it happened in our machinery or the world (``harness_error``).
"""

from __future__ import annotations

import mmap
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

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


def attach_worker(config: pytest.Config) -> None:
    """On an xdist worker: map the flag file the controller created for it."""
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    path = workerinput.get(WORKERINPUT_KEY)
    if path is not None and Path(path).is_file():
        # A remote worker (``--tx socket=`` / ``ssh=``) does not see the controller's
        # file: its flag stays inert, and a crash there counts as the harness's.
        ADAPTER_CALL.attach(Path(path))


class CrashWitness:
    """On the xdist controller: one flag file per worker, read when a worker dies.

    Registered before anyone knows whether the run has benchmarks (workers are
    configured before they collect), so its folder is made only when a worker is.
    """

    def __init__(self) -> None:
        self._directory: Path | None = None

    @property
    def directory(self) -> Path:
        if self._directory is None:
            self._directory = Path(tempfile.mkdtemp(prefix="agentbench-flags-"))
        return self._directory

    @pytest.hookimpl
    def pytest_configure_node(self, node: Any) -> None:
        path = self.directory / str(node.workerinput["workerid"])
        path.write_bytes(b"\0")
        node.workerinput[WORKERINPUT_KEY] = str(path)

    def crashed_in_adapter_call(self, report: pytest.TestReport) -> bool:
        node = getattr(report, "node", None)
        workerinput = getattr(node, "workerinput", None)
        if not isinstance(workerinput, dict) or WORKERINPUT_KEY not in workerinput:
            return False
        try:
            return Path(workerinput[WORKERINPUT_KEY]).read_bytes()[:1] == b"\1"
        except OSError:
            return False

    def close(self) -> None:
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)


WITNESS_KEY = pytest.StashKey[CrashWitness]()
"""The controller's witness, registered by the plugin's facade on every xdist controller."""

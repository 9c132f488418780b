"""The xdist side of the adapter-call flag (:mod:`pytest_agentbench.sdk.crashes`).

The controller makes one flag file per worker and reads it when that worker
dies; each worker maps its own file into memory.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.crashes import ADAPTER_CALL, WORKERINPUT_KEY


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

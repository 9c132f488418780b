"""On the xdist controller: each suite is loaded while its cases still run.

The controller collects nothing, so it loads a suite only to summarise it,
after every worker has finished and nothing else is left to do: for a large
generated suite, seconds added to the end of the run. Loading it when its
first case reports moves that work into the run, where the controller mostly
waits for reports. It loads on the main thread, between two reports, since a
world's data (an SQLite connection, say) must stay usable by the thread that
summarises the suite.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from pytest_agentbench.report.recorder import RunRecorder
from pytest_agentbench.run.session import SuiteLoader
from pytest_agentbench.sdk.errors import AgentbenchError


class SuitePreload:
    def __init__(self, recorder: RunRecorder, loader: SuiteLoader) -> None:
        self.recorder = recorder
        self.loader = loader
        self.seen: set[str] = set()

    # After the relay, which records the identity the setup report carries.
    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "setup":
            return
        identity = self.recorder.identities.get(report.nodeid)
        if identity is None or identity.suite_root in self.seen:
            return
        self.seen.add(identity.suite_root)
        # A refusal is kept by the loader: the summary reports it when it asks again.
        with contextlib.suppress(AgentbenchError):
            self.loader.load(Path(identity.suite_root))

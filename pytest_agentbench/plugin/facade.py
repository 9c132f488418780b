"""The pytest plugin's entry point: options, markers, fixtures, and when benchmarks begin.

Every pytest process of an environment where pytest-agentbench is installed
imports this module, benchmarks or not, so it imports nothing but pytest and
a few small modules of ours. The rest of the plugin
(:mod:`pytest_agentbench.plugin.hooks` and the plugins beside it) is
turned on by :func:`~pytest_agentbench.plugin.activation.activate` when

* the run sets an agentbench option, ini key or chat-model agent environment
  variable (decided at configure time, alike in the xdist controller and
  every worker, which share them);
* pytest collects a file in a suite folder: one holding ``suite.yaml``, or
  every marker file of a layout some registered world declares;
* a test requests one of the plugin's fixtures;
* on the xdist controller, which collects nothing, a worker's report shows a
  benchmark item, a refused suite or a suite census: the workers' decision.

A run with none of these never imports pydantic, a world or a report module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.plugin import fixtures
from pytest_agentbench.plugin import options as plugin_options
from pytest_agentbench.plugin.activation import SESSION_KEY, activate, deliver, is_active
from pytest_agentbench.plugin.suite_finder import SuiteFinder
from pytest_agentbench.run import gc_freeze
from pytest_agentbench.sdk import hookspecs
from pytest_agentbench.sdk.errors import AgentbenchError

# Spelt out rather than imported from report/recorder.py and report/census.py,
# which import pydantic (a test checks they agree).
IDENTITY_ATTR = "agentbench_identity"
REFUSAL_ATTR = "agentbench_refusal"
CENSUS_KEY = "agentbench_census"

FINDER_KEY = pytest.StashKey[SuiteFinder]()
REFUSED_KEY = pytest.StashKey[pytest.UsageError]()
"""A usage error met turning the plugin on during collection, raised once collection ends."""


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    plugin_options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    unknown = plugin_options.unknown_settings(config)
    if unknown:
        # Before anything runs: ignored, a misspelt key would let the run pass without it.
        raise pytest.UsageError("\n".join(setting.render() for setting in unknown))
    gc_freeze.arrange_thaw(config)
    config.addinivalue_line("markers", "agentbench: a benchmark case or control item")
    config.addinivalue_line(
        "markers", "agentbench_control: a negative-control item (--agentbench-controls)"
    )
    config.pluginmanager.register(fixtures, "agentbench-fixtures")
    config.stash[FINDER_KEY] = SuiteFinder(config.pluginmanager)
    controller = not hasattr(config, "workerinput") and config.pluginmanager.hasplugin("xdist")
    if controller and config.getoption("dist", "no") != "no":
        # Workers are configured before anyone knows whether they will collect
        # a suite: each gets its flag file whatever the run holds. Only a run with
        # workers (xdist's distributed session) needs it, or imports it.
        from pytest_agentbench.plugin.crash_witness import WITNESS_KEY, CrashWitness

        witness = config.stash[WITNESS_KEY] = CrashWitness()
        config.pluginmanager.register(witness, "agentbench-crash-witness")
        config.add_cleanup(witness.close)
    if plugin_options.in_use(config) is not None:
        activate(config)
    elif controller:
        if config.getoption("dist", "no") != "no" and not _worlds_register(config):
            # A worker would meet the broken registration while collecting, where
            # its usage error could not end the session: the plugin's configure says it.
            activate(config)
        config.pluginmanager.register(WorkerReports(config), "agentbench-worker-reports")


def _worlds_register(config: pytest.Config) -> bool:
    try:
        config.stash[FINDER_KEY].world_markers()
    except AgentbenchError:
        return False
    return True


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[SESSION_KEY] = session


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    if is_active(config):
        return None  # the benchmark plugin's own hook collects
    try:
        in_suite = config.stash[FINDER_KEY].in_suite(file_path)
    except AgentbenchError:
        in_suite = True  # a broken world registration: the benchmark plugin refuses it
    if not in_suite:
        return None
    try:
        registered = activate(config)
    except pytest.UsageError as exc:
        # Raised here, pytest would report it as this folder's collection error.
        config.stash[REFUSED_KEY] = exc
        return None
    collected = deliver(
        config, registered, "pytest_collect_file", file_path=file_path, parent=parent
    )
    return next((collector for collector in collected if collector is not None), None)


def pytest_collection_modifyitems(config: pytest.Config) -> None:
    refused = config.stash.get(REFUSED_KEY, None)
    if refused is not None:
        # As at configure time: the session ends with pytest's usage-error status.
        raise refused


class WorkerReports:
    """On the xdist controller: turns the plugin on when the workers' reports show benchmarks.

    Each worker decides while it collects, which the controller does not do.
    A worker that turned the plugin on sends reports carrying a benchmark
    item's identity or a suite's refusal, and its census when it finishes;
    the first of them turns the plugin on here too and is handed to the plugins
    that activation registered.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def _watching(self) -> bool:
        if is_active(self.config):
            self.config.pluginmanager.unregister(self)
            return False
        return True

    def _activate(self, hook_name: str, **kwargs: Any) -> None:
        deliver(self.config, activate(self.config), hook_name, **kwargs)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if self._watching() and hasattr(report, REFUSAL_ATTR):
            self._activate("pytest_collectreport", report=report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self._watching() and hasattr(report, IDENTITY_ATTR):
            self._activate("pytest_runtest_logreport", report=report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None)
        if self._watching() and isinstance(output, dict) and CENSUS_KEY in output:
            self._activate("pytest_testnodedown", node=node, error=error)

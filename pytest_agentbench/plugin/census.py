"""Which cases of each suite a run selected, so a partial run cannot pass for a whole one.

Every process that collects (the only one, or each xdist worker) counts, per
suite folder, the node ids of the case items left after deselection (``-k``,
``-m``, ``--deselect``, ``--lf``, ``--agentbench-controls``), and lists the
suites it loaded with none selected. A worker hands its census to the
controller in ``workeroutput`` when it finishes; every worker collects the
same items, so one worker that finishes is enough.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from pytest_agentbench.plugin.collect import CaseItem
from pytest_agentbench.plugin.relay import wire_root
from pytest_agentbench.run.session import SuiteLoader

WORKEROUTPUT_KEY = "agentbench_census"

Census = dict[str, list[str]]
"""Suite folder (as :func:`.relay.wire_root` names it) -> node ids of its selected case items."""


def take_census(items: Iterable[pytest.Item], loader: SuiteLoader, config: pytest.Config) -> Census:
    census: Census = {wire_root(config, loaded.suite): [] for loaded in loader.loaded()}
    for item in items:
        if isinstance(item, CaseItem):
            census.setdefault(wire_root(config, item.loaded.suite), []).append(item.nodeid)
    return census


def merge(into: dict[str, set[str]], census: Mapping[str, Iterable[str]]) -> None:
    for root, nodeids in census.items():
        into.setdefault(root, set()).update(nodeids)


class WorkerCensus:
    """On the xdist controller: gathers each worker's census as it finishes."""

    def __init__(self, selected: dict[str, set[str]], local_root: Callable[[str], str]) -> None:
        self.selected = selected
        self.local_root = local_root
        """A folder as a worker names it, as a path here (``RunRecorder.local_root``)."""

    @pytest.hookimpl
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None)
        if isinstance(output, dict) and isinstance(output.get(WORKEROUTPUT_KEY), dict):
            census = output[WORKEROUTPUT_KEY]
            merge(self.selected, {self.local_root(root): ids for root, ids in census.items()})

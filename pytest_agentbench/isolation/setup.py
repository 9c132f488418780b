"""Choosing the configured adapter of an isolated run, per kind of pytest process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pytest_agentbench.isolation.host import IsolatedAdapters
from pytest_agentbench.sdk.registry import KindProtocols


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _is_xdist_controller(config: pytest.Config) -> bool:
    # pytest-xdist sets ``dist`` to "no" unless it will start workers (``-n 0`` included).
    return not _is_xdist_worker(config) and getattr(config.option, "dist", "no") != "no"


def configured_adapter(
    config: pytest.Config, isolation: IsolatedAdapters, spec: str, kinds: Sequence[KindProtocols]
) -> Any:
    """The value of ``agentbench_adapter`` for ``--agentbench-adapter`` in an isolated run.

    The process that reports (the controller, or the only process) loads the
    spec in a child at once, so a bad spec is a usage error before any case
    runs. A single process keeps that child for its cases; an xdist controller
    runs no case and ends it. A worker defers everything to its first case.
    """
    if _is_xdist_worker(config):
        return isolation.pending(spec, kinds)
    try:
        adapter = isolation.load_spec(spec, kinds)
    except BaseException:
        isolation.close()
        raise
    if _is_xdist_controller(config):
        isolation.close()
    return adapter

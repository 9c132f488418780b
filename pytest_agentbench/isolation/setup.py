"""Choosing the configured adapter of an isolated run, per kind of pytest process."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.isolation.forwarding import forwarded_settings
from pytest_agentbench.isolation.host import (
    STARTUP_SETTING,
    IsolatedAdapters,
    namespace_available,
)
from pytest_agentbench.isolation.pool import IsolatedPool
from pytest_agentbench.run.adapters import AdapterFolders
from pytest_agentbench.sdk.errors import UsageError
from pytest_agentbench.sdk.registry import KindProtocols
from pytest_agentbench.sdk.runner import parse_timeout


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _is_xdist_controller(config: pytest.Config) -> bool:
    # pytest-xdist sets ``dist`` to "no" unless it will start workers (``-n 0`` included).
    return not _is_xdist_worker(config) and getattr(config.option, "dist", "no") != "no"


def configured_adapter(
    config: pytest.Config,
    isolation: IsolatedAdapters | IsolatedPool,
    spec: str,
    kinds: Sequence[KindProtocols],
    folders: AdapterFolders,
) -> Any:
    """The value of ``agentbench_adapter`` for ``--agentbench-adapter`` in an isolated run.

    The process that reports (the controller, or the only process) loads the
    spec in a child at once, so a bad spec is a usage error before any case
    runs. A single process keeps that child for its cases; an xdist controller
    runs no case and ends it. A worker defers everything to its first case.
    Every kind of process first puts the folder holding the adapter's module on
    its ``sys.path`` (``folders``), which the child starts from; nothing is imported
    here.
    """
    folders.put_on_path(spec.partition(":")[0])
    if _is_xdist_worker(config):
        return isolation.pending(spec, kinds)
    try:
        adapter = isolation.load_spec(spec, kinds, folders)
    except BaseException:
        isolation.close()
        raise
    if _is_xdist_controller(config):
        isolation.close()
    return adapter


def isolated_adapters(
    config: pytest.Config, timeout: float, oracle_roots: Sequence[Path], concurrency: int = 1
) -> IsolatedAdapters | IsolatedPool:
    """The adapter-process host of an isolated run, as the ini file and session configure it.

    With ``concurrency`` above 1 (``--agentbench-concurrency``), a pool of that
    many hosts, one case at a time each.

    Refuses the run (a usage error) when the start-up allowance is invalid, a
    requested user namespace is unavailable, or the settings an adapter reads
    cannot be handed to its process.
    """
    try:
        startup_timeout = parse_timeout(config.getini(STARTUP_SETTING))
    except ValueError as exc:
        raise UsageError("invalid_timeout", str(exc), field=STARTUP_SETTING) from None
    namespace = bool(config.getini("agentbench_isolate_namespace"))
    if namespace:
        unavailable = namespace_available()
        if unavailable is not None:
            raise UsageError(
                "isolation_namespace_unavailable",
                f"the isolated adapter cannot run in a user namespace here: {unavailable}",
                field="agentbench_isolate_namespace",
            )
    host_options: dict[str, Any] = {
        "startup_timeout": startup_timeout,
        "settings": forwarded_settings(),
        "protected": (config.rootpath, *oracle_roots),
        "namespace": namespace,
    }
    if concurrency > 1:
        return IsolatedPool(concurrency, timeout, **host_options)
    return IsolatedAdapters(timeout, **host_options)

"""Turning the plugin on, once per process, when a run turns out to have benchmarks.

The facade (:mod:`pytest_agentbench.plugin.facade`) is all a run without benchmarks
loads. :func:`activate` registers the plugins that collect suites, run cases
and write reports. It may happen late: while pytest collects, while a fixture
is set up, or on the xdist controller when the first report of a benchmark
item arrives. pluggy replays the historic hooks to a plugin registered late
(``pytest_configure``; ``pytest_plugin_registered``, through which pytest finds
its fixtures). Of the others, each plugin gets ``pytest_sessionstart`` here if
the session has begun, and the caller hands it the hook call that triggered
the activation with :func:`deliver`; a plugin registered during a hook call
is not called by it. Only the terminal header, printed before collection,
cannot be caught up on.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

PLUGINS = (
    # In this order, which is the order their pytest_configure must run in:
    # the chat-model agent's settings before the adapter is built.
    "pytest_agentbench.plugin.model_options",
    "pytest_agentbench.plugin.command_options",
    "pytest_agentbench.plugin.hooks",
    "pytest_agentbench.plugin.baseline_options",
    "pytest_agentbench.scoring.trials",
    "pytest_agentbench.plugin.rerun",
    "pytest_agentbench.testing.plugin",
    "pytest_agentbench.plugin.judged",
)

ACTIVE_KEY = pytest.StashKey[tuple[object, ...]]()
"""Set once the plugin is on: the plugins :func:`activate` registered."""
SESSION_KEY = pytest.StashKey[pytest.Session]()
"""The session, once it has started (the facade stores it)."""


def is_active(config: pytest.Config) -> bool:
    return ACTIVE_KEY in config.stash


def activate(config: pytest.Config) -> tuple[object, ...]:
    """Register the plugins of a benchmark run unless they are; return those registered now.

    A usage error found while doing so (a broken world registration, say)
    unregisters them again and is raised: the plugin stays off.
    """
    if ACTIVE_KEY in config.stash:
        return ()
    pluginmanager = config.pluginmanager
    config.stash[ACTIVE_KEY] = ()
    before = {id(plugin) for plugin in pluginmanager.get_plugins()}
    try:
        for name in PLUGINS:
            if pluginmanager.get_plugin(name) is None and not pluginmanager.is_blocked(name):
                pluginmanager.register(importlib.import_module(name), name)
    except pytest.UsageError:
        for plugin in pluginmanager.get_plugins():
            if id(plugin) not in before:
                pluginmanager.unregister(plugin)
        raise
    registered = tuple(p for p in pluginmanager.get_plugins() if id(p) not in before)
    config.stash[ACTIVE_KEY] = registered
    session = config.stash.get(SESSION_KEY, None)
    if session is not None:
        deliver(config, registered, "pytest_sessionstart", session=session)
    return registered


def deliver(
    config: pytest.Config, plugins: tuple[object, ...], hook_name: str, **kwargs: Any
) -> list[Any]:
    """Call ``hook_name`` (not a ``firstresult`` hook) on ``plugins`` alone.

    For the call during which they were registered: pluggy calls the plugins
    a hook had when the call began.
    """
    if not plugins:
        return []
    others = [plugin for plugin in config.pluginmanager.get_plugins() if plugin not in plugins]
    results: list[Any] = config.pluginmanager.subset_hook_caller(hook_name, others)(**kwargs)
    return results

"""The chat-model agent's pytest options and ini keys, resolved (a plugin of benchmark runs).

Resolved once per process at configure time, so an invalid setting is a usage
error before any case runs; the agent reads them when it is built.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_agentbench.agents.settings import configure, resolve_settings
from pytest_agentbench.plugin import options as plugin_options
from pytest_agentbench.sdk.errors import AgentbenchError


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    folder = config.getoption("agentbench_cassettes")
    pricing = config.getoption("agentbench_pricing")
    overrides = {
        "cassettes": None if folder is None else str(Path(folder).resolve()),
        "cassette_mode": config.getoption("agentbench_cassette_mode"),
        **{name: config.getoption(f"agentbench_{name}") for name in plugin_options.RUN_LIMITS},
        "pricing": None if pricing is None else str(Path(pricing).resolve()),
    }

    def ini(key: str) -> str | None:
        value = config.getini(key)
        return str(value) if value else None

    try:
        configure(
            resolve_settings(ini=ini, environ=os.environ, overrides=overrides, root=config.rootpath)
        )
    except AgentbenchError as exc:
        raise pytest.UsageError(exc.render()) from None


def pytest_unconfigure(config: pytest.Config) -> None:
    configure(None)

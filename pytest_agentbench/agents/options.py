"""The chat-model agent's pytest options and ini keys (a plugin the main plugin loads).

Resolved once per process at configure time, so an invalid setting is a usage
error before any case runs; the agent reads them when it is built.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import get_args

import pytest

from pytest_agentbench.agents.settings import (
    SOURCES,
    CassetteMode,
    configure,
    resolve_settings,
)
from pytest_agentbench.errors import AgentbenchError


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentbench")
    group.addoption(
        "--agentbench-cassettes",
        metavar="DIR",
        help="record/replay the chat-model agent's requests in DIR (one JSON file per request)",
    )
    group.addoption(
        "--agentbench-cassette-mode",
        choices=get_args(CassetteMode),
        help="record, replay or off (default: replay when DIR exists, else record)",
    )
    for name, (ini_key, env_key) in SOURCES.items():
        parser.addini(ini_key, f"chat-model agent setting {name} (environment: {env_key})")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    folder = config.getoption("agentbench_cassettes")
    overrides = {
        "cassettes": None if folder is None else str(Path(folder).resolve()),
        "cassette_mode": config.getoption("agentbench_cassette_mode"),
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

"""``--agentbench-agent-command`` and its transport, resolved (a plugin of benchmark runs).

Resolved once per process at configure time, so a bad command line or
transport is a usage error before any case runs, and a missing MCP SDK too.
The :class:`~pytest_agentbench.agents.command.CommandAgent` reads them when it
is built (an isolated adapter process is handed them whole, see
:mod:`pytest_agentbench.isolation.forwarding`).
"""

from __future__ import annotations

import os
import sys

import pytest

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.runner import parse_timeout


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    option = config.getoption("agentbench_agent_command", None)
    text = option or config.getini("agentbench_agent_command")
    if not text:
        return
    # Imported only by runs that name a command: the MCP SDK is an optional extra.
    from pytest_agentbench.agents.command import (
        CommandSettings,
        configure_command,
        parse_command,
        parse_transport,
    )
    from pytest_agentbench.agents.mcp_server import require_mcp

    field = "--agentbench-agent-command" if option else "agentbench_agent_command"
    transport_option = config.getoption("agentbench_agent_transport", None)
    transport_text = transport_option or config.getini("agentbench_agent_transport") or "http"
    transport_field = (
        "--agentbench-agent-transport" if transport_option else "agentbench_agent_transport"
    )
    timeout_text = config.getoption("agentbench_timeout", None)
    if timeout_text is None:
        timeout_text = config.getini("agentbench_timeout")
    try:
        require_mcp()
        settings = CommandSettings(
            command=parse_command(str(text), field),
            transport=parse_transport(str(transport_text), transport_field),
            # An invalid limit is refused, with its own code, by the run's options.
            timeout_s=_limit(timeout_text),
            cwd=os.getcwd(),
        )
    except AgentbenchError as exc:
        raise pytest.UsageError(exc.render()) from None
    configure_command(settings)


def _limit(text: object) -> float:
    try:
        return parse_timeout(text)
    except ValueError:
        return 0.0


def pytest_unconfigure(config: pytest.Config) -> None:
    command = sys.modules.get("pytest_agentbench.agents.command")
    if command is not None:
        command.configure_command(None)

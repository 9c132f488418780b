"""Any agent command (any language, any framework) as a ``ToolAgent``, over MCP.

``CommandAgent.solve(task, session)`` serves the case's session as an MCP
server (:mod:`.mcp_server`), starts the configured command once for the case
and takes its final answer from the ``submit_answer`` tool (or, over HTTP,
from its stdout as JSON). The command is the MCP *client*:

- ``http``: the server listens on a fresh loopback port of the process that
  runs the adapter; the command gets its URL in ``AGENTBENCH_MCP_URL``;
- ``stdio``: the command's own stdin and stdout are the MCP channel (it writes
  requests to stdout, one JSON-RPC message per line, and reads answers on
  stdin). No socket at all, so it works under every sandbox.

Either way the command also gets ``AGENTBENCH_TASK`` (the world's public task
view as canonical JSON), ``AGENTBENCH_FINAL_SCHEMA`` (when the world publishes
one), ``AGENTBENCH_MCP_TRANSPORT`` and the run's model endpoint
(``AGENTBENCH_LLM_BASE_URL``, ``_MODEL``, ``_API_KEY_ENV``, as resolved); every
inherited ``AGENTBENCH_*`` variable is removed, so nothing about where
evaluator data lives reaches it. The command runs in its
own process group, dies with the process that started it (Linux), and is
killed, group and all, when it ends, fails or outlives the case limit.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any, Literal

from pytest_agentbench.agents.mcp_server import CaseServer, require_mcp
from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.tools import ToolSessionLike

Transport = Literal["http", "stdio"]
TRANSPORTS: tuple[Transport, ...] = ("http", "stdio")

STDERR_TAIL_CHARS = 400
"""How much of a failed command's stderr its failure reason quotes."""
POLL_S = 0.02
"""How often the serving loop looks whether the command has exited."""


class AgentCommandError(AgentbenchError):
    """The agent command failed its case: a stable code, classified as agent_error."""


@dataclass(frozen=True)
class CommandSettings:
    """What the pytest session resolved (``--agentbench-agent-command`` and its ini keys)."""

    command: tuple[str, ...]
    transport: Transport = "http"
    timeout_s: float = 0.0
    """The case limit (``--agentbench-timeout``), also enforced here off the main thread."""
    cwd: str | None = None
    """Where the command runs: the invocation folder."""


def parse_command(text: str, field: str) -> tuple[str, ...]:
    """A command line split as a POSIX shell would (no shell runs it)."""
    try:
        argv = tuple(shlex.split(text))
    except ValueError as exc:
        raise AgentbenchError("invalid_agent_command", f"{text!r}: {exc}", field=field) from None
    if not argv:
        raise AgentbenchError("invalid_agent_command", "the command is empty", field=field)
    return argv


def parse_transport(text: str, field: str) -> Transport:
    for transport in TRANSPORTS:
        if text == transport:
            return transport
    raise AgentbenchError(
        "invalid_agent_transport", f"{text!r} is not one of http, stdio", field=field
    )


class _Configured:
    settings: CommandSettings | None = None


def configure_command(settings: CommandSettings | None) -> None:
    """Remember the session's command settings (an isolated process is handed them)."""
    _Configured.settings = settings


def configured_command() -> CommandSettings | None:
    return _Configured.settings


def agent_environment(
    task: Mapping[str, Any],
    final_schema: Mapping[str, Any] | None,
    transport: Transport,
    url: str | None,
    inherited: Mapping[str, str],
) -> dict[str, str]:
    """The command's environment: the inherited one without the harness's own
    ``AGENTBENCH_*`` variables (model endpoint settings kept), plus the case's."""
    environment = {
        key: value for key, value in inherited.items() if not key.startswith("AGENTBENCH_")
    }
    environment.update(model_environment())
    environment["AGENTBENCH_TASK"] = canonical_json(dict(task))
    environment["AGENTBENCH_MCP_TRANSPORT"] = transport
    if final_schema is not None:
        environment["AGENTBENCH_FINAL_SCHEMA"] = canonical_json(dict(final_schema))
    if url is not None:
        environment["AGENTBENCH_MCP_URL"] = url
    return environment


def model_environment() -> dict[str, str]:
    """The run's model endpoint as ``AGENTBENCH_LLM_*`` variables, from the resolved chat
    settings (an isolated process has them handed over, never in its environment)."""
    from pytest_agentbench.agents.settings import configured_settings

    try:
        settings = configured_settings()
    except AgentbenchError:  # outside pytest, with a bad variable: nothing to hand on
        return {}
    found = {
        "AGENTBENCH_LLM_BASE_URL": settings.base_url,
        "AGENTBENCH_LLM_MODEL": settings.model,
        "AGENTBENCH_LLM_API_KEY_ENV": settings.api_key_env,
    }
    return {key: value for key, value in found.items() if value}


def _die_with_parent() -> None:
    """In the command's process before it runs: SIGKILL it when its parent dies, so an
    isolated adapter process killed at its case limit takes the command with it."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):  # a zombie not reaped yet
        process.wait(timeout=5)


def _tail(stream: IO[bytes]) -> str:
    text = _tail_all(stream)
    if len(text) > STDERR_TAIL_CHARS:
        text = "..." + text[-STDERR_TAIL_CHARS:]
    return text


class CommandAgent:
    """Runs the configured agent command once per case, connected to the case's MCP server."""

    def __init__(self, settings: CommandSettings | None = None) -> None:
        chosen = settings or configured_command()
        if chosen is None:
            raise AgentCommandError(
                "agent_command_missing",
                "no agent command (--agentbench-agent-command / agentbench_agent_command)",
                field="--agentbench-agent-command",
            )
        self.settings = chosen
        require_mcp()

    def solve(self, task: dict[str, Any], session: ToolSessionLike) -> Any:
        import anyio

        settings = self.settings
        server = CaseServer(session, task)
        listener: socket.socket | None = None
        url: str | None = None
        if settings.transport == "http":
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # In a sandbox, the one port the harness granted this process (Landlock names ports).
            port = int(os.environ.get("AGENTBENCH_MCP_PORT", "0"))
            try:
                listener.bind(("127.0.0.1", port))
                listener.listen(16)
            except OSError as exc:
                listener.close()
                raise AgentCommandError(
                    "agent_transport_unavailable",
                    f"cannot listen on loopback for the MCP server ({exc}); "
                    "use --agentbench-agent-transport stdio",
                    field="--agentbench-agent-transport",
                ) from None
            # A path nobody can guess: another local process cannot call this case's tools.
            url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp/{secrets.token_hex(8)}"
        environment = agent_environment(
            task, session.final_schema, settings.transport, url, os.environ
        )
        # Files, not pipes: a chatty command never blocks on a full pipe nobody reads.
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in the finally below)
        stdout = None if settings.transport == "stdio" else tempfile.TemporaryFile()  # noqa: SIM115
        try:
            process = subprocess.Popen(
                settings.command,
                stdin=subprocess.PIPE if settings.transport == "stdio" else subprocess.DEVNULL,
                stdout=subprocess.PIPE if stdout is None else stdout,
                stderr=stderr,
                env=environment,
                cwd=settings.cwd,
                start_new_session=True,
                # Async-signal-safe enough: one prctl through ctypes, no lock taken.
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,  # noqa: PLW1509
            )
        except OSError as exc:
            stderr.close()
            if listener is not None:
                listener.close()
            raise AgentCommandError(
                "agent_command_failed",
                f"cannot start {settings.command[0]!r}: {exc.strerror or exc}",
                field="--agentbench-agent-command",
            ) from None
        deadline = None if settings.timeout_s <= 0 else time.monotonic() + settings.timeout_s
        try:
            try:
                timed_out = anyio.run(_serve, server, process, listener, url, deadline)
            finally:
                # Whatever ended the serving (the command, the limit, the case's own
                # alarm): nothing the command started outlives it.
                _kill_group(process)
                _close_pipes(process)
                if listener is not None:
                    listener.close()
            if timed_out:
                raise AgentCommandError(
                    "agent_command_timeout",
                    f"the agent command ran past the case limit of {settings.timeout_s:g}s "
                    "and was killed with its process group",
                )
            if process.returncode != 0:
                raise AgentCommandError(
                    "agent_command_failed",
                    f"the agent command exited with status {process.returncode}; stderr: "
                    f"{_tail(stderr) or '(empty)'}",
                )
            if server.answered:
                return server.answer
            printed = "" if stdout is None else _tail_all(stdout)
            if printed:
                # The world parses it strictly: malformed JSON is the case's product_error.
                return printed
            raise AgentCommandError(
                "agent_command_no_answer",
                "the agent command exited without calling submit_answer"
                + ("" if stdout is None else " or printing an answer on stdout"),
            )
        finally:
            stderr.close()
            if stdout is not None:
                stdout.close()


def _close_pipes(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):
                pipe.close()


def _tail_all(stream: IO[bytes]) -> str:
    stream.seek(0)
    return stream.read().decode("utf-8", "replace").strip()


async def _serve(
    server: CaseServer,
    process: subprocess.Popen[bytes],
    listener: socket.socket | None,
    url: str | None,
    deadline: float | None,
) -> bool:
    """Serve ``server`` until the command exits; True when the deadline passed first."""
    import anyio

    low = server.build()
    async with anyio.create_task_group() as group:
        if listener is None:
            group.start_soon(_serve_stdio, low, process)
        else:
            assert url is not None
            http = _http_server(low, listener, url)
            group.start_soon(http.serve, [listener])
        timed_out = False
        while process.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                timed_out = True
                break
            await anyio.sleep(POLL_S)
        if timed_out:
            _kill_group(process)
        if listener is not None:
            http.should_exit = True
        else:
            group.cancel_scope.cancel()
    return timed_out


async def _serve_stdio(low: Any, process: subprocess.Popen[bytes]) -> None:
    import io

    import anyio

    assert process.stdin is not None
    assert process.stdout is not None
    reader = anyio.wrap_file(io.TextIOWrapper(process.stdout, encoding="utf-8", errors="replace"))
    writer = anyio.wrap_file(io.TextIOWrapper(process.stdin, encoding="utf-8"))
    from mcp.server.stdio import stdio_server

    try:
        async with stdio_server(reader, writer) as (read_stream, write_stream):
            await low.run(read_stream, write_stream, low.create_initialization_options())
    except (BrokenPipeError, ValueError, OSError):
        # The command closed its end (or exited) while an answer was on its way.
        pass


def _http_server(low: Any, listener: socket.socket, url: str) -> Any:
    import uvicorn

    path = "/" + url.split("/", 3)[3]
    app = low.streamable_http_app(streamable_http_path=path, json_response=True)
    config = uvicorn.Config(
        app, log_level="critical", lifespan="on", access_log=False, timeout_graceful_shutdown=2
    )
    return uvicorn.Server(config)

"""``agentbench worker-server HOST:PORT``: one machine's xdist workers over execnet sockets.

pytest-xdist starts a remote worker with ``--tx socket=HOST:PORT``: execnet connects,
sends one line (the ``repr`` of its bootstrap source) and the server executes it; the
bootstrap then serves the worker over that socket until the run ends. execnet's own
``socketserver.py`` executes one connection at a time, in its own interpreter: under
``--tx 2*socket=HOST:PORT`` the second worker waits for the first, which waits for the
run, and xdist hangs at "bringing up nodes"; a second run reuses the first run's
interpreter (its imports and module state).

This server forks a fresh child per connection, so every worker of every run starts
from the same pristine interpreter, any number at once. The trust model is execnet's:
it executes whatever connects, so bind it to a trusted network only (loopback by
default). It runs until interrupted; ``--once N`` serves N connections and exits
(what a test or a one-off job wants).
"""

from __future__ import annotations

import argparse
import ast
import os
import socket
import sys
from typing import Any

from pytest_agentbench.sdk.errors import AgentbenchError

BANNER = "agentbench worker-server listening on"
"""The first line printed, followed by ``HOST:PORT`` (the port chosen when 0 was given)."""

MAX_BOOTSTRAP_BYTES = 1 << 20
"""execnet's bootstrap line is a few kilobytes; a longer line is not execnet's."""


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise AgentbenchError(
            "worker_server_address", f"worker-server: address {text!r} is not HOST:PORT"
        )
    return host or "127.0.0.1", int(port)


def serve_connection(connection: socket.socket, address: Any) -> None:
    """In the forked child: read execnet's bootstrap line and execute it, as execnet's
    socket server does (the bootstrap expects ``clientsock``, ``address`` and
    ``execmodel`` in its globals)."""
    from execnet.gateway_base import get_execmodel

    with connection.makefile("rb") as lines:
        line = lines.readline(MAX_BOOTSTRAP_BYTES).rstrip()
    # execnet sends repr(source): a literal string, never an expression to evaluate.
    source = ast.literal_eval(line.decode("utf-8"))
    if not isinstance(source, str) or not source:
        return
    namespace: dict[str, Any] = {
        "clientsock": connection,
        "address": address,
        "execmodel": get_execmodel("thread"),
    }
    exec(compile(source + "\n", "<agentbench worker-server>", "exec"), namespace)


def run_server(listener: socket.socket, *, connections: int | None) -> None:
    """Accept connections and fork a child for each; ended children are reaped at each
    accept, and all of them before returning."""
    served = 0
    while connections is None or served < connections:
        connection, address = listener.accept()
        _reap(block=False)
        served += 1
        child = os.fork()
        if child == 0:
            listener.close()
            status = 0
            try:
                serve_connection(connection, address)
            except BaseException as error:  # the worker's end is the child's end
                print(f"worker-server: connection from {address}: {error!r}", file=sys.stderr)
                status = 1
            finally:
                os._exit(status)
        connection.close()
    listener.close()
    _reap(block=True)


def _reap(*, block: bool) -> None:
    """Collect ended children (with ``block``, wait for every child)."""
    try:
        while os.waitpid(-1, 0 if block else os.WNOHANG)[0] != 0:
            pass
    except ChildProcessError:
        pass


def cmd_worker_server(args: argparse.Namespace, _registry: object) -> int:
    if not hasattr(os, "fork"):
        raise AgentbenchError(
            "worker_server_unsupported", "worker-server: this platform has no fork()"
        )
    host, port = parse_address(args.address)
    listener = socket.create_server((host, port), reuse_port=False, backlog=64)
    if args.chdir is not None:
        os.chdir(args.chdir)
    bound_host, bound_port = listener.getsockname()[:2]
    print(f"{BANNER} {bound_host}:{bound_port}", flush=True)
    try:
        run_server(listener, connections=args.once)
    except KeyboardInterrupt:
        return 0
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser(
        "worker-server",
        help="serve pytest-xdist socket workers (--tx N*socket=HOST:PORT), one fork each",
    )
    parser.add_argument(
        "address",
        nargs="?",
        default="127.0.0.1:8888",
        help="HOST:PORT to listen on (default 127.0.0.1:8888; port 0 picks a free one)",
    )
    parser.add_argument("--chdir", default=None, help="the folder workers start in")
    parser.add_argument(
        "--once", type=int, default=None, metavar="N", help="exit after serving N connections"
    )
    parser.set_defaults(handler=cmd_worker_server)

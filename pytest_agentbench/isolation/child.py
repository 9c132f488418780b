"""The isolated adapter process: ``python -m pytest_agentbench.isolation.child FD PARENT_PID``.

It holds the adapter and nothing of the harness: no suite, no oracle folder
path, no loaded oracle. It receives the adapter's recipe and, per call, the
arguments the world passes (public views); it answers with the adapter's
return value as JSON. Tool calls the adapter makes through a session argument
travel back to the harness on the same connection while the call is open.

Of the plugin it imports only :mod:`.protocol` (standard library); unpickling a
view imports the modules that define the view's types, and loading the
adapter imports the adapter's module.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import inspect
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from pytest_agentbench.isolation.protocol import (
    MAX_MESSAGE_BYTES,
    describe_raised,
    json_message,
    json_text,
    shape,
    unpickle_from_parent,
)


class LocalToolCallError(Exception):
    """Raised by :meth:`RemoteToolSession.call` for a refused tool call.

    Stands in for ``pytest_agentbench.tools.ToolCallError`` where that module
    is not installed; carries the same ``code`` and ``message``.
    """

    def __init__(self, code: str, message: str, *, field: str | None = None) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = self.reason = message
        self.field = field


@functools.cache
def _tool_call_error() -> type[Exception]:
    try:
        module = importlib.import_module("pytest_agentbench.tools")
        error: type[Exception] = module.ToolCallError
    except (ImportError, AttributeError):
        return LocalToolCallError
    return error


@dataclass(frozen=True)
class RemoteToolSpec:
    """A tool as the adapter sees it: everything of the harness's spec but the handler."""

    name: str
    description: str
    parameters: dict[str, Any]
    mutating: bool = False
    privileged: bool = False


@dataclass(frozen=True)
class RemoteBudget:
    """The session's budget as the adapter sees it."""

    max_calls: int | None = None
    max_bytes: int | None = None


class RemoteToolSession:
    """The child's stand-in for the world's tool session.

    ``call``, ``close`` and the usage counters are answered by the world's
    session in the harness; the tools, their exports, the budget and the final
    answer's schema are copies taken when the call began.
    """

    def __init__(self, link: Link, call_id: int, spec: Mapping[str, Any]) -> None:
        self._link = link
        self._call_id = call_id
        self._index: int = spec["index"]
        self.tools = tuple(RemoteToolSpec(**tool) for tool in spec["tools"])
        self.budget = None if spec.get("budget") is None else RemoteBudget(**spec["budget"])
        self.final_schema: Any = copy.deepcopy(spec.get("final_schema"))
        self._exports: dict[str, Any] = dict(spec.get("exports", {}))

    def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> Any:
        return self._link.tool_request(self._call_id, self._index, "call", name, arguments)

    def close(self) -> None:
        with contextlib.suppress(_tool_call_error()):
            self._link.tool_request(self._call_id, self._index, "close")

    @property
    def calls_used(self) -> Any:
        return self._state("calls_used")

    @property
    def bytes_used(self) -> Any:
        return self._state("bytes_used")

    @property
    def closed(self) -> Any:
        return self._state("closed")

    def _state(self, name: str) -> Any:
        state = self._link.tool_request(self._call_id, self._index, "state")
        if name not in state:
            raise AttributeError(f"the harness's tool session has no {name}")
        return state[name]

    def openai_tools(self) -> Any:
        return self._export("openai_tools")

    def mcp_tools(self) -> Any:
        return self._export("mcp_tools")

    def _export(self, name: str) -> Any:
        if name not in self._exports:
            raise AttributeError(f"the harness's tool session offers no {name}()")
        return copy.deepcopy(self._exports[name])


class Link:
    """The child's end of the connection.

    One lock serialises every use of the connection. The serving loop holds it
    while idle and releases it while the adapter runs, so threads of the
    adapter can make tool calls; a tool call from a session whose call has
    ended is refused here, without reaching the harness.
    """

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.lock = threading.Lock()
        self.current_call: int | None = None

    def receive(self) -> dict[str, Any]:
        message: dict[str, Any] = unpickle_from_parent(self.connection.recv_bytes())
        return message

    def send(self, data: bytes) -> None:
        self.connection.send_bytes(data)

    def tool_request(
        self,
        call_id: int,
        session: int,
        kind: str,
        name: str | None = None,
        arguments: Mapping[str, Any] | str | None = None,
    ) -> Any:
        """Ask the harness's session to ``call`` a tool, ``close``, or report its ``state``."""
        error = _tool_call_error()
        with self.lock:
            if self.current_call != call_id:
                raise error("session_closed", "the call this session belongs to has ended")
            try:
                payload = json_message(
                    "tool_call",
                    {"call": call_id, "session": session, "kind": kind, "name": name},
                    json_text(
                        arguments
                        if arguments is None or isinstance(arguments, str)
                        else dict(arguments)
                    ),
                )
            except (TypeError, ValueError) as exc:
                raise error("invalid_arguments", f"arguments are not JSON: {exc}") from None
            self.send(payload)
            reply = self.receive()
        if reply["op"] == "tool_result":
            return reply["value"]
        if reply.get("field"):
            raise error(reply["code"], reply["message"], field=reply["field"])  # type: ignore[call-arg]
        raise error(reply["code"], reply["message"])


def _import_target(spec: str) -> Any:
    """The object ``module:attr.path`` names; failures carry the load step as their code."""
    module_name, _, attr_path = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except BaseException as exc:
        raise _LoadRefused("adapter_import", exc) from None
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise _LoadRefused("adapter_attribute", exc) from None
    return target


class _LoadRefused(Exception):
    def __init__(self, code: str, cause: BaseException) -> None:
        super().__init__(code)
        self.code = code
        self.cause = cause


class Server:
    """The serving loop: loads adapters, runs calls, answers the harness."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.adapters: dict[int, Any] = {}
        self.blobs: dict[str, Any] = {}

    def serve(self) -> None:
        link = self.link
        link.lock.acquire()
        while True:
            try:
                message = link.receive()
            except (EOFError, OSError):
                os._exit(0)
            op = message["op"]
            if op == "shutdown":
                # Threads the adapter leaked must not hold the process open.
                os._exit(0)
            if op == "init":
                sys.path[:] = message["sys_path"]
                link.send(json_message("ready", {"pid": os.getpid()}))
            elif op == "resolve":
                link.send(self.resolve(message["spec"]))
            elif op == "load":
                link.send(self.load(message))
            elif op == "call":
                link.current_call = message["call"]
                link.lock.release()
                try:
                    reply = self.call(message)
                finally:
                    link.lock.acquire()
                    link.current_call = None
                link.send(reply)

    def resolve(self, spec: str) -> bytes:
        try:
            target = _import_target(spec)
        except _LoadRefused as refused:
            return self._refused(refused)
        return json_message(
            "resolved",
            {
                "is_class": inspect.isclass(target),
                "callable": callable(target),
                "shape": shape(target),
            },
        )

    def unload(self, message: Mapping[str, Any]) -> None:
        for released in message["unload"]:
            self.adapters.pop(released, None)

    def load(self, message: Mapping[str, Any]) -> bytes:
        self.unload(message)
        handle: int = message["handle"]
        try:
            if "pickled" in message:
                try:
                    adapter = unpickle_from_parent(message["pickled"])
                except BaseException as exc:
                    raise _LoadRefused("adapter_unpickle", exc) from None
            else:
                adapter = _import_target(message["spec"])
                if message["build"]:
                    try:
                        adapter = adapter()
                    except BaseException as exc:
                        raise _LoadRefused("adapter_build", exc) from None
        except _LoadRefused as refused:
            return self._refused(refused)
        self.adapters[handle] = adapter
        kind = type(adapter)
        return json_message(
            "loaded",
            {
                "handle": handle,
                "module": kind.__module__,
                "qualname": kind.__qualname__,
                "shape": shape(adapter),
            },
        )

    @staticmethod
    def _refused(refused: _LoadRefused) -> bytes:
        kind, text = describe_raised(refused.cause)
        return json_message("refused", {"code": refused.code, "type": kind, "text": text})

    def _argument(self, call_id: int, encoded: tuple[str, Any]) -> Any:
        kind, value = encoded
        if kind == "blob":
            return self.blobs[value]
        if kind == "session":
            return RemoteToolSession(self.link, call_id, value)
        return value

    def call(self, message: Mapping[str, Any]) -> bytes:
        call_id: int = message["call"]
        self.unload(message)
        for digest in message["forget"]:
            self.blobs.pop(digest, None)
        try:
            for digest, data in message["blobs"].items():
                self.blobs[digest] = unpickle_from_parent(data)
            args = [self._argument(call_id, item) for item in message["args"]]
            kwargs = {key: self._argument(call_id, item) for key, item in message["kwargs"].items()}
            method = getattr(self.adapters[message["handle"]], message["method"])
            result = method(*args, **kwargs)
        # Everything the adapter raises is its failure, BaseExceptions included.
        except BaseException as exc:
            kind, text = describe_raised(exc)
            return json_message("raised", {"call": call_id, "type": kind, "text": text})
        try:
            text = json_text(result)
        except BaseException as exc:
            kind, detail = describe_raised(exc)
            return json_message("unencodable", {"call": call_id, "type": kind, "text": detail})
        if len(text) > MAX_MESSAGE_BYTES // 2:
            return json_message(
                "unencodable",
                {
                    "call": call_id,
                    "type": "OutputTooLarge",
                    "text": f"{len(text)} characters of JSON, over the "
                    f"{MAX_MESSAGE_BYTES // 2} limit",
                },
            )
        return json_message("returned", {"call": call_id}, text)


def _watch_parent(parent_pid: int) -> None:
    """End this process when the harness is gone (a hung adapter never reads the EOF)."""
    while True:
        if os.getppid() != parent_pid:
            os._exit(0)
        time.sleep(0.5)


def main(argv: list[str]) -> None:
    fd, parent_pid = int(argv[0]), int(argv[1])
    # Ctrl-C in the terminal is the harness's to handle; it then ends this process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    Server(Link(Connection(fd))).serve()


if __name__ == "__main__":
    main(sys.argv[1:])

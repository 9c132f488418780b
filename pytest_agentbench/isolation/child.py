"""The isolated adapter process: ``python -m pytest_agentbench.isolation.child FD PARENT_PID``.

It holds the adapter and nothing of the harness: no suite, no oracle folder
path, no loaded oracle. It receives the adapter's recipe and, per call, the
arguments the world passes (public views); it answers with the adapter's
return value as JSON. Tool calls the adapter makes through a session argument
travel back to the harness on the same connection while the call is open.

Of the plugin it imports only :mod:`.protocol` and :mod:`.processes`
(standard library); the settings the harness resolved for the adapter (the
chat agent's) are handed over whole and installed where the harness keeps
them, importing their module; unpickling a view imports the modules that
define the view's types, loading the adapter imports the adapter's module, and
a tool session handed to the adapter loads :mod:`.remote_session` (with the
tool-session contract, :mod:`pytest_agentbench.sdk.tools`).

The model calls an adapter makes with the plugin's chat client are collected
per call, as in-process per case, and travel back with the call's answer
(the harness adds them to its case), so a run's model totals do not depend
on isolation.

Each call gets its own copy of every argument, rebuilt from the bytes the
harness sent (once), as each case gets its own view in-process: what an
adapter does to a view in one case is not seen by the next.

A process the adapter forks is a copy of this one; should the copy return
into the serving loop, it exits there rather than answer on the connection.
"""

from __future__ import annotations

import importlib
import inspect
import io
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from multiprocessing.connection import Connection
from typing import Any, NoReturn

from pytest_agentbench.isolation.processes import become_subreaper
from pytest_agentbench.isolation.protocol import (
    INTERRUPT_SIGNAL,
    MAX_MESSAGE_BYTES,
    CallInterrupted,
    describe_raised,
    json_message,
    json_text,
    shape,
    unpickle_from_parent,
)
from pytest_agentbench.sdk.tracebacks import adapter_traceback


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
        self.pid = os.getpid()
        """The serving process: a fork of it has another pid and must not use the connection."""

    def receive(self) -> dict[str, Any]:
        message: dict[str, Any] = unpickle_from_parent(self.connection.recv_bytes())
        return message

    def send(self, data: bytes) -> None:
        self.connection.send_bytes(data)

    def tool_request(self, call_id: int, request: bytes) -> dict[str, Any] | None:
        """Send a session's ``request`` to the harness and return its reply.

        None, without asking the harness, once call ``call_id`` has ended.
        """
        if os.getpid() != self.pid:
            return None
        with self.lock:
            if self.current_call != call_id:
                return None
            with _uninterruptible():
                self.send(request)
                return self.receive()


class _Interrupts:
    """Whether the harness's interrupt (:data:`INTERRUPT_SIGNAL`) may raise now.

    Only while the adapter's method runs, so the serving loop never unwinds mid-message;
    and not while the main thread exchanges a tool call with the harness (a message cut
    in half would garble the connection): an interrupt then is held and raised as soon
    as the exchange is over. Signals reach the main thread only, which runs the method.
    """

    interruptible = False
    pending = False


def _on_interrupt(signum: int, frame: Any) -> None:
    if _Interrupts.interruptible:
        _Interrupts.interruptible = False
        raise CallInterrupted()
    _Interrupts.pending = True


@contextmanager
def _uninterruptible() -> Iterator[None]:
    """Hold the interrupt while the main thread talks to the harness; raise it after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    was, _Interrupts.interruptible = _Interrupts.interruptible, False
    try:
        yield
    finally:
        _Interrupts.interruptible = was
        if was and _Interrupts.pending:
            _Interrupts.pending = False
            _Interrupts.interruptible = False
            raise CallInterrupted()


def _interruptibly(method: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Run the adapter's method where the harness's interrupt may end it."""
    _Interrupts.pending = False
    _Interrupts.interruptible = True
    try:
        return method(*args, **kwargs)
    finally:
        _Interrupts.interruptible = False


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
        self.blobs: dict[str, bytes] = {}
        """Each argument's pickle, unpickled afresh for every call that passes it."""

    def serve(self, parent_pid: int) -> None:
        link = self.link
        link.lock.acquire()
        try:
            workdir = self.initialise(link.receive())
        except (EOFError, OSError):
            _exit()
        # Started only now: Landlock restricts the thread that applies it and what it starts.
        threading.Thread(target=_watch_parent, args=(parent_pid, workdir), daemon=True).start()
        while True:
            try:
                message = link.receive()
            except (EOFError, OSError):
                _leave(parent_pid, workdir, grace=1.0)
            op = message["op"]
            if op == "shutdown":
                # Threads the adapter leaked must not hold the process open.
                _exit()
            if op == "resolve":
                link.send(self.resolve(message["spec"]))
            elif op == "load":
                link.send(self.load(message))
            elif op == "call":
                link.current_call = message["call"]
                link.lock.release()
                try:
                    reply = self.call(message)
                finally:
                    if os.getpid() != link.pid:
                        # A fork the adapter made, come back here: the call is not its to answer.
                        os._exit(0)
                    link.lock.acquire()
                    link.current_call = None
                link.send(reply)

    def initialise(self, message: Mapping[str, Any]) -> str:
        """The first message: sandbox this process (before any adapter code), then set it up.

        Returns its private temp folder, which it empties should the harness die.
        """
        plan = message.get("sandbox")
        if plan is not None:
            # Imported only when asked for: a run without the sandbox loads no ctypes binding.
            from pytest_agentbench.isolation.sandbox import MCP_PORT_ENV, SandboxPlan, apply

            try:
                sandbox = SandboxPlan.from_message(plan)
                apply(sandbox)
                if sandbox.bind_ports:
                    # The one port an agent command's MCP server may listen on here.
                    os.environ[MCP_PORT_ENV] = str(sandbox.bind_ports[0])
            except BaseException as exc:
                kind, text = describe_raised(exc)
                self.link.send(json_message("sandbox_failed", {"type": kind, "text": text}))
                _exit()
        sys.path[:] = message["sys_path"]
        signal.signal(INTERRUPT_SIGNAL, _on_interrupt)
        _restore_pythonpath(message["pythonpath"])
        _install_settings(message["settings"])
        self.link.send(json_message("ready", {"pid": os.getpid()}))
        workdir: str = message["workdir"]
        return workdir

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
        for ended in message["collect"]:
            # Processes of the adapter's that the harness ended after a call: this
            # process is their parent and collects them, so they do not pile up.
            try:
                os.waitpid(ended, os.WNOHANG)
            except ChildProcessError:
                continue

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

    def _argument(self, call_id: int, encoded: tuple[str, Any], copies: dict[str, Any]) -> Any:
        kind, value = encoded
        if kind == "blob":
            # One copy per call: a value passed twice in one call is one object, as in-process.
            if value not in copies:
                copies[value] = unpickle_from_parent(self.blobs[value])
            return copies[value]
        if kind == "session":
            # Only adapters of interactive worlds pay for loading the tool-session contract.
            from pytest_agentbench.isolation.remote_session import RemoteToolSession

            return RemoteToolSession(self.link, call_id, value)
        return value

    def call(self, message: Mapping[str, Any]) -> bytes:
        call_id: int = message["call"]
        self.unload(message)
        for digest in message["forget"]:
            self.blobs.pop(digest, None)
        model_calls = _ModelCalls()
        try:
            self.blobs.update(message["blobs"])
            copies: dict[str, Any] = {}
            args = [self._argument(call_id, item, copies) for item in message["args"]]
            kwargs = {
                key: self._argument(call_id, item, copies)
                for key, item in message["kwargs"].items()
            }
            method = getattr(self.adapters[message["handle"]], message["method"])
            with model_calls:
                result = _interruptibly(method, args, kwargs)
        except CallInterrupted:
            # The case limit passed: the harness takes the model calls made so far (a
            # request cut off among them) and keeps this process for the next call.
            return json_message("interrupted", {"call": call_id, **model_calls.carried()})
        # Everything else the adapter raises is its failure, BaseExceptions included.
        except BaseException as exc:
            kind, text = describe_raised(exc)
            raised = {
                "call": call_id,
                "type": kind,
                "text": text,
                "traceback": adapter_traceback(exc),
                **model_calls.carried(),
            }
            return json_message("raised", raised)
        made = model_calls.carried()
        try:
            text = json_text(result)
        except BaseException as exc:
            kind, detail = describe_raised(exc)
            return json_message(
                "unencodable", {"call": call_id, "type": kind, "text": detail, **made}
            )
        if len(text) > MAX_MESSAGE_BYTES // 2:
            return json_message(
                "unencodable",
                {
                    "call": call_id,
                    "type": "OutputTooLarge",
                    "text": f"{len(text)} characters of JSON, over the "
                    f"{MAX_MESSAGE_BYTES // 2} limit",
                    **made,
                },
            )
        return json_message("returned", {"call": call_id, **made}, text)


PROVENANCE = "pytest_agentbench.agents.provenance"


class _ModelCalls:
    """The model calls one adapter call makes, when the adapter uses the plugin's chat client.

    An adapter that never imported the client's module pays nothing for it.
    """

    def __init__(self) -> None:
        self._scope: AbstractContextManager[Any] = nullcontext()
        if PROVENANCE in sys.modules:
            from pytest_agentbench.agents.case_calls import case_scope

            self._scope = case_scope()
        self._calls: Any = None

    def __enter__(self) -> None:
        self._calls = self._scope.__enter__()

    def __exit__(self, *exc_info: Any) -> bool | None:
        return self._scope.__exit__(*exc_info)

    def carried(self) -> dict[str, Any]:
        """What crosses back with the call's answer: nothing when no model call was made."""
        calls = self._calls
        if calls is None or not calls.used:
            return {}
        # Whether the run is priced, and whether it counts cassette hits and recordings (a
        # mixed run), is the harness's to say: the cost and the counts go across as they are.
        calls.priced = True
        calls.counted = True
        carried: dict[str, Any] = {
            "model_calls": calls.record().model_dump(mode="json"),
            "model_events": calls.transcript.record(),
        }
        if calls.refusal is not None:
            carried["model_refusal"] = [calls.refusal.code, calls.refusal.reason]
        return carried


def _restore_pythonpath(value: str | None) -> None:
    """PYTHONPATH as the harness had it (it was extended only to start this process)."""
    if value is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = value


def _install_settings(settings: list[tuple[str, str, bytes]]) -> None:
    """Install each resolved settings object as the harness has it: ``(module, setter, pickle)``."""
    for module_name, setter, payload in settings:
        getattr(importlib.import_module(module_name), setter)(unpickle_from_parent(payload))


def _watch_parent(parent_pid: int, workdir: str) -> None:
    """End this process when the harness is gone (a hung adapter never reads the EOF)."""
    while True:
        if os.getppid() != parent_pid:
            _leave(parent_pid, workdir, grace=0.0)
        time.sleep(0.5)


def _leave(parent_pid: int, workdir: str, *, grace: float) -> NoReturn:
    """Exit; when the harness died (killed before it could clean up), empty the private temp
    folder first (the sandbox lets this process remove what is in it, not the folder itself:
    the next run's start-up sweep removes that).

    The harness's end closes the connection an instant before this process is
    re-parented, so a closed connection waits up to ``grace`` seconds to tell a
    dead harness from one that ended this process on purpose (it then cleans up).
    """
    deadline = time.monotonic() + grace
    while os.getppid() == parent_pid and time.monotonic() < deadline:
        time.sleep(0.02)
    if os.getppid() != parent_pid:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    _exit()


def _exit() -> NoReturn:
    """End this process now, not joining the threads the adapter leaked, once what the
    adapter printed is written out: without ``PYTHONUNBUFFERED`` the last lines may
    still sit in a buffer, and ``os._exit`` writes none. (A fork the adapter made
    leaves without this: it would print its copy of the buffer a second time.)"""
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):  # a stream the adapter closed or replaced
            stream.flush()
    os._exit(0)


def main(argv: list[str]) -> None:
    fd, parent_pid = int(argv[0]), int(argv[1])
    # Ctrl-C in the terminal is the harness's to handle; it then ends this process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if isinstance(sys.stdout, io.TextIOWrapper):
        # What the adapter prints reaches pytest's stderr a line at a time, so a case
        # ended by its time limit still shows what it printed before (a pipe, without
        # PYTHONUNBUFFERED, would otherwise hold it in a block buffer).
        sys.stdout.reconfigure(line_buffering=True)
    # What the adapter starts and orphans is re-parented here, so it stays in this
    # process's tree, where the harness finds it.
    become_subreaper()
    Server(Link(Connection(fd))).serve(parent_pid)


if __name__ == "__main__":
    main(sys.argv[1:])

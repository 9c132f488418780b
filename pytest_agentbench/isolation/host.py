"""The harness's side of isolation: one adapter process per pytest process.

:class:`IsolatedAdapters` starts its child on first use, loads adapters into
it, and turns every call into a message exchange bounded by the case timeout.
Whatever goes wrong on the child's side costs the call it happened in and is
classified like an in-process failure: a hang is a timeout, interrupted as
in-process (the harness signals the child, :data:`~.protocol.INTERRUPT_SIGNAL`,
which raises in the adapter's call and answers with the model calls made so
far, a request cut off among them, so they are in the case's report; what the
call started is ended and the child serves the next call); a child that does
not unwind within the kill grace is killed and a fresh one starts with the
next call. A crash, a raised BaseException or a garbled message is an
``agent_error``, a return value JSON cannot carry is a ``product_error``. Only
the harness's own failures (a view that cannot be pickled, a child that cannot
start) are ``harness_error``.

Starting the child and loading the adapter into it (first, and again after a
timeout or crash) is bounded by its own limit, the start-up allowance, never
by the case limit, and is not the case's time. A start-up that overruns it
fails the case it happened in, once; later cases fail at once with a
reference to it rather than wait for it again.

The child works in a folder of its own outside the project, with a
``sys.path`` on which no entry leads to the project's suite or oracle folders
(see :func:`child_path`), and the environment the harness had when isolation
was set up. While a child runs, pytest's process is not dumpable, so a process
of the same user without ``CAP_SYS_PTRACE`` cannot read its memory through
``/proc/<pid>/mem``; with ``namespace`` the child runs in a user namespace of
its own, which keeps it out of pytest's memory even as root.

With a sandbox (:class:`~.sandbox_plan.SandboxSetup`, every mode but ``off``)
each child gets a clean environment and its private temp folder as ``TMPDIR``
and ``HOME``, applies its plan to itself before any adapter code runs (see
:mod:`.sandbox`), has its CPU time limited per call and its process tree
counted while a call runs; a limit it runs into is named in its case's
failure (``sandbox_memory_limit``, ``sandbox_process_limit`` ...).
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.machinery
import itertools
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import pytest_agentbench
from pytest_agentbench.isolation import processes
from pytest_agentbench.isolation.channel import (
    AdapterProcess,
    ChannelError,
    ChildDied,
    ChildMisbehaved,
    ChildOverLimit,
    ChildTimedOut,
)
from pytest_agentbench.isolation.forkserver import ForkServer
from pytest_agentbench.isolation.forwarding import ForwardedSettings
from pytest_agentbench.isolation.protocol import INTERRUPT_SIGNAL, pickle_for_child, shape
from pytest_agentbench.isolation.proxy import (
    PendingAdapter,
    RemoteAdapter,
    methods_of,
    remote_class,
    satisfies,
    session_spec,
    session_state,
)
from pytest_agentbench.isolation.sandbox_plan import (
    SandboxSetup,
    clean_environment,
    workdir_prefix,
)
from pytest_agentbench.run.adapters import AdapterFolders, _protocols_summary
from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.contracts import FailureClass
from pytest_agentbench.sdk.errors import AgentbenchError, UsageError, describe_exception
from pytest_agentbench.sdk.registry import KindProtocols
from pytest_agentbench.sdk.runner import (
    AdapterFailure,
    CaseTimeout,
    MalformedOutput,
    harness_time,
)
from pytest_agentbench.sdk.tools import SESSION_CLOSED, ToolCallError, ToolSession

SHARED_VIEWS = 16
"""How many distinct argument values the child keeps, so a view is sent once, not per case."""

CALL_SLACK = 1.0
"""A call's own deadline is this much after the case limit.

On pytest's main thread the case limit (SIGALRM, armed around the whole case)
ends a hang first, once; the call's deadline bounds calls where no alarm can
be delivered (off the main thread) without ever racing the alarm.
"""

STARTUP_TIMEOUT = 30.0
"""Default of ``agentbench_isolate_startup_timeout``: how long starting the child and
loading the adapter into it may take, whatever the case limit.

That time is not the adapter's (the case limit's clock stops for it), but a
constructor that hangs must still end.
"""

STARTUP_SETTING = "agentbench_isolate_startup_timeout"

NAMESPACE_PREFIX = ("unshare", "--user", "--map-current-user")
"""Runs the child in a new user namespace, as the same user (``exec``, so the pid stays)."""

GRACE_SECONDS = 0.5
"""Between SIGTERM and SIGKILL when a child is ended; and how long a child interrupted at
its case limit has to unwind and answer before it is ended."""


class IsolationFailure(AdapterFailure):
    """The harness's side of isolation failed: not the adapter's doing."""

    failure_class = FailureClass.HARNESS_ERROR


class StartupTimedOut(Exception):
    """Starting the child or loading the adapter overran the start-up allowance."""

    def __init__(self, what: str, failure_type: type[AdapterFailure]) -> None:
        super().__init__(what)
        self.what = what
        self.failure_type = failure_type
        """The class of the case's failure: the harness's when the interpreter did not start."""


def _starting() -> StartupTimedOut:
    return StartupTimedOut("starting the adapter's process", IsolationFailure)


def _loading() -> StartupTimedOut:
    return StartupTimedOut("loading the adapter in its isolated process", AdapterFailure)


class _HarnessProcess:
    """pytest's own process flags while isolated children run (shared by every host)."""

    holders = 0
    made_undumpable = False
    made_subreaper = False
    lock = threading.Lock()
    """The children of a pool start and end on the threads of their cases."""

    @classmethod
    def hold(cls) -> None:
        """A child is about to start: protect pytest's memory, adopt the child's orphans."""
        with cls.lock:
            if cls.holders == 0:
                cls.made_subreaper = processes.is_subreaper() is False and processes.set_subreaper(
                    True
                )
                cls.made_undumpable = processes.dumpable() is True and processes.set_dumpable(False)
            cls.holders += 1

    @classmethod
    def release(cls) -> None:
        """The last child has ended: give pytest's process its flags back."""
        with cls.lock:
            cls.holders -= 1
            if cls.holders > 0:
                return
            if cls.made_undumpable:
                processes.set_dumpable(True)
                cls.made_undumpable = False
            if cls.made_subreaper:
                # Later orphans of other processes pytest starts are not its to collect.
                processes.set_subreaper(False)
                cls.made_subreaper = False


@dataclass(frozen=True)
class SpecRecipe:
    """Build the adapter in the child from its ``module:attr`` spec."""

    spec: str
    build: bool


@dataclass(frozen=True)
class PickledRecipe:
    """Rebuild an adapter object made in the harness (reference agent, fixture) from its pickle."""

    payload: bytes


Recipe = SpecRecipe | PickledRecipe


class SharedRecipes:
    """What the hosts of one pool (:mod:`.pool`) share; a lone host has its own.

    An adapter has one handle and one recipe in every child of the pool, and a
    start-up that overran the allowance in one child is reported once for
    the pool: the other children do not try again.
    """

    def __init__(self) -> None:
        self.handles = itertools.count(1)
        self.recipes: dict[int, Recipe] = {}
        self.startup_failure: AdapterFailure | None = None
        self.lock = threading.Lock()


_IMPORTABLE = tuple(importlib.machinery.all_suffixes())


def _leads_to(entry: Path, protected: Sequence[Path]) -> bool:
    return any(root == entry or root.is_relative_to(entry) for root in protected)


def _is_package(folder: Path) -> bool:
    return any((folder / f"__init__{suffix}").is_file() for suffix in _IMPORTABLE)


def child_path(entries: Sequence[str], protected: Sequence[Path], workdir: Path) -> list[str]:
    """The child's ``sys.path``: pytest's, with no entry leading to a ``protected`` folder.

    An entry that is a protected folder (the project, where suites and oracles
    lie) or above one is replaced by a folder under ``workdir`` linking only
    its importable modules and regular packages that hold no protected folder:
    the adapter's own module at the project root still imports, while neither
    an import (a folder imports as a namespace package) nor a path built from
    ``sys.path`` reaches a suite. ``''`` (pytest's working directory) is taken
    as that folder.
    """
    resolved = [Path(entry or os.getcwd()).resolve() for entry in entries]
    path = []
    for index, entry in enumerate(resolved):
        if not _leads_to(entry, protected):
            path.append(str(entry))
            continue
        shim = workdir / f"path-{index}"
        shutil.rmtree(shim, ignore_errors=True)
        shim.mkdir(parents=True)
        try:
            members = sorted(entry.iterdir())
        except OSError:
            members = []
        for member in members:
            importable = (member.is_file() and member.name.endswith(_IMPORTABLE)) or (
                member.is_dir() and _is_package(member) and not _leads_to(member, protected)
            )
            if importable and not member.name.startswith("."):
                (shim / member.name).symlink_to(member)
        path.append(str(shim))
    return path


def namespace_available() -> str | None:
    """Why the child cannot run in a user namespace of its own here; None when it can."""
    if shutil.which(NAMESPACE_PREFIX[0]) is None:
        return f"{NAMESPACE_PREFIX[0]} is not installed"
    try:
        probe = subprocess.run(
            [*NAMESPACE_PREFIX, "true"], check=False, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{' '.join(NAMESPACE_PREFIX)} failed: {exc}"
    if probe.returncode != 0:
        first = (probe.stderr.strip().splitlines() or [f"status {probe.returncode}"])[0]
        return f"{' '.join(NAMESPACE_PREFIX)} failed: {first}"
    return None


class ServesAdapters(ABC):
    """What one isolated process and a pool of them both give the session: a stand-in per
    adapter, and an xdist worker's adapter spec loaded on its first case."""

    @abstractmethod
    def remote(self, adapter: Any) -> RemoteAdapter: ...

    def pending(self, spec: str, kinds: Sequence[KindProtocols]) -> PendingAdapter:
        return PendingAdapter(spec, tuple(kinds))

    def ready(self, adapter: Any) -> Any:
        """``adapter`` as a test may use it: an xdist worker's pending spec is loaded now."""
        if not isinstance(adapter, PendingAdapter):
            return adapter
        try:
            return self.remote(adapter)
        except AgentbenchError as exc:
            pytest.fail(exc.render(), pytrace=False)


class IsolatedAdapters(ServesAdapters):
    """The adapter process of this pytest process and the adapters loaded into it."""

    def __init__(
        self,
        timeout: float,
        *,
        startup_timeout: float = STARTUP_TIMEOUT,
        grace: float = GRACE_SECONDS,
        settings: Sequence[ForwardedSettings] = (),
        protected: Sequence[Path] = (),
        namespace: bool = False,
        shared: SharedRecipes | None = None,
        output: int | None = None,
        sandbox: SandboxSetup | None = None,
        launcher: ForkServer | None = None,
        owns_launcher: bool = True,
    ) -> None:
        """``protected``: folders no ``sys.path`` entry of the child may lead to (the project's).

        ``settings`` are installed in every child before it loads an adapter
        (:mod:`.forwarding`); ``namespace`` starts it in a user namespace;
        ``shared`` and ``output`` (the descriptor the child writes to, which
        the host then does not close) are given by a pool to each of its hosts.
        ``sandbox``: every child sandboxes itself by its plan (None: mode ``off``).
        ``launcher``: children are forked by a template process (a pool's hosts share
        it, and the pool ends it: ``owns_launcher`` False).
        """
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self.grace = grace
        self._settings = tuple(settings)
        self._protected = tuple(Path(root).resolve() for root in protected)
        self._prefix = NAMESPACE_PREFIX if namespace else ()
        self._workdir: Path | None = None
        """The child's working folder, made when a child starts and removed by :meth:`close`."""
        self._sandbox = sandbox
        self._launcher = launcher
        self._owns_launcher = owns_launcher
        self._environment = (
            dict(os.environ) if sandbox is None else clean_environment(dict(os.environ))
        )
        # The child's stdout and stderr reach the session's stderr, not pytest's capture:
        # text holding a lone surrogate is written escaped there, as UTF-8 (under a C
        # locale Python would write the surrogate's raw byte). An encoding set without an
        # error handler (tox sets PYTHONIOENCODING=utf-8) is kept, with this handler: else
        # a print of such text raised in the adapter, as it does in no other mode.
        encoding, _, errors = self._environment.get("PYTHONIOENCODING", "").partition(":")
        self._environment["PYTHONIOENCODING"] = (
            f"{encoding or 'utf-8'}:{errors or 'backslashreplace'}"
        )
        # The child must import this plugin before it is told its sys.path; it then
        # puts PYTHONPATH back, so what the adapter starts does not inherit the entry.
        plugin_parent = str(Path(pytest_agentbench.__file__).resolve().parent.parent)
        self._pythonpath = self._environment.get("PYTHONPATH")
        self._environment["PYTHONPATH"] = (
            f"{plugin_parent}{os.pathsep}{self._pythonpath}" if self._pythonpath else plugin_parent
        )
        self._holding = False
        self._common = SharedRecipes() if shared is None else shared
        self._process: AdapterProcess | None = None
        self._recipes = self._common.recipes
        self._loaded: set[int] = set()
        self._shared: OrderedDict[str, None] = OrderedDict()
        self._record_pickles: OrderedDict[int, tuple[Any, str, bytes]] = OrderedDict()
        self._remotes: OrderedDict[int, tuple[Any, RemoteAdapter]] = OrderedDict()
        self._unload: list[int] = []
        self._load_failures: dict[int, AdapterFailure] = {}
        self._handles = self._common.handles
        self._calls = itertools.count(1)
        self.starts = 0
        """How many child processes this host has started (restarts included)."""
        # The child writes where pytest's stderr went when isolation was set up
        # (before output capturing starts): never into pytest's stdout, and
        # never into the capture of whichever case happened to start it.
        self._owns_output = output is None
        self._output: int | None = os.dup(2) if output is None else output
        atexit.register(self.close)

    # -- the process -------------------------------------------------------

    def _deadline(self, slack: float = 0.0) -> float | None:
        if self.timeout <= 0 or not math.isfinite(self.timeout):
            return None
        return time.monotonic() + self.timeout + slack

    def _startup_deadline(self) -> float | None:
        if self.startup_timeout <= 0 or not math.isfinite(self.startup_timeout):
            return None
        return time.monotonic() + self.startup_timeout

    def _startup_overrun(self, overrun: StartupTimedOut) -> AdapterFailure:
        """The failure of the case whose start-up overran.

        It is reported there once: later cases fail at once with a reference
        to it, of the same class, instead of waiting out the allowance again.
        """
        what, kind = overrun.what, overrun.failure_type
        with self._common.lock:
            if self._common.startup_failure is not None:
                # Another child of the pool overran first: its case reported it.
                return self._common.startup_failure
            self._common.startup_failure = kind(
                f"[isolation_startup_timeout] {what} took over {self.startup_timeout:g}s "
                f"({STARTUP_SETTING}) earlier in this process; not tried again"
            )
        return kind(
            f"[isolation_startup_timeout] {what} took over {self.startup_timeout:g}s "
            f"({STARTUP_SETTING}; the case limit does not apply to start-up)"
        )

    @property
    def pid(self) -> int | None:
        """The running child's process id, if one is running."""
        return None if self._process is None else self._process.pid

    def _child(self, deadline: float | None) -> AdapterProcess:
        if self._process is not None:
            if self._process.alive():
                return self._process
            self._discard()
        if self._common.startup_failure is not None:
            raise self._common.startup_failure
        if not self._holding:
            _HarnessProcess.hold()
            self._holding = True
        try:
            if self._workdir is None:
                self._workdir = Path(tempfile.mkdtemp(prefix=workdir_prefix()))
            workdir = self._workdir
            environment = self._environment
            if self._sandbox is not None:
                # The private temp folder is the only place it may write.
                environment = {**environment, "TMPDIR": str(workdir), "HOME": str(workdir)}
            process = AdapterProcess(
                self._output,
                cwd=str(workdir),
                env=environment,
                prefix=self._prefix,
                max_tasks=None if self._sandbox is None else self._sandbox.limits.processes,
                launcher=self._launcher,
            )
        except OSError as exc:
            raise IsolationFailure(
                f"[isolation_unavailable] the adapter's process could not be started: {exc}"
            ) from None
        self._process = process
        self.starts += 1
        try:
            child_sys_path = child_path(sys.path, self._protected, workdir)
            plan = (
                None
                if self._sandbox is None
                else self._sandbox.plan(child_sys_path, workdir).as_message()
            )
            process.send(
                {
                    "op": "init",
                    "sys_path": child_sys_path,
                    "settings": list(self._settings),
                    "pythonpath": self._pythonpath,
                    "sandbox": plan,
                    "workdir": str(workdir),
                }
            )
            ready = process.receive(deadline)
        except ChildTimedOut:
            self._discard()
            raise _starting() from None
        except ChannelError as exc:
            self._discard()
            raise IsolationFailure(
                f"[isolation_unavailable] the adapter's process did not start: "
                f"{type(exc).__name__} {exc}"
            ) from None
        except BaseException:
            self._discard()
            raise
        if ready.get("op") == "sandbox_failed":
            self._discard()
            raise IsolationFailure(
                f"[sandbox_unavailable] the adapter's process could not sandbox itself: "
                f"{ready.get('type')}: {ready.get('text')}"
            )
        if ready.get("op") != "ready":
            self._discard()
            raise IsolationFailure("[isolation_unavailable] the adapter's process did not start")
        return process

    def _discard(self) -> None:
        """End the child; the next call starts a fresh one and reloads what it needs."""
        process, self._process = self._process, None
        self._loaded.clear()
        self._shared.clear()
        self._unload.clear()
        if process is not None:
            process.kill(self.grace)

    def detach(self) -> AdapterProcess | None:
        """Hand over the running child for the caller to end (a pool ends all at once)."""
        process, self._process = self._process, None
        self._loaded.clear()
        self._shared.clear()
        return process

    def close(self) -> None:
        """End the child at the end of the session (idempotent)."""
        atexit.unregister(self.close)
        process, self._process = self._process, None
        self._loaded.clear()
        self._shared.clear()
        if process is not None:
            process.shutdown(self.grace)
        output, self._output = self._output, None
        if output is not None and self._owns_output:
            os.close(output)
        if self._holding:
            self._holding = False
            _HarnessProcess.release()
        workdir, self._workdir = self._workdir, None
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
        if self._launcher is not None and self._owns_launcher:
            self._launcher.close()

    # -- loading -----------------------------------------------------------

    def load_spec(
        self, spec: str, kinds: Sequence[KindProtocols], folders: AdapterFolders | None = None
    ) -> RemoteAdapter:
        """Load ``--agentbench-adapter`` in the child, refusing it as in-process loading would.

        ``folders``: where the module was looked for, named when it is found nowhere.
        """
        module_name, sep, attr_path = spec.partition(":")
        if not sep or not module_name or not attr_path:
            raise UsageError(
                "adapter_spec", f"{spec!r} is not 'module:attr'", field="--agentbench-adapter"
            )
        deadline = self._startup_deadline()
        try:
            resolved = self._exchange({"op": "resolve", "spec": spec}, deadline)
            if resolved["op"] == "refused":
                raise self._spec_refusal(spec, resolved, folders)
            target_shape = resolved["shape"]
            build = bool(resolved["is_class"]) or (
                bool(resolved["callable"]) and not any(satisfies(target_shape, k) for k in kinds)
            )
            handle = self._register(SpecRecipe(spec, build))
            loaded = self._load(handle, deadline)
        except AdapterFailure as failure:
            raise UsageError(
                "adapter_import",
                f"loading adapter {spec!r} in its isolated process failed: {failure.reason}",
                field="--agentbench-adapter",
            ) from None
        except StartupTimedOut as overrun:
            self._startup_overrun(overrun)
            raise UsageError(
                "isolation_startup_timeout",
                f"adapter {spec!r}: {overrun.what} took over {self.startup_timeout:g}s",
                field=STARTUP_SETTING,
            ) from None
        if loaded["op"] == "refused":
            raise self._spec_refusal(spec, loaded, folders)
        adapter_shape = loaded["shape"]
        if not any(satisfies(adapter_shape, kind) for kind in kinds):
            raise UsageError(
                "adapter_protocol",
                f"adapter {spec!r} ({loaded['qualname'].rpartition('.')[2]}) implements no "
                f"known protocol; expected one of: {_protocols_summary(kinds)}",
                field="--agentbench-adapter",
            )
        return self._proxy(handle, loaded)

    @staticmethod
    def _spec_refusal(
        spec: str, refused: Mapping[str, Any], folders: AdapterFolders | None
    ) -> UsageError:
        module_name, _, attr_path = spec.partition(":")
        code = refused["code"]
        cause = f"{refused['type']}: {refused['text']}" if refused["text"] else refused["type"]
        hint = folders.not_found_hint(module_name) if folders is not None else ""
        reason = {
            "adapter_import": (
                f"cannot import module {module_name!r} of adapter {spec!r}: {cause}{hint}"
            ),
            "adapter_attribute": (
                f"module {module_name!r} has no attribute {attr_path!r} (adapter {spec!r})"
            ),
            "adapter_build": f"building adapter {spec!r} failed: {cause}",
        }.get(code, f"loading adapter {spec!r} failed: {cause}")
        return UsageError(code, reason, field="--agentbench-adapter")

    def remote(self, adapter: Any) -> RemoteAdapter:
        """The stand-in that runs ``adapter`` in the child, ready for a case's calls.

        Made once per adapter object. Raises :class:`AgentbenchError` for an
        adapter that cannot be sent to the child.
        """
        if isinstance(adapter, RemoteAdapter):
            proxy = adapter
        else:
            known = self._remotes.get(id(adapter))
            if known is not None and known[0] is adapter:
                proxy = known[1]
                self._remotes.move_to_end(id(adapter))
            else:
                if isinstance(adapter, PendingAdapter):
                    proxy = self.load_spec(adapter.spec, adapter.kinds)
                else:
                    proxy = self.pickled(adapter)
                self._remotes[id(adapter)] = (adapter, proxy)
                self._release_old_remotes()
        self.prepare(proxy._handle)
        return proxy

    def _release_old_remotes(self) -> None:
        """Forget the adapters least recently used beyond :data:`SHARED_VIEWS`.

        A function-scoped ``agentbench_adapter`` override makes a new adapter
        per case; neither process should keep them all.
        """
        while len(self._remotes) > SHARED_VIEWS:
            _, (_, proxy) = self._remotes.popitem(last=False)
            self.release(proxy._handle)

    def release(self, handle: int) -> None:
        """Forget adapter ``handle``; the child drops it with the next message."""
        self._recipes.pop(handle, None)
        self._load_failures.pop(handle, None)
        if handle in self._loaded:
            self._loaded.discard(handle)
            self._unload.append(handle)

    def case_deadline(self) -> float | None:
        """When a case starting now is past its limit, on a thread no alarm reaches."""
        return self._deadline()

    @contextmanager
    def serving(self, adapter: Any) -> Iterator[None]:
        """Run a case of ``adapter``: a lone host's one child serves every case as it is."""
        yield

    def prepare(self, handle: int) -> None:
        """Have a child running with adapter ``handle`` loaded, before the case's limit starts.

        Restarting after a timeout or crash, and rebuilding the adapter, are
        not the next case's time. A failure here is kept and raised by the
        case's first call, so it is classified inside the case.
        """
        if handle in self._loaded and self._process is not None and self._process.alive():
            return
        try:
            loaded = self._load(handle, self._startup_deadline())
        except StartupTimedOut as overrun:
            self._load_failures[handle] = self._startup_overrun(overrun)
        except AdapterFailure as failure:
            self._load_failures[handle] = failure
        else:
            if loaded["op"] == "refused":
                self._load_failures[handle] = self._load_failure(loaded)

    def pickled(self, adapter: Any) -> RemoteAdapter:
        """The stand-in of an adapter object made in the harness, rebuilt in the child."""
        kind = type(adapter)
        try:
            payload = pickle_for_child(adapter)
        except Exception as exc:
            raise AgentbenchError(
                "isolation_unpicklable_adapter",
                f"adapter {kind.__module__}.{kind.__qualname__} cannot be sent to its isolated "
                f"process ({describe_exception(exc)}); name it with --agentbench-adapter so the "
                "process builds it, or make it picklable",
                field="agentbench_adapter",
            ) from None
        handle = self._register(PickledRecipe(payload))
        described = {"module": kind.__module__, "qualname": kind.__qualname__}
        return self._proxy(handle, {**described, "shape": shape(adapter)})

    def _register(self, recipe: Recipe) -> int:
        handle = next(self._handles)
        self._recipes[handle] = recipe
        return handle

    def _proxy(self, handle: int, loaded: Mapping[str, Any]) -> RemoteAdapter:
        cls = remote_class(loaded["module"], loaded["qualname"], methods_of(loaded["shape"]))
        return cls(self, handle)

    def _exchange(self, message: dict[str, Any], deadline: float | None) -> dict[str, Any]:
        """One start-up request (resolve, load) and its reply.

        Any failure or interruption discards the child; running out of
        ``deadline`` (the start-up allowance) is :class:`StartupTimedOut`.
        """
        process = self._child(deadline)
        try:
            process.send({**message, "collect": process.collected()})
            return process.receive(deadline)
        except ChildTimedOut:
            self._discard()
            raise _loading() from None
        except BaseException as exc:
            self._discard()
            raise self._translated(exc) from None

    def _load(self, handle: int, deadline: float | None) -> dict[str, Any]:
        recipe = self._recipes.get(handle)
        if recipe is None:
            raise IsolationFailure("this isolated adapter's stand-in has been released")
        message: dict[str, Any] = {"op": "load", "handle": handle, "unload": self._released()}
        if isinstance(recipe, SpecRecipe):
            message.update(spec=recipe.spec, build=recipe.build)
        else:
            message.update(pickled=recipe.payload)
        reply = self._exchange(message, deadline)
        if reply["op"] == "loaded":
            self._loaded.add(handle)
            if self._process is not None:
                self._process.note_resident()
        return reply

    # -- calls -------------------------------------------------------------

    def call(
        self,
        handle: int,
        method: str,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        *,
        deadline: float | None = None,
    ) -> JsonValue:
        """Run ``method`` of the adapter ``handle`` in the child; see the module doc.

        ``deadline``: the case's own (a pool's case off the main thread); by
        default the call may take the case limit and :data:`CALL_SLACK`.
        """
        self.ensure_ready(handle)
        if deadline is None:
            deadline = self._deadline(CALL_SLACK)
        call_id = next(self._calls)
        sessions: list[ToolSession] = []
        message = self._call_message(
            call_id=call_id,
            handle=handle,
            method=method,
            args=args,
            kwargs=kwargs,
            sessions=sessions,
        )
        try:
            process = self._child(deadline)
        except StartupTimedOut as overrun:
            # The process died between its restart above and this call.
            raise self._startup_overrun(overrun) from None
        if self._sandbox is not None:
            _limit_cpu(process.pid, self.timeout)
        try:
            process.send({**message, "collect": process.collected()})
            reply = process.receive(deadline)
            while reply["op"] == "tool_call":
                process.send(self._tool_reply(call_id, reply, sessions))
                reply = process.receive(deadline)
            process.end_call()
        except BaseException as exc:
            if isinstance(exc, CaseTimeout | ChildTimedOut) and self._interrupted(process, call_id):
                raise self._translated(exc) from None
            self._discard()
            raise self._translated(exc) from None
        return self._result(call_id, reply)

    def _interrupted(self, process: AdapterProcess, call_id: int) -> bool:
        """Interrupt the call the case limit ended, as in-process; whether the child unwound.

        The child raises in the adapter's call and answers with the model calls it made so
        far, which the case takes (a request the limit cut off is in its report, as
        in-process). It has the kill grace to answer; a tool call it sent meanwhile is
        refused, the case's session being over. What the call started is ended and the
        child kept. False (the caller then kills it): it did not answer in time, or not
        as a child of this protocol does.
        """
        try:
            os.kill(process.pid, INTERRUPT_SIGNAL)
        except OSError:
            return False
        deadline = time.monotonic() + self.grace
        try:
            reply = process.receive(deadline)
            while reply.get("op") == "tool_call":
                process.send(
                    {
                        "op": "tool_error",
                        "code": SESSION_CLOSED,
                        "message": "the case limit ended this call",
                    }
                )
                reply = process.receive(deadline)
            if reply.get("call") != call_id or reply.get("op") not in {
                "interrupted",
                "returned",
                "raised",
                "unencodable",
            }:
                return False
            if "model_calls" in reply:
                self._absorb_model_calls(reply)
            process.end_call()
        except (ChannelError, AdapterFailure):
            return False
        except BaseException:
            # Interrupted itself (Ctrl-C in the grace): the exchange is half done.
            self._discard()
            raise
        return True

    def ensure_ready(self, handle: int) -> None:
        """A running child with adapter ``handle`` loaded, or the failure its case reports."""
        failure = self._load_failures.pop(handle, None)
        if failure is not None:
            raise failure
        if handle not in self._loaded or self._process is None or not self._process.alive():
            # A fresh process after a crash or a hang: the harness's recovery, which a
            # loaded machine can make slower than a short case limit.
            with harness_time():
                start_deadline = self._startup_deadline()
                try:
                    self._child(start_deadline)
                    if handle not in self._loaded:
                        loaded = self._load(handle, start_deadline)
                        if loaded["op"] == "refused":
                            raise self._load_failure(loaded)
                except StartupTimedOut as overrun:
                    raise self._startup_overrun(overrun) from None

    def _load_failure(self, refused: Mapping[str, Any]) -> AdapterFailure:
        cause = f"{refused['type']}: {refused['text']}" if refused["text"] else refused["type"]
        if refused["code"] == "adapter_unpickle":
            return IsolationFailure(
                f"[isolation_unpicklable_adapter] the adapter cannot be rebuilt in its "
                f"isolated process: {cause}"
            )
        return AdapterFailure(f"[{refused['code']}] loading the adapter failed: {cause}")

    def _sandbox_overrun(self, kind: str, text: str) -> str | None:
        """The sandbox limit an exception the adapter raised shows it ran into, if any."""
        if self._sandbox is None:
            return None
        if kind == "MemoryError" or "[Errno 12]" in text:  # ENOMEM: RLIMIT_AS (an mmap)
            return "sandbox_memory_limit"
        if "[Errno 27]" in text:  # EFBIG: RLIMIT_FSIZE (Python ignores SIGXFSZ)
            return "sandbox_file_size_limit"
        if "[Errno 24]" in text:  # EMFILE: RLIMIT_NOFILE
            return "sandbox_open_files_limit"
        if "[Errno 11]" in text and "fork" in text.lower():  # EAGAIN from fork: RLIMIT_NPROC
            return "sandbox_process_limit"
        return None

    def _translated(self, exc: BaseException) -> BaseException:
        if isinstance(exc, ChildTimedOut):
            return CaseTimeout()
        if isinstance(exc, ChildOverLimit):
            return AdapterFailure(
                f"[sandbox_process_limit] the adapter's process tree grew to {exc}; it was "
                "ended (and is restarted for the next call)"
            )
        if isinstance(exc, ChildDied):
            if self._sandbox is not None and "SIGXCPU" in str(exc):
                return AdapterFailure(
                    f"[sandbox_cpu_limit] the adapter's process used more CPU time than the "
                    f"case limit allows ({exc}; it is restarted for the next call)"
                )
            return AdapterFailure(
                f"the adapter's process {exc} during the call (it is restarted for the next one)"
            )
        if isinstance(exc, ChildMisbehaved):
            return AdapterFailure(f"the adapter's process sent {exc}")
        return exc

    def _call_message(
        self,
        *,
        call_id: int,
        handle: int,
        method: str,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        sessions: list[ToolSession],
    ) -> dict[str, Any]:
        blobs: dict[str, bytes] = {}

        def encode(value: Any) -> tuple[str, Any]:
            if value is None or isinstance(value, str | int | float | bool):
                return ("value", value)
            if isinstance(value, ToolSession):
                sessions.append(value)
                return ("session", {"index": len(sessions) - 1, **session_spec(value)})
            digest, data = self._pickled_argument(value)
            if digest in self._shared:
                self._shared.move_to_end(digest)
            else:
                self._shared[digest] = None
                blobs[digest] = data
            return ("blob", digest)

        encoded_args = [encode(value) for value in args]
        encoded_kwargs = {key: encode(value) for key, value in kwargs.items()}
        forget = []
        while len(self._shared) > SHARED_VIEWS:
            forget.append(self._shared.popitem(last=False)[0])
        return {
            "op": "call",
            "call": call_id,
            "handle": handle,
            "method": method,
            "args": encoded_args,
            "kwargs": encoded_kwargs,
            "blobs": blobs,
            "forget": forget,
            "unload": self._released(),
        }

    def _released(self) -> list[int]:
        """Handles the child may drop (each is given to it once)."""
        released, self._unload = self._unload, []
        return released

    def _pickled_argument(self, value: Any) -> tuple[str, bytes]:
        """The pickle of an argument and its digest.

        Pickling a large record costs more than the rest of a call, so a frozen
        record (a frozen pydantic model, as worlds' views are) handed over
        again is taken to be unchanged: its pickle is kept. Anything else is
        pickled for every call and sent again whenever its bytes change.
        """
        frozen = getattr(type(value), "model_config", {}).get("frozen") is True
        if frozen:
            known = self._record_pickles.get(id(value))
            if known is not None and known[0] is value:
                self._record_pickles.move_to_end(id(value))
                return known[1], known[2]
        try:
            data = pickle_for_child(value)
        except Exception as exc:
            raise IsolationFailure(
                f"[isolation_unpicklable_view] the world's {type(value).__name__} argument "
                f"cannot be sent to the isolated adapter: {describe_exception(exc)}"
            ) from None
        digest = hashlib.sha256(data).hexdigest()
        if frozen:
            self._record_pickles[id(value)] = (value, digest, data)
            while len(self._record_pickles) > SHARED_VIEWS:
                self._record_pickles.popitem(last=False)
        return digest, data

    @staticmethod
    def _tool_reply(
        call_id: int, request: Mapping[str, Any], sessions: Sequence[ToolSession]
    ) -> dict[str, Any]:
        """Answer one tool call of the adapter with the world's session."""
        index = request.get("session")
        if (
            request.get("call") != call_id
            or not isinstance(index, int)
            or not 0 <= index < len(sessions)
        ):
            return {
                "op": "tool_error",
                "code": SESSION_CLOSED,
                "message": "no open tool session matches this call",
            }
        session, kind = sessions[index], request.get("kind")
        if kind == "close":
            session.close()
            return {"op": "tool_result", "value": None}
        if kind == "state":
            return {"op": "tool_result", "value": session_state(session)}
        # Whatever JSON the adapter's process sent: a name that is not a string is the
        # session's to refuse (unknown_tool), so it is passed on unchecked.
        name: Any = request.get("name")
        try:
            value = session.call(name, request.get("value"))
        except ToolCallError as refusal:
            return {
                "op": "tool_error",
                "code": refusal.code,
                "message": refusal.reason,
                "field": refusal.location.field,
            }
        return {"op": "tool_result", "value": value}

    @staticmethod
    def _absorb_model_calls(reply: Mapping[str, Any]) -> None:
        """Count the model calls the child's call made in the case, as in-process."""
        from pytest_agentbench.agents.provenance import absorb_model_calls

        try:
            absorb_model_calls(
                reply["model_calls"], reply.get("model_refusal"), reply.get("model_events")
            )
        except ValueError as exc:
            raise AdapterFailure(f"the adapter's process sent {exc}") from None

    def _result(self, call_id: int, reply: Mapping[str, Any]) -> JsonValue:
        op = reply["op"]
        if reply.get("call") != call_id or op not in {"returned", "raised", "unencodable"}:
            self._discard()
            raise AdapterFailure(f"the adapter's process sent an unexpected {op!r} message")
        if "model_calls" in reply:
            self._absorb_model_calls(reply)
        if op == "returned":
            value: JsonValue = reply.get("value")
            return value
        kind, text = str(reply.get("type")), str(reply.get("text") or "")
        cause = f"{kind}: {text}" if text else kind
        if op == "raised":
            raised = reply.get("traceback")
            traceback = raised if isinstance(raised, str) else None
            overrun = self._sandbox_overrun(kind, text)
            prefix = "" if overrun is None else f"[{overrun}] "
            raise AdapterFailure(f"{prefix}adapter raised {cause}", traceback=traceback)
        raise MalformedOutput(
            f"adapter returned a value that cannot cross to the harness as JSON: {cause}"
        )


def _limit_cpu(pid: int, timeout: float) -> None:
    """Give the child CPU time for one more case limit (its soft ``RLIMIT_CPU``; SIGXCPU ends it).

    The adapter may raise its own soft limit back up to the hard one, which
    stays unlimited (a non-root harness could not raise it again for the next
    call): the wall-clock case limit remains the bound that always holds.
    """
    if timeout <= 0 or not math.isfinite(timeout):
        return
    import resource  # POSIX only, and a sandbox only runs on Linux

    used = processes.cpu_seconds(pid)
    if used is None:
        return
    try:
        _, hard = resource.prlimit(pid, resource.RLIMIT_CPU)
        soft = math.ceil(used + timeout + CALL_SLACK)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.prlimit(pid, resource.RLIMIT_CPU, (soft, hard))
    except (OSError, ValueError):
        return

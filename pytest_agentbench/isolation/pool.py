"""``--agentbench-isolate`` with ``--agentbench-concurrency N``: N adapter processes.

An :class:`IsolatedPool` holds N :class:`~.host.IsolatedAdapters`, each with
a child of its own, started when first needed. A case borrows one host for
its whole run (:meth:`IsolatedPool.serving`), so every call of the case goes
to the same child, and each child serves one case at a time: it keeps every
promise a lone host keeps (a fresh copy of the view per call, what a call
starts ends with it, no ``sys.path`` entry leading to the project, start-up
bounded by its own allowance and not the case's time).

The hosts share their adapters' handles and recipes, so a stand-in made once
(:class:`~.proxy.RemoteAdapter`, bound to the pool) is loaded into whichever
child serves the case, and they share a start-up that overran: it fails the
case it happened in, once, and later cases of every child at once.

A case run ahead on a pool thread has no alarm to end it: its deadline is
taken when the case starts (after start-up) and bounds each of its calls; a
child that does not answer by then is ended, as the alarm would end it, and
the case is timed out. A hung or crashed child costs only its own case: the
next case it serves starts a fresh one, while the other children serve on.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.isolation.channel import shutdown_all
from pytest_agentbench.isolation.forkserver import ForkServer
from pytest_agentbench.isolation.host import (
    SHARED_VIEWS,
    IsolatedAdapters,
    ServesAdapters,
    SharedRecipes,
)
from pytest_agentbench.isolation.proxy import PendingAdapter, RemoteAdapter
from pytest_agentbench.run.adapters import AdapterFolders
from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.registry import KindProtocols

WARMING_THREADS = 4
"""Threads starting a pool's children in the background (:meth:`IsolatedPool.warm`): the
template forks one at a time; a few at once keep it busy while each child sets up."""


@dataclass
class _Lease:
    """The host serving the current thread's case, and that case's deadline (None: no alarm-free
    limit, as on the main thread, where the case limit's alarm ends a hang)."""

    host: IsolatedAdapters
    deadline: float | None


class IsolatedPool(ServesAdapters):
    """``size`` isolated adapter hosts serving concurrent cases; see the module doc."""

    def __init__(self, size: int, timeout: float, **host_options: Any) -> None:
        """``host_options``: as :class:`~.host.IsolatedAdapters` takes them, for every host."""
        shared = SharedRecipes()
        self.timeout = timeout
        # One descriptor for every child's output (where pytest's stderr went before
        # capturing starts), not one per host: N may be in the hundreds.
        self._output: int | None = os.dup(2)
        self._launcher: ForkServer | None = host_options.get("launcher")
        self.hosts = [
            IsolatedAdapters(
                timeout, shared=shared, output=self._output, owns_launcher=False, **host_options
            )
            for _ in range(size)
        ]
        # Taken from the end: the host used last, whose child is running, serves next.
        self._free = list(reversed(self.hosts))
        self._returned = threading.Condition()
        self._local = threading.local()
        self._remotes: OrderedDict[int, tuple[Any, RemoteAdapter]] = OrderedDict()
        self._warming: list[threading.Thread] = []
        self._warm_cases = 0
        """How many cases the run will serve (:meth:`warm_for`), once ``_warm_known`` is set."""
        self._warm_known = threading.Event()
        self._closing = False

    @property
    def starts(self) -> int:
        """How many child processes the pool's hosts have started (restarts included)."""
        return sum(host.starts for host in self.hosts)

    @property
    def pids(self) -> list[int]:
        """The running children's process ids."""
        return [pid for pid in (host.pid for host in self.hosts) if pid is not None]

    @contextmanager
    def _borrowed(self) -> Iterator[IsolatedAdapters]:
        """A host no other case is using, for the block (waits for one to be given back)."""
        with self._returned:
            while not self._free:
                self._returned.wait()
            host = self._free.pop()
        try:
            yield host
        finally:
            with self._returned:
                self._free.append(host)
                self._returned.notify()

    def warm(self, adapter: Any, threads: int = WARMING_THREADS) -> None:
        """Start the hosts' children with ``adapter`` loaded, in the background, as soon
        as :meth:`warm_for` says how many cases the run serves: no more children than
        that (a run of one case among a pool of eight starts one).

        Called when the run's adapter is known before collection, so that the
        children are ready as collection ends instead of as the first N cases
        begin, each of those waiting its turn. A host a case has already
        borrowed is left to it; a failure is kept for the case, as
        :meth:`serving` keeps it.
        """
        if not isinstance(adapter, RemoteAdapter) or adapter._host is not self:
            return
        # A host whose child runs already (the one that loaded the adapter) counts first.
        waiting = sorted(self.hosts, key=lambda host: host.pid is None)
        lock = threading.Lock()
        taken = 0

        def warm_some() -> None:
            nonlocal taken
            self._warm_known.wait()  # set by warm_for, or by close
            while not self._closing:
                with lock:
                    if not waiting or taken >= self._warm_cases:
                        return
                    host = waiting.pop(0)
                    taken += 1
                with self._returned:
                    if host not in self._free:
                        continue
                    self._free.remove(host)
                try:
                    host.prepare(adapter._handle)
                finally:
                    with self._returned:
                        self._free.append(host)
                        self._returned.notify()

        for _ in range(min(threads, len(self.hosts))):
            thread = threading.Thread(target=warm_some, name="agentbench-warm", daemon=True)
            thread.start()
            self._warming.append(thread)

    def warm_for(self, cases: int) -> None:
        """The number of cases the run will serve (once collection has selected them):
        :meth:`warm` starts that many children at most, and starts them now."""
        self._warm_cases = max(cases, 0)
        self._warm_known.set()

    def _bound(self, proxy: RemoteAdapter) -> RemoteAdapter:
        """The stand-in of ``proxy``'s adapter whose calls go through the pool."""
        return type(proxy)(self, proxy._handle)

    def load_spec(
        self, spec: str, kinds: Sequence[KindProtocols], folders: AdapterFolders | None = None
    ) -> RemoteAdapter:
        """Load ``--agentbench-adapter`` in one child, refusing it as a lone host would."""
        with self._borrowed() as host:
            return self._bound(host.load_spec(spec, kinds, folders))

    def remote(self, adapter: Any) -> RemoteAdapter:
        """The stand-in that runs ``adapter`` in whichever child serves the case.

        Made once per adapter object; nothing is loaded until a case is served
        (:meth:`serving`). Raises :class:`AgentbenchError` for an adapter that
        cannot be sent to a child.
        """
        if isinstance(adapter, RemoteAdapter):
            return adapter
        known = self._remotes.get(id(adapter))
        if known is not None and known[0] is adapter:
            self._remotes.move_to_end(id(adapter))
            return known[1]
        if isinstance(adapter, PendingAdapter):
            proxy = self.load_spec(adapter.spec, adapter.kinds)
        else:
            # Pickling registers the recipe every host shares; no child is involved.
            proxy = self._bound(self.hosts[0].pickled(adapter))
        self._remotes[id(adapter)] = (adapter, proxy)
        while len(self._remotes) > SHARED_VIEWS:
            _, (_, released) = self._remotes.popitem(last=False)
            for host in self.hosts:
                host.release(released._handle)
        return proxy

    @contextmanager
    def serving(self, adapter: Any) -> Iterator[None]:
        """Run one case of ``adapter`` (a stand-in of this pool) on a host of its own.

        The host's child is started and the adapter loaded before the case's
        limit starts. Off the main thread the case's deadline starts then.
        """
        if not isinstance(adapter, RemoteAdapter) or adapter._host is not self:
            yield
            return
        with self._borrowed() as host:
            host.prepare(adapter._handle)
            on_main = threading.current_thread() is threading.main_thread()
            self._local.lease = _Lease(host, None if on_main else host.case_deadline())
            try:
                yield
            finally:
                self._local.lease = None

    def call(
        self, handle: int, method: str, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> JsonValue:
        """A stand-in's call: to the child serving the thread's case, else to a free one."""
        lease: _Lease | None = getattr(self._local, "lease", None)
        if lease is None:
            # A user's own test calling the adapter: one call, on whichever child is free.
            with self._borrowed() as host:
                return host.call(handle, method, args, kwargs)
        if lease.deadline is not None:
            # A restart within the case is the harness's time, as the alarm's clock stops for it.
            began = time.monotonic()
            lease.host.ensure_ready(handle)
            lease.deadline += time.monotonic() - began
        return lease.host.call(handle, method, args, kwargs, deadline=lease.deadline)

    def close(self) -> None:
        """End every child (idempotent): all asked to exit at once, then each host's own."""
        # Children still being started in the background finish starting first (each
        # within its start-up allowance), so none is left running behind the close.
        self._closing = True
        self._warm_known.set()  # warming threads still waiting for warm_for end
        warming, self._warming = self._warming, []
        for thread in warming:
            thread.join()
        children = [child for child in (host.detach() for host in self.hosts) if child]
        if children:
            shutdown_all(children, self.hosts[0].grace)
        for host in self.hosts:
            host.close()
        launcher, self._launcher = self._launcher, None
        if launcher is not None:
            launcher.close()
        output, self._output = self._output, None
        if output is not None:
            os.close(output)

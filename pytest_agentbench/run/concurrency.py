"""``--agentbench-concurrency N``: up to N cases' adapters run at once in one process.

A model-backed adapter spends its case waiting on the network, and pytest runs
one item at a time. Items stay exactly as they are: what runs ahead is only
each case's world run (:meth:`AgentbenchState.run`, which drives the
adapter). Before pytest runs an item, :class:`Prefetcher` looks at the items
this process will run next (the whole list serially; under pytest-xdist the
indices the worker has been sent) and hands up to ``2 N`` of them to a
:class:`CasePool`, whose N worker threads each run one case at a time.
When an item's turn comes, it waits for its own case, then finishes the
ledger and grades on the main thread, in item order: the oracle is read only
after the output exists, and reports, snapshots and JUnit come out as in a
serial run.

Only items whose adapter and public view are the plugin's own run ahead:
an item whose ``agentbench_adapter`` or ``agentbench_world`` fixture a
``conftest.py`` overrides, or that an autouse fixture applies to, runs in its
turn as before (its fixtures must be set up first), and so do negative
controls and replayed outputs.

Under ``--agentbench-isolate`` the pool's threads drive a pool of adapter
processes (:mod:`pytest_agentbench.isolation.pool`), one case per process at
a time; a case's limit is then its calls' deadline, enforced by ending the
process that overruns it.

Otherwise, the case limit cannot be a signal off the main thread. The pool keeps each
running case's deadline: when it passes, :class:`CaseTimeout` is raised
inside the case's thread (``PyThreadState_SetAsyncExc``), again every half
second; a case that still has not let go a second later (blocked in C: a
socket read, a lock) is given up on: it is recorded as timed out, its slot
goes to the next case, and its worker, a daemon, is retired (another takes its
place) and left to end on its own.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.run.adapters import adapter_class
from pytest_agentbench.run.leaks import visible_text
from pytest_agentbench.scoring.matrix import enter_model, leave_model
from pytest_agentbench.scoring.trials import enter_trial, leave_trial
from pytest_agentbench.sdk import leaked_threads
from pytest_agentbench.sdk.contracts import Case, CaseResult, FailureClass, Outcome
from pytest_agentbench.sdk.runner import CaseTimeout, timed_out

if TYPE_CHECKING:
    from pytest_agentbench.agents.case_calls import CaseCalls
    from pytest_agentbench.run.case_ledger import CaseLedger
    from pytest_agentbench.run.session import AgentbenchState, LoadedSuite

Ran = tuple[Outcome, "CaseLedger | None", CaseResult | None]
"""A case run and not yet graded: its outcome, its open ledger, or a result already decided."""

MAX_CONCURRENCY = 1024
"""The most cases one process runs at once: a thread each."""

WINDOW_PER_SLOT = 2
"""Items handed to the pool ahead of the running one, per slot: a slow case
does not idle the other slots while its item is awaited."""

REPEAT_SECONDS = 0.5
"""How often a case past its limit is interrupted again, as the signal-based limit does."""

GIVE_UP_AFTER = 2
"""Further interrupts after the first before a case that does not let go is given up on."""


def parse_concurrency(text: object) -> int:
    """A number of concurrent cases: a whole number from 1 (serial) to :data:`MAX_CONCURRENCY`.

    Raises ValueError naming what is wrong; callers turn it into their refusal.
    """
    try:
        count = int(str(text).strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number") from None
    if not 1 <= count <= MAX_CONCURRENCY:
        raise ValueError(f"{text!r} is not a whole number from 1 to {MAX_CONCURRENCY}")
    return count


class CaseJob:
    """One case run ahead of its item; :meth:`result` waits for it."""

    def __init__(
        self,
        state: AgentbenchState,
        *,
        loaded: LoadedSuite,
        case: Case,
        view: Any,
        adapter: Any,
        trial: tuple[int | None, int],
        model: str | None = None,
    ) -> None:
        self.state = state
        self.model = model
        self.loaded = loaded
        self.case = case
        self.view = view
        self.seen = visible_text(view)
        self.calls: CaseCalls | None = None
        self.adapter = adapter
        self.trial = trial
        self.ledger: CaseLedger | None = None
        self.thread: threading.Thread | None = None
        self.started = 0.0
        self.interrupts = 0
        self.next_interrupt = 0.0
        self.threads_before: list[threading.Thread] = []
        self._done = threading.Event()
        self._settled: Ran | None = None
        self._error: BaseException | None = None

    def work(self, pool: CasePool) -> None:
        """The case's thread: open its ledger and run the world, never grading."""
        try:
            ran, error = self._run()
        except CaseTimeout as interrupted:
            # The interrupt landed after the world's run had ended: the case was past its limit.
            ran, error = self._timed_out(interrupted.receipt), None
        while True:
            try:
                pool.finished(self, ran, error)
                return
            except CaseTimeout:
                continue  # a late interrupt, before the pool withdrew it: report all the same

    def _timed_out(self, receipt: dict[str, Any] | None) -> Ran:
        elapsed = time.monotonic() - self.started
        return timed_out(elapsed, self.state.options.timeout, receipt), self.ledger, None

    def _run(self) -> tuple[Ran, BaseException | None]:
        index, count = self.trial
        token = enter_trial(self.loaded.suite.id, self.case.case_id, index, count)
        model_token = enter_model(self.model)
        try:
            opened = self.state.open_ledger(self.loaded, self.case, self.adapter)
            if isinstance(opened, CaseResult):
                return (Outcome(failure_class=FailureClass.HARNESS_ERROR), None, opened), None
            self.ledger = opened
            outcome, self.calls = self.state.run(
                self.loaded, self.case, self.view, self.adapter, opened
            )
            return (outcome, opened, None), None
        except CaseTimeout:
            raise
        except BaseException as exc:
            # A fault of the harness itself: the item raises it in its turn, as serially.
            return (Outcome(failure_class=FailureClass.HARNESS_ERROR), None, None), exc
        finally:
            leave_model(model_token)
            leave_trial(token)

    def settle(self, ran: Ran, error: BaseException | None) -> bool:
        """Keep the first answer (the case's own, or the pool giving up on it)."""
        if self._done.is_set():
            return False
        self._settled, self._error = ran, error
        self._done.set()
        return True

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def result(self) -> tuple[Outcome, CaseResult]:
        """Wait for the case, then finish its ledger and grade it (on the calling thread)."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._settled is not None
        outcome, case_ledger, decided = self._settled
        if decided is not None:
            return outcome, decided
        item = None
        if self.state.options.artifacts_dir is not None:
            # Imported only for artefacts: it imports the ledger's modules.
            from pytest_agentbench.run.episode_artifacts import artifact_item

            item = artifact_item(
                adapter_class(self.adapter), self.case.case_id, self.trial, self.model
            )
        # Settled on the item's thread: under a model matrix, as the case's model's run.
        token = enter_model(self.model)
        try:
            return self.state.settle(
                self.loaded,
                self.case,
                outcome,
                case_ledger,
                seen=self.seen,
                calls=self.calls,
                item=item,
            )
        finally:
            leave_model(token)


def _interrupt(thread: threading.Thread) -> None:
    """Raise :class:`CaseTimeout` in ``thread`` at its next line of Python."""
    import ctypes  # only a case past its limit pays for importing it

    if thread.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(thread.ident), ctypes.py_object(CaseTimeout)
        )


def _clear_interrupt() -> None:
    """Withdraw an interrupt aimed at this thread that has not landed yet."""
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(threading.get_ident()), None)


class CasePool:
    """Runs up to ``size`` queued cases at once on as many worker threads; enforces their limit.

    A worker takes the next queued case as soon as its own ends. (A thread per
    case, started by one supervising thread, refilled each slot through that
    thread and a thread start: under load from 64 cases at once each took a
    turn of the interpreter lock, and the starts, not the model, set the pace.)
    With a limit (``timeout`` seconds from each start; 0: none) one watching
    thread interrupts a case past it, and gives up on one that does not let go:
    its worker is retired and another takes its place.
    """

    def __init__(self, size: int, timeout: float) -> None:
        self.size = size
        self.timeout = timeout
        self._queue: deque[CaseJob] = deque()
        self._running: list[CaseJob] = []
        self._workers: set[threading.Thread] = set()
        self._idle = 0
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)
        self._watch = threading.Condition(self._lock)
        self._closed = False
        self._watcher: threading.Thread | None = None

    def submit(self, job: CaseJob) -> None:
        with self._lock:
            self._queue.append(job)
            if self._idle:
                self._idle -= 1  # counted here: a second submit must wake a second worker
                self._work.notify()
            elif len(self._workers) < self.size:
                self._hire()
            if self.timeout > 0 and self._watcher is None:
                self._watcher = threading.Thread(
                    target=self._police_all, name="agentbench-case-watch", daemon=True
                )
                self._watcher.start()

    def finished(self, job: CaseJob, ran: Ran, error: BaseException | None) -> None:
        """Called by a case's worker when its run returns (or once it is given up on)."""
        with self._lock:
            if job.interrupts:
                # Interrupts are sent holding this lock: none can follow this one.
                _clear_interrupt()
            job.settle(ran, error)
            if job in self._running:
                self._running.remove(job)
        leaked_threads.note(job.threads_before)

    def close(self) -> None:
        """Drop the cases not started; running ones are daemons and end on their own."""
        with self._lock:
            self._closed = True
            self._queue.clear()
            self._work.notify_all()
            self._watch.notify()
        if self._watcher is not None:
            self._watcher.join(timeout=5)

    def _hire(self) -> None:
        worker = threading.Thread(target=self._serve, name="agentbench-case-worker", daemon=True)
        self._workers.add(worker)
        worker.start()

    def _serve(self) -> None:
        me = threading.current_thread()
        while True:
            with self._lock:
                while not self._queue and not self._closed and me in self._workers:
                    self._idle += 1
                    self._work.wait()
                if self._closed or me not in self._workers:
                    self._workers.discard(me)
                    return
                job = self._queue.popleft()
                job.started = time.monotonic()
                job.thread = me
                job.threads_before = threading.enumerate()
                self._running.append(job)
                if self.timeout > 0 and len(self._running) == 1:
                    # The watcher waits for no deadline; any other case's comes before this one's.
                    self._watch.notify()
            job.work(self)

    def _police_all(self) -> None:
        with self._lock:
            while not self._closed:
                now = time.monotonic()
                for job in list(self._running):
                    self._police(job, now)  # may give a worker up
                wake = min((self._next_look(job) for job in self._running), default=None)
                self._watch.wait(None if wake is None else max(wake - now, 0.0))

    def _next_look(self, job: CaseJob) -> float:
        return job.started + self.timeout if job.interrupts == 0 else job.next_interrupt

    def _police(self, job: CaseJob, now: float) -> None:
        """Interrupt a case past its limit, or give up on one that does not let go."""
        assert job.thread is not None
        if now < self._next_look(job):
            return
        if job.interrupts > GIVE_UP_AFTER:
            # Blocked where no interrupt reaches: its worker is retired, another hired.
            self._running.remove(job)
            self._workers.discard(job.thread)
            if self._queue:
                self._hire()
            if job.ledger is not None:
                job.ledger.timed_out = True
            job.settle((timed_out(now - job.started, self.timeout), job.ledger, None), None)
            leaked_threads.note(job.threads_before)
            return
        _interrupt(job.thread)
        job.interrupts += 1
        job.next_interrupt = now + REPEAT_SECONDS


class Prefetcher:
    """Hands the items this process runs next to the pool; each item then takes its case."""

    def __init__(self, session: pytest.Session, state: AgentbenchState) -> None:
        self.session = session
        self.state = state
        size = state.options.concurrency
        self.window = WINDOW_PER_SLOT * size
        # An isolated case's calls carry its deadline to its adapter process, which is
        # ended when it passes: no interrupt is needed, and none may land while the
        # harness ends that process.
        self.pool = CasePool(size, 0.0 if state.isolation is not None else state.options.timeout)
        self.jobs: dict[pytest.Item, CaseJob] = {}
        self._positions: dict[pytest.Item, int] | None = None
        self._worker_queue = _worker_queue(session.config)

    def upcoming(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[pytest.Item]:
        """``item`` and the items this process runs after it, as far as it knows them."""
        items = self.session.items
        if self._worker_queue is not None:
            # The worker has taken ``nextitem`` off its queue already.
            with self._worker_queue.lock() as indices:
                ahead = [
                    items[index] for index in islice(indices, self.window) if isinstance(index, int)
                ]
            yield item
            if nextitem is not None:
                yield nextitem
            yield from ahead
            return
        if self._positions is None:
            self._positions = {each: position for position, each in enumerate(items)}
        start = self._positions.get(item)
        if start is None:
            yield item
            return
        for position in range(start, min(start + self.window, len(items))):
            yield items[position]

    def top_up(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        for count, upcoming in enumerate(self.upcoming(item, nextitem)):
            if count >= self.window:
                break
            # Only a case item that may start before its turn says so (``runs_ahead``,
            # plugin/collect.py); any other item, a control or a user's test, has no such flag.
            if upcoming in self.jobs or not getattr(upcoming, "runs_ahead", False):
                continue
            job = self._job(upcoming)
            if job is not None:
                self.jobs[upcoming] = job
                self.pool.submit(job)

    def _job(self, item: Any) -> CaseJob | None:
        loaded, case = item.loaded, item.case
        try:
            adapter = self.state.adapter_for(loaded, self.state.adapter)
            view = loaded.world.public_view(loaded.suite, case)
        except (pytest.skip.Exception, pytest.fail.Exception, Exception):
            return None  # the item skips or fails itself in its turn, as serially
        return CaseJob(
            self.state,
            loaded=loaded,
            case=case,
            view=view,
            adapter=adapter,
            trial=(item.trial, item.trial_count),
            model=item.model,
        )

    def take(self, item: pytest.Item) -> CaseJob | None:
        """The item's case run ahead, if it was (then it is no longer held here)."""
        return self.jobs.pop(item, None)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        self.top_up(item, nextitem)

    def close(self) -> None:
        self.pool.close()
        self.jobs.clear()


def _worker_queue(config: pytest.Config) -> Any:
    """Under pytest-xdist, the worker's queue of item indices it has been sent, else ``None``."""
    if not hasattr(config, "workerinput"):
        return None
    for plugin in config.pluginmanager.get_plugins():
        queue = getattr(plugin, "torun", None)
        if queue is not None and callable(getattr(queue, "lock", None)):
            return queue
    return None


PREFETCHER_KEY = pytest.StashKey[Prefetcher]()


def start(session: pytest.Session, state: AgentbenchState) -> None:
    """Register the prefetcher of a run with ``--agentbench-concurrency`` above 1."""
    prefetcher = Prefetcher(session, state)
    session.config.stash[PREFETCHER_KEY] = prefetcher
    session.config.pluginmanager.register(prefetcher, "agentbench-prefetcher")


def stop(config: pytest.Config) -> None:
    prefetcher = config.stash.get(PREFETCHER_KEY, None)
    if prefetcher is not None:
        prefetcher.close()
        del config.stash[PREFETCHER_KEY]


def taken(config: pytest.Config, item: pytest.Item) -> CaseJob | None:
    """The case of ``item`` that ran ahead, if any."""
    prefetcher = config.stash.get(PREFETCHER_KEY, None)
    return None if prefetcher is None else prefetcher.take(item)

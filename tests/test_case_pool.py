"""The pool behind ``--agentbench-concurrency``: N workers, slots refilled, hung cases given up."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_agentbench.run import concurrency
from pytest_agentbench.run.concurrency import CaseJob, CasePool
from pytest_agentbench.sdk.contracts import FailureClass, Outcome


class _Job(CaseJob):
    """A case job whose run is ``body``: the fields the pool reads, no session behind it."""

    def __init__(self, body: Callable[[], None], timeout: float = 0.0) -> None:
        self.body = body
        self.state: Any = SimpleNamespace(options=SimpleNamespace(timeout=timeout))
        self.ledger = None
        self.thread = None
        self.ran_on: threading.Thread | None = None
        self.started = 0.0
        self.interrupts = 0
        self.next_interrupt = 0.0
        self.threads_before = []
        self._done = threading.Event()
        self._settled = None
        self._error = None

    def _run(self) -> tuple[Any, BaseException | None]:
        self.ran_on = threading.current_thread()
        self.body()
        return (Outcome(), None, None), None

    def outcome(self) -> Outcome:
        assert self._done.wait(timeout=60), "the job ended"
        assert self._settled is not None
        return self._settled[0]


def test_every_slot_is_refilled_and_workers_are_reused() -> None:
    pool = CasePool(4, timeout=0)
    try:
        warm = [_Job(lambda: None) for _ in range(4)]
        for job in warm:
            pool.submit(job)
        for job in warm:
            job.outcome()
        time.sleep(0.1)  # the four workers are idle again, waiting for work
        # Each of the next four cases waits for the other three: they all run at once
        # only if four submits woke four idle workers.
        together = threading.Barrier(4, timeout=30)
        batch = [_Job(together.wait) for _ in range(4)]
        for job in batch:
            pool.submit(job)
        for job in batch:
            assert job.outcome().failure_class is None
        workers = {job.ran_on for job in warm + batch}
        assert len(workers) <= 4, "a worker runs one case after another"
    finally:
        pool.close()


def test_a_case_that_does_not_let_go_is_given_up_and_its_slot_refilled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The interrupts that go unheeded come every 50 ms rather than every half second: the
    # pool gives up after the same count of them. With the real interval, a session gives
    # up on a case blocked in C in tests/test_plugin_concurrency.py.
    monkeypatch.setattr(concurrency, "REPEAT_SECONDS", 0.05)
    pool = CasePool(1, timeout=0.2)
    never = threading.Event()
    try:
        hung = _Job(never.wait, timeout=0.2)  # blocked in C: no interrupt reaches it
        after = _Job(lambda: None, timeout=0.2)
        pool.submit(hung)
        pool.submit(after)
        timed_out = hung.outcome()
        assert timed_out.failure_class is FailureClass.AGENT_ERROR
        assert timed_out.failure_reason is not None
        assert timed_out.failure_reason.startswith("timed out after ")
        assert after.outcome().failure_class is None, "the next case ran in the freed slot"
        assert after.ran_on is not hung.ran_on, "on a new worker: the hung one is retired"
    finally:
        never.set()
        pool.close()


def test_a_case_in_a_python_loop_is_interrupted_at_its_limit() -> None:
    pool = CasePool(2, timeout=0.2)
    try:

        def spin() -> None:
            while True:
                time.sleep(0.01)

        looping = _Job(spin, timeout=0.2)
        pool.submit(looping)
        outcome = looping.outcome()
        assert outcome.failure_class is FailureClass.AGENT_ERROR
        assert looping.interrupts >= 1, "interrupted, not given up on"
        fine = _Job(lambda: None, timeout=0.2)
        pool.submit(fine)
        assert fine.outcome().failure_class is None
        assert fine.ran_on is looping.ran_on, "the interrupted worker serves on"
    finally:
        pool.close()

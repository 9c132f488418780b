"""Driving an adapter through one case: timeouts and failure classification.

A world calls the adapter through :func:`call_adapter`, so anything the
adapter raises becomes an ``agent_error`` rather than taking the session down,
and raises :class:`MalformedOutput` for output it cannot accept
(``product_error``). :func:`run_case` adds the per-case timeout, which
interrupts a hang instead of waiting it out.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar

from pytest_agentbench.contracts import Case, FailureClass, Outcome
from pytest_agentbench.suite import Suite
from pytest_agentbench.world import World

T = TypeVar("T")


class AdapterFailure(Exception):
    """The adapter failed a case; carries the failure class and a one-line reason."""

    failure_class = FailureClass.AGENT_ERROR

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MalformedOutput(AdapterFailure):
    """The adapter returned output that breaks the world's output contract."""

    failure_class = FailureClass.PRODUCT_ERROR


class CaseTimeout(BaseException):
    """Raised inside a hung adapter. A BaseException so ``except Exception`` cannot swallow it."""


def describe_exception(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def call_adapter(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Call into the adapter; its exceptions become :class:`AdapterFailure`."""
    try:
        return function(*args, **kwargs)
    except AdapterFailure:
        raise
    # An adapter wrapping a command-line tool may call sys.exit(): still the agent's failure.
    except (Exception, SystemExit) as exc:
        raise AdapterFailure(f"adapter raised {describe_exception(exc)}") from exc


@contextmanager
def interrupt_after(seconds: float) -> Iterator[None]:
    """Raise :class:`CaseTimeout` in the running code once ``seconds`` pass.

    Uses a real-time interval timer, so a sleeping or spinning adapter is
    interrupted. Off the main thread (where signals cannot be delivered) the
    limit is not enforced here; pytest-xdist runs tests on the main thread.
    """
    usable = seconds > 0 and threading.current_thread() is threading.main_thread()
    if not usable or not hasattr(signal, "setitimer"):
        yield
        return

    def _expire(_signum: int, _frame: FrameType | None) -> None:
        raise CaseTimeout()

    previous = signal.signal(signal.SIGALRM, _expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_case(
    world: World, suite: Suite, case: Case, view: Any, adapter: Any, *, timeout: float
) -> Outcome:
    """Run one case, classifying every way the adapter can fail."""
    started = time.perf_counter()
    try:
        with interrupt_after(timeout):
            return world.run(suite, case, view, adapter)
    except CaseTimeout:
        elapsed = time.perf_counter() - started
        return Outcome(
            failure_class=FailureClass.AGENT_ERROR,
            failure_reason=f"timed out after {elapsed:.1f}s (--agentbench-timeout={timeout:g})",
        )
    except AdapterFailure as failure:
        return Outcome(failure_class=failure.failure_class, failure_reason=failure.reason)
    except Exception as exc:
        return Outcome(
            failure_class=FailureClass.HARNESS_ERROR,
            failure_reason=(
                f"world {world.kind!r} failed to run the case: {describe_exception(exc)}"
            ),
        )

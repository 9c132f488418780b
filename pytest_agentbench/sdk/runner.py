"""Driving an adapter through one case: timeouts and failure classification.

A world calls the adapter through :func:`call_adapter`, so anything the
adapter raises becomes an ``agent_error`` rather than taking the session down,
and raises :class:`MalformedOutput` for output it cannot accept
(``product_error``). :func:`run_case` adds the per-case timeout, which
interrupts a hang instead of waiting it out.
"""

from __future__ import annotations

import importlib
import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from types import CoroutineType, FrameType
from typing import Any, TypeVar

from pytest_agentbench.sdk import crashes, leaked_threads
from pytest_agentbench.sdk.contracts import Case, FailureClass, Outcome
from pytest_agentbench.sdk.errors import (
    cap_text,
    describe_exception,
    escape_surrogates,
    first_surrogate_path,
    has_surrogates,
)
from pytest_agentbench.sdk.suite import Suite
from pytest_agentbench.sdk.tracebacks import adapter_traceback
from pytest_agentbench.sdk.world import World

T = TypeVar("T")


class AdapterFailure(Exception):
    """The adapter failed a case; carries the failure class and a one-line reason.

    ``traceback`` is the adapter's own traceback as text, when it raised in
    another process (an isolated adapter) and only its text crossed.
    """

    failure_class = FailureClass.AGENT_ERROR

    def __init__(self, reason: str, *, traceback: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.traceback = traceback


class MalformedOutput(AdapterFailure):
    """The adapter returned output that breaks the world's output contract."""

    failure_class = FailureClass.PRODUCT_ERROR


class CaseTimeout(BaseException):
    """Raised inside a hung adapter. A BaseException so ``except Exception`` cannot swallow it."""

    receipt: dict[str, Any] | None = None
    """Set by a world that drove a tool session, so the timed-out case keeps its receipt."""


MAX_TIMEOUT = 1_000_000.0
"""The largest per-case limit accepted, in seconds (about 11.5 days)."""

MIN_TIMEOUT = 0.01
"""The smallest non-zero per-case limit accepted, in seconds.

An interval timer of a few microseconds fires again before its handler returns:
pytest hangs or dies of SIGALRM instead of failing the case.
"""


def parse_timeout(text: object) -> float:
    """A per-case limit in seconds: 0 (no limit), or :data:`MIN_TIMEOUT` to :data:`MAX_TIMEOUT`.

    Raises ValueError naming what is wrong; callers turn it into their refusal.
    """
    try:
        seconds = float(str(text).strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or not (seconds == 0 or MIN_TIMEOUT <= seconds <= MAX_TIMEOUT):
        raise ValueError(
            f"{text!r} is not 0 (no limit) nor a number of seconds "
            f"from {MIN_TIMEOUT:g} to {MAX_TIMEOUT:g}"
        )
    return seconds


class _CaseTraceback(threading.local):
    """The first adapter traceback of the case running on this thread (see :func:`run_case`).

    Per thread: under ``--agentbench-concurrency`` each running case has its own.
    """

    text: str | None = None


_case_traceback = _CaseTraceback()


def _note_traceback(text: str | None) -> None:
    if text and _case_traceback.text is None:
        _case_traceback.text = text


def call_adapter(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Call into the adapter; anything it raises becomes :class:`AdapterFailure`.

    Every BaseException counts (``asyncio.CancelledError``, ``SystemExit`` from
    a wrapped command-line tool): raising it fails the agent's case rather than
    leaving the case out of the metrics. Only the case limit's own
    :class:`CaseTimeout` and ``KeyboardInterrupt`` (the user's Ctrl-C ends the
    run, as in any test) pass through. While the call
    runs, the process's adapter-call flag is up (see :mod:`.crashes`), so a
    worker that dies inside it is the agent's failure too.
    """
    flag = crashes.ADAPTER_CALL
    flag.raise_flag()
    try:
        result = function(*args, **kwargs)
        if isinstance(result, CoroutineType):  # an ``async def`` method's call
            result = awaited(result)
        return result
    except AdapterFailure as failure:
        _note_traceback(failure.traceback)
        raise
    except (CaseTimeout, KeyboardInterrupt):
        raise
    except BaseException as exc:
        text = adapter_traceback(exc)
        _note_traceback(text)
        raise AdapterFailure(f"adapter raised {describe_exception(exc)}", traceback=text) from exc
    finally:
        flag.lower_flag()


def awaited(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run an async adapter method's coroutine to its end on an event loop of this thread.

    Each call gets a fresh loop, closed after: under ``--agentbench-concurrency``
    every case runs on a thread of its own, so their coroutines wait at once.
    """
    import asyncio  # only async adapters pay for importing it

    return asyncio.run(coroutine)


class _CaseAlarm:
    """The SIGALRM handler of case limits.

    Installing a signal handler costs several times what arming the timer does,
    so the handler stays installed between cases. A SIGALRM that arrives while
    no limit is armed goes where it would have gone without us: to the handler
    this one displaced. :func:`release_alarm` puts that handler back.

    The timer repeats until the limit is left: an adapter that catches the
    first :class:`CaseTimeout`, or whose cleanup blocks in turn (joining an
    executor's thread, an event loop waiting for its default executor), is
    interrupted again. From the second alarm on, every line of Python the
    interrupted code runs raises as well (:func:`_raise_on_every_line`), so a
    bare ``except: continue`` around the hang cannot keep the case alive.
    """

    def __init__(self) -> None:
        self.armed = False
        self.fired = 0
        self.held = 0
        """How many :func:`alarm_held` blocks are open: an alarm now waits for the last to end."""
        self.pending = False
        self.boundary: FrameType | None = None
        """The frame that entered the limit: lines above it are the harness's own."""
        self.displaced: Callable[[int, FrameType | None], Any] | int = signal.SIG_DFL

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.held:
            self.pending = True
            return
        if self.armed:
            if frame is not None and frame.f_code is _LIMIT_EXIT:
                return  # the limit is being left: nothing left to interrupt
            self.fired += 1
            if self.fired > 1:
                _raise_on_every_line(frame, self.boundary)
            raise CaseTimeout()
        displaced = self.displaced
        if callable(displaced):
            displaced(signum, frame)
        elif displaced != signal.SIG_IGN:
            # The default action (ending the process) is what the sender asked for.
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.raise_signal(signal.SIGALRM)


def _raise_on_line(frame: FrameType, event: str, arg: object) -> Any:
    if event == "line":
        raise CaseTimeout()
    return _raise_on_line


def _raise_on_new_frame(frame: FrameType, event: str, arg: object) -> Any:
    if frame.f_code is _LIMIT_EXIT:
        return None
    return _raise_on_line


def _raise_on_every_line(frame: FrameType | None, boundary: FrameType | None) -> None:
    """Make the next line the interrupted code runs raise :class:`CaseTimeout`.

    A trace function that raises is removed by the interpreter, so this holds
    for one line; the repeating alarm installs it again. Frames from the
    limit's own frame up are left alone.
    """
    while frame is not None and frame is not boundary:
        frame.f_trace_lines = True
        frame.f_trace = _raise_on_line
        frame = frame.f_back
    sys.settrace(_raise_on_new_frame)


_ALARM = _CaseAlarm()


def _raw_getsignal() -> Callable[[int], object]:
    # signal.getsignal converts the handler to a Handlers member, which for any
    # callable fails slowly (raising and catching ValueError): microseconds per
    # case. The C function beneath it returns the handler as it is.
    try:
        raw: Callable[[int], object] = importlib.import_module("_signal").getsignal
    except (ImportError, AttributeError):
        return signal.getsignal
    return raw


_current_handler = _raw_getsignal()


_HAS_ITIMER = hasattr(signal, "setitimer")


def _on_main_thread() -> bool:
    # Signals are delivered to the main thread only; pytest-xdist runs tests there.
    return _HAS_ITIMER and threading.current_thread() is threading.main_thread()


def interrupt_after(seconds: float) -> CaseLimit:
    """Raise :class:`CaseTimeout` in the code run under ``with`` once ``seconds`` pass.

    Uses a real-time interval timer, so a sleeping or spinning adapter is
    interrupted. Off the main thread (where signals cannot be delivered) the
    limit is not enforced here; pytest-xdist runs tests on the main thread.
    """
    return CaseLimit(seconds)


class CaseLimit:
    """The context manager of :func:`interrupt_after`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.armed = False
        self._trace: Any = None

    def __enter__(self) -> None:
        if self.seconds <= 0 or not _on_main_thread():
            return
        current = _current_handler(signal.SIGALRM)
        if current is not _ALARM:
            # The enum-converting call, since the displaced handler is given back with it.
            previous = signal.signal(signal.SIGALRM, _ALARM)
            _ALARM.displaced = signal.SIG_DFL if previous is None else previous
        self._trace = sys.gettrace()
        _ALARM.boundary = sys._getframe(1)
        _ALARM.fired = 0
        _ALARM.armed = self.armed = True
        signal.setitimer(signal.ITIMER_REAL, self.seconds, min(self.seconds, _REPEAT_SECONDS))

    def __exit__(self, *exc_info: object) -> None:
        if self.armed:
            _ALARM.armed = self.armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            _ALARM.boundary = None
            if _ALARM.fired > 1:
                # Give back whatever tracer (a coverage tool, a debugger) ran before.
                sys.settrace(self._trace)


_LIMIT_EXIT = CaseLimit.__exit__.__code__
_REPEAT_SECONDS = 0.5
"""How often a case past its limit is interrupted again until it lets go."""


@contextmanager
def harness_time() -> Iterator[None]:
    """Stop the case limit's clock while the harness works on the adapter's behalf.

    Restarting an isolated adapter's process after a crash or a hang is the
    harness's recovery, not the adapter's time: under load it can take longer
    than a short limit, which would charge the next case with a timeout it did
    not cause. A limit that has already fired is left alone.
    """
    if not (_ALARM.armed and _ALARM.fired == 0 and _on_main_thread()):
        yield
        return
    remaining, interval = signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        yield
    finally:
        if _ALARM.armed and remaining > 0:
            signal.setitimer(signal.ITIMER_REAL, remaining, interval)


@contextmanager
def alarm_held() -> Iterator[None]:
    """Hold the case limit's alarm back while the harness does what must not stop halfway.

    Ending an adapter's process tree, writing a ledger row: an alarm that arrives
    meanwhile is delivered as the block ends. The hold is kept by the handler, not
    the signal mask: a process-directed signal the main thread blocks goes to any
    other thread that does not (an xdist worker's execnet thread, a pool's), and
    Python then runs the handler on the main thread all the same. A limit that has
    fired more than once makes every new line raise (:func:`_raise_on_every_line`);
    that is suspended for the block too.
    """
    if not _on_main_thread():
        yield
        return
    tracer = sys.gettrace()
    if tracer is _raise_on_new_frame:
        sys.settrace(None)
    _ALARM.held += 1
    try:
        yield
    finally:
        _ALARM.held -= 1
        if tracer is _raise_on_new_frame:
            sys.settrace(tracer)
        if not _ALARM.held and _ALARM.pending:
            _ALARM.pending = False
            signal.raise_signal(signal.SIGALRM)


def release_alarm() -> None:
    """Give SIGALRM back to the handler that case limits displaced (at session end)."""
    displaced = _ALARM.displaced
    if _on_main_thread() and signal.getsignal(signal.SIGALRM) is _ALARM:
        signal.signal(signal.SIGALRM, displaced)


def timed_out(elapsed: float, timeout: float, receipt: dict[str, Any] | None = None) -> Outcome:
    """The outcome of a case its limit ended after ``elapsed`` seconds."""
    return Outcome(
        failure_class=FailureClass.AGENT_ERROR,
        failure_reason=f"timed out after {elapsed:.1f}s (--agentbench-timeout={timeout:g})",
        receipt=receipt,
    )


def run_case(
    world: World, suite: Suite, case: Case, view: Any, adapter: Any, *, timeout: float
) -> Outcome:
    """Run one case, classifying every way the adapter can fail.

    An agent error keeps the traceback of the first exception the adapter
    raised in the case, also when the world caught the failure itself.
    """
    _case_traceback.text = None
    try:
        outcome = _run_case(world, suite, case, view, adapter, timeout=timeout)
    finally:
        raised, _case_traceback.text = _case_traceback.text, None
    if (
        raised
        and outcome.failure_class is FailureClass.AGENT_ERROR
        and not outcome.failure_traceback
    ):
        outcome = outcome.model_copy(update={"failure_traceback": escape_surrogates(raised)})
    return _unicode_only(outcome)


def _unicode_only(outcome: Outcome) -> Outcome:
    """The outcome with no lone surrogate left: such text is no Unicode, and no file takes it.

    An output holding one is malformed (the adapter's, as every other malformed output),
    in every mode alike: isolated, it crosses the pipe as the same JSON escape. A reason a
    world wrote from the adapter's text is escaped.
    """
    update: dict[str, Any] = {}
    reason, traceback = outcome.failure_reason, outcome.failure_traceback
    if reason is not None and has_surrogates(reason):
        update["failure_reason"] = escape_surrogates(reason)
    if traceback is not None and has_surrogates(traceback):
        update["failure_traceback"] = escape_surrogates(traceback)
    if outcome.failure_class is None:
        where = first_surrogate_path(outcome.output)
        if where is not None:
            update["failure_class"] = FailureClass.AGENT_ERROR
            update["failure_reason"] = (
                f"malformed output: {where} holds a lone surrogate, which is not Unicode text"
            )
    return outcome.model_copy(update=update) if update else outcome


def _run_case(
    world: World, suite: Suite, case: Case, view: Any, adapter: Any, *, timeout: float
) -> Outcome:
    started = time.perf_counter()
    threads_before = threading.enumerate()
    try:
        with CaseLimit(timeout):
            return world.run(suite, case, view, adapter)
    except CaseTimeout as interrupted:
        return timed_out(time.perf_counter() - started, timeout, interrupted.receipt)
    except AdapterFailure as failure:
        # Escaped here, whichever side of the isolation pipe the text was made on.
        return Outcome(
            failure_class=failure.failure_class,
            failure_reason=cap_text(escape_surrogates(failure.reason)),
            failure_traceback=None
            if failure.traceback is None
            else escape_surrogates(failure.traceback),
        )
    except UnicodeEncodeError as exc:
        if exc.reason != "surrogates not allowed":
            return _world_failed(world, exc)
        # Only text from outside holds a lone surrogate: the adapter's output, met by
        # the world as it encodes it (the outcome check below meets the rest).
        return Outcome(
            failure_class=FailureClass.AGENT_ERROR,
            failure_reason="malformed output: it holds a lone surrogate, which is not Unicode text",
        )
    except Exception as exc:
        return _world_failed(world, exc)
    finally:
        leaked_threads.note(threads_before)


def _world_failed(world: World, exc: Exception) -> Outcome:
    return Outcome(
        failure_class=FailureClass.HARNESS_ERROR,
        failure_reason=cap_text(
            f"world {world.kind!r} failed to run the case: {describe_exception(exc)}"
        ),
    )

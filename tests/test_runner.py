from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from pytest_agentbench.sdk.contracts import Case, FailureClass, Outcome
from pytest_agentbench.sdk.errors import describe_exception
from pytest_agentbench.sdk.runner import (
    AdapterFailure,
    CaseTimeout,
    MalformedOutput,
    alarm_held,
    call_adapter,
    harness_time,
    interrupt_after,
    release_alarm,
    run_case,
)
from pytest_agentbench.sdk.suite import Suite, SuiteConfig
from pytest_agentbench.sdk.world import World
from tests.demo_world import WORLD as DEMO_WORLD
from tests.demo_world import Reference

WORLD: World = DEMO_WORLD

needs_itimer = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="no setitimer")

BOUNDED = 60.0
"""Far below the hangs under test (1000 s, or forever) and far above what a loaded machine
needs to stop one: the assertion is that the hang was stopped, not how fast."""


# --- call_adapter ----------------------------------------------------------------


def test_call_adapter_returns_what_the_adapter_returns() -> None:
    assert call_adapter(lambda a, *, b: a + b, 2, b=3) == 5


def test_call_adapter_turns_an_exception_into_an_agent_failure() -> None:
    def broken(question: str) -> int:
        raise ValueError(f"cannot parse {question}\nsecond line")

    with pytest.raises(AdapterFailure) as caught:
        call_adapter(broken, "2+2")
    failure = caught.value
    assert failure.failure_class is FailureClass.AGENT_ERROR
    assert failure.reason == "adapter raised ValueError: cannot parse 2+2"
    assert isinstance(failure.__cause__, ValueError)


def test_call_adapter_lets_a_malformed_output_refusal_through() -> None:
    def refuses() -> None:
        raise MalformedOutput("answer must be an integer")

    with pytest.raises(MalformedOutput) as caught:
        call_adapter(refuses)
    assert caught.value.failure_class is FailureClass.PRODUCT_ERROR
    assert caught.value.reason == "answer must be an integer"


def test_an_adapter_calling_sys_exit_is_an_agent_failure() -> None:
    def exits() -> None:
        raise SystemExit(3)

    with pytest.raises(AdapterFailure) as caught:
        call_adapter(exits)
    assert caught.value.failure_class is FailureClass.AGENT_ERROR
    assert caught.value.reason == "adapter raised SystemExit: 3"


def test_call_adapter_does_not_swallow_a_keyboard_interrupt() -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        call_adapter(interrupted)


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (ValueError("bad"), "ValueError: bad"),
        (RuntimeError(), "RuntimeError"),
        (KeyError("k"), "KeyError: 'k'"),
        (OSError("  first\nsecond  "), "OSError: first"),
    ],
)
def test_describe_exception_is_one_line(exc: BaseException, text: str) -> None:
    assert describe_exception(exc) == text


# --- interrupt_after -------------------------------------------------------------


@needs_itimer
def test_interrupt_after_stops_a_sleeping_function() -> None:
    started = time.perf_counter()
    with pytest.raises(CaseTimeout), interrupt_after(0.1):
        time.sleep(1000)
    assert time.perf_counter() - started < BOUNDED


@needs_itimer
def test_harness_time_does_not_count_against_the_case_limit() -> None:
    with interrupt_after(0.3):
        with harness_time():
            time.sleep(0.6)  # past the limit, but the harness's time
        time.sleep(0.1)  # the adapter's own time is still within it


@needs_itimer
def test_the_limit_resumes_with_its_remaining_time_after_harness_time() -> None:
    def harness_then_adapter() -> None:
        with harness_time():
            time.sleep(0.05)
        time.sleep(5)

    with pytest.raises(CaseTimeout), interrupt_after(0.3):
        harness_then_adapter()
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@needs_itimer
@pytest.mark.parametrize("other_thread", [False, True], ids=["alone", "beside-a-thread"])
def test_a_limit_firing_while_held_interrupts_only_once_the_hold_ends(other_thread: bool) -> None:
    # A thread that does not block SIGALRM (an xdist worker's execnet thread) must not
    # let the alarm through the hold: a kill of an adapter's tree was cut off halfway.
    stop = threading.Event()
    beside = threading.Thread(target=stop.wait)
    if other_thread:
        beside.start()
    steps = []

    def hold_through_the_limit() -> None:
        with alarm_held():
            time.sleep(0.3)  # the limit fires here, and repeats, while held
            steps.append("held to the end")
        steps.append("after the hold")

    try:
        with pytest.raises(CaseTimeout), interrupt_after(0.05):
            hold_through_the_limit()
    finally:
        stop.set()
        if other_thread:
            beside.join()
    assert steps == ["held to the end"]


def test_interrupt_after_stops_a_spinning_function() -> None:
    started = time.perf_counter()

    def spin() -> None:
        while True:
            pass

    with pytest.raises(CaseTimeout), interrupt_after(0.1):
        spin()
    assert time.perf_counter() - started < BOUNDED


@needs_itimer
def test_a_timeout_cannot_be_swallowed_by_except_exception() -> None:
    def stubborn() -> str:
        try:
            time.sleep(5)
        except Exception:
            return "swallowed"
        return "finished"

    with pytest.raises(CaseTimeout), interrupt_after(0.1):
        stubborn()


@needs_itimer
def test_between_limits_a_stray_alarm_reaches_the_displaced_handler_and_release_restores_it() -> (
    None
):
    calls: list[int] = []

    def previous(signum: int, frame: FrameType | None) -> None:
        calls.append(signum)

    original = signal.signal(signal.SIGALRM, previous)
    try:
        with interrupt_after(5):
            assert signal.getitimer(signal.ITIMER_REAL)[0] > 0
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        signal.raise_signal(signal.SIGALRM)
        assert calls == [signal.SIGALRM]
        release_alarm()
        assert signal.getsignal(signal.SIGALRM) is previous
    finally:
        signal.signal(signal.SIGALRM, original)


@needs_itimer
def test_a_limit_still_fires_after_a_handler_replaced_the_case_alarm_between_cases() -> None:
    with interrupt_after(5):
        pass
    original = signal.signal(signal.SIGALRM, signal.SIG_IGN)
    try:
        with pytest.raises(CaseTimeout), interrupt_after(0.05):
            time.sleep(5)
        release_alarm()
        assert signal.getsignal(signal.SIGALRM) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGALRM, original)


@needs_itimer
def test_interrupt_after_disarms_the_timer_when_the_body_raises() -> None:
    with pytest.raises(ValueError, match="inside"), interrupt_after(5):
        raise ValueError("inside")
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_zero_limit_sets_no_timer() -> None:
    with interrupt_after(0):
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        time.sleep(0.01)


def test_off_the_main_thread_no_limit_is_enforced() -> None:
    outcome: list[str] = []

    def worker() -> None:
        with interrupt_after(0.01):
            time.sleep(0.1)
        outcome.append("finished")

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert outcome == ["finished"]


# --- run_case --------------------------------------------------------------------


@pytest.fixture
def suite(tmp_path: Path) -> Suite:
    config = SuiteConfig(id="demo-suite", version="1", world="demo", title="Demo")
    return Suite(config=config, root=tmp_path, display_root="suites/demo-suite")


CASE = Case(suite_id="demo-suite", case_id="c1", file="cases.jsonl", line=1)
VIEW = {"question": "2+3"}


class Raises:
    def answer(self, question: str) -> int:
        raise ConnectionError("model endpoint unreachable")


class Sleeps:
    def answer(self, question: str) -> int:
        time.sleep(1000)
        return 5


class Chatty:
    def answer(self, question: str) -> Any:
        return "five"


def run(suite: Suite, adapter: Any, view: Any = VIEW, timeout: float = 30) -> Outcome:
    return run_case(WORLD, suite, CASE, view, adapter, timeout=timeout)


def test_run_case_returns_the_adapter_output(suite: Suite) -> None:
    assert run(suite, Reference()) == Outcome(output={"answer": 5})


def test_an_adapter_exception_is_an_agent_error(suite: Suite) -> None:
    outcome = run(suite, Raises())
    assert outcome.failure_class is FailureClass.AGENT_ERROR
    assert outcome.failure_reason == "adapter raised ConnectionError: model endpoint unreachable"
    assert outcome.output is None


def test_malformed_output_is_a_product_error(suite: Suite) -> None:
    outcome = run(suite, Chatty())
    assert outcome.failure_class is FailureClass.PRODUCT_ERROR
    assert outcome.failure_reason == "answer must be an integer, got str"


def test_a_bug_in_the_world_is_a_harness_error(suite: Suite) -> None:
    outcome = run(suite, Reference(), view={})
    assert outcome.failure_class is FailureClass.HARNESS_ERROR
    assert outcome.failure_reason == "world 'demo' failed to run the case: KeyError: 'question'"


@needs_itimer
def test_a_hanging_adapter_times_out_as_an_agent_error(suite: Suite) -> None:
    started = time.perf_counter()
    outcome = run(suite, Sleeps(), timeout=0.2)
    assert time.perf_counter() - started < BOUNDED
    assert outcome.failure_class is FailureClass.AGENT_ERROR
    assert outcome.failure_reason == "timed out after 0.2s (--agentbench-timeout=0.2)"

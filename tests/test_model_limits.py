"""The chat client's rate limiter, retry jitter and budget guard, on a fake clock.

Nothing here waits on the wall clock: the limiter sleeps on a clock whose
``sleep`` only advances its time, and threads meet through the limiter's own
state rather than through timing.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from decimal import Decimal
from pathlib import Path

import pytest

from pytest_agentbench.agents.budget import (
    BudgetGuard,
    BudgetRefused,
    ModelPrice,
    Tally,
    decimal_text,
    read_pricing,
)
from pytest_agentbench.agents.limits import Backoff, RateLimiter
from pytest_agentbench.agents.provenance import (
    ModelRun,
    endpoint_host,
    endpoint_path,
    run_provenance,
    run_settings,
)
from pytest_agentbench.agents.provenance_records import Ceilings, Wait
from pytest_agentbench.agents.settings import ChatSettings
from pytest_agentbench.agents.shared_file import first_value
from pytest_agentbench.sdk.errors import AgentbenchError


class FakeClock:
    def __init__(self) -> None:
        self.time = 0.0
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self.time

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.time += seconds


def test_requests_per_minute_wait_for_the_oldest_to_leave_the_window() -> None:
    clock = FakeClock()
    limiter = RateLimiter(requests_per_minute=2, clock=clock)
    first = limiter.acquire(1)
    limiter.release(first, None)
    clock.time = 15.0
    second = limiter.acquire(1)
    limiter.release(second, None)
    third = limiter.acquire(1)
    assert third.waits == (Wait(reason="requests_per_minute", seconds=45.0),)
    assert (clock.sleeps, third.sent_at) == ([45.0], 60.0)
    assert first.waits == second.waits == ()


def test_processes_share_one_minute_through_the_window_file(tmp_path: Path) -> None:
    # Two limiters stand for two processes (xdist workers, isolated adapters) of one run.
    clock = FakeClock()
    window = tmp_path / "window.json"
    one, other = (
        RateLimiter(requests_per_minute=2, tokens_per_minute=100, clock=clock, shared=window)
        for _ in range(2)
    )
    first = one.acquire(10)
    one.release(first, 70)  # the answer reported more than estimated: the run's minute knows
    clock.time = 15.0
    second = other.acquire(20)  # 70 + 20 fits the tokens; the second request of the minute
    other.release(second, 20)
    third = one.acquire(5)  # a third request waits for the first to leave, whoever sent it
    assert third.waits == (Wait(reason="requests_per_minute", seconds=45.0),)
    assert third.sent_at == 60.0
    entries = json.loads(window.read_text())
    assert [(sent_at, tokens) for _, sent_at, tokens in entries] == [(15.0, 20), (60.0, 5)]
    own = RateLimiter(requests_per_minute=2, clock=FakeClock())
    assert [own.acquire(1).waits for _ in range(2)] == [(), ()], "unshared: its own minute"


class Interrupt(BaseException):
    """Stands for the case limit's asynchronous exception, landing in a write-back."""


def _interrupt_the_next_write_back(monkeypatch: pytest.MonkeyPatch) -> None:
    # Encoding the new value is part of every write-back; the case limit's interrupt can
    # land there (or at any other line) while the lock is held.
    encode = json.dumps

    def interrupted(*args: object, **kwargs: object) -> str:
        monkeypatch.setattr(json, "dumps", encode)
        raise Interrupt()

    monkeypatch.setattr(json, "dumps", interrupted)


def test_an_interrupted_write_back_leaves_the_run_s_minute_and_tally_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file was truncated and then written: an interrupt between the two emptied it,
    # so the next request of the run was admitted into an empty minute (a 4th request
    # under a limit of 3, seen under load), and the next reservation into a new budget.
    clock = FakeClock()
    window = tmp_path / "window.json"
    one, other = (RateLimiter(requests_per_minute=2, clock=clock, shared=window) for _ in "12")
    first = one.acquire(10)
    one.release(first, 10)
    clock.time = 15.0
    second = other.acquire(10)
    _interrupt_the_next_write_back(monkeypatch)
    with pytest.raises(Interrupt):
        other.release(second, 12)  # the answer is in; its tokens are being written back
    assert one.acquire(1).waits == (Wait(reason="requests_per_minute", seconds=45.0),)
    _interrupt_the_next_write_back(monkeypatch)
    with pytest.raises(Interrupt):
        other.acquire(1)  # interrupted while entering itself: neither sent nor entered
    assert [sent_at for _, sent_at, _ in json.loads(window.read_text())] == [15.0, 60.0]

    path = tmp_path / "tally.json"
    guard = BudgetGuard(
        Ceilings(max_calls=2), price=None, max_tokens_per_call=None, tally=Tally(path)
    )
    guard.reserve()
    _interrupt_the_next_write_back(monkeypatch)
    with pytest.raises(Interrupt):
        guard.reserve()
    other_worker = Tally(path)
    with other_worker.transaction() as state:
        assert state["calls"] == 1, "the first reservation stands, the interrupted one is not in"

    # Interrupted after the new value is written over the old and before the file is cut
    # to its length: the new value is read, the old one's tail ignored.
    def cut_off(fd: int, length: int) -> None:
        raise Interrupt()

    clock.time = 200.0
    with monkeypatch.context() as patch:
        patch.setattr(os, "ftruncate", cut_off)
        with pytest.raises(Interrupt):
            one.acquire(1)  # every entry has left the minute: the window is one entry long
    with pytest.raises(json.JSONDecodeError):
        json.loads(window.read_bytes())  # the new entry, then the old window's tail
    assert [sent_at for _, sent_at, _ in first_value(window.read_bytes())] == [200.0]
    assert other.acquire(1).waits == (), "the second request of the minute"
    assert one.acquire(1).waits == (Wait(reason="requests_per_minute", seconds=60.0),)


def test_a_request_is_entered_with_its_time_when_it_is_let_into_the_minute(
    tmp_path: Path,
) -> None:
    # The time was read before the file's lock was taken: a process that waited for the
    # lock entered its request as sent before the ones entered while it waited, and so
    # it left the minute that much early.
    clock = FakeClock()
    window = tmp_path / "window.json"
    limiter = RateLimiter(requests_per_minute=2, clock=clock, shared=window)
    admitted: list[float] = []
    with window.open("ab") as held:  # another process holds the lock
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        thread = threading.Thread(target=lambda: admitted.append(limiter.acquire(1).sent_at))
        thread.start()
        _wait_until_blocked_on_the_lock(window, thread)
        clock.time = 30.0
    thread.join()
    assert admitted == [30.0]


def _wait_until_blocked_on_the_lock(path: Path, thread: threading.Thread) -> None:
    """Until ``/proc/locks`` lists a request waiting for ``path``'s lock (no timing)."""
    locks = Path("/proc/locks")
    if not locks.exists():
        pytest.skip("no /proc/locks to see a blocked lock in")
    inode = f":{path.stat().st_ino} "
    while thread.is_alive() and not any(
        "->" in line and inode in line for line in locks.read_text().splitlines()
    ):
        time.sleep(0.001)


def test_tokens_per_minute_count_what_was_reported_not_the_estimate() -> None:
    clock = FakeClock()
    limiter = RateLimiter(tokens_per_minute=100, clock=clock)
    first = limiter.acquire(50)
    limiter.release(first, 70)  # the answer reported more than was estimated
    clock.time = 10.0
    second = limiter.acquire(30)  # 70 + 30 fits
    limiter.release(second, 30)
    clock.time = 20.0
    third = limiter.acquire(20)  # 120 does not: wait until the first leaves, at 60
    assert third.waits == (Wait(reason="tokens_per_minute", seconds=40.0),)
    limiter.release(third, 20)
    # Larger than the whole limit: admitted once the window is empty (the third, sent
    # at 60, leaves at 120), never stuck.
    huge = limiter.acquire(500)
    assert huge.waits == (Wait(reason="tokens_per_minute", seconds=60.0),)
    assert huge.sent_at == 120.0


def test_a_request_waits_for_a_connection_and_says_so() -> None:
    clock = FakeClock()
    limiter = RateLimiter(max_connections=1, clock=clock)
    held = limiter.acquire(1)
    got: list[tuple[Wait, ...]] = []
    waiter = threading.Thread(target=lambda: got.append(limiter.acquire(1).waits))
    waiter.start()
    while limiter.waiting == 0:
        waiter.join(0.001)
    clock.time = 2.5
    limiter.release(held, None)
    waiter.join()
    assert got == [(Wait(reason="connections", seconds=2.5),)]


def test_concurrent_requests_never_exceed_the_connection_limit() -> None:
    limiter = RateLimiter(max_connections=3, clock=FakeClock())
    lock = threading.Lock()
    open_now = [0, 0]  # current, most seen

    def request() -> None:
        permit = limiter.acquire(1)
        with lock:
            open_now[0] += 1
            open_now[1] = max(open_now[1], open_now[0])
        with lock:
            open_now[0] -= 1
        limiter.release(permit, None)

    threads = [threading.Thread(target=request) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert open_now[1] <= 3
    assert limiter.waiting == 0


def test_retry_delays_back_off_honour_retry_after_and_carry_seeded_jitter() -> None:
    one, same, other = Backoff(1.0, 0.5, 7), Backoff(1.0, 0.5, 7), Backoff(1.0, 0.5, 8)
    delays = [one.delay(retry, None) for retry in range(4)]
    assert delays == [same.delay(retry, None) for retry in range(4)], "seeded: a rerun agrees"
    assert delays != [other.delay(retry, None) for retry in range(4)]
    for retry, delay in enumerate(delays):
        assert 2**retry <= delay <= 1.5 * 2**retry
    assert len({d / 2**r for r, d in enumerate(delays)}) == 4, "no two retries in step"
    assert 2.0 <= one.delay(0, "2") <= 3.0
    assert 1.0 <= one.delay(0, "Wed, 21 Oct 2015 07:28:00 GMT") <= 1.5
    assert one.delay(9, "3600") <= 45.0, "capped at 30 s before jitter"
    assert Backoff(1.0, 0.0, 1).delay(1, None) == 2.0


def guard(**ceilings: object) -> BudgetGuard:
    price = ModelPrice(input_per_token="0.1", output_per_token="0.3")
    return BudgetGuard(Ceilings(**ceilings), price=price, max_tokens_per_call=10)


def test_a_call_is_reserved_at_its_worst_and_settled_to_what_was_reported() -> None:
    budget = guard(max_cost="5.9")
    first = budget.reserve()
    assert (first.tokens, first.cost) == (10, "3")  # 10 tokens at the dearer rate, exactly
    budget.settle(first, 7, 3)  # 0.7 + 0.9 = 1.6
    second = budget.reserve()  # 1.6 + 3 = 4.6
    budget.settle(second, None, None)  # nothing reported: the reservation stays whole
    with pytest.raises(BudgetRefused) as refused:
        budget.reserve()  # 4.6 + 3 = 7.6
    assert refused.value.code == "budget_exceeded_cost"
    assert "7.6, above --agentbench-max-cost=5.9" in refused.value.render()
    with budget.tally.transaction() as state:
        assert state == {"calls": 2, "tokens": 20, "cost": "4.6"}


def test_the_preflight_prices_the_worst_case_of_every_case_and_turn() -> None:
    guard(max_calls=12, max_tokens=120, max_cost="36").preflight(3, 4)
    for ceilings, code in [
        ({"max_calls": 11}, "budget_preflight_calls"),
        ({"max_tokens": 119}, "budget_preflight_tokens"),
        ({"max_cost": "35.99"}, "budget_preflight_cost"),
    ]:
        with pytest.raises(BudgetRefused) as refused:
            guard(**ceilings).preflight(3, 4)
        assert refused.value.code == code


def test_concurrent_reservations_never_pass_the_ceiling() -> None:
    budget = guard(max_calls=10)
    outcomes: list[str] = []

    def call() -> None:
        try:
            budget.reserve()
            outcomes.append("sent")
        except BudgetRefused as refusal:
            outcomes.append(refusal.code)

    threads = [threading.Thread(target=call) for _ in range(25)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes).count("sent") == 10
    assert outcomes.count("budget_exceeded_calls") == 15


def test_workers_share_one_tally_through_its_file(tmp_path: Path) -> None:
    path = tmp_path / "tally.json"
    workers = [
        BudgetGuard(Ceilings(max_calls=3), price=None, max_tokens_per_call=None, tally=Tally(path))
        for _ in range(2)
    ]
    sent = []
    for index in range(5):
        try:
            workers[index % 2].reserve()
            sent.append(index)
        except BudgetRefused:
            pass
    assert sent == [0, 1, 2]
    assert json.loads(path.read_text())["calls"] == 3


def test_pricing_tables_are_exact_decimals_and_refused_by_field(tmp_path: Path) -> None:
    table = tmp_path / "pricing.json"
    prices = {"m": {"input_per_token": "0.0000025", "output_per_token": "0.00001"}}
    table.write_text(
        json.dumps({"scheme": "agentbench-pricing/1", "currency": "USD", "models": prices})
    )
    pricing = read_pricing(table)
    assert pricing.models["m"].cost(1000, 100) == Decimal("0.0035")
    assert decimal_text(Decimal("0.00350")) == "0.0035"
    assert decimal_text(Decimal("1E+1")) == "10"
    assert len(pricing.digest) == 64
    prices["m"]["output_per_token"] = 0.00001  # type: ignore[assignment]
    table.write_text(
        json.dumps({"scheme": "agentbench-pricing/1", "currency": "USD", "models": prices})
    )
    with pytest.raises(AgentbenchError) as refused:
        read_pricing(table)
    assert refused.value.code == "invalid_pricing"
    assert "models.m.output_per_token" in refused.value.render()


def test_budgets_that_cannot_be_enforced_are_refused_at_configuration(tmp_path: Path) -> None:
    table = tmp_path / "pricing.json"
    table.write_text(
        json.dumps(
            {
                "scheme": "agentbench-pricing/1",
                "currency": "USD",
                "models": {"m": {"input_per_token": "1", "output_per_token": "1"}},
            }
        )
    )
    cases = [
        ({"model": "m", "max_cost": "1", "max_tokens_per_call": 5}, "budget_needs_pricing"),
        ({"model": "other", "pricing": table}, "pricing_model_missing"),
        ({"model": "m", "max_tokens": 5}, "budget_needs_call_bound"),
    ]
    for values, code in cases:
        with pytest.raises(AgentbenchError) as refused:
            ModelRun(ChatSettings(**values))
        assert refused.value.code == code
    assert ModelRun(ChatSettings(model="m", pricing=table, max_cost="1", max_tokens_per_call=5))


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://user:secret@api.example.com/v1?key=abc", "api.example.com"),
        ("http://127.0.0.1:8000/v1", "127.0.0.1:8000"),
        ("http://[::1]:9/v1", "[::1]:9"),
        (None, None),
    ],
)
def test_the_endpoint_is_reported_by_host_only(url: str | None, host: str | None) -> None:
    assert endpoint_host(url) == host


def model_block(page: str) -> str:
    """The HTML report's Model block (the page's script is no report of the run)."""
    start = page.index("<h3>Model</h3>")
    return page[start : page.index("</dl>", start)]


def test_a_base_url_with_credentials_or_a_query_never_appears_in_any_report() -> None:
    from pytest_agentbench.report.html.render import render_html
    from pytest_agentbench.report.model_run import model_run_lines, model_run_properties

    # resolve_settings refuses such a URL; a ChatSettings made directly is not, so the
    # reports must drop the secret parts themselves.
    url = "https://user:hunter2@api.example.com:8443/llm/v1?key=sk-abc&x=1#frag"
    settings = ChatSettings(base_url=url, model="m", requests_per_minute=30)
    provenance = run_provenance(settings, None, [])
    assert endpoint_path(url) == "/llm/v1"
    outputs = {
        "json": json.dumps(provenance.model_dump(mode="json")),
        "terminal": "\n".join(model_run_lines(provenance)),
        "junit": json.dumps(model_run_properties(provenance)),
        "html": model_block(render_html({"model_run": provenance.model_dump(mode="json")})),
    }
    for name, text in outputs.items():
        assert "api.example.com:8443" in text, name
        for secret in ("user", "hunter2", "sk-abc", "key=", "x=1", "frag"):
            assert secret not in text, (name, secret)
    terminal = outputs["terminal"]
    assert "model: openai-compatible api.example.com:8443/llm/v1, model m, live" in terminal
    assert "  rate limits: requests-per-minute 30" in terminal


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"temperature": 0.7, "seed": None, "max_turns": 3, "max_tokens_per_call": 500},
        {"timeout_s": 2.5, "max_retries": 0, "retry_jitter": 0.0, "fence_results": False},
    ],
)
def test_the_settings_in_clear_hash_to_the_digest_beside_them(values: dict[str, object]) -> None:
    settings = ChatSettings.model_validate({"model": "m", **values})
    shown = run_settings(settings)
    assert shown.digest("m") == settings.settings_digest()
    assert shown.digest("other") != settings.settings_digest(), "the model is digested"
    # The rate limits and the endpoint are stated but change no request: not digested.
    limited = settings.model_copy(update={"requests_per_minute": 5, "base_url": "http://h/v2"})
    assert run_settings(limited) != shown
    assert run_settings(limited).digest("m") == limited.settings_digest() == shown.digest("m")


def test_concurrent_cases_on_one_agent_keep_their_own_calls_and_usage() -> None:
    from pytest_agentbench.agents.case_calls import case_scope
    from pytest_agentbench.agents.chat import ChatAgent
    from pytest_agentbench.sdk.tools import ToolSession, solve_with_session
    from tests.demo_world import DEMO_TOOLS, DemoFinal, accept_final
    from tests.llm_server import ScriptedLLM

    server = ScriptedLLM()
    with server.serving() as base_url:
        settings = ChatSettings(
            base_url=base_url, model="m", max_turns=4, retry_backoff_s=0.0, max_connections=1
        )
        agent = ChatAgent(settings)
        seen: dict[str, tuple[object, object]] = {}

        def case(question: str) -> None:
            with case_scope() as calls:
                session = ToolSession(DEMO_TOOLS, final_schema=DemoFinal.model_json_schema())
                solve_with_session(agent, {"question": question}, session, accept_final)
                usage = agent.drain_usage()
                seen[question] = (calls.record(), usage)

        threads = [threading.Thread(target=case, args=(q,)) for q in ("tools", "plain", "loop")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    task = '{{"question":"{}"}}'
    requests = {
        q: [r for r in server.requests if task.format(q) in r["messages"][1]["content"]]
        for q in seen
    }
    for question, (record, usage) in seen.items():
        assert record.calls == len(requests[question])  # type: ignore[attr-defined]
        assert usage is not None
        digests = {a.request_digest_sha256 for a in usage.attempts}  # type: ignore[attr-defined]
        assert digests == set(record.request_digests)  # type: ignore[attr-defined]
    assert agent.run.limiter.waiting == 0


def test_every_retry_counts_against_the_call_ceiling_and_is_refused_unsent() -> None:
    from pytest_agentbench.agents.chat import TASK_PREFIX
    from pytest_agentbench.agents.transport import ChatTransport
    from tests.llm_server import ScriptedLLM

    server = ScriptedLLM()
    with server.serving() as base_url:
        settings = ChatSettings(
            base_url=base_url, model="m", max_retries=5, retry_backoff_s=0.0, max_calls=3
        )
        run = ModelRun(settings)
        request = {
            "model": "m",
            "messages": [{"role": "user", "content": TASK_PREFIX + '{"question": "throttled"}'}],
        }
        run.guard.reserve()  # the call itself, as the chat agent reserves it
        exchange = ChatTransport(settings, run).send(request)
    assert len(server.requests) == 3, "the call and two retries; the third retry is refused"
    assert exchange.refused is not None
    assert exchange.refused.code == "budget_exceeded_calls"
    assert (exchange.response.status, exchange.response.faults) == (429, ("http_429", "http_429"))
    with run.guard.tally.transaction() as state:
        assert state["calls"] == 3
    # The worst case counts every request a call may send.
    with pytest.raises(BudgetRefused, match="4 turns x 6 requests is 48"):
        run.guard.preflight(2, 4, 6)


def test_credentials_in_the_base_url_are_refused_by_name() -> None:
    from pytest_agentbench.agents.settings import resolve_settings
    from pytest_agentbench.agents.transport import ChatAgentError, ChatTransport
    from pytest_agentbench.sdk.errors import UsageError

    url = "http://user:secret@127.0.0.1:9/v1"
    with pytest.raises(UsageError) as caught:
        resolve_settings(ini=lambda key: None, environ={"AGENTBENCH_LLM_BASE_URL": url})
    assert (caught.value.code, caught.value.location.field) == (
        "llm_base_url_credentials",
        "AGENTBENCH_LLM_BASE_URL",
    )
    assert "secret" not in caught.value.render()
    direct = ChatSettings(base_url=url, model="m")
    with pytest.raises(ChatAgentError, match=r"\[llm_base_url_credentials\]"):
        ChatTransport(direct, ModelRun(direct)).send({"model": "m", "messages": []})

"""Rate limits of the chat-model client, shared by every case a process runs at once.

One :class:`RateLimiter` per process bounds the connections open at once and
the requests and tokens sent in any sliding minute; where several processes
call the model (xdist workers, isolated adapter processes) the minute is the
run's, kept in one locked file they all enter their requests in
(:class:`SharedWindow`), while the connection bound stays each process's. A request asks for a
:class:`Permit` before it is sent and gives it back when its answer is in;
every time it had to wait is returned as a :class:`Wait`, so the case that
waited records why and for how long. Time is read from and slept on an
injected :class:`Clock`, so tests run on a fake one without wall-clock waits.

Retries back off exponentially (or by ``Retry-After``) and add jitter drawn
from a seeded generator, so concurrent cases that hit the same 429 spread out
rather than retry in lock step, and a rerun draws the same delays.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pytest_agentbench.agents.provenance_records import Wait, WaitReason
from pytest_agentbench.agents.shared_file import locked_json

WINDOW_S = 60.0
"""The sliding window of the per-minute limits."""
MAX_RETRY_DELAY_S = 30.0
"""A ``Retry-After`` or backoff longer than this is capped (before jitter)."""


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The monotonic clock and a real sleep."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def wait(reason: WaitReason, seconds: float) -> Wait:
    return Wait(reason=reason, seconds=round(max(seconds, 0.0), 6))


@dataclass
class Permit:
    """One admitted request: its slot and its entry in the token window."""

    sent_at: float
    tokens: int
    waits: tuple[Wait, ...]
    key: str = ""
    """The entry's name in a shared window (``SharedWindow``); empty in a process's own."""


class OwnWindow:
    """The last minute's requests of this process alone, in memory."""

    def __init__(self) -> None:
        self._window: list[Permit] = []

    @contextlib.contextmanager
    def entries(self) -> Iterator[list[Permit]]:
        yield self._window

    def key(self) -> str:
        return ""

    def reported(self, permit: Permit) -> None:
        return None  # the permit is the window's own entry, already corrected


class SharedWindow:
    """The last minute's requests of every process of the run, in one locked file.

    xdist workers and isolated adapter processes each have a limiter; a per-minute
    limit held by each alone lets N processes send N times the limit. They share this
    file instead (in the run's shared folder, beside the budget tally): each request
    is entered under an exclusive ``flock`` as it is admitted, immediately before it
    is sent, with the monotonic clock's time, which every process of one machine
    shares. A file, not a socket to the xdist controller: isolated processes have no
    channel to it, and a lock held for one read-modify-write costs microseconds.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._next = itertools.count()

    @contextlib.contextmanager
    def entries(self) -> Iterator[list[Permit]]:
        # Written back so that an interrupt at any line leaves the old minute or the new
        # one, never an empty file (see shared_file).
        with locked_json(self.path) as locked:
            window = [
                Permit(sent_at=float(sent_at), tokens=int(tokens), waits=(), key=str(key))
                for key, sent_at, tokens in (locked.value or [])
            ]
            yield window
            locked.value = [[p.key, p.sent_at, p.tokens] for p in window]

    def key(self) -> str:
        return f"{os.getpid()}-{next(self._next)}"

    def reported(self, permit: Permit) -> None:
        """Correct the shared entry to what the answer reported (if it is still in the minute)."""
        with self.entries() as window:
            for entry in window:
                if entry.key == permit.key:
                    entry.tokens = permit.tokens


class RateLimiter:
    """Connections, requests per minute and tokens per minute; ``None`` is unlimited.

    A request's tokens are counted at admission as the caller's estimate (its
    reservation) and corrected to what the answer reported when it is released.
    A request larger than the whole token limit is admitted into an empty
    window rather than made to wait forever.
    """

    def __init__(
        self,
        *,
        max_connections: int | None = None,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        clock: Clock | None = None,
        shared: Path | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.clock = clock or SystemClock()
        self._condition = threading.Condition(threading.Lock())
        self._open = 0
        self._waiting = 0
        self._window: OwnWindow | SharedWindow = (
            OwnWindow() if shared is None else SharedWindow(shared)
        )
        """Admitted requests of the last minute, oldest first: this process's, or the run's
        (``shared``: the file every process of the run enters its requests in)."""

    @property
    def waiting(self) -> int:
        """Requests blocked for a connection right now."""
        with self._condition:
            return self._waiting

    def acquire(self, tokens: int) -> Permit:
        """Block until a request of ``tokens`` may be sent; the permit lists every wait."""
        waits: list[Wait] = []
        with self._condition:
            while True:
                now = self.clock.now()
                if self.max_connections is not None and self._open >= self.max_connections:
                    self._waiting += 1
                    try:
                        self._condition.wait()
                    finally:
                        self._waiting -= 1
                    waits.append(wait("connections", self.clock.now() - now))
                    continue
                permit = None
                with self._window.entries() as window:
                    # Read under the file's lock: read before it, a process that waited for
                    # the lock would enter its request with an earlier time than others
                    # entered before it, and it would leave the minute early.
                    now = self.clock.now()
                    _forget_before(window, now - WINDOW_S)
                    reason, delay = self._minute_wait(window, tokens, now)
                    if reason is None:
                        permit = Permit(
                            sent_at=now, tokens=tokens, waits=tuple(waits), key=self._window.key()
                        )
                        window.append(permit)
                if permit is not None:
                    # Counted once the window is written: an interrupt before then leaves
                    # neither the request nor its connection.
                    self._open += 1
                    return permit
                assert reason is not None
                waits.append(wait(reason, delay))
                # Sleep without the lock: other requests may finish meanwhile.
                self._condition.release()
                try:
                    self.clock.sleep(delay)
                finally:
                    self._condition.acquire()

    def release(self, permit: Permit, tokens: int | None) -> None:
        """The request is answered; ``tokens`` it reported replace its estimate."""
        with self._condition:
            self._open -= 1
            if tokens is not None:
                permit.tokens = tokens
                self._window.reported(permit)
            self._condition.notify_all()

    def _minute_wait(
        self, window: list[Permit], tokens: int, now: float
    ) -> tuple[WaitReason | None, float]:
        if self.requests_per_minute is not None and len(window) >= self.requests_per_minute:
            oldest = window[len(window) - self.requests_per_minute]
            return "requests_per_minute", oldest.sent_at + WINDOW_S - now
        if self.tokens_per_minute is not None and window:
            excess = sum(p.tokens for p in window) + tokens - self.tokens_per_minute
            freed = 0
            for permit in window:
                if excess <= 0:
                    break
                # Oldest first: the wait ends when enough of the window has left it
                # (or all of it, for a request larger than the whole limit).
                freed += permit.tokens
                if freed >= excess or permit is window[-1]:
                    return "tokens_per_minute", permit.sent_at + WINDOW_S - now
        return None, 0.0


def _forget_before(window: list[Permit], horizon: float) -> None:
    while window and window[0].sent_at <= horizon:
        window.pop(0)


class Backoff:
    """Retry delays: ``Retry-After`` when given, else doubling; plus seeded jitter.

    ``jitter`` is the largest fraction added to a delay (0 adds none). The
    generator is shared by the process's cases and drawn from under a lock.
    """

    def __init__(self, first_delay_s: float, jitter: float, seed: int | None) -> None:
        self.first_delay_s = first_delay_s
        self.jitter = jitter
        self._random = random.Random(f"agentbench-retry-jitter:{seed}")
        self._lock = threading.Lock()

    def delay(self, retry: int, retry_after: str | None) -> float:
        """The wait before retry number ``retry`` (from 0)."""
        base = self.first_delay_s * 2.0**retry
        if retry_after is not None:
            # An HTTP-date or garbage leaves the backoff standing.
            with contextlib.suppress(ValueError):
                base = float(retry_after)
        base = min(max(base, 0.0), MAX_RETRY_DELAY_S)
        with self._lock:
            draw = self._random.random()
        return base * (1.0 + self.jitter * draw)

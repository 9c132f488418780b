"""The live progress line of a model run: cases done of total, calls, tokens, cost, rate, time left.

A model run spends minutes to hours on the network, and pytest's dots say neither
what it has spent nor how long it has to go. Where results arrive (the controller
under xdist, so the line is the aggregate of every worker's cases), each finished
case adds its model traffic to the line:

    agentbench: 12/25 cases (10 passed, 2 failed), 31 calls, 9120 tokens, cost 0.0123 USD,
    4.0 cases/min, about 3m15s left

On a terminal (pytest's output is a tty, not ``-v``) the line is redrawn in place
(``\\r``) after every case, and replaces the case items' dots. Elsewhere (a CI log,
a file, ``-v``) it is a plain line at most every ``--agentbench-progress-every``
seconds (0: after every case), and one when the last case finishes. ``-q`` shows none.

The current rate is the last :data:`RATE_CASES` cases (fewer in a younger run) over
the time from the case finished before them (or the start) to now, per minute; the
time left is the cases still to run at that rate. The clock is injected, so tests need
no wall clock.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from pytest_agentbench.sdk.canonical import decimal_text

RATE_CASES: Final = 10
"""The last finished cases the current rate is taken over."""
DEFAULT_PROGRESS_EVERY_S: Final = 30.0
"""``--agentbench-progress-every``'s default: a plain line at most every 30 seconds."""


def duration_text(seconds: float) -> str:
    """``3m15s``, ``1h02m``, ``45s``: the time left, to the second under an hour."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


class LiveProgress:
    """Counts finished cases and writes the progress line.

    ``total`` is read at each update (the census may still grow while xdist workers
    report their collections). ``redraw`` writes with ``rewrite`` (one line, redrawn);
    otherwise ``write_line`` gets a plain line at most every ``every`` seconds.
    """

    def __init__(
        self,
        total: Callable[[], int],
        *,
        redraw: bool,
        every: float,
        rewrite: Callable[[str], None],
        write_line: Callable[[str], None],
        currency: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._total = total
        self.redraw = redraw
        self.every = every
        self._rewrite = rewrite
        self._write_line = write_line
        self.currency = currency
        self._clock = clock
        self.done = 0
        self.outcomes: Counter[str] = Counter()
        self.calls = 0
        self.tokens = 0
        self.cost = Decimal(0)
        self.priced = False
        self._started = clock()
        self._finished: deque[float] = deque([self._started], maxlen=RATE_CASES + 1)
        """The finish times of the last cases, after the finish (or start) before them."""
        self._last_line: float | None = None
        self._drawn = False
        self._shown = True
        self.expected = 0
        """Case items the xdist workers collected: the total until the census is in."""

    def case(self, result: dict[str, Any]) -> None:
        """Count a finished case (its result's JSON); :meth:`show` writes the line."""
        now = self._clock()
        self.done += 1
        self.outcomes[str(result.get("outcome"))] += 1
        calls = result.get("model_calls")
        if isinstance(calls, dict):
            self.calls += _whole(calls.get("calls"))
            self.tokens += _whole(calls.get("input_tokens")) + _whole(calls.get("output_tokens"))
            cost = calls.get("cost")
            if isinstance(cost, str):
                self.priced = True
                self.cost += Decimal(cost)
        self._finished.append(now)
        self._shown = False

    def show(self) -> None:
        """Write the line if a case was counted since it was last written and it is due:
        redrawn, at once; plain, ``every`` seconds after the last (or the start), or at the
        last case. Called after pytest wrote the case's own letter, so the line follows it."""
        if self._shown or not self.done:
            return
        self._shown = True
        now = self._clock()
        if self.redraw:
            self._rewrite(self.line(now))
            self._drawn = True
            return
        since = self._started if self._last_line is None else self._last_line
        if self.done >= self._total() or now - since >= self.every:
            self._last_line = now
            self._write_line(self.line(now))

    def finish(self) -> None:
        """End a redrawn line, so what follows starts on its own line."""
        if self._drawn:
            self._write_line("")
            self._drawn = False

    def rate_per_minute(self, now: float) -> float | None:
        """Cases finished per minute lately; ``None`` before any case or any time passed."""
        span = now - self._finished[0]
        cases = len(self._finished) - 1
        return cases * 60.0 / span if cases and span > 0 else None

    def line(self, now: float) -> str:
        total = max(self._total(), self.done)
        shown = ", ".join(f"{count} {name}" for name, count in sorted(self.outcomes.items()))
        cost = (
            f"cost {decimal_text(self.cost)}" + (f" {self.currency}" if self.currency else "")
            if self.priced
            else "cost -"
        )
        rate = self.rate_per_minute(now)
        left = max(total - self.done, 0)
        if rate is None:
            pace = "rate -, time left -"
        elif left == 0:
            pace = f"{rate:.1f} cases/min, done"
        else:
            pace = f"{rate:.1f} cases/min, about {duration_text(left / rate * 60.0)} left"
        return (
            f"agentbench: {self.done}/{total} cases ({shown}), {self.calls} calls, "
            f"{self.tokens} tokens, {cost}, {pace}"
        )


def _whole(value: object) -> int:
    return value if isinstance(value, int) else 0

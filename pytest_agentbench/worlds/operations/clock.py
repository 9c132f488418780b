"""The simulated clock: a deterministic agenda of authored events and engine timers.

No wall clock is read. The agenda orders deliveries by (minute, phase,
sequence): authored events (phase 0) by their list index, then engine timers
and wait fallbacks (phase 1) by creation order, so same-time events always
come out in the same order. Scheduled work has an explicit lifecycle
(created, cancelled, completed, failed); a cancelled timer is skipped when
its time comes.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

AUTHORED = 0
TIMER = 1


@dataclass(order=True)
class Entry:
    minute: int
    phase: int
    sequence: int
    item: Any = field(compare=False)


class Agenda:
    def __init__(self) -> None:
        self._heap: list[Entry] = []
        self._timer_sequence = 0

    def add_authored(self, minute: int, index: int, item: Any) -> None:
        heapq.heappush(self._heap, Entry(minute, AUTHORED, index, item))

    def add_timer(self, minute: int, item: Any) -> None:
        self._timer_sequence += 1
        heapq.heappush(self._heap, Entry(minute, TIMER, self._timer_sequence, item))

    def peek_minute(self) -> int | None:
        return self._heap[0].minute if self._heap else None

    def pop(self) -> Entry:
        return heapq.heappop(self._heap)

    def __len__(self) -> int:
        return len(self._heap)

"""Leak canaries, checked while a run goes on.

A world names, through ``leak_canaries``, strings that exist only in its oracle.
The oracle loads only once an adapter's output exists, so the core keeps the
text of what the adapter saw (the public view, serialised once before the
adapter runs, and the tool results its session receipt records) and looks for
the canaries in it after grading. A canary found there is the harness's fault,
not the agent's: the case becomes a ``harness_error`` under ``harness_leak``.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from pytest_agentbench.sdk.canonical import JsonValue, canonical_json
from pytest_agentbench.sdk.contracts import Case, Outcome
from pytest_agentbench.sdk.errors import AgentbenchError, describe_exception
from pytest_agentbench.sdk.suite import Suite
from pytest_agentbench.sdk.world import World

LEAK_CODE = "harness_leak"
_CANARIES_KEY = "agentbench.leak_canaries"


_PLAIN = frozenset({dict, list, tuple, str, int, float, bool, type(None)})
"""Types whose values are neither a model nor a dataclass: most views are a plain dict,
told so without the two ``isinstance`` tests below (a model's is an ABC check)."""


def adapter_visible(value: Any) -> Any:
    """The JSON form of what a world hands an adapter (models and dataclasses dumped)."""
    if type(value) in _PLAIN:
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def visible_text(view: Any) -> str:
    """The public view as canonical JSON; a view JSON cannot hold is searched as its repr."""
    try:
        return canonical_json(adapter_visible(view))
    except (TypeError, ValueError):
        return repr(view)


_NO_CALLS_UNDER = frozenset({"calls", "tools"})


def tool_results(receipt: JsonValue) -> Iterator[str]:
    """Canonical JSON of every tool result a receipt records (an episode's, each session's).

    The final answer is left out: it is the agent's own output, not something it was shown.
    """
    if isinstance(receipt, dict):
        calls = receipt.get("calls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, dict) and call.get("result") is not None:
                    yield canonical_json(call["result"])
        for key, value in receipt.items():
            # Only containers can hold calls; a generator per scalar was most of this walk.
            # The tools offered (their schemas are most of a receipt) hold no call.
            if key not in _NO_CALLS_UNDER and isinstance(value, (dict, list)):
                yield from tool_results(value)
    elif isinstance(receipt, list):
        for item in receipt:
            if isinstance(item, (dict, list)):
                yield from tool_results(item)


_KEY_CHARS = 16
"""A canary is indexed by its first characters (all of it when shorter)."""
_SCAN_FIXED_NS = 150
_SCAN_PER_CHAR_NS = 1
_WINDOW_PER_CHAR_NS = 300
"""Rough costs on this project's machines: ``canary in text`` costs a fixed part plus a
little per character; collecting a text's windows of one length costs about 300 ns each."""


_MAX_SHARING_A_KEY = 8
"""More canaries than this under one shared key and each canary is keyed by its own length."""


def _by_key(canaries: Sequence[str], key_length: Callable[[str], int]) -> dict[str, list[str]]:
    """The canaries (shortest first) under their first ``key_length(canary)`` characters."""
    by_key: dict[str, list[str]] = {}
    for canary in canaries:
        by_key.setdefault(canary[: key_length(canary)], []).append(canary)
    return by_key


def _common_prefix(texts: Sequence[str]) -> str:
    """The longest text every one of ``texts`` starts with ("" for none)."""
    if not texts:
        return ""
    # The first and the last in sorted order differ earliest: their common part is everyone's.
    low, high = min(texts), max(texts)
    for index, char in enumerate(low):
        if char != high[index]:
            return low[:index]
    return low


class CanaryIndex:
    """A suite's canaries, found in a text at a cost that does not grow with their number.

    Testing every canary against every text made a case's check grow with the
    suite (a suite of N cases naming a canary per case is quadratic). Here the
    canaries are indexed by their first :data:`_KEY_CHARS` characters; a long
    text with few canaries is still scanned canary by canary, whichever is cheaper.
    Either way the canary reported is the first, shortest first, that occurs.
    """

    def __init__(self, canaries: Sequence[str]) -> None:
        self.canaries = tuple(
            sorted(dict.fromkeys(canary for canary in canaries if canary), key=len)
        )
        self._lengths = [len(canary) for canary in self.canaries]
        self._common = _common_prefix(self.canaries)
        """What every canary starts with (``CANARY-`` and the like): a text without it
        holds none of them, decided by one search instead of the index's windows."""
        self._rank = {canary: rank for rank, canary in enumerate(self.canaries)}
        # One key length for every canary (the shortest's) makes a text's windows one
        # pass; keys of each canary's own length are kept only when the shared length
        # would put many canaries under one key.
        shared = min(self._lengths[0], _KEY_CHARS) if self.canaries else _KEY_CHARS
        by_key = _by_key(self.canaries, lambda canary: shared)
        if by_key and max(map(len, by_key.values())) > _MAX_SHARING_A_KEY:
            by_key = _by_key(self.canaries, lambda canary: min(len(canary), _KEY_CHARS))
        self._by_key = by_key
        keys_by_length: dict[int, set[str]] = {}
        for key in by_key:
            keys_by_length.setdefault(len(key), set()).add(key)
        self._keys_by_length = sorted(keys_by_length.items())

    def first_in(self, text: str) -> str | None:
        """The first canary (shortest first) that occurs in ``text``, or None."""
        fitting = bisect_right(self._lengths, len(text))
        if not fitting or (self._common and self._common not in text):
            return None
        scan = fitting * (_SCAN_FIXED_NS + _SCAN_PER_CHAR_NS * len(text))
        windows = len(self._keys_by_length) * len(text) * _WINDOW_PER_CHAR_NS
        if scan <= windows:
            return next((canary for canary in self.canaries[:fitting] if canary in text), None)
        found: list[str] = []
        for length, keys in self._keys_by_length:
            if length > len(text):
                break
            # The text's windows of this length, cut without a Python loop.
            starts = range(len(text) - length + 1)
            windows_of_text = map(
                text.__getitem__, map(slice, starts, range(length, len(text) + 1))
            )
            for key in keys.intersection(windows_of_text):
                found.extend(canary for canary in self._by_key[key] if canary in text)
        return min(found, key=self._rank.__getitem__, default=None)


def suite_canaries(world: World, suite: Suite, oracle: Any) -> CanaryIndex:
    """The suite's distinct non-empty canaries, indexed, asked of the world once."""
    cached: CanaryIndex | None = suite.cache.get(_CANARIES_KEY)
    if cached is None:
        cached = CanaryIndex(world.leak_canaries(suite, oracle))
        suite.cache[_CANARIES_KEY] = cached
    return cached


def find_leak(
    world: World, suite: Suite, case: Case, seen: str, outcome: Outcome, *, oracle: Any
) -> AgentbenchError | None:
    """``harness_leak`` naming the case and where a canary showed, or None."""
    try:
        canaries = suite_canaries(world, suite, oracle)
    except Exception as exc:
        return AgentbenchError(
            LEAK_CODE,
            f"case {case.case_id!r}: leak_canaries raised {describe_exception(exc)}",
            file=suite.display(case.file),
        )
    if not canaries.canaries:
        return None
    place, canary = "public view", canaries.first_in(seen)
    if canary is None and outcome.receipt is not None:
        # The tool results only where the view held none (and only a session has them).
        place = "tool result"
        canary = next(filter(None, map(canaries.first_in, tool_results(outcome.receipt))), None)
    if canary is None:
        return None
    shown = canary if len(canary) <= 40 else f"{canary[:37]}..."
    return AgentbenchError(
        LEAK_CODE,
        f"case {case.case_id!r}: oracle canary {shown!r} reached the adapter in its {place}",
        file=suite.display(case.file),
    )

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
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from pytest_agentbench.sdk.canonical import JsonValue, canonical_json
from pytest_agentbench.sdk.contracts import Case, Outcome
from pytest_agentbench.sdk.errors import AgentbenchError, describe_exception
from pytest_agentbench.sdk.suite import Suite
from pytest_agentbench.sdk.world import World

LEAK_CODE = "harness_leak"
_CANARIES_KEY = "agentbench.leak_canaries"
_LENGTHS_KEY = "agentbench.leak_canary_lengths"


def adapter_visible(value: Any) -> Any:
    """The JSON form of what a world hands an adapter (models and dataclasses dumped)."""
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


def suite_canaries(world: World, suite: Suite, oracle: Any) -> tuple[str, ...]:
    """The suite's distinct non-empty canaries, shortest first, asked of the world once."""
    cached: tuple[str, ...] | None = suite.cache.get(_CANARIES_KEY)
    if cached is None:
        found: Sequence[str] = world.leak_canaries(suite, oracle)
        cached = tuple(sorted(dict.fromkeys(canary for canary in found if canary), key=len))
        suite.cache[_CANARIES_KEY] = cached
        suite.cache[_LENGTHS_KEY] = [len(canary) for canary in cached]
    return cached


def _fitting(suite: Suite, canaries: tuple[str, ...], text: str) -> tuple[str, ...]:
    """The canaries no longer than ``text``: a record-sized canary never fits a short view."""
    lengths: list[int] = suite.cache[_LENGTHS_KEY]
    return canaries[: bisect_right(lengths, len(text))]


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
    if not canaries:
        return None
    places = [("public view", seen)]
    if outcome.receipt is not None:
        places.extend(("tool result", text) for text in tool_results(outcome.receipt))
    for place, text in places:
        for canary in _fitting(suite, canaries, text):
            if canary in text:
                shown = canary if len(canary) <= 40 else f"{canary[:37]}..."
                return AgentbenchError(
                    LEAK_CODE,
                    f"case {case.case_id!r}: oracle canary {shown!r} reached the adapter "
                    f"in its {place}",
                    file=suite.display(case.file),
                )
    return None

"""What a tool session costs per call over calling the handler directly.

A trivial tool (``add``: two integer arguments, a one-key result) is called
N times in one process four ways, alternating for ``--repeats`` rounds so load
changes on a shared machine hit them alike:

* *direct*: ``handler(arguments)``, the baseline;
* *session (dict)*: ``session.call("add", {...})``: validation, canonical JSON
  of arguments and result, byte counting, recording;
* *session (JSON text)*: the same with the arguments as JSON text, as a chat
  model sends them (adds the strict parse);
* *receipt*: building the receipt of N recorded calls, once per round, reported
  per call.

Prints the median time per call of each and its ratio to the direct call.
Usage: ``python bench/tool_session.py [--calls 20000] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

from pytest_agentbench.sdk.tools import ToolSession, ToolSpec

PARAMETERS = {
    "type": "object",
    "additionalProperties": False,
    "required": ["a", "b"],
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
}


def add(arguments: dict[str, Any]) -> dict[str, int]:
    return {"sum": arguments["a"] + arguments["b"]}


SPEC = ToolSpec(name="add", description="Add two integers.", parameters=PARAMETERS, handler=add)


def per_call(calls: int, body: Callable[[int], None]) -> float:
    started = time.perf_counter()
    body(calls)
    return (time.perf_counter() - started) / calls


def direct(calls: int) -> None:
    for index in range(calls):
        add({"a": index, "b": 1})


def session_dict(calls: int) -> None:
    session = ToolSession([SPEC])
    for index in range(calls):
        session.call("add", {"a": index, "b": 1})


def session_text(calls: int) -> None:
    session = ToolSession([SPEC])
    for index in range(calls):
        session.call("add", f'{{"a": {index}, "b": 1}}')


def receipt(calls: int) -> float:
    session = ToolSession([SPEC])
    for index in range(calls):
        session.call("add", {"a": index, "b": 1})
    started = time.perf_counter()
    session.receipt({"answer": 1})
    return (time.perf_counter() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    timings: dict[str, list[float]] = {
        "direct": [],
        "session (dict)": [],
        "session (JSON text)": [],
        "receipt": [],
    }
    session_dict(1000)  # warm-up: imports, schema compilation
    for _ in range(args.repeats):
        timings["direct"].append(per_call(args.calls, direct))
        timings["session (dict)"].append(per_call(args.calls, session_dict))
        timings["session (JSON text)"].append(per_call(args.calls, session_text))
        timings["receipt"].append(receipt(args.calls))
    baseline = statistics.median(timings["direct"])
    print(f"python {platform.python_version()}, {args.calls} calls x {args.repeats} rounds")
    for name, values in timings.items():
        median = statistics.median(values)
        # Per-round ratios show how much the machine's load moved the figures.
        ratios = [value / direct for value, direct in zip(values, timings["direct"], strict=True)]
        print(
            f"{name:<22} {median * 1e6:8.2f} us/call   {median / baseline:7.1f}x direct"
            f"   (rounds {min(ratios):.1f}x .. {max(ratios):.1f}x)"
        )


if __name__ == "__main__":
    main()

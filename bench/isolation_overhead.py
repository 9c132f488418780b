"""What running the adapter in its own process (``--agentbench-isolate``) costs per call.

Three measurements in one process, each against an in-process baseline taken
in the same run, the two sides alternating in every round so load changes on a
shared machine hit them alike (median of ``--repeats`` rounds):

* trivial call: ``answer("2+3")`` of an adding adapter, through
  :func:`pytest_agentbench.sdk.runner.call_adapter` in-process against the same
  call through the isolated adapter's stand-in (one round trip over the pipe);
* authority case: the world's whole ``run`` of every case of
  ``asteria-authored-v1`` with the reference agent, in-process against
  isolated (the public bundle is pickled and hashed for every call, and sent
  to the child only once);
* start-up: starting a child and loading an adapter into it (the cost of each
  restart after a timeout or crash), against one trivial in-process call;
* session: the wall time of ``python -m pytest --agentbench-suite
  asteria-authored-v1`` (11 cases, 3 controls) as a fresh process, with and
  without ``--agentbench-isolate`` (``--sessions`` rounds).

Usage: ``python bench/isolation_overhead.py [--calls 2000] [--repeats 5] [--sessions 3]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_agentbench.isolation.host import IsolatedAdapters  # noqa: E402
from pytest_agentbench.run.session import SuiteLoader  # noqa: E402
from pytest_agentbench.sdk.packaged import packaged_suites  # noqa: E402
from pytest_agentbench.sdk.registry import WorldRegistry  # noqa: E402
from pytest_agentbench.sdk.runner import call_adapter  # noqa: E402
from pytest_agentbench.worlds.authority.world import WORLD as AUTHORITY  # noqa: E402
from tests.demo_world import Reference  # noqa: E402

SUITE_ID = "asteria-authored-v1"


def per_call(function: Callable[[], object], calls: int) -> float:
    """Seconds per call of ``function``, over ``calls`` calls."""
    started = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - started) / calls


def _duration(seconds: float) -> str:
    return f"{seconds:,.2f} s" if abs(seconds) >= 0.1 else f"{seconds * 1e6:,.1f} us"


def _row(name: str, baseline: list[float], isolated: list[float]) -> None:
    ratios = [iso / base for base, iso in zip(baseline, isolated, strict=True)]
    base, iso = statistics.median(baseline), statistics.median(isolated)
    print(
        f"| {name} | {_duration(base)} | {_duration(iso)} | {_duration(iso - base)} "
        f"| {statistics.median(ratios):,.1f}x ({min(ratios):,.1f}x to {max(ratios):,.1f}x) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=3)
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()}")

    host = IsolatedAdapters(timeout=60)
    try:
        adder = Reference()
        remote_adder = host.remote(adder)

        registry = WorldRegistry([AUTHORITY])
        loaded = SuiteLoader(registry, REPO).load(packaged_suites()[SUITE_ID])
        world, suite = loaded.world, loaded.suite
        cases = list(world.cases(suite))
        agent = world.reference_agent()
        remote_agent = host.remote(world.reference_agent())

        def run_cases(adapter: object) -> Callable[[], object]:
            def run() -> None:
                for case in cases:
                    outcome = world.run(suite, case, world.public_view(suite, case), adapter)
                    assert outcome.failure_class is None, outcome.failure_reason

            return run

        case_calls = max(1, args.calls // (10 * len(cases)))
        trivial: tuple[list[float], list[float]] = ([], [])
        authority: tuple[list[float], list[float]] = ([], [])
        start: tuple[list[float], list[float]] = ([], [])
        run_cases(remote_agent)()  # the child's first bundle and agent memo: not measured
        for _ in range(args.repeats):
            trivial[0].append(per_call(lambda: call_adapter(adder.answer, "2+3"), args.calls))
            trivial[1].append(per_call(lambda: remote_adder.answer("2+3"), args.calls))
            authority[0].append(per_call(run_cases(agent), case_calls) / len(cases))
            authority[1].append(per_call(run_cases(remote_agent), case_calls) / len(cases))
            start[0].append(per_call(lambda: call_adapter(adder.answer, "2+3"), args.calls))
            host.close()
            started = time.perf_counter()
            host.remote(remote_adder)
            start[1].append(time.perf_counter() - started)
            host.remote(remote_agent)
            run_cases(remote_agent)()
    finally:
        host.close()

    print(f"\nmedians of {args.repeats} rounds; ratio = isolated / in-process, per round\n")
    print("| measurement | in-process | isolated | added | ratio (range) |")
    print("|---|---:|---:|---:|---:|")
    _row('trivial call `answer("2+3")`', *trivial)
    _row(f"authority case (`{SUITE_ID}`, reference agent)", *authority)
    _row("child start + adapter load vs one trivial call", *start)
    _row("whole pytest session, 11 cases + 3 controls", *sessions(args.sessions))


def sessions(rounds: int) -> tuple[list[float], list[float]]:
    """Wall seconds of a fresh pytest process on the built-in suite, without and with isolation."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        f"--agentbench-suite={SUITE_ID}",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
    timings: tuple[list[float], list[float]] = ([], [])
    with tempfile.TemporaryDirectory() as empty:
        for index in range(rounds + 1):
            for side, extra in enumerate(([], ["--agentbench-isolate"])):
                started = time.perf_counter()
                subprocess.run([*command, *extra], cwd=empty, check=True, capture_output=True)
                if index:  # the first round warms the bytecode caches
                    timings[side].append(time.perf_counter() - started)
    return timings


if __name__ == "__main__":
    main()

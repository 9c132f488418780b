"""What a toolgrammar task costs: world builds, sandbox copies, runs and grading.

Per domain (ops, clinic, doc):

* build: ``Domain.build`` plus per-table digests (what loading a suite does once
  per process), against
* sandbox: one task's fresh copy of the built world (SQLite backup API).
  Target: a sandbox costs under 1/20 of a rebuild (that is why it is a copy).

Per task of the built-in suite ``toolgrammar-mini-v1`` (every task, reference agent):

* execute: the oracle program run directly on a sandbox by the executor
  (sandbox, handlers, state diff; no session, no adapter): the baseline;
* run: ``world.run`` (sandbox, ToolSession with validation and receipts, the
  reference agent recovering and executing the program, strict final parse);
* grade: ``world.evaluate`` of that outcome (state diff, keys, behaviour,
  injection and grounding checks).

Timings are ``time.perf_counter`` medians over ``--repeats`` rounds in which
the measurements take turns, so load on a shared machine hits them alike.

Usage: ``python bench/toolgrammar.py [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable

from pytest_agentbench.run.session import SuiteLoader
from pytest_agentbench.sdk.packaged import data_root, packaged_suites
from pytest_agentbench.sdk.registry import WorldRegistry, installed_registry
from pytest_agentbench.worlds.toolgrammar.agents import ReferenceAgent
from pytest_agentbench.worlds.toolgrammar.domains import domain_names, get_domain
from pytest_agentbench.worlds.toolgrammar.executor import execute, injections
from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox, build_world, built_world

SUITE_ID = "toolgrammar-mini-v1"
SANDBOX_TARGET = 1 / 20


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def registry() -> WorldRegistry:
    return installed_registry()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(
        f"python {platform.python_version()}, {os.cpu_count()} cpus, "
        f"load average {os.getloadavg()[0]:.2f}"
    )

    missed = False
    print("\nworld          build (median)   sandbox (median)   sandbox / build")
    for name in domain_names():
        domain = get_domain(name)
        world = built_world(domain)
        builds: list[float] = []
        copies: list[float] = []
        for _ in range(args.repeats):
            builds.append(_timed(lambda domain=domain: build_world(domain)))
            copies.append(
                statistics.median(
                    _timed(lambda world=world: Sandbox(world).close()) for _ in range(50)
                )
            )
        build, copy = statistics.median(builds), statistics.median(copies)
        ratio = copy / build
        missed |= ratio > SANDBOX_TARGET
        print(f"{name:<14} {build * 1000:10.1f} ms {copy * 1000:14.3f} ms {ratio:15.4f}")

    loaded = SuiteLoader(registry(), data_root()).load(packaged_suites()[SUITE_ID])
    world, suite = loaded.world, loaded.suite
    oracle = world.load_oracle(suite)
    cases = list(world.cases(suite))
    views = {case.case_id: world.public_view(suite, case) for case in cases}
    rounds: dict[str, list[float]] = {"execute": [], "run": [], "grade": []}
    for _ in range(args.repeats):
        direct = run = grade = 0.0
        for case in cases:
            task = oracle[case.case_id]
            built = built_world(get_domain(task.world))
            started = time.perf_counter()
            execute(built, task.program, injections(task.injections))
            direct += time.perf_counter() - started
            started = time.perf_counter()
            outcome = world.run(suite, case, views[case.case_id], ReferenceAgent())
            run += time.perf_counter() - started
            started = time.perf_counter()
            result = world.evaluate(suite, case, outcome, oracle)
            grade += time.perf_counter() - started
            assert result.outcome.value == "passed", case.case_id
        for key, total in (("execute", direct), ("run", run), ("grade", grade)):
            rounds[key].append(total / len(cases))
    per_task = {key: statistics.median(values) for key, values in rounds.items()}
    print(f"\nper task over {len(cases)} tasks (median of {args.repeats} rounds)")
    for key, value in per_task.items():
        print(f"  {key:<8} {value * 1000:8.3f} ms   x{value / per_task['execute']:.2f} of execute")
    print(f"\nsandbox / build target <= {SANDBOX_TARGET}: {'missed' if missed else 'met'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

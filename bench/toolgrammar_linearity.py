"""Does a toolgrammar suite cost linear time in its tasks?

Two measurements, each per task, in CPU time of the process (on a shared
machine wall time measures the neighbours):

* load: what a pytest run does once per suite before its first case: a fresh
  ``SuiteLoader.load`` (reading and checking every public task file and the
  manifest), the cases, and the oracle as a run loads it (``oracle_of``:
  checksums, every hidden record, the public/hidden prompt match), for the
  built-in ``toolgrammar-mini-v1`` (236 tasks) against ``toolgrammar-v1``
  (7,754 tasks);
* run + grade: ``world.run`` with the reference agent and ``world.evaluate``
  of N tasks of ``toolgrammar-v1`` in one loaded world, the N tasks evenly
  spaced over the suite (so every size holds the same mix of domains and
  tiers), for N = 100, 400 and 1,600 by default.

Sizes take turns within every round and each timed part starts with a
collected heap; medians of ``--repeats`` rounds. Target: per-task cost at the
largest size at most twice that at the smallest. The last line is the
machine-readable ``LINEARITY`` line of ``linearity.py``.

Usage: ``python bench/toolgrammar_linearity.py [--sizes 100 400 1600] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence

from linearity import LIMIT, Series, line
from toolgrammar import registry

from pytest_agentbench.run.session import SuiteLoader, oracle_of
from pytest_agentbench.sdk.contracts import Case
from pytest_agentbench.sdk.packaged import data_root, packaged_suites
from pytest_agentbench.worlds.toolgrammar.agents import ReferenceAgent

SUITES = ("toolgrammar-mini-v1", "toolgrammar-v1")


def load_suite(suite_id: str) -> int:
    """Load a suite and its oracle as a fresh run would; the number of tasks."""
    loaded = SuiteLoader(registry(), data_root()).load(packaged_suites()[suite_id])
    cases = loaded.world.cases(loaded.suite)
    oracle = oracle_of(loaded)
    assert len(oracle) >= len(cases)
    return len(cases)


def evenly_spaced(cases: Sequence[Case], count: int) -> list[Case]:
    step = len(cases) / count
    return [cases[int(index * step)] for index in range(count)]


def cpu_seconds(work: Callable[[], object]) -> float:
    gc.collect()
    started = time.process_time()
    work()
    return time.process_time() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 400, 1600])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    sizes: list[int] = sorted(args.sizes)

    tasks = {suite_id: load_suite(suite_id) for suite_id in SUITES}  # also the warm-up
    loaded = SuiteLoader(registry(), data_root()).load(packaged_suites()[SUITES[-1]])
    world, suite = loaded.world, loaded.suite
    oracle = world.load_oracle(suite)
    every = list(world.cases(suite))
    if sizes[-1] > len(every):
        parser.error(f"{SUITES[-1]} has {len(every)} tasks")
    samples = {size: evenly_spaced(every, size) for size in sizes}
    views = {case.case_id: world.public_view(suite, case) for case in every}

    def run_and_grade(cases: list[Case]) -> None:
        for case in cases:
            outcome = world.run(suite, case, views[case.case_id], ReferenceAgent())
            result = world.evaluate(suite, case, outcome, oracle)
            assert result.outcome.value == "passed", case.case_id

    load_times: dict[str, list[float]] = {suite_id: [] for suite_id in SUITES}
    run_times: dict[int, list[float]] = {size: [] for size in sizes}
    for _ in range(args.repeats):
        for suite_id in SUITES:
            load_times[suite_id].append(
                cpu_seconds(lambda suite_id=suite_id: load_suite(suite_id)) / tasks[suite_id]
            )
        for size in sizes:
            run_times[size].append(
                cpu_seconds(lambda size=size: run_and_grade(samples[size])) / size
            )

    load_us = [statistics.median(load_times[suite_id]) * 1e6 for suite_id in SUITES]
    run_us = [statistics.median(run_times[size]) * 1e6 for size in sizes]
    print(f"load (SuiteLoader.load + cases + load_oracle), median of {args.repeats}, CPU:")
    for suite_id, per_task in zip(SUITES, load_us, strict=True):
        print(f"  {suite_id:<22} {tasks[suite_id]:>6} tasks {per_task:>9.1f} us/task")
    print(f"run + grade (reference agent), tasks of {SUITES[-1]}, median of {args.repeats}, CPU:")
    for size, per_task in zip(sizes, run_us, strict=True):
        print(f"  {size:>6} tasks {per_task / 1000:>8.3f} ms/task")
    series = [
        Series("toolgrammar", "load", "task", tuple(tasks[s] for s in SUITES), tuple(load_us)),
        Series("toolgrammar", "run + grade", "task", tuple(sizes), tuple(run_us)),
    ]
    for one in series:
        verdict = "met" if one.met else "MISSED"
        print(
            f"{one.measure}: per-task largest / smallest = {one.ratio:.2f} (<= {LIMIT}): {verdict}"
        )
    print(line(series))
    return 0 if all(one.met for one in series) else 1


if __name__ == "__main__":
    sys.exit(main())

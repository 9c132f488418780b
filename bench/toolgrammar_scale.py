"""toolgrammar-v1 at full scale: build, decontamination, and the full run serial and ``-n 2``.

    python bench/toolgrammar_scale.py [--sample 1500] [--skip-run | --run-only]
                                      [--rounds 1] [--spin-ms 2]

Prints, in one run:
- the full generation (7,754 tasks) and its wall and CPU time per kept task;
- the decontamination gate at full scale, and on a sample both the
  prefix-filtered join and the all-pairs baseline (their ratio, and the
  all-pairs time extrapolated quadratically to the full suite);
- ``pytest --agentbench-suite toolgrammar-v1`` (reference agent, golden
  outputs off) serially and under ``-n 2``, with their wall, CPU (workers
  included) and peak RSS and the ratio of the medians, beside the same number
  of plain test functions of ``--spin-ms`` each (xdist's own speed-up at that
  grain), all alternating for ``--rounds``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from processes import Config, Sample, run_once
from projects import write_spin_project

from pytest_agentbench.worlds.toolgrammar.decontam import (
    CHAR_THRESHOLD,
    WORD_THRESHOLD,
    char_shingles,
    decontaminate,
    jaccard,
    word_grams,
)
from pytest_agentbench.worlds.toolgrammar.domains import domain_names, get_domain
from pytest_agentbench.worlds.toolgrammar.generator import generate_plan, seed_plan, served_plan
from pytest_agentbench.worlds.toolgrammar.sandbox import built_world
from pytest_agentbench.worlds.toolgrammar.tasks import TaskRecord

REPO = Path(__file__).resolve().parent.parent
FULL_ITEMS = 7_760
"""7,754 tasks and 6 controls."""

T = TypeVar("T")


def timed(work: Callable[[], T]) -> tuple[T, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = work()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def all_pairs(tasks: list[TaskRecord]) -> int:
    chars = [char_shingles(t.prompt) for t in tasks]
    words = [word_grams(t.prompt) for t in tasks]
    return sum(
        1
        for i, j in itertools.combinations(range(len(tasks)), 2)
        if jaccard(chars[i], chars[j]) >= CHAR_THRESHOLD
        or jaccard(words[i], words[j]) >= WORD_THRESHOLD
    )


def run_pytest(label: str, arguments: list[str], cwd: Path, items: int) -> Sample:
    sample = run_once(Config(label, cwd, tuple(arguments), items))
    print(
        f"    {label}: {sample.wall:.1f} s wall, {sample.cpu:.1f} s CPU (workers included), "
        f"peak RSS {sample.rss_mb:.0f} MB"
    )
    return sample


def speedup(label: str, serial: list[Sample], parallel: list[Sample]) -> None:
    one = statistics.median(sample.wall for sample in serial)
    two = statistics.median(sample.wall for sample in parallel)
    ratios = sorted(a.wall / b.wall for a, b in zip(serial, parallel, strict=True))
    print(
        f"{label}: serial {one:.1f} s, -n 2 {two:.1f} s (medians); serial / -n 2 = "
        f"{one / two:.2f}x (rounds {ratios[0]:.2f}x to {ratios[-1]:.2f}x)"
    )


def measure_run(rounds: int, spin_ms: float) -> None:
    """toolgrammar-v1 serial and ``-n 2``, and plain tests as xdist's own reference.

    The reference is the same number of plain test functions, each spinning
    ``spin_ms`` (about the reference agent's CPU per case): what pytest-xdist
    itself gains on this machine at this item count and grain. Every
    configuration alternates with the others, round by round, so all see the
    same load.
    """
    suite = ["--agentbench-suite", "toolgrammar-v1", "-o", "agentbench_snapshot=false"]
    samples: dict[str, list[Sample]] = {name: [] for name in ("tg0", "tg2", "spin0", "spin2")}
    print(
        f"full run, reference agent, and {FULL_ITEMS:,} plain tests of {spin_ms:g} ms; "
        f"{rounds} interleaved rounds:"
    )
    with tempfile.TemporaryDirectory() as folder:
        spin = Path(folder)
        write_spin_project(spin, FULL_ITEMS, spin_ms)
        plain = ["-p", "no:agentbench"]
        for _ in range(rounds):
            samples["tg0"].append(run_pytest("toolgrammar-v1", suite, REPO, FULL_ITEMS))
            samples["tg2"].append(
                run_pytest("toolgrammar-v1 -n 2", [*suite, "-n", "2"], REPO, FULL_ITEMS)
            )
            samples["spin0"].append(run_pytest("plain tests", plain, spin, FULL_ITEMS))
            samples["spin2"].append(
                run_pytest("plain tests -n 2", [*plain, "-n", "2"], spin, FULL_ITEMS)
            )
    speedup("toolgrammar-v1", samples["tg0"], samples["tg2"])
    speedup("plain tests (xdist's own)", samples["spin0"], samples["spin2"])
    print(f"load average {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=1500)
    parser.add_argument("--skip-run", action="store_true")
    parser.add_argument("--run-only", action="store_true", help="only the full run")
    parser.add_argument("--rounds", type=int, default=1, help="serial / -n 2 rounds")
    parser.add_argument(
        "--spin-ms", type=float, default=2.0, help="work of each plain reference test"
    )
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    # The runs first: a child's peak RSS (os.wait4) includes this process's at fork,
    # small until the generation below.
    if not args.skip_run:
        measure_run(args.rounds, args.spin_ms)
    if args.run_only:
        return
    domains = [get_domain(name) for name in domain_names()]
    for domain in domains:
        built_world(domain)  # world builds are measured in bench/toolgrammar.py
    plan = served_plan(domains, seed_plan())
    generation, wall, cpu = timed(lambda: generate_plan(domains, plan))
    tasks = generation.tasks
    print(
        f"generation: {len(tasks)} tasks in {wall:.1f} s wall, {cpu:.1f} s CPU "
        f"({1000 * cpu / len(tasks):.2f} ms CPU per kept task, "
        f"{sum(generation.rejected.values())} rejected attempts)"
    )
    gate, wall, cpu = timed(lambda: decontaminate(tasks))
    print(
        f"decontamination (full): {wall:.2f} s wall, {cpu:.2f} s CPU; "
        f"{len(gate.leaks)} leaks, {gate.surface_duplicates} surface duplicates"
    )
    sample = tasks[:: max(1, len(tasks) // args.sample)][: args.sample]
    _, _, joined = timed(lambda: decontaminate(sample))
    _, _, brute = timed(lambda: all_pairs(sample))
    scale = (len(tasks) / len(sample)) ** 2
    print(
        f"decontamination ({len(sample)}-task sample): prefix join {joined:.2f} s CPU, "
        f"all pairs {brute:.2f} s CPU, all pairs / join = {brute / joined:.1f}x; "
        f"all pairs extrapolated to {len(tasks)}: {brute * scale:.0f} s CPU"
    )


if __name__ == "__main__":
    main()

"""Does C08 v2 reading and grading stay linear, and what does verification cost over parsing?

Asteria candidates of 10, 100 and 1,000 actions (and Enterprise ones of the
same sizes) written by the world's generator (seeded, no wall clock); a small
size is measured over several candidates of distinct seeds, so that every
timed run covers as many actions as the largest size. Per size, time per
action of:

* verified read: the lineage reader's public and evaluator sides (inventory,
  canonical re-serialisation, models and invariants, digests, bindings), each
  with the collector paused, as a run reads them (``SuiteLoader.load``,
  ``oracle_of``);
* grade: the reference agent's answer for every action, graded, plus the
  lineage report;
* bare parse (the baseline, measured in the same run): ``json.loads`` of the
  same payload bytes.

Targets: per-action(1,000) / per-action(10) <= 2 for the verified read and the
grade (flat per-action cost), and verified read / bare parse reported as a ratio.

Timings are ``time.process_time`` medians, CPU time of the process (on a
shared machine wall time measures the neighbours), of ``--repeats`` runs, sizes
taking turns within each run so that load changes hit them alike.

Usage: ``python bench/evidence_binding.py [--sizes 10 100 1000] [--repeats 5]``.
The last line is the machine-readable ``LINEARITY`` line of ``linearity.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from linearity import Series, line

from pytest_agentbench.run.gc_freeze import collector_paused
from pytest_agentbench.worlds.evidence_binding import (
    asteria_reader,
    enterprise_reader,
    generator,
    scoring,
)
from pytest_agentbench.worlds.evidence_binding.agents import EvidenceAgent
from pytest_agentbench.worlds.evidence_binding.artifacts import CandidateTree
from pytest_agentbench.worlds.evidence_binding.baselines import (
    enterprise_rows,
    enterprise_submission,
)

SEED = 20261130
Job = Callable[[], object]
Runner = Callable[[Path], tuple[Job, Job]]
Files = Callable[..., dict[str, bytes]]


def _tree(root: Path) -> CandidateTree:
    return CandidateTree(root, root / "evaluator", "c", "c/evaluator")


def asteria_run(root: Path) -> tuple[Callable[[], object], Callable[[], object]]:
    def read() -> tuple[Any, Any]:
        with collector_paused():
            candidate = asteria_reader.read_public(_tree(root))
        with collector_paused():
            return candidate, asteria_reader.read_evaluator(_tree(root), candidate)

    candidate, truth = read()

    def grade() -> object:
        agent = EvidenceAgent()
        retained = {
            a.action_event_id: frozenset(agent.select_evidence(candidate.public, a.action_event_id))
            for a in candidate.public.actions
        }
        return scoring.asteria_report(
            candidate.public, candidate.public_input_digest, truth.required, retained
        )

    return read, grade


def enterprise_run(root: Path) -> tuple[Callable[[], object], Callable[[], object]]:
    def read() -> tuple[Any, Any]:
        with collector_paused():
            candidate = enterprise_reader.read_public(_tree(root))
        with collector_paused():
            return candidate, enterprise_reader.read_evaluator(_tree(root), candidate)

    candidate, truth = read()

    def grade() -> object:
        submission = enterprise_submission(
            candidate.public, candidate.public_input_digest, EvidenceAgent()
        )
        return scoring.enterprise_report(
            candidate.public,
            candidate.public_input_digest,
            truth.required,
            enterprise_rows(submission),
        )

    return read, grade


def measure_lineage(
    lineage: tuple[str, Files, Runner, str], sizes: list[int], repeats: int, base: Path
) -> dict[tuple[int, str], float]:
    """Median seconds per action of read, grade and parse at each size.

    A small size is measured over several candidates of distinct seeds, so
    that every timed run covers as many actions (and holds as much memory) as
    the largest size: otherwise the garbage collector's full collections,
    whose cost follows the live heap, fall unevenly across sizes.
    """
    name, files, run, payload = lineage
    largest = max(sizes)
    jobs: dict[int, list[tuple[Job, Job, Job]]] = {}
    for size in sizes:
        jobs[size] = []
        for copy in range(max(1, largest // size)):
            root = base / f"{name}-{size}-{copy}"
            generator.write_candidate(files("bench", SEED + copy, actions=size), root)
            data = (root / payload).read_bytes()
            read, grade = run(root)
            jobs[size].append((read, grade, lambda data=data: json.loads(data)))
    times: dict[tuple[int, str], list[float]] = {}
    for _ in range(repeats):
        for size, copies in jobs.items():
            for index, step in enumerate(("read", "grade", "parse")):
                # Each step starts with the collector's counters at zero, so a
                # full collection owed to the garbage of the step before (a read
                # of 5,000 actions leaves a lot) is not charged to this one.
                gc.collect()
                started = time.process_time()
                for job in copies:
                    job[index]()
                elapsed = time.process_time() - started
                times.setdefault((size, step), []).append(elapsed / (size * len(copies)))
    return {key: statistics.median(values) for key, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    sizes: list[int] = sorted(args.sizes)
    print(f"python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}")
    ok = True
    series: list[Series] = []
    with tempfile.TemporaryDirectory() as folder:
        lineages: tuple[tuple[str, Files, Runner, str], ...] = (
            ("asteria", generator.asteria_files, asteria_run, "public/c08-asteria-public.json"),
            ("enterprise", generator.enterprise_files, enterprise_run, "public/public-input.json"),
        )
        for measured in lineages:
            lineage = measured[0]
            per_action = measure_lineage(measured, sizes, args.repeats, Path(folder))
            print(f"\n{lineage}")
            print(
                f"{'actions':>8}  {'read/action':>12}  {'grade/action':>13}  {'parse/action':>13}"
                "  read/parse"
            )
            for size in sizes:
                read_t, grade_t, parse_t = (
                    per_action[(size, n)] for n in ("read", "grade", "parse")
                )
                print(
                    f"{size:>8}  {read_t * 1e6:>10.1f}us  {grade_t * 1e6:>11.1f}us  "
                    f"{parse_t * 1e6:>11.1f}us  {read_t / parse_t:>9.1f}x"
                )
            small, large = sizes[0], sizes[-1]
            for name in ("read", "grade"):
                ratio = per_action[(large, name)] / per_action[(small, name)]
                verdict = "ok" if ratio <= 2 else "MISSED"
                ok = ok and ratio <= 2
                print(
                    f"{name}: per-action({large}) / per-action({small}) = {ratio:.2f}"
                    f" (target <= 2): {verdict}"
                )
                series.append(
                    Series(
                        "evidence_binding",
                        f"{lineage} {name}",
                        "action",
                        tuple(sizes),
                        tuple(per_action[(size, name)] * 1e6 for size in sizes),
                    )
                )
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    print(line(series))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

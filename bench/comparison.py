"""What a baseline comparison costs: 10,000 cases x 20 metrics x 10,000 resamples.

Two synthetic runs of one suite (seeded, so every run of this script measures
the same data): every case carries 20 rate metrics of 0/1 measurements (the
shape every shipped world produces), the "after" run a few points worse on some
of them. The whole comparison (pairing, per-metric units, bootstrap intervals,
sign tests, Holm) is timed, as ``compare_runs`` does it at the end of a session
or in ``agentbench compare``.

Baseline measured in the same run: one naive paired bootstrap of ONE metric
(``stats.paired_bootstrap``: 10,000 resamples of 10,000 index draws each),
scaled by the number of metrics. The ratio says how much the class-compressed
multinomial resampling saves.

Usage: ``python bench/comparison.py [--cases 10000] [--metrics 20] [--naive-cases 2000]``.
Times are CPU seconds of this process (``time.process_time``): on a machine
shared with other jobs, wall time measures the neighbours. Wall time is printed
beside it. Exits 1 when the comparison takes 10 CPU seconds or more.
"""

from __future__ import annotations

import argparse
import platform
import random
import time

from pytest_agentbench.report.baseline import settings
from pytest_agentbench.scoring.comparison import BaselineIdentity, SuiteRun, compare_runs
from pytest_agentbench.scoring.stats import paired_bootstrap
from pytest_agentbench.sdk.contracts import CaseOutcome, CaseResult
from pytest_agentbench.sdk.metrics import MetricDefinition

TARGET_S = 10.0


def run(cases: int, metrics: int, shift: float, seed: int) -> SuiteRun:
    rng = random.Random(seed)
    definitions = tuple(
        MetricDefinition(
            name=f"m{m:02d}",
            family="bench",
            direction="higher_is_better",
            support_meaning="cases",
            numerator=f"n{m:02d}",
            denominator=f"d{m:02d}",
            reduced=False,
        )
        for m in range(metrics)
    )
    results = []
    for index in range(cases):
        measurements = {}
        for m in range(metrics):
            scored = int(m % 4 != 0 or rng.random() < 0.8)  # some metrics skip cases
            rate = 0.85 - (shift if m % 5 == 0 else 0.0)
            measurements[f"n{m:02d}"] = int(scored and rng.random() < rate)
            measurements[f"d{m:02d}"] = scored
        results.append(
            CaseResult(
                suite_id="bench",
                case_id=f"case-{index:05d}",
                outcome=CaseOutcome.PASSED if measurements["n01"] else CaseOutcome.FAILED,
                measurements=measurements,
            )
        )
    return SuiteRun(
        id="bench",
        world="bench",
        digests={"public": "p", "oracle": "o"},
        metrics=definitions,
        observed={},
        results=tuple(results),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--metrics", type=int, default=20)
    parser.add_argument("--naive-cases", type=int, default=2_000)
    args = parser.parse_args()
    before = run(args.cases, args.metrics, 0.0, 1)
    after = run(args.cases, args.metrics, 0.02, 2)
    identity = BaselineIdentity(
        path="before.json",
        schema_version="agentbench-run-report/2",
        adapter_spec=None,
        adapter_description="bench",
        git_commit=None,
    )
    started, cpu_started = time.perf_counter(), time.process_time()
    comparison = compare_runs([before], [after], baseline=identity, settings=settings())
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    rows = comparison.suites[0].rows
    naive_a = [float(r.measurements["n01"]) for r in after.results[: args.naive_cases]]
    naive_b = [float(r.measurements["n01"]) for r in before.results[: args.naive_cases]]
    cpu_started = time.process_time()
    paired_bootstrap(naive_a, naive_b, resamples=10_000, seed=0)
    naive_one = (time.process_time() - cpu_started) * args.cases / args.naive_cases
    naive_all = naive_one * args.metrics
    print(f"python {platform.python_version()} on {platform.machine()}")
    print(
        f"comparison of {args.cases} cases x {args.metrics} metrics (+ pass/fail row) "
        f"x 10,000 resamples: {cpu:.2f} s CPU, {elapsed:.2f} s wall ({len(rows)} rows, "
        f"{comparison.regressions} regressions)"
    )
    print(
        f"naive index bootstrap, extrapolated from {args.naive_cases} cases: "
        f"{naive_one:.1f} s CPU per metric, {naive_all:.0f} s for all; "
        f"ratio comparison / naive = {cpu / naive_all:.4f}"
    )
    print(f"target < {TARGET_S:g} s CPU: {'met' if cpu < TARGET_S else 'MISSED'}")
    return 0 if cpu < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""What ``--agentbench-ledger`` costs per case: a ledger (3 fsynced rows) around ``run_case``.

The demo world's reference agent answers one question per case (one adapter
call, so header, call and terminal rows). Both paths run alternately in one
process; each ledgered case creates a fresh file in a temporary folder. Wall
time, since the cost is the fsyncs.

    python bench/case_ledger.py [--cases 300] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from demo_world import DemoWorld, Reference

from pytest_agentbench.case_ledger import ledgered, open_case_ledger
from pytest_agentbench.contracts import Case
from pytest_agentbench.runner import run_case
from pytest_agentbench.suite import Suite, SuiteConfig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    world, adapter = DemoWorld(), Reference()
    view = {"question": "1+2"}
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        config = SuiteConfig.model_validate(
            {"id": "bench", "version": "1", "world": "demo", "title": "bench"}
        )
        suite = Suite(config=config, root=root / "suite", display_root="suite")
        cases = [
            Case(suite_id="bench", case_id=f"c{i}", file="cases.jsonl") for i in range(args.cases)
        ]
        rounds = iter(range(10**9))

        def plain() -> None:
            for case in cases:
                run_case(world, suite, case, view, adapter, timeout=300)

        def with_ledger() -> None:
            folder = root / f"ledgers-{next(rounds)}"
            for case in cases:
                ledger = open_case_ledger(folder, suite, case, "demo_world.Reference")
                outcome = run_case(world, suite, case, view, ledgered(adapter, ledger), timeout=300)
                ledger.finish(outcome)
                assert ledger.failure is None

        timings: dict[str, list[float]] = {"run_case": [], "with ledger": []}
        for _ in range(args.repeats):
            for name, body in (("run_case", plain), ("with ledger", with_ledger)):
                started = time.perf_counter()
                body()
                timings[name].append((time.perf_counter() - started) / args.cases * 1e6)
    medians = {name: statistics.median(values) for name, values in timings.items()}
    for name, value in medians.items():
        print(f"{name:<12} {value:9.1f} us per case (wall, median of {args.repeats})")
    print(f"ratio with ledger / run_case: {medians['with ledger'] / medians['run_case']:.1f}x")
    print(f"the ledger adds {medians['with ledger'] - medians['run_case']:.0f} us per case")
    return 0


if __name__ == "__main__":
    sys.exit(main())

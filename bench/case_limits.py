"""What driving one case through ``run_case`` costs over calling the world directly.

``run_case`` arms the per-case timer (SIGALRM, repeating until the call
returns), raises and lowers the adapter-call flag, and notes the threads an
adapter leaves behind. This prints the median per-case time of both paths,
measured alternately in one process, and their ratio.

    python bench/case_limits.py [--cases 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from demo_world import DemoWorld, Reference

from pytest_agentbench.contracts import Case
from pytest_agentbench.runner import run_case


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    world, adapter = DemoWorld(), Reference()
    case = Case(suite_id="bench", case_id="c1", file="cases.jsonl")
    view = {"question": "1+2"}

    def direct() -> None:
        world.run(None, case, view, adapter)  # type: ignore[arg-type]

    def limited() -> None:
        run_case(world, None, case, view, adapter, timeout=300)  # type: ignore[arg-type]

    timings: dict[str, list[float]] = {"world.run": [], "run_case": []}
    for _ in range(args.repeats):
        for name, body in (("world.run", direct), ("run_case", limited)):
            started = time.process_time()
            for _ in range(args.cases):
                body()
            timings[name].append((time.process_time() - started) / args.cases * 1e6)
    medians = {name: statistics.median(values) for name, values in timings.items()}
    for name, value in medians.items():
        print(f"{name:<10} {value:7.2f} us per case (CPU, median of {args.repeats})")
    print(f"ratio run_case / world.run: {medians['run_case'] / medians['world.run']:.2f}x")
    print(f"run_case adds {medians['run_case'] - medians['world.run']:.2f} us per case")
    return 0


if __name__ == "__main__":
    sys.exit(main())

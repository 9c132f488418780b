"""What the in-process per-case benches share (``case_limits.py``, ``case_ledger.py``).

Both drive the demo world's reference agent through one or two code paths in
one process: the same arguments, the same timing loop (the paths take turns
within every round, so a change in the machine's load hits them alike) and
the same printout of medians per case.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from demo_world import DemoWorld, Reference

__all__ = ["DemoWorld", "Reference", "arguments", "print_medians", "take_turns"]


def arguments(doc: str, default_cases: int) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--cases", type=int, default=default_cases)
    parser.add_argument("--repeats", type=int, default=5)
    return parser.parse_args()


def take_turns(
    paths: Mapping[str, Callable[[], None]],
    *,
    repeats: int,
    cases: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median microseconds per case of each path (each call of a path runs ``cases`` cases)."""
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeats):
        for name, path in paths.items():
            started = clock()
            path()
            samples[name].append((clock() - started) / cases * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def print_medians(medians: Mapping[str, float], *, clock_name: str, repeats: int) -> None:
    """Each path's median, then the last path against the first: ratio and what it adds."""
    for name, value in medians.items():
        print(f"{name:<12} {value:9.2f} us per case ({clock_name}, median of {repeats})")
    (base_name, base), (name, value) = next(iter(medians.items())), list(medians.items())[-1]
    print(f"ratio {name} / {base_name}: {value / base:.2f}x")
    print(f"{name} adds {value - base:.2f} us per case")

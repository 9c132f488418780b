"""Does an operations episode cost linear time in its horizon and its event count?

One case of the ``operations`` world is: run the episode, replay it from its
decision tape (the ``deterministic_replay`` dimension) and grade its eleven
dimensions. This times that unit on variations of the shipped maintenance
spec (``suites/operations-maintenance-v1/operation.yaml``), with no wall clock
inside the world:

* horizon: only the opening report; the agent waits with a 60-minute
  fallback every time it is invoked, so a horizon of H minutes means H/60
  invocations. Cost per simulated hour, H = 120, 480 and 1920 hours.
* events: N authored customer confirmations one minute apart (every fifth an
  audit record that wakes nobody); the agent waits on them without a
  fallback. Cost per event, N = 100, 1000 and 5000.

Timings are ``time.process_time`` medians, CPU time of the process (on a
shared machine wall time measures the neighbours), over ``--repeats`` rounds in
which the sizes take turns, so load changes hit them alike.
Each size's per-unit cost is printed as a ratio to the smallest size's,
measured in the same run. Target: ratio <= 2 at the largest size (flat
per-unit cost, i.e. linear total cost).

Usage: ``python bench/operations_episode.py [--repeats 3] [--hours 120 480 1920]
[--events 100 1000 5000]``. The last line is the machine-readable ``LINEARITY``
line of ``linearity.py``.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from linearity import Series, line

from pytest_agentbench.worlds.operations.episode import run_episode
from pytest_agentbench.worlds.operations.evaluation import evaluate_episode
from pytest_agentbench.worlds.operations.packs import installed_packs
from pytest_agentbench.worlds.operations.replay import replay_codes
from pytest_agentbench.worlds.operations.spec import LoadedSpec, parse_operation_spec

SPEC = (
    Path(__file__).resolve().parents[1] / "suites" / "operations-maintenance-v1" / "operation.yaml"
)
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class Waiter:
    """Waits on every invocation: with a fallback (horizon runs) or on an event type."""

    def __init__(self, fallback: int | None) -> None:
        self.fallback = fallback

    def solve(self, task: dict[str, Any], session: Any) -> dict[str, Any]:
        wake_on = [] if self.fallback else ["customer_resolution_reported"]
        return {
            "outcome": "WAIT",
            "reason": "bench",
            "wake_on": wake_on,
            "fallback_after_minutes": self.fallback,
        }


def _base() -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    scenario = raw["scenarios"]["V1"]
    scenario["events"] = scenario["events"][:1]
    scenario["expected_event_rejections"] = []
    raw["scenarios"] = {"V1": scenario}
    return raw


def horizon_spec(hours: int) -> LoadedSpec:
    raw = _base()
    raw["policy"]["horizon_minutes"] = hours * 60
    return parse_operation_spec(raw, "bench.yaml", installed_packs())


def events_spec(count: int) -> LoadedSpec:
    raw = _base()
    raw["policy"]["horizon_minutes"] = count + 10
    template = {
        "type": "customer_resolution_reported",
        "actor": "tenant_morgan",
        "payload": {"issue_id": "issue_1", "status": "RESOLVED"},
    }
    for index in range(count):
        event = copy.deepcopy(template)
        at = (START + timedelta(minutes=index + 1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        event.update(event_id=f"r{index}", at=at, triggers_agent=index % 5 != 0)
        raw["scenarios"]["V1"]["events"].append(event)
    return parse_operation_spec(raw, "bench.yaml", installed_packs())


def one_case(loaded: LoadedSpec, agent: Any) -> None:
    record = run_episode(loaded, "V1", agent)
    codes = replay_codes(loaded, record)
    evaluate_episode(record, loaded.domain, loaded.spec.scenarios["V1"], codes)


def measure(
    sizes: list[int], build: Callable[[int], LoadedSpec], agent: Any, repeats: int
) -> dict[int, float]:
    specs = {size: build(size) for size in sizes}
    for size in sizes:
        one_case(specs[size], agent)  # warm-up
    times: dict[int, list[float]] = {size: [] for size in sizes}
    for _ in range(repeats):
        for size in sizes:
            started = time.process_time()
            one_case(specs[size], agent)
            times[size].append(time.process_time() - started)
    return {size: statistics.median(values) for size, values in times.items()}


def report(title: str, unit: str, medians: dict[int, float]) -> bool:
    sizes = sorted(medians)
    baseline = medians[sizes[0]] / sizes[0]
    print(f"\n{title}")
    print(f"{'size':>8} {'case s':>9} {'per ' + unit + ' us':>14} {'ratio':>7}")
    ratio = 1.0
    for size in sizes:
        per_unit = medians[size] / size
        ratio = per_unit / baseline
        print(f"{size:>8} {medians[size]:>9.3f} {per_unit * 1e6:>14.1f} {ratio:>7.2f}")
    ok = ratio <= 2.0
    print(f"target per-{unit}(largest) / per-{unit}(smallest) <= 2: {'met' if ok else 'MISSED'}")
    return ok


def _series(measure: str, unit: str, medians: dict[int, float]) -> Series:
    sizes = tuple(sorted(medians))
    return Series(
        "operations", measure, unit, sizes, tuple(medians[size] / size * 1e6 for size in sizes)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hours", type=int, nargs="+", default=[120, 480, 1920])
    parser.add_argument("--events", type=int, nargs="+", default=[100, 1000, 5000])
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}; repeats {args.repeats}")
    horizon = measure(args.hours, horizon_spec, Waiter(fallback=60), args.repeats)
    events = measure(args.events, events_spec, Waiter(fallback=None), args.repeats)
    ok = report("horizon (simulated hours; one invocation per hour)", "hour", horizon)
    ok = report("event count (authored events; 4 in 5 wake the agent)", "event", events) and ok
    print(line([_series("horizon", "hour", horizon), _series("events", "event", events)]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""What the installed plugin costs a pytest run that has no benchmarks (issue 16, target 1).

A project with two trivial tests and no suite runs ``python -m pytest -q``
with the plugin (as installed) and with ``-p no:agentbench``, interleaved and
in alternating order, each in a fresh process. Per round the two runs are
paired: the cost is the plugin run's wall time and peak RSS minus the bare
run's. The median of the paired differences is judged against the target
(+15 ms wall, +2 MB peak RSS); their range is printed.

The runs write bytecode as a user's do (``PYTHONDONTWRITEBYTECODE`` is
dropped, two warm-up runs per side fill the caches): pytest recompiles the
modules of every pytest plugin on each run otherwise.

Usage: ``python bench/idle_cost.py [--rounds 25]``. ``measure(rounds)`` is the
same measurement for another script (``bench/overhead.py``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

WALL_TARGET_MS = 15.0
RSS_TARGET_KB = 2048
WARM_UP = 2

TESTS = "def test_one():\n    assert 1 + 1 == 2\n\n\ndef test_two():\n    assert 'a' < 'b'\n"


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        env.pop(name, None)
    return env


def _run(project: Path, extra: Sequence[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall and CPU seconds and peak RSS (KB) of one ``python -m pytest -q`` process."""
    command = [sys.executable, "-m", "pytest", "-q", *extra]
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read().decode() if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {process.returncode}: {stderr}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def _summary(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(rounds: int) -> dict[str, Any]:
    """Paired idle-cost figures over ``rounds`` interleaved rounds.

    Returns ``wall_ms``, ``cpu_ms`` (user + system) and ``rss_kb``, each with
    the ``plugin`` and ``bare`` medians and the paired ``delta`` (median, min,
    max); ``met`` (the wall and RSS delta medians within target), the
    ``targets``, ``rounds`` and the 1-minute ``load_average`` before and after.
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    env = _environment()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="agentbench-idle-") as folder:
        project = Path(folder)
        (project / "test_plain.py").write_text(TESTS, encoding="utf-8")
        sides = {"plugin": [], "bare": ["-p", "no:agentbench"]}
        for _ in range(WARM_UP):
            for extra in sides.values():
                _run(project, extra, env)
        walls: dict[str, list[float]] = {"plugin": [], "bare": []}
        cpus: dict[str, list[float]] = {"plugin": [], "bare": []}
        rss: dict[str, list[int]] = {"plugin": [], "bare": []}
        for index in range(rounds):
            order = ["plugin", "bare"] if index % 2 == 0 else ["bare", "plugin"]
            for side in order:
                wall, cpu, peak = _run(project, sides[side], env)
                walls[side].append(wall * 1000)
                cpus[side].append(cpu * 1000)
                rss[side].append(peak)
    wall_delta = [p - b for p, b in zip(walls["plugin"], walls["bare"], strict=True)]
    cpu_delta = [p - b for p, b in zip(cpus["plugin"], cpus["bare"], strict=True)]
    rss_delta = [float(p - b) for p, b in zip(rss["plugin"], rss["bare"], strict=True)]
    wall_summary = _summary(wall_delta)
    rss_summary = _summary(rss_delta)
    return {
        "rounds": rounds,
        "wall_ms": {
            "plugin": statistics.median(walls["plugin"]),
            "bare": statistics.median(walls["bare"]),
            "delta": wall_summary,
        },
        "cpu_ms": {
            "plugin": statistics.median(cpus["plugin"]),
            "bare": statistics.median(cpus["bare"]),
            "delta": _summary(cpu_delta),
        },
        "rss_kb": {
            "plugin": statistics.median(rss["plugin"]),
            "bare": statistics.median(rss["bare"]),
            "delta": rss_summary,
        },
        "targets": {"wall_ms": WALL_TARGET_MS, "rss_kb": RSS_TARGET_KB},
        "met": wall_summary["median"] <= WALL_TARGET_MS
        and rss_summary["median"] <= RSS_TARGET_KB,
        "load_average": (load_before, os.getloadavg()[0]),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args(argv)
    result = measure(args.rounds)
    wall, rss = result["wall_ms"], result["rss_kb"]
    verdict = "met" if result["met"] else "missed"
    print(f"idle cost over {result['rounds']} interleaved rounds of `pytest -q`, no suites")
    print(
        f"  wall: plugin {wall['plugin']:.0f} ms, bare {wall['bare']:.0f} ms; "
        f"paired delta median {wall['delta']['median']:+.1f} ms "
        f"(range {wall['delta']['min']:+.1f} .. {wall['delta']['max']:+.1f}), "
        f"target <= +{WALL_TARGET_MS:.0f} ms"
    )
    cpu = result["cpu_ms"]
    print(
        f"  cpu (user+sys, not judged): plugin {cpu['plugin']:.0f} ms, bare {cpu['bare']:.0f} ms; "
        f"paired delta median {cpu['delta']['median']:+.1f} ms "
        f"(range {cpu['delta']['min']:+.1f} .. {cpu['delta']['max']:+.1f})"
    )
    print(
        f"  peak RSS: plugin {rss['plugin'] / 1024:.1f} MB, bare {rss['bare'] / 1024:.1f} MB; "
        f"paired delta median {rss['delta']['median']:+.0f} KB "
        f"(range {rss['delta']['min']:+.0f} .. {rss['delta']['max']:+.0f}), "
        f"target <= +{RSS_TARGET_KB} KB"
    )
    before, after = result["load_average"]
    print(f"  load average {before:.2f} -> {after:.2f}; target 1 {verdict}")
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())

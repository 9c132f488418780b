"""Instructions per case under valgrind, the plugin against bare pytest: T2 without a clock's noise.

    python bench/instructions.py                     # N = 1,000 and 3,000 (about 6 minutes)
    python bench/instructions.py --sizes 2000 6000
    python bench/instructions.py --idle-only         # T1 counted only (under a minute)

The wall-clock ratios of ``overhead.py`` move by 10% or more from round to
round on a shared machine, so a change that saves 2% cannot be seen there.
Instruction counts barely move: with string hashing fixed
(``PYTHONHASHSEED=0``) the same run counts the same instructions to within
0.01%. Each T2 configuration of ``overhead.py`` (every output, nothing
written; the same projects and arguments) runs once under
``valgrind --tool=callgrind`` at each of two sizes. The difference between
the sizes over the difference in cases is the per-case count; the rest is
the fixed cost (start-up, imports). Printed per configuration: both sides'
per-case counts and their ratio, the plugin's fixed extra, and the total
ratio the counts give at N = 10,000. First, T1 counted: the unrelated project
of ``overhead.py``'s T1 with the plugin and with ``-p no:agentbench``, the
plugin's extra instructions, and what they come to at the idle run's own rate
(its instructions over its median CPU time in five uncounted runs): a
figure the clock cannot resolve, T1's rounds spreading by tens of milliseconds.

Instructions are not time: cache misses (the garbage collector walking the
heap, for one) are not counted, so the wall ratio runs above this one. Use it
to tell whether a change to a hot path saves anything; ``overhead.py`` judges
the targets. Needs valgrind: without it, says so and exits 2.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import projects
from overhead import NO_PLUGIN, case_configs, case_projects
from processes import Config, check_run, counting_environment, pytest_command, run_once

PROJECTED_CASES = 10_000
_COLLECTED = re.compile(r"Collected : (\d+)")


@dataclass(frozen=True)
class Line:
    """A straight line through two (cases, instructions) points."""

    per_case: float
    fixed: float

    @classmethod
    def through(cls, small: tuple[int, int], large: tuple[int, int]) -> Line:
        (n1, i1), (n2, i2) = small, large
        if n2 <= n1:
            raise ValueError(f"sizes must grow: {n1} then {n2}")
        per_case = (i2 - i1) / (n2 - n1)
        return cls(per_case, i1 - per_case * n1)

    def at(self, cases: int) -> float:
        return self.fixed + self.per_case * cases


def counted(command: Sequence[str], cwd: Path) -> tuple[int, int, str]:
    """Run ``command`` under callgrind: its instruction count, exit status and output."""
    valgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    done = subprocess.run(
        [*valgrind, *command],
        cwd=cwd,
        env=counting_environment(),
        capture_output=True,
        text=True,
        check=False,  # the caller checks, with the run's output
    )
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise SystemExit(f"{command}: valgrind printed no instruction count")
    return int(found.group(1)), done.returncode, done.stdout + done.stderr


def instructions(config: Config) -> int:
    """Instructions the configuration's pytest process executes, as callgrind counts them."""
    count, code, output = counted(pytest_command(config), config.project)
    check_run(config, code, output)
    return count


def describe(kind: str, plugin: Line, bare: Line) -> str:
    projected = plugin.at(PROJECTED_CASES) / bare.at(PROJECTED_CASES)
    return (
        f"  {kind:<16} per case: plugin {plugin.per_case / 1e6:.3f} M, "
        f"bare {bare.per_case / 1e6:.3f} M, ratio {plugin.per_case / bare.per_case:.3f}x; "
        f"plugin's fixed extra {(plugin.fixed - bare.fixed) / 1e9:.2f} G; "
        f"total ratio at N = {PROJECTED_CASES:,}: {projected:.3f}x"
    )


def measure(sizes: tuple[int, int], base: Path) -> list[str]:
    # (kind, side) -> one config per size; every config is counted, two at a time.
    configs: dict[tuple[str, str], list[Config]] = {}
    for cases in sizes:
        plugin_root, bare_root = case_projects(base, cases)
        for outputs, kind in ((True, "every output"), (False, "nothing written")):
            plugin, bare = case_configs(plugin_root, bare_root, cases, outputs=outputs)
            configs.setdefault((kind, "plugin"), []).append(plugin)
            configs.setdefault((kind, "bare"), []).append(bare)
    ordered = [config for pair in configs.values() for config in pair]
    for config in ordered:
        # Bytecode caches first: a module compiled under valgrind counts its compiling.
        run_once(config)
    with ThreadPoolExecutor(max_workers=2) as pool:
        counts = dict(zip(ordered, pool.map(instructions, ordered), strict=True))
    lines = {
        key: Line.through(*((n, counts[config]) for n, config in zip(sizes, pair, strict=True)))
        for key, pair in configs.items()
    }
    return [
        describe(kind, lines[(kind, "plugin")], lines[(kind, "bare")])
        for kind in ("every output", "nothing written")
    ]


def measure_idle(base: Path) -> str:
    """T1 counted: the plugin's extra instructions in an unrelated project, and their time
    at the rate the idle run itself executes instructions."""
    base.mkdir()
    projects.write_unrelated_project(base)
    plugin = Config("idle, plugin installed", base, (), 2)
    bare = Config("idle, -p no:agentbench", base, NO_PLUGIN, 2)
    run_once(plugin)  # bytecode caches and the entry-point cache, as a user's second run
    cpu = statistics.median(run_once(bare).cpu for _ in range(5))
    counted_plugin, counted_bare = instructions(plugin), instructions(bare)
    extra = counted_plugin - counted_bare
    return (
        f"  idle (T1)        plugin's extra {extra / 1e6:.1f} M instructions over bare's "
        f"{counted_bare / 1e6:.0f} M: {extra / counted_bare * cpu * 1000:.1f} ms at the idle "
        f"run's own rate ({cpu * 1000:.0f} ms CPU)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", nargs=2, type=int, default=[1_000, 3_000])
    parser.add_argument("--idle-only", action="store_true", help="count T1 only")
    options = parser.parse_args(argv)
    small, large = options.sizes
    if not 0 < small < large:
        parser.error("--sizes takes two case counts, the smaller first")
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing counted", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        print("instructions (valgrind callgrind):")
        print(measure_idle(Path(folder) / "idle"), flush=True)
        if options.idle_only:
            return 0
        print(f"per case, N = {small:,} and {large:,}:")
        for line in measure((small, large), Path(folder)):
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

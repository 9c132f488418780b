"""Plugin/bare wall-time ratio with every output on, beside the ratio with none.

The projects and the interleaved measurement are ``bench/overhead.py``'s; here
the plugin also writes ``--agentbench-report`` and ``--junitxml`` (its terminal
section is on by default), and bare pytest writes its JUnit XML too.

Usage: ``python bench/percase_outputs.py [--sizes 10000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead import (  # a sibling script, not a package
    Run,
    Timing,
    measure,
    write_bare_project,
    write_plugin_project,
)

TARGETS = {"nothing written": 1.15, "every output on": 1.2}


def ratios(size: int, repeats: int) -> dict[str, tuple[Timing, Timing]]:
    with tempfile.TemporaryDirectory() as plugin_dir, tempfile.TemporaryDirectory() as bare_dir:
        plugin_root, bare_root = Path(plugin_dir), Path(bare_dir)
        write_plugin_project(plugin_root, size)
        write_bare_project(bare_root, size)
        outputs = ("--agentbench-report=run.json", "--junitxml=junit.xml")
        timings = measure(
            [
                Run("plugin, nothing written", plugin_root, ("suites",), size + 1),
                Run("bare, nothing written", bare_root, ("-p", "no:agentbench", "suites"), size),
                Run("plugin, every output", plugin_root, (*outputs, "suites"), size + 1),
                Run(
                    "bare, JUnit",
                    bare_root,
                    ("-p", "no:agentbench", "--junitxml=junit.xml", "suites"),
                    size,
                ),
            ],
            repeats,
        )
    return {
        "nothing written": (timings[0], timings[1]),
        "every output on": (timings[2], timings[3]),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000])
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args(argv)
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    met = True
    for size in options.sizes:
        for name, (plugin, bare) in ratios(size, options.repeats).items():
            ratio = plugin.median / bare.median
            rounds = [p / b for p, b in zip(plugin.wall, bare.wall, strict=True)]
            ok = ratio <= TARGETS[name]
            met = met and ok
            print(
                f"N = {size:>7} {name:<16} plugin {plugin.median:6.2f}s bare {bare.median:6.2f}s "
                f"ratio {ratio:.2f}x (rounds {min(rounds):.2f}x to {max(rounds):.2f}x; "
                f"cpu {plugin.median_cpu / bare.median_cpu:.2f}x) "
                f"target <= {TARGETS[name]}: {'met' if ok else 'MISSED'}"
            )
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())

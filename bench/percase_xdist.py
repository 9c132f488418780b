"""Trivial cases under pytest-xdist: the plugin's ``-n 2``/``-n 0`` beside bare pytest's.

On trivial cases ``-n 2`` buys nothing and costs xdist's own overhead (worker
start-up, every report crossing the execnet channel). The plugin must cost no
more than that: its ``-n 2``/``-n 0`` wall ratio is printed beside the ratio of
bare JSONL items, from the interleaved runs of ``bench/overhead.py``.

Usage: ``python bench/percase_xdist.py [--size 10000] [--repeats 3]``.
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
    measure,
    write_bare_project,
    write_plugin_project,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args(argv)
    size = options.size
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    with tempfile.TemporaryDirectory() as plugin_dir, tempfile.TemporaryDirectory() as bare_dir:
        plugin_root, bare_root = Path(plugin_dir), Path(bare_dir)
        write_plugin_project(plugin_root, size)
        write_bare_project(bare_root, size)
        bare = ("-p", "no:agentbench", "suites")
        plugin_0, plugin_2, bare_0, bare_2 = measure(
            [
                Run("plugin -n 0", plugin_root, ("-n", "0", "suites"), size + 1),
                Run("plugin -n 2", plugin_root, ("-n", "2", "suites"), size + 1),
                Run("bare -n 0", bare_root, ("-n", "0", *bare), size),
                Run("bare -n 2", bare_root, ("-n", "2", *bare), size),
            ],
            options.repeats,
        )
    for timing in (plugin_0, plugin_2, bare_0, bare_2):
        print(f"{timing.label:<12} {timing.cases:>7} {timing.median:8.2f}s")
    plugin_ratio = plugin_2.median / plugin_0.median
    bare_ratio = bare_2.median / bare_0.median
    ok = plugin_ratio <= bare_ratio
    print(
        f"-n 2 / -n 0: plugin {plugin_ratio:.2f}x, bare {bare_ratio:.2f}x "
        f"(plugin no slower than xdist's own overhead: {'met' if ok else 'MISSED'})"
    )
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

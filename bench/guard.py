"""The CI guard on the plugin's cost per case: its bytecodes per case against bare pytest's.

    python bench/guard.py                      # N = 1,000, both configurations, limit 1.5x
    python bench/guard.py --cases 2000 --limit 1.5

``.ci/run`` runs it. The two T2 projects of ``overhead.py`` (the plugin's demo
suite, and bare pytest's items doing the same additions) run once each under
``bytecode_probe.py``, nothing written and with every output (JSON report,
JUnit and HTML page; bare pytest writes its JUnit), and the Python bytecodes each executes
from its first case to its session's end are counted. The guard fails when the
plugin's count per case exceeds ``--limit`` times bare pytest's in either
configuration. A count, not a clock: the same code counts the same on a quiet
machine and a busy one (string hashing is fixed, so set layouts are too), so
the guard cannot fail on load, and it fails on any per-case work added in
Python (a deliberately slowed hook counted 3.5x). Work done in C (pydantic-core,
``json``, ``os.fsync``) counts as the one opcode that calls it: the CPU ratios
of ``overhead.py`` are the targets' measure, this is the regression guard.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bytecodes import count
from overhead import case_configs, case_projects
from verdicts import Verdict

DEFAULT_LIMIT = 1.5


def per_case(counts: dict[str, tuple[int, int]], cases: int) -> float:
    return sum(opcodes for opcodes, _ in counts.values()) / cases


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--limit", type=float, default=DEFAULT_LIMIT)
    args = parser.parse_args(argv)
    verdicts = []
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        plugin_root, bare_root = case_projects(base, args.cases)
        for outputs in (False, True):
            plugin, bare = case_configs(plugin_root, bare_root, args.cases, outputs=outputs)
            plugin_count = per_case(count(plugin, base / "plugin.tsv"), args.cases)
            bare_count = per_case(count(bare, base / "bare.tsv"), args.cases)
            verdicts.append(
                Verdict(
                    f"bytecodes per case, {plugin.label.removeprefix('plugin, ')}",
                    plugin_count / bare_count,
                    "x",
                    args.limit,
                    at_most=True,
                    detail=f"plugin {plugin_count:,.0f}, bare pytest {bare_count:,.0f}",
                )
            )
    for verdict in verdicts:
        print(f"guard: {verdict.line()}")
    return 0 if all(verdict.met for verdict in verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())

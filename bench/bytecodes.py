"""Bytecodes per case by function, the plugin against bare pytest: where the per-case work goes.

    python bench/bytecodes.py                       # N = 2,000, nothing written, top 40
    python bench/bytecodes.py --outputs --top 60    # every output on

The T2 projects of ``overhead.py`` run once each with ``bytecode_probe.py``,
which counts the opcodes every function executes from the first case to
the end of the session (the summary included). Printed: each side's
bytecodes per case, the plugin's extra, and the functions whose count grew
most, with their calls per case (a function both sides run, such as
pluggy's ``_multicall``, shows what the plugin's hooks add to it). Like
``instructions.py`` it does not depend on the machine's load; work done in C
(pydantic-core, ``json``) counts as the one opcode that calls it, so read
the two together.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from overhead import case_configs, case_projects
from processes import Config, check_run, counting_environment, pytest_command

BENCH = Path(__file__).resolve().parent
_PREFIXES = (f"{Path(sys.prefix)}/lib/", f"{Path(sys.base_prefix)}/lib/", f"{BENCH.parent}/")

Counts = dict[str, tuple[int, int]]
"""``file:line:function`` -> (bytecodes, calls)."""


def short(name: str) -> str:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            name = name.removeprefix(prefix)
            return name.split("site-packages/", 1)[-1]
    return name


def count(config: Config, out: Path) -> Counts:
    env = counting_environment()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(BENCH), env.get("PYTHONPATH"))))
    env["BENCH_BYTECODES_OUT"] = str(out)
    done = subprocess.run(
        pytest_command(config, "-p", "bytecode_probe"),
        cwd=config.project,
        env=env,
        capture_output=True,
        text=True,
        check=False,  # checked below, with the run's output
    )
    check_run(config, done.returncode, done.stdout + done.stderr)
    counts: Counts = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        opcodes, calls, name = line.split("\t", 2)
        before = counts.get(short(name), (0, 0))
        counts[short(name)] = (before[0] + int(opcodes), before[1] + int(calls))
    return counts


def report(plugin: Counts, bare: Counts, cases: int, top: int) -> list[str]:
    plugin_total = sum(opcodes for opcodes, _ in plugin.values()) / cases
    bare_total = sum(opcodes for opcodes, _ in bare.values()) / cases
    lines = [
        f"bytecodes per case: plugin {plugin_total:,.0f}, bare {bare_total:,.0f}, "
        f"extra {plugin_total - bare_total:,.0f} ({plugin_total / bare_total:.3f}x)",
        f"{'extra/case':>10} {'calls/case':>10}  function",
    ]

    def grown(name: str) -> int:
        return plugin.get(name, (0, 0))[0] - bare.get(name, (0, 0))[0]

    for name in sorted(set(plugin) | set(bare), key=grown, reverse=True)[:top]:
        calls = plugin.get(name, (0, 0))[1] - bare.get(name, (0, 0))[1]
        lines.append(f"{grown(name) / cases:>10.1f} {calls / cases:>10.2f}  {name}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cases", type=int, default=2_000)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--outputs", action="store_true", help="every output on")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        plugin_root, bare_root = case_projects(base, options.cases)
        configs = case_configs(plugin_root, bare_root, options.cases, outputs=options.outputs)
        plugin = count(configs[0], base / "plugin.tsv")
        bare = count(configs[1], base / "bare.tsv")
        kind = "every output" if options.outputs else "nothing written"
        print(f"N = {options.cases:,}, {kind}")
        for line in report(plugin, bare, options.cases, options.top):
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Peak RSS growth per case, plugin with every output on against bare pytest.

Growth per case is ``(peak RSS at N - peak RSS at a small N) / (N - small N)``,
measured for both sides in fresh processes: the plugin's demo-world project of
``bench/overhead.py`` with ``--agentbench-report``, ``--junitxml`` and the
terminal section on, and the bare JSONL items of the same file writing their
JUnit XML. The peak is the process's own ``ru_maxrss``, read as pytest returns.

Usage: ``python bench/percase_memory.py [--sizes 10000 100000] [--small 1000]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead import (  # a sibling script, not a package
    UNRELATED_PLUGINS,
    _environment,
    write_bare_project,
    write_plugin_project,
)

TARGET_KB = 10.0

PEAK_PROBE = """\
import resource, sys
import pytest
code = pytest.main(sys.argv[1:])
print("peak-rss-kb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def peak_kb(project: Path, args: Sequence[str]) -> int:
    command = [sys.executable, "-c", PEAK_PROBE, "-q", *UNRELATED_PLUGINS, *args]
    done = subprocess.run(
        command, cwd=project, env=_environment(), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{project}: exit {done.returncode}\n{done.stdout[-2000:]}")
    line = next(line for line in done.stderr.splitlines() if line.startswith("peak-rss-kb"))
    return int(line.split()[1])


def peaks(size: int, repeats: int) -> tuple[float, float]:
    """Median peak RSS (KB) of the plugin and of bare pytest at ``size`` cases."""
    with tempfile.TemporaryDirectory() as plugin_dir, tempfile.TemporaryDirectory() as bare_dir:
        plugin_root, bare_root = Path(plugin_dir), Path(bare_dir)
        write_plugin_project(plugin_root, size)
        write_bare_project(bare_root, size)
        plugin_args = ("--agentbench-report=run.json", "--junitxml=junit.xml", "suites")
        bare_args = ("-p", "no:agentbench", "--junitxml=junit.xml", "suites")
        plugin, bare = [], []
        for _ in range(repeats):
            plugin.append(peak_kb(plugin_root, plugin_args))
            bare.append(peak_kb(bare_root, bare_args))
    return statistics.median(plugin), statistics.median(bare)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args(argv)
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    small_plugin, small_bare = peaks(options.small, options.repeats)
    print(
        f"N = {options.small:>7}: peak RSS plugin {small_plugin / 1024:.1f} MB, "
        f"bare {small_bare / 1024:.1f} MB"
    )
    met = True
    for size in options.sizes:
        plugin, bare = peaks(size, options.repeats)
        cases = size - options.small
        plugin_growth = (plugin - small_plugin) / cases
        bare_growth = (bare - small_bare) / cases
        ok = plugin_growth <= TARGET_KB
        met = met and ok
        print(
            f"N = {size:>7}: peak RSS plugin {plugin / 1024:.1f} MB, bare {bare / 1024:.1f} MB; "
            f"growth per case plugin {plugin_growth:.2f} KB, bare {bare_growth:.2f} KB "
            f"(target plugin <= {TARGET_KB:g} KB: {'met' if ok else 'MISSED'})"
        )
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())

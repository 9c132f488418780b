"""Every output of a synthetic suite at scale: the pytest process's peak RSS growth per case.

    python bench/report_scale.py [--sizes 1000 100000] [--keep DIR]

Each size is the overhead benches' trivial demo suite (``projects.write_plugin_project``)
run once, serially, with every output: ``--agentbench-report``, ``--junitxml`` and
``--agentbench-html``. The pytest process's peak RSS comes from ``wait4`` (its own,
not its children's); the growth per case is (peak at the largest size - peak at the
smallest) / (difference in cases), against issue 41's 10 KB a case. CPU seconds and
the files' sizes are printed beside it; nothing is timed against a threshold.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import projects

LIMIT_KB = 10.0
OUTPUTS = (
    "--agentbench-report=run-report.json",
    "--junitxml=junit.xml",
    "--agentbench-html=run-report.html",
)


def measure(root: Path) -> tuple[int, float, int]:
    """(peak RSS in KiB, CPU seconds, exit status) of one run in ``root``."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *OUTPUTS, "suites"]
    process = subprocess.Popen(command, cwd=root, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss, usage.ru_utime + usage.ru_stime, process.returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[1000, 100_000])
    parser.add_argument("--keep", type=Path, help="build the projects here and keep them")
    args = parser.parse_args(argv)
    sizes = sorted(args.sizes)
    with tempfile.TemporaryDirectory() as folder:
        base = args.keep or Path(folder)
        peaks = {}
        for size in sizes:
            root = base / f"plugin-{size}"
            root.mkdir(parents=True, exist_ok=True)
            projects.write_plugin_project(root, size)
            peak, cpu, status = measure(root)
            files = ", ".join(
                f"{name} {(root / name).stat().st_size / 1e6:.1f} MB"
                for name in ("run-report.json", "junit.xml", "run-report.html")
                if (root / name).exists()
            )
            print(
                f"N={size:,}: peak RSS {peak / 1024:.1f} MiB, CPU {cpu:.1f} s, "
                f"exit {status}; {files}"
            )
            if status != 0:
                return 1
            peaks[size] = peak
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        growth = (peaks[large] - peaks[small]) / (large - small)
        verdict = "ok" if growth <= LIMIT_KB else "OVER"
        print(
            f"growth {growth:.2f} KiB per case (N={small:,} to {large:,}); "
            f"limit {LIMIT_KB} KB: {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""T2's projects measured to the session's end, without the interpreter's exit.

    python bench/session_cpu.py                   # N = 10,000, 3 rounds, both T2 configurations
    python bench/session_cpu.py --cases 2000 --rounds 5

``overhead.py`` measures whole processes, as a user's ``pytest`` command runs.
A run with benchmarks keeps its collected tree frozen to the end
(``run/gc_freeze.py``), and a process started from pytest's command line then
exits without the collector's last walk over the tree and without freeing it
object by object, which bare pytest's process does: at 10,000 trivial items
that is about half a second of bare pytest's CPU that the plugin's process
does not spend. This bench shows the comparison without that: each run is
``pytest.main`` called from ``python -c`` (so the plugin gives the tree back,
as in any embedding process) and reports its CPU when ``pytest.main``
returns, before the interpreter's teardown; the ratio is the plugin's cost
against bare pytest's for the session alone. Printed beside it: the whole
process, as ``overhead.py`` measures it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from overhead import case_configs, case_projects
from processes import Config, check_run, environment

REPORT_AT_RETURN = """
import os, sys, pytest
code = pytest.main(sys.argv[1:])
times = os.times()
sys.stderr.write(f"SESSION_CPU {times.user + times.system:.6f}\\n")
sys.exit(code)
"""


def _run(config: Config) -> tuple[float, float]:
    """CPU (seconds) when ``pytest.main`` returned, and of the whole process."""
    quiet = ("-q",) if config.quiet else ()
    command = [
        sys.executable,
        "-c",
        REPORT_AT_RETURN,
        *quiet,
        "-p",
        "no:cacheprovider",
        "-p",
        "no:hypothesispytest",
        *config.args,
    ]
    done = subprocess.Popen(
        command,
        cwd=config.project,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = done.communicate()  # reaps the child: its CPU joins this process's children's
    text = out.decode(errors="replace") + err.decode(errors="replace")
    check_run(config, done.returncode, text)
    session = float(text.rsplit("SESSION_CPU ", 1)[1].split()[0])
    return session, _reaped_cpu()


_REAPED_SO_FAR = [0.0]


def _reaped_cpu() -> float:
    """CPU of the child just reaped: how much this process's reaped children's total grew."""
    times = os.times()
    total = times.children_user + times.children_system
    taken, _REAPED_SO_FAR[0] = total - _REAPED_SO_FAR[0], total
    return taken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        plugin_root, bare_root = case_projects(Path(folder), options.cases)
        for outputs in (False, True):
            plugin, bare = case_configs(plugin_root, bare_root, options.cases, outputs=outputs)
            _run(plugin)  # warm-up: bytecode caches, the entry-point cache
            _run(bare)
            rounds = [(_run(plugin), _run(bare)) for _ in range(options.rounds)]
            session = [p[0] / b[0] for p, b in rounds]
            whole = [p[1] / b[1] for p, b in rounds]
            kind = "every output" if outputs else "nothing written"
            print(
                f"{kind}, N={options.cases:,}: to the session's end "
                f"{statistics.median(session):.2f}x (rounds {min(session):.2f} to "
                f"{max(session):.2f}; plugin {statistics.median(p[0] for p, _ in rounds):.2f} s, "
                f"bare {statistics.median(b[0] for _, b in rounds):.2f} s); whole process "
                f"{statistics.median(whole):.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

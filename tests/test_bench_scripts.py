"""Every script in bench/ imports: a moved or renamed package name breaks the bench here,
not months later when someone measures (bench/operations_episode.py once imported a name
the operations world no longer exported, and bench/overhead.py, which runs it, failed).

The scripts are imported in a child process: some put ``tests/`` on ``sys.path`` and
import the demo world by its top-level name, which would then stay in this process and
be shared with every later pytester run of the demo world in it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"

IMPORT_EACH = """
import importlib, sys, traceback
sys.path.insert(0, sys.argv[1])
failed = 0
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
    except BaseException:
        failed += 1
        print(f"bench/{name}.py:", traceback.format_exc(limit=1).strip().splitlines()[-1])
sys.exit(1 if failed else 0)
"""


def test_every_bench_script_imports() -> None:
    scripts = sorted(path.stem for path in BENCH.glob("*.py"))
    assert "operations_episode" in scripts
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH, str(BENCH), *scripts],
        capture_output=True,
        text=True,
        cwd=BENCH.parent,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr

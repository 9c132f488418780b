"""T1 as a user's environment sees it: the plugin installed from its wheel, against not installed.

    python bench/installed_idle.py              # 30 rounds, a few minutes (builds two venvs)
    python bench/installed_idle.py --rounds 10

``overhead.py``'s T1 compares the plugin with ``-p no:agentbench`` in this
repository's editable install. Two costs escape that comparison, and this bench
shows them: an editable install lists a handful of files, a wheel every module,
bytecode file and data file; and pytest reads that list (``RECORD``) of every
distribution with a ``pytest11`` entry point at start-up, to mark its modules
for assertion rewriting, whether the plugin is then blocked or not.

It builds the wheel of this checkout, makes two virtual environments with the
same dependencies (one with the wheel, one with the wheel uninstalled again;
the package index must be reachable), and runs ``python -m pytest -q`` in an
unrelated project (two trivial tests, no suite) in three configurations, taking
turns within each round: the plugin installed, installed but blocked with
``-p no:agentbench``, and not installed. It prints each one's median CPU and
wall, and the medians of the per-round differences.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import projects
from processes import UNRELATED_PLUGINS, Sample, passed_count, run_command
from verdicts import IDLE_WALL_MS, Spread

REPO = Path(__file__).resolve().parent.parent


def _venv(folder: Path, wheel: Path, *, keep_plugin: bool) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, str(wheel)], check=True)
    if not keep_plugin:
        subprocess.run(
            [str(python), "-m", "pip", "uninstall", "--quiet", "--yes", "pytest-agentbench"],
            check=True,
        )
    return python


def _record_rows(python: Path) -> int:
    code = "import importlib.metadata as m; print(len(m.distribution('pytest-agentbench').files))"
    return int(subprocess.run([str(python), "-c", code], check=True, capture_output=True).stdout)


def _run(python: Path, project: Path, *extra: str) -> Sample:
    command = [str(python), "-m", "pytest", "-q", *UNRELATED_PLUGINS, *extra]
    sample, code, output = run_command(command, project)
    if code != 0 or passed_count(output) != 2:
        raise SystemExit(f"{command}: exit {code}\n{output[-2000:]}")
    return sample


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="installed-idle-") as folder:
        root = Path(folder)
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(root), REPO],
            check=True,
        )
        wheel = next(root.glob("pytest_agentbench-*.whl"))
        installed = _venv(root / "installed", wheel, keep_plugin=True)
        absent = _venv(root / "absent", wheel, keep_plugin=False)
        project = root / "project"
        project.mkdir()
        projects.write_unrelated_project(project)
        configs = {
            "wheel installed": (installed, ()),
            "wheel installed, -p no:agentbench": (installed, ("-p", "no:agentbench")),
            "not installed": (absent, ()),
        }
        taken: dict[str, list[Sample]] = {label: [] for label in configs}
        for python, extra in configs.values():  # warm-up: bytecode and the entry-point cache
            _run(python, project, *extra)
            _run(python, project, *extra)
        for _ in range(options.rounds):
            for label, (python, extra) in configs.items():
                taken[label].append(_run(python, project, *extra))
        rows = _record_rows(installed)
    for label, samples in taken.items():
        cpu = statistics.median(s.cpu for s in samples) * 1000
        wall = statistics.median(s.wall for s in samples) * 1000
        print(f"  {label:<36} cpu {cpu:7.1f} ms  wall {wall:7.1f} ms")
    absent_runs = taken["not installed"]
    for label, what in (
        ("wheel installed", "plugin installed, against not installed"),
        ("wheel installed, -p no:agentbench", "of it, pytest reading the distribution"),
    ):
        pairs = list(zip(taken[label], absent_runs, strict=True))
        cpu = Spread.of([(p.cpu - a.cpu) * 1000 for p, a in pairs])
        wall = Spread.of([(p.wall - a.wall) * 1000 for p, a in pairs])
        print(
            f"{what}: added CPU {cpu.median:.1f} ms ({cpu.describe(1)}), "
            f"added wall {wall.median:.1f} ms ({wall.describe(1)})"
        )
    print(f"the wheel's RECORD lists {rows} files; T1's threshold is {IDLE_WALL_MS:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

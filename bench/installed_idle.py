"""T1 as a user's environment sees it: the plugin installed from its wheel, against not installed.

    python bench/installed_idle.py              # 30 rounds, a few minutes (builds two venvs)
    python bench/installed_idle.py --rounds 10
    python bench/installed_idle.py --count      # and each configuration counted under callgrind

``overhead.py``'s T1 compares the plugin with ``-p no:agentbench`` in this
repository's editable install. What pytest spends before any plugin loads
escapes that comparison, and this bench shows it: pytest reads the installed
file list (``RECORD``) of every distribution with a ``pytest11`` entry point at
start-up, to mark its modules for assertion rewriting, whether the plugin is
then blocked or not. A wheel's list names every module, bytecode file and data
file, hence the entry point's distribution of its own (``entry/``).

It builds the wheels of this checkout (the project's and the entry point's),
makes two virtual environments with the same dependencies (one with the
wheels, one with both uninstalled again; the package index must be reachable),
and runs ``python -m pytest -q`` in an unrelated project (two trivial tests, no
suite) in three configurations, taking turns within each round: the plugin
installed, installed but blocked with ``-p no:agentbench``, and not installed.
It prints each one's median CPU and wall, the medians of the per-round
differences, and how long the file list pytest reads is. With ``--count``
(needs valgrind) it also counts each configuration's instructions once under
callgrind, a figure the machine's load cannot move, and converts the
differences to milliseconds at the rate the run without the plugin executes
instructions.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import projects
from instructions import counted
from processes import UNRELATED_PLUGINS, Sample, passed_count, run_command
from verdicts import IDLE_WALL_MS, Spread

REPO = Path(__file__).resolve().parent.parent


DISTRIBUTIONS = ("pytest-agentbench", "pytest-agentbench-entry")


def _venv(folder: Path, wheels: list[Path], *, keep_plugin: bool) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, *map(str, wheels)], check=True)
    if not keep_plugin:
        subprocess.run(
            [str(python), "-m", "pip", "uninstall", "--quiet", "--yes", *DISTRIBUTIONS],
            check=True,
        )
    return python


def _pytest_reads(python: Path) -> str:
    """The ``RECORD`` length of each installed distribution pytest reads at start-up."""
    code = (
        "import importlib.metadata as m\n"
        "for d in m.distributions():\n"
        "    if any(e.group == 'pytest11' for e in d.entry_points):\n"
        "        print(f\"{d.metadata['Name']} {len(d.files or [])}\")\n"
    )
    listing = subprocess.run([str(python), "-c", code], check=True, capture_output=True)
    return ", ".join(listing.stdout.decode().splitlines())


def _command(python: Path, extra: tuple[str, ...]) -> list[str]:
    return [str(python), "-m", "pytest", "-q", *UNRELATED_PLUGINS, *extra]


def _check(command: list[str], code: int, output: str) -> None:
    if code != 0 or passed_count(output) != 2:
        raise SystemExit(f"{command}: exit {code}\n{output[-2000:]}")


def _run(python: Path, project: Path, *extra: str) -> Sample:
    command = _command(python, extra)
    sample, code, output = run_command(command, project)
    _check(command, code, output)
    return sample


def _count(python: Path, project: Path, extra: tuple[str, ...]) -> int:
    command = _command(python, extra)
    count, code, output = counted(command, project)
    _check(command, code, output)
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--count", action="store_true", help="also count under callgrind")
    options = parser.parse_args(argv)
    if options.count and shutil.which("valgrind") is None:
        parser.error("--count needs valgrind")
    with tempfile.TemporaryDirectory(prefix="installed-idle-") as folder:
        root = Path(folder)
        wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(root)]
        subprocess.run([*wheel, str(REPO), str(REPO / "entry")], check=True)
        wheels = sorted(root.glob("pytest_agentbench*.whl"))
        installed = _venv(root / "installed", wheels, keep_plugin=True)
        absent = _venv(root / "absent", wheels, keep_plugin=False)
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
        reads = _pytest_reads(installed)
        counts = {
            label: _count(python, project, extra)
            for label, (python, extra) in configs.items()
            if options.count
        }
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
    if counts:
        absent_ms = statistics.median(s.cpu for s in absent_runs) * 1000
        absent_count = counts["not installed"]
        for label in ("wheel installed", "wheel installed, -p no:agentbench"):
            extra_count = counts[label] - absent_count
            print(
                f"  counted, {label}: {extra_count / 1e6:+.1f} M instructions over not "
                f"installed's {absent_count / 1e6:.0f} M, "
                f"{extra_count / absent_count * absent_ms:+.1f} ms at its rate"
            )
    print(f"RECORD lines pytest reads (pytest11 distributions): {reads}")
    print(f"T1's threshold is {IDLE_WALL_MS:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Fresh ``python -m pytest`` processes for ``overhead.py``: wall, CPU and peak RSS of each.

Every configuration runs as its own subprocess. ``os.wait4`` gives the
resource usage of that process alone (and of its reaped children: the xdist
workers), so the peak RSS is the process's own, not the largest child this
script ever had. Linux folds the forking process's high-water mark into it
at exec, so the script keeps itself small (it only writes projects). A run
that does not end with the expected exit status and number of passed items
aborts the benchmark: a failing run measures nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Plugins installed for this repository's own tests, not for the plugin; they
# are disabled in every configuration alike.
UNRELATED_PLUGINS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
NO_TESTS_COLLECTED = 5


@dataclass(frozen=True)
class Sample:
    wall: float
    """Seconds from start to exit of the whole process."""
    cpu: float
    """User plus system seconds of the process and its xdist workers."""
    rss_mb: float
    """Peak resident set size of the process (the largest of it and its workers), MiB."""


@dataclass(frozen=True)
class Config:
    """One pytest configuration: where it runs, its arguments, what it must report."""

    label: str
    project: Path
    args: tuple[str, ...]
    passed: int
    exit_code: int = 0
    quiet: bool = True


def environment() -> dict[str, str]:
    env = dict(os.environ)
    # pytest rewrites every pytest11 distribution; without a bytecode cache each
    # process (and each xdist worker) recompiles them, which would dwarf what is measured.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTEST_ADDOPTS", None)
    return env


def counting_environment() -> dict[str, str]:
    """``environment()`` with string hashing fixed, for the benches that count rather than time.

    With a random hash seed, set and dict layouts change from run to run, and so
    does the work done on them: two identical runs counted about 1% apart. With
    the seed fixed they count the same to within 0.01%.
    """
    return {**environment(), "PYTHONHASHSEED": "0"}


def passed_count(output: str) -> int:
    # The last line is pytest's own summary; agentbench's lines precede it.
    counts = re.findall(r"(\d+) passed", output)
    return int(counts[-1]) if counts else 0


def run_command(command: Sequence[str], cwd: Path) -> tuple[Sample, int, str]:
    """Run ``command``; its sample, exit status and output (stdout then stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, env=environment(), stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode(errors="replace") + err.read().decode(errors="replace")
    sample = Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)
    return sample, process.returncode, text


def pytest_command(config: Config, *plugins: str) -> list[str]:
    """The configuration's ``python -m pytest`` command; ``plugins`` adds ``-p`` arguments."""
    quiet = ("-q",) if config.quiet else ()
    return [sys.executable, "-m", "pytest", *quiet, *UNRELATED_PLUGINS, *plugins, *config.args]


def check_run(config: Config, code: int, output: str) -> None:
    """Abort the benchmark unless the run passed exactly the expected items: it measured nothing."""
    passed = passed_count(output)
    if code != config.exit_code or passed != config.passed:
        raise SystemExit(
            f"{config.label}: expected {config.passed} passed and exit {config.exit_code}, "
            f"got {passed} passed, exit {code}\n{output[-3000:]}"
        )


def run_once(config: Config) -> Sample:
    sample, code, output = run_command(pytest_command(config), config.project)
    check_run(config, code, output)
    return sample


def interleave(
    configs: Sequence[Config], rounds: int, *, warm_up: bool = True
) -> list[list[Sample]]:
    """``rounds`` samples of each configuration, in the order given.

    One untimed warm-up run of each first (bytecode caches, the disk cache),
    then the configurations alternate within every round, so a change in the
    machine's load during the measurement affects them alike.
    """
    if warm_up:
        for config in configs:
            run_once(config)
    samples: list[list[Sample]] = [[] for _ in configs]
    for _ in range(rounds):
        for config, taken in zip(configs, samples, strict=True):
            taken.append(run_once(config))
    return samples

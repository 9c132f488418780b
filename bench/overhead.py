"""How much the plugin costs over bare pytest, and what pytest-xdist buys.

Two measurements, each configuration in a fresh ``python -m pytest`` subprocess
(wall time of the whole process, median of ``--repeats`` runs):

* overhead: N trivial cases of the demo world run through the plugin, against
  the same N cases, from a file at the same path, as bare ``pytest.Item`` s
  yielded by a minimal JSONL collector doing the same arithmetic (agentbench
  disabled with ``-p no:agentbench``). Target: plugin/bare <= 1.5 at N = 10,000.
* parallelism: a CPU-bound adapter (``SlowAdder``) under ``-n 2`` against
  ``-n 0``. Target: speed-up >= 1.6 on two cores.

Usage: ``python bench/overhead.py [--sizes 1000 10000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEMO_WORLD = REPO / "tests" / "demo_world.py"
SUITE_ID = "bench-suite"
OVERHEAD_TARGET = 1.5
SPEEDUP_TARGET = 1.6

PLUGIN_CONFTEST = "from demo_world import pytest_agentbench_world_kinds  # noqa: F401\n"

# One control restricted to one case keeps the suite realistic (suite.yaml is
# collected and yields a control item) without doubling the work.
BENCH_CONTROLS = f"""\
schema_version: 1
suite: {SUITE_ID}
controls:
  - id: always-zero
    agent: always_zero
    cases: [b1]
    intervention: answers 0
    guarantee: answers are computed
    must_fail: [answer_correct]
    required_findings: [wrong_answer]
    must_pass: [answer_present]
"""

BARE_CONFTEST = """\
import json
from pathlib import Path

import pytest


class SumItem(pytest.Item):
    def __init__(self, *, row, **kwargs):
        super().__init__(**kwargs)
        self.row = row

    def runtest(self):
        left, right = self.row["question"].split("+")
        assert int(left) + int(right) == self.row["answer"]

    def reportinfo(self):
        return self.path, None, self.name


class JsonlFile(pytest.File):
    def collect(self):
        for line in self.path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            yield SumItem.from_parent(self, name=row["id"], row=row)


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".jsonl":
        return JsonlFile.from_parent(parent, path=file_path)
    return None
"""

SLOW_ADAPTER = """\
from demo_world import SlowAdder


def build():
    return SlowAdder(work_ms={work_ms})
"""


SPIN_TESTS = """\
import time

import pytest


@pytest.mark.parametrize("index", range({cases}))
def test_spin(index):
    deadline = time.perf_counter() + {work_ms} / 1000
    while time.perf_counter() < deadline:
        pass
"""


def questions(count: int) -> dict[str, str]:
    return {f"b{index}": f"{index}+{(index * 7) % 1000}" for index in range(count)}


def _expected_sum(question: str) -> int:
    left, right = question.split("+")
    return int(left) + int(right)


def _demo_world() -> Any:
    """tests/demo_world.py as a module, without putting tests/ on ``sys.path``."""
    spec = importlib.util.spec_from_file_location("agentbench_bench_demo_world", DEMO_WORLD)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_plugin_project(base: Path, count: int, *, adapter_work_ms: float | None = None) -> None:
    """A project whose conftest registers the demo world, with one demo suite of ``count`` cases."""
    shutil.copyfile(DEMO_WORLD, base / "demo_world.py")
    (base / "conftest.py").write_text(PLUGIN_CONFTEST, encoding="utf-8")
    if adapter_work_ms is not None:
        (base / "slow_adapter.py").write_text(
            SLOW_ADAPTER.format(work_ms=adapter_work_ms), encoding="utf-8"
        )
    _demo_world().write_demo_suite(
        base, SUITE_ID, questions=questions(count), controls=BENCH_CONTROLS
    )


def write_bare_project(base: Path, count: int) -> None:
    """The same cases as one JSONL file collected by a minimal conftest.

    The file sits where the plugin's case file does (``suites/<id>/cases.jsonl``),
    so both runs collect the same directory nodes and only the items differ.
    """
    (base / "conftest.py").write_text(BARE_CONFTEST, encoding="utf-8")
    folder = base / "suites" / SUITE_ID
    folder.mkdir(parents=True)
    lines = [
        f'{{"id": "{case_id}", "question": "{question}", "answer": {_expected_sum(question)}}}\n'
        for case_id, question in questions(count).items()
    ]
    (folder / "cases.jsonl").write_text("".join(lines), encoding="utf-8")


@dataclass(frozen=True)
class Run:
    """One pytest configuration: where it runs, its arguments, how many items must pass."""

    label: str
    project: Path
    args: tuple[str, ...]
    expect_passed: int


@dataclass(frozen=True)
class Timing:
    label: str
    cases: int
    wall: tuple[float, ...]
    cpu: tuple[float, ...]
    """User plus system time of the pytest process and its children (xdist workers)."""

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    @property
    def median_cpu(self) -> float:
        return statistics.median(self.cpu)


def _passed_count(output: str) -> int:
    # The last line is pytest's own summary; agentbench's summary line precedes it.
    counts = re.findall(r"(\d+) passed", output)
    return int(counts[-1]) if counts else 0


# Plugins installed for this repository's own tests, not for the plugin; they
# are disabled in every configuration alike.
UNRELATED_PLUGINS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    # pytest rewrites every pytest11 distribution; without a bytecode cache each
    # process (and each xdist worker) recompiles them, which would dwarf what is measured.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(run: Run) -> tuple[float, float]:
    """Wall and CPU seconds of ``python -m pytest -q <args>``; refuses a run that did not pass."""
    command = [sys.executable, "-m", "pytest", "-q", *UNRELATED_PLUGINS, *run.args]
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=run.project, env=_environment(), capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    cpu = _children_cpu() - cpu_before
    passed = _passed_count(done.stdout)
    if done.returncode != 0 or passed != run.expect_passed:
        raise SystemExit(
            f"{run.label}: expected {run.expect_passed} passed and exit 0, got {passed} passed, "
            f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    return wall, cpu


def measure(runs: Sequence[Run], repeats: int) -> list[Timing]:
    """One untimed warm-up of each run, then ``repeats`` rounds.

    Runs alternate within a round, so a change in the machine's load during
    the measurement affects every configuration alike.
    """
    for run in runs:
        run_once(run)
    samples: list[list[tuple[float, float]]] = [[] for _ in runs]
    for _ in range(repeats):
        for run, taken in zip(runs, samples, strict=True):
            taken.append(run_once(run))
    return [
        Timing(
            run.label,
            run.expect_passed,
            tuple(wall for wall, _ in taken),
            tuple(cpu for _, cpu in taken),
        )
        for run, taken in zip(runs, samples, strict=True)
    ]


def measure_overhead(size: int, repeats: int) -> tuple[Timing, Timing]:
    with tempfile.TemporaryDirectory() as plugin_dir, tempfile.TemporaryDirectory() as bare_dir:
        plugin_root, bare_root = Path(plugin_dir), Path(bare_dir)
        write_plugin_project(plugin_root, size)
        write_bare_project(bare_root, size)
        plugin, bare = measure(
            [
                Run("agentbench", plugin_root, ("suites",), size + 1),
                Run("bare", bare_root, ("-p", "no:agentbench", "suites"), size),
            ],
            repeats,
        )
    return plugin, bare


def measure_speedup(cases: int, work_ms: float, repeats: int) -> tuple[Timing, Timing]:
    with tempfile.TemporaryDirectory() as project_dir:
        root = Path(project_dir)
        write_plugin_project(root, cases, adapter_work_ms=work_ms)
        args = ("--agentbench-adapter", "slow_adapter:build", "suites")
        serial, parallel = measure(
            [
                Run("-n 0", root, ("-n", "0", *args), cases + 1),
                Run("-n 2", root, ("-n", "2", *args), cases + 1),
            ],
            repeats,
        )
    return serial, parallel


def measure_plain_speedup(cases: int, work_ms: float, repeats: int) -> tuple[Timing, Timing]:
    """The same busy work as plain test functions: what xdist gives on this machine now."""
    with tempfile.TemporaryDirectory() as project_dir:
        root = Path(project_dir)
        (root / "test_spin.py").write_text(
            SPIN_TESTS.format(cases=cases, work_ms=work_ms), encoding="utf-8"
        )
        args = ("-p", "no:agentbench", "test_spin.py")
        serial, parallel = measure(
            [
                Run("-n 0", root, ("-n", "0", *args), cases),
                Run("-n 2", root, ("-n", "2", *args), cases),
            ],
            repeats,
        )
    return serial, parallel


def _versions() -> str:
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import pytest, xdist; print(pytest.__version__, xdist.__version__)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    pytest_version, xdist_version = probe.stdout.split()
    return (
        f"python {platform.python_version()}, pytest {pytest_version}, "
        f"pytest-xdist {xdist_version}, nproc {os.cpu_count()}, {platform.machine()}"
    )


def _row(label: str, timing: Timing) -> str:
    return f"{label:<28} {timing.cases:>7} {timing.median:>9.2f}s {timing.median_cpu:>9.2f}s"


def _ratio_row(label: str, cases: int, wall: float, cpu: float, note: str = "") -> str:
    return f"{label:<28} {cases:>7} {wall:>9.2f}x {cpu:>9.2f}x  {note}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--xdist-cases", type=int, default=400)
    parser.add_argument("--work-ms", type=float, default=50.0)
    options = parser.parse_args(argv)

    print(_versions())
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(
        f"{'configuration':<28} {'cases':>7} {'wall':>10} {'cpu':>10}  "
        f"(medians of {options.repeats}, runs interleaved)"
    )
    met = True
    for size in options.sizes:
        plugin, bare = measure_overhead(size, options.repeats)
        print(_row("agentbench (demo world)", plugin))
        print(_row("bare JSONL items", bare))
        ratio = plugin.median / bare.median
        verdict = ""
        if size >= 10000:
            ok = ratio <= OVERHEAD_TARGET
            met = met and ok
            verdict = f"target (wall) <= {OVERHEAD_TARGET}: {'met' if ok else 'MISSED'}"
        cpu_ratio = plugin.median_cpu / bare.median_cpu
        print(_ratio_row("  ratio plugin/bare", size, ratio, cpu_ratio, verdict))
        # Each round runs both configurations back to back, so a round's ratio
        # is the spread that a shared machine's load leaves in the figure.
        rounds = [p / b for p, b in zip(plugin.wall, bare.wall, strict=True)]
        print(f"{'    per round':<28} {size:>7} {min(rounds):>9.2f}x to {max(rounds):.2f}x")

    serial, parallel = measure_speedup(options.xdist_cases, options.work_ms, options.repeats)
    label = f"SlowAdder {options.work_ms:g} ms/case"
    print(_row(f"{label}, -n 0", serial))
    print(_row(f"{label}, -n 2", parallel))
    speedup = serial.median / parallel.median
    ok = speedup >= SPEEDUP_TARGET
    met = met and ok
    print(
        f"{'  speed-up -n 2 / -n 0':<28} {options.xdist_cases:>7} {speedup:>9.2f}x "
        f"{'':>10}  target >= {SPEEDUP_TARGET}: {'met' if ok else 'MISSED'}"
    )
    plain_serial, plain_parallel = measure_plain_speedup(
        options.xdist_cases, options.work_ms, options.repeats
    )
    plain_label = f"plain tests {options.work_ms:g} ms"
    print(_row(f"{plain_label}, -n 0", plain_serial))
    print(_row(f"{plain_label}, -n 2", plain_parallel))
    print(
        f"{'  reference speed-up':<28} {options.xdist_cases:>7} "
        f"{plain_serial.median / plain_parallel.median:>9.2f}x {'':>10}  "
        "(no plugin: what xdist reaches on this machine now)"
    )
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())

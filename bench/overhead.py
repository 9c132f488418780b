"""Every target of issue 16, each against a baseline measured in the same run: met or missed.

    python bench/overhead.py                 # the default run (about 10 minutes on a quiet machine)
    python bench/overhead.py --large         # adds N = 100,000 once (T2, T3)
    python bench/overhead.py --quick         # a smoke run: tiny sizes, few rounds
    python bench/overhead.py --targets T1 T3 # a subset

T1 idle: a project with two trivial tests and no suite, ``pytest -q`` with the plugin against
``-p no:agentbench``: added wall and peak RSS, medians of per-round differences.
T2 per case: N trivial demo-world cases against the same N as bare pytest items,
with every output on (``--agentbench-report``, ``--junitxml``, ``--agentbench-html``,
the full terminal section; bare writes its JUnit, the one of them it has) and with
nothing written (``-q``, no files).
T3 memory: peak RSS growth per case, (peak at N - peak at a small N) / (N - small N),
with every output on, the plugin's and bare pytest's.
T4 xdist: a CPU-bound adapter's ``-n 0`` / ``-n 2`` speed-up, with plain test
functions doing the same work as the ceiling; on trivial cases the plugin's
``-n 2`` / ``-n 0`` ratio against bare items'.
T5 worlds: each built-in world's linearity bench (a subprocess ending in a
``LINEARITY`` line); and the README's main command, serial.

Each configuration is a fresh subprocess; configurations compared alternate
within each round after one warm-up. One line per target: measured value,
threshold, ``met`` or ``missed``. Exit status 1 on any miss. See bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import linearity
import projects
from processes import Config, Sample, interleave, run_command
from verdicts import (
    ALL_OUTPUTS_RATIO,
    NOTHING_WRITTEN_RATIO,
    Verdict,
    exit_status,
    judge_cpu_bound,
    judge_growth,
    judge_idle,
    judge_main_command,
    judge_ratio,
    judge_trivial_xdist,
    judge_world,
)

BENCH = Path(__file__).resolve().parent
NO_PLUGIN = ("-p", "no:agentbench")
TARGETS = ("T1", "T2", "T3", "T4", "T5")

WORLD_BENCHES: dict[str, tuple[str, ...]] = {
    "authority": (
        "authority_replay.py",
        *("--sizes", "1000", "10000", "50000", "--repeats", "3", "--trace-rows", "0"),
    ),
    "evidence_binding": ("evidence_binding.py", "--sizes", "100", "1000", "4000", "--repeats", "3"),
    "retrieval": ("retrieval_scale.py", "--scales", "1", "10", "50", "--repeats", "3"),
    "toolgrammar": ("toolgrammar_linearity.py", "--sizes", "100", "400", "1600", "--repeats", "2"),
    "operations": (
        "operations_episode.py",
        *("--repeats", "2", "--hours", "60", "240", "960", "--events", "100", "400", "1600"),
    ),
}

QUICK_WORLD_BENCHES: dict[str, tuple[str, ...]] = {
    "authority": (
        "authority_replay.py",
        *("--sizes", "100", "400", "--repeats", "1", "--trace-rows", "0"),
    ),
    "evidence_binding": ("evidence_binding.py", "--sizes", "10", "40", "--repeats", "1"),
    "retrieval": ("retrieval_scale.py", "--scales", "1", "2", "--repeats", "1"),
    "toolgrammar": ("toolgrammar_linearity.py", "--sizes", "10", "40", "--repeats", "1"),
    "operations": (
        "operations_episode.py",
        *("--repeats", "1", "--hours", "12", "48", "--events", "20", "80"),
    ),
}


@dataclass(frozen=True)
class Plan:
    """Sizes and rounds of one run of the script."""

    idle_rounds: int = 60
    cases: int = 10_000
    small_cases: int = 1_000
    case_rounds: int = 5
    large_cases: int | None = None
    cpu_cases: int = 200
    work_ms: float = 50.0
    xdist_rounds: int = 3
    trivial_xdist_cases: int = 5_000
    worlds: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(WORLD_BENCHES))
    main_rounds: int = 2


QUICK = Plan(
    idle_rounds=3,
    cases=300,
    small_cases=100,
    case_rounds=2,
    cpu_cases=10,
    work_ms=20.0,
    xdist_rounds=1,
    trivial_xdist_cases=200,
    worlds=dict(QUICK_WORLD_BENCHES),
    main_rounds=0,
)


def _row(label: str, samples: Sequence[Sample]) -> str:
    wall = statistics.median(s.wall for s in samples)
    cpu = statistics.median(s.cpu for s in samples)
    rss = statistics.median(s.rss_mb for s in samples)
    return f"  {label:<38} wall {wall:>7.2f} s  cpu {cpu:>7.2f} s  peak RSS {rss:>7.1f} MB"


def _print_rows(configs: Sequence[Config], samples: Sequence[Sequence[Sample]]) -> None:
    for config, taken in zip(configs, samples, strict=True):
        print(_row(config.label, taken))


def measure_idle(rounds: int) -> list[Verdict]:
    """T1: ``pytest -q`` in an unrelated project, with the plugin against without it."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        projects.write_unrelated_project(root)
        configs = [
            Config("idle, plugin installed", root, (), 2),
            Config("idle, -p no:agentbench", root, NO_PLUGIN, 2),
        ]
        plugin, bare = interleave(configs, rounds)
    _print_rows(configs, [plugin, bare])
    return judge_idle(plugin, bare)


def case_configs(
    plugin_root: Path, bare_root: Path, cases: int, *, outputs: bool
) -> tuple[Config, Config]:
    if outputs:
        plugin_args: tuple[str, ...] = (
            "--agentbench-report=run-report.json",
            "--junitxml=junit.xml",
            "--agentbench-html=run-report.html",
            "suites",
        )
        bare_args: tuple[str, ...] = (*NO_PLUGIN, "--junitxml=junit.xml", "suites")
        kind = "every output"
    else:
        plugin_args, bare_args, kind = ("suites",), (*NO_PLUGIN, "suites"), "nothing written"
    return (
        Config(
            f"plugin, {kind}, N={cases:,}", plugin_root, plugin_args, cases + 1, quiet=not outputs
        ),
        Config(f"bare, {kind}, N={cases:,}", bare_root, bare_args, cases, quiet=not outputs),
    )


def case_projects(base: Path, cases: int) -> tuple[Path, Path]:
    plugin_root, bare_root = base / f"plugin-{cases}", base / f"bare-{cases}"
    plugin_root.mkdir()
    bare_root.mkdir()
    projects.write_plugin_project(plugin_root, cases)
    projects.write_bare_project(bare_root, cases)
    return plugin_root, bare_root


def measure_cases(plan: Plan, targets: Sequence[str]) -> list[Verdict]:
    """T2 (ratios at N, and at the large N once) and T3 (peak RSS growth per case)."""
    verdicts: list[Verdict] = []
    n, small = plan.cases, plan.small_cases
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        plugin_root, bare_root = case_projects(base, n)
        small_plugin, small_bare = case_projects(base, small)
        configs = [
            *case_configs(plugin_root, bare_root, n, outputs=True),
            *case_configs(plugin_root, bare_root, n, outputs=False),
            *case_configs(small_plugin, small_bare, small, outputs=True),
        ]
        if "T2" not in targets:
            configs = [configs[0], configs[1], configs[4], configs[5]]
        samples = interleave(configs, plan.case_rounds)
        _print_rows(configs, samples)
        by_label = {c.label: s for c, s in zip(configs, samples, strict=True)}
        plugin_all, bare_all = by_label[configs[0].label], by_label[configs[1].label]
        plugin_small, bare_small = by_label[configs[-2].label], by_label[configs[-1].label]
        if "T2" in targets:
            verdict, _ = judge_ratio(
                f"T2 per case, every output, N={n:,}", plugin_all, bare_all, ALL_OUTPUTS_RATIO
            )
            verdicts.append(verdict)
            verdict, _ = judge_ratio(
                f"T2 per case, nothing written, N={n:,}",
                by_label[configs[2].label],
                by_label[configs[3].label],
                NOTHING_WRITTEN_RATIO,
            )
            verdicts.append(verdict)
        if "T3" in targets:
            verdicts.append(
                judge_growth(
                    f"T3 peak RSS growth, N={n:,}",
                    (plugin_all, plugin_small),
                    (bare_all, bare_small),
                    n - small,
                )
            )
        if plan.large_cases is not None:
            large = plan.large_cases
            large_plugin, large_bare = case_projects(base, large)
            pair = case_configs(large_plugin, large_bare, large, outputs=True)
            plugin_large, bare_large = interleave(pair, 1, warm_up=False)
            _print_rows(pair, [plugin_large, bare_large])
            if "T2" in targets:
                verdict, _ = judge_ratio(
                    f"T2 per case, every output, N={large:,}",
                    plugin_large,
                    bare_large,
                    ALL_OUTPUTS_RATIO,
                )
                verdicts.append(verdict)
            if "T3" in targets:
                verdicts.append(
                    judge_growth(
                        f"T3 peak RSS growth, N={large:,}",
                        (plugin_large, plugin_small),
                        (bare_large, bare_small),
                        large - small,
                    )
                )
    return verdicts


def measure_xdist(plan: Plan) -> list[Verdict]:
    """T4: CPU-bound speed-up against plain tests; trivial cases against bare items."""
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        slow, spin = base / "slow", base / "spin"
        slow.mkdir()
        spin.mkdir()
        projects.write_plugin_project(slow, plan.cpu_cases, adapter_work_ms=plan.work_ms)
        projects.write_spin_project(spin, plan.cpu_cases, plan.work_ms)
        adapter = ("--agentbench-adapter", "slow_adapter:build", "suites")
        label = f"SlowAdder {plan.work_ms:g} ms x {plan.cpu_cases}"
        cpu_configs = [
            Config(f"{label}, -n 0", slow, ("-n", "0", *adapter), plan.cpu_cases + 1),
            Config(f"{label}, -n 2", slow, ("-n", "2", *adapter), plan.cpu_cases + 1),
            Config("plain spin tests, -n 0", spin, (*NO_PLUGIN, "-n", "0"), plan.cpu_cases),
            Config("plain spin tests, -n 2", spin, (*NO_PLUGIN, "-n", "2"), plan.cpu_cases),
        ]
        # Busy work dwarfs a first run's compile cost: no warm-up round.
        cpu = interleave(cpu_configs, plan.xdist_rounds, warm_up=False)
        _print_rows(cpu_configs, cpu)
        n = plan.trivial_xdist_cases
        plugin_root, bare_root = case_projects(base, n)
        trivial_configs = [
            Config(f"plugin, N={n:,}, -n 0", plugin_root, ("-n", "0", "suites"), n + 1),
            Config(f"plugin, N={n:,}, -n 2", plugin_root, ("-n", "2", "suites"), n + 1),
            Config(f"bare, N={n:,}, -n 0", bare_root, (*NO_PLUGIN, "-n", "0", "suites"), n),
            Config(f"bare, N={n:,}, -n 2", bare_root, (*NO_PLUGIN, "-n", "2", "suites"), n),
        ]
        trivial = interleave(trivial_configs, plan.xdist_rounds)
        _print_rows(trivial_configs, trivial)
    return [
        judge_cpu_bound((cpu[0], cpu[1]), (cpu[2], cpu[3])),
        judge_trivial_xdist((trivial[0], trivial[1]), (trivial[2], trivial[3])),
    ]


def run_world_bench(world: str, arguments: Sequence[str]) -> list[linearity.Series]:
    """A world's linearity bench as a subprocess; the series of its ``LINEARITY`` line."""
    script, *rest = arguments
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *rest],
        cwd=BENCH.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return linearity.parse(done.stdout)
    except ValueError:
        raise SystemExit(
            f"{world}: {script} ended without a LINEARITY line (exit {done.returncode})\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        ) from None


def measure_worlds(plan: Plan) -> list[Verdict]:
    """T5: each built-in world's per-unit cost, largest size over smallest; the main command."""
    verdicts = []
    for world, arguments in plan.worlds.items():
        series = run_world_bench(world, arguments)
        for one in series:
            costs = " ".join(f"{cost:.1f}" for cost in one.per_unit_us)
            sizes = " ".join(f"{size:,}" for size in one.sizes)
            print(f"  {world} {one.measure}: us per {one.unit} {costs} at {sizes}")
        verdict = judge_world(world, series)
        print(verdict.line())
        verdicts.append(verdict)
    if plan.main_rounds:
        verdict = measure_main_command(plan.main_rounds)
        print(verdict.line())
        verdicts.append(verdict)
    else:
        print("T5 README main command: not run under --quick")
    return verdicts


def measure_main_command(rounds: int) -> Verdict:
    """``python -m pytest suites --agentbench-report=...`` in the repository, serial.

    The README's first command also installs the package; installation is not
    timed. One untimed warm-up run first, as for every other configuration.
    """
    with tempfile.TemporaryDirectory() as folder:
        command = [
            sys.executable,
            "-m",
            "pytest",
            "suites",
            f"--agentbench-report={Path(folder) / 'run-report.json'}",
        ]
        samples = []
        for index in range(rounds + 1):
            sample, code, output = run_command(command, BENCH.parent)
            if code != 0:
                raise SystemExit(f"the README main command failed (exit {code})\n{output[-3000:]}")
            if index:
                samples.append(sample)
    print(_row("README main command", samples))
    return judge_main_command(samples)


def _versions() -> str:
    import pytest
    import xdist

    return (
        f"python {platform.python_version()}, pytest {pytest.__version__}, "
        f"pytest-xdist {xdist.__version__}, nproc {os.cpu_count()}, {platform.machine()}"
    )


def _load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: tiny sizes")
    parser.add_argument("--large", action="store_true", help="add N = 100,000 once (T2, T3)")
    parser.add_argument("--targets", nargs="+", choices=TARGETS, default=list(TARGETS))
    options = parser.parse_args(argv)
    plan = QUICK if options.quick else Plan()
    if options.large:
        plan = replace(plan, large_cases=100_000)
    targets: list[str] = options.targets

    print(_versions())
    print(f"load average before: {_load()}")
    verdicts: list[Verdict] = []
    sections = (
        ("T1", lambda: measure_idle(plan.idle_rounds)),
        ("T2", lambda: measure_cases(plan, targets)),
        ("T4", lambda: measure_xdist(plan)),
        ("T5", lambda: measure_worlds(plan)),
    )
    for name, measure in sections:
        wanted = name in targets or (name == "T2" and "T3" in targets)
        if not wanted:
            continue
        found = measure()
        if name != "T5":
            for verdict in found:
                print(verdict.line())
        verdicts.extend(found)
    print(f"load average after: {_load()}")
    met = sum(verdict.met for verdict in verdicts)
    print(f"{met} of {len(verdicts)} targets met")
    return exit_status(verdicts)


if __name__ == "__main__":
    raise SystemExit(main())

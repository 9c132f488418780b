"""bench/overhead.py's judging and printing, with made-up measurements (nothing is timed).

The bench itself runs for minutes; these tests keep its logic from rotting:
each target's verdict from known samples, the printed line, the exit status,
the world benches' machine-readable line, and one real (untimed) pytest
subprocess through the sampling code.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def bench() -> Iterator[SimpleNamespace]:
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCH))
        yield SimpleNamespace(
            **{
                name: importlib.import_module(name)
                for name in (
                    "linearity",
                    "processes",
                    "projects",
                    "verdicts",
                    "overhead",
                    "instructions",
                    "bytecodes",
                )
            }
        )


def samples(bench: SimpleNamespace, *walls: float, rss: float = 40.0, cpu: float = 1.0) -> list:
    return [bench.processes.Sample(wall, cpu, rss) for wall in walls]


def test_verdict_met_and_missed_either_way(bench: SimpleNamespace) -> None:
    verdict = bench.verdicts.Verdict
    assert verdict("a", 1.2, "x", 1.2, at_most=True).met
    assert not verdict("a", 1.21, "x", 1.2, at_most=True).met
    assert verdict("b", 1.8, "x", 1.8, at_most=False).met
    assert not verdict("b", 1.79, "x", 1.8, at_most=False).met


def test_verdict_line_names_value_threshold_and_verdict(bench: SimpleNamespace) -> None:
    missed = bench.verdicts.Verdict("T2 per case", 1.31, "x", 1.2, at_most=True, detail="d")
    line = missed.line()
    assert line.startswith("T2 per case")
    assert "1.31 x" in line
    assert "threshold <= 1.20 x" in line
    assert line.endswith("missed  (d)")
    met = bench.verdicts.Verdict("T4", 1.9, "x", 1.8, at_most=False)
    assert "threshold >= 1.80" in met.line()
    assert met.line().endswith(" met")


def test_exit_status_is_one_on_any_miss_or_nothing_judged(bench: SimpleNamespace) -> None:
    verdict, status = bench.verdicts.Verdict, bench.verdicts.exit_status
    good = verdict("a", 1.0, "x", 2.0, at_most=True)
    bad = verdict("b", 3.0, "x", 2.0, at_most=True)
    assert status([good, good]) == 0
    assert status([good, bad]) == 1
    assert status([]) == 1


def test_idle_judges_median_per_round_differences(bench: SimpleNamespace) -> None:
    plugin = [
        bench.processes.Sample(0.310, 0.3, 41.0),
        bench.processes.Sample(0.320, 0.3, 41.0),
        bench.processes.Sample(0.400, 0.3, 41.5),
    ]
    bare = samples(bench, 0.300, 0.300, 0.300, rss=38.0)
    wall, rss = bench.verdicts.judge_idle(plugin, bare)
    assert wall.value == pytest.approx(20.0)
    assert wall.unit == "ms"
    assert not wall.met
    assert "rounds 10.0 to 100.0 ms" in wall.detail
    assert rss.value == pytest.approx(3.0)
    assert not rss.met
    plugin_cheap = samples(bench, 0.305, 0.31, 0.30, rss=39.0)
    wall, rss = bench.verdicts.judge_idle(plugin_cheap, bare)
    assert wall.met
    assert rss.met


def test_ratio_is_the_median_of_rounds_with_their_range(bench: SimpleNamespace) -> None:
    def cpu(*values: float) -> list:
        return [bench.processes.Sample(2.0, value, 40.0) for value in values]

    verdict, spread = bench.verdicts.judge_ratio("T2", cpu(1.1, 1.5, 1.2), cpu(1.0, 1.0, 1.0), 1.2)
    assert verdict.value == pytest.approx(1.2)
    assert verdict.met
    assert (spread.low, spread.high) == pytest.approx((1.1, 1.5))
    assert "rounds 1.10 to 1.50" in verdict.detail


def test_ratios_need_rounds_on_both_sides(bench: SimpleNamespace) -> None:
    with pytest.raises(ValueError, match="same"):
        bench.verdicts.wall_ratios(samples(bench, 1.0), samples(bench, 1.0, 1.0))
    with pytest.raises(ValueError, match="same"):
        bench.verdicts.wall_ratios([], [])


def test_growth_per_case_is_peak_difference_over_case_difference(bench: SimpleNamespace) -> None:
    big = samples(bench, 1.0, 1.0, rss=140.0)
    small = samples(bench, 1.0, 1.0, rss=50.0)
    assert bench.verdicts.growth_kb_per_case(big, small, 9000) == pytest.approx(10.24)
    bare_big, bare_small = samples(bench, 1.0, rss=80.0), samples(bench, 1.0, rss=50.0)
    verdict = bench.verdicts.judge_growth("T3", (big, small), (bare_big, bare_small), 9000)
    assert not verdict.met
    assert verdict.unit == "KB/case"
    assert "bare pytest 3.41 KB/item" in verdict.detail
    with pytest.raises(ValueError, match="more cases"):
        bench.verdicts.growth_kb_per_case(big, small, 0)


def test_cpu_bound_speed_up_against_the_ceiling(bench: SimpleNamespace) -> None:
    plugin = (samples(bench, 20.0, 20.0), samples(bench, 10.5, 11.0))
    reference = (samples(bench, 20.0, 20.0), samples(bench, 10.2, 10.2))
    verdict = bench.verdicts.judge_cpu_bound(plugin, reference)
    assert verdict.value == pytest.approx((20 / 10.5 + 20 / 11.0) / 2)
    assert verdict.met
    assert "ceiling 1.96" in verdict.detail
    slow = (samples(bench, 20.0), samples(bench, 12.0))
    assert not bench.verdicts.judge_cpu_bound(slow, reference).met


def test_trivial_xdist_ratio_no_worse_than_bare_within_its_range(bench: SimpleNamespace) -> None:
    bare = (samples(bench, 3.0, 3.0), samples(bench, 4.5, 4.8))  # rounds 1.5 and 1.6
    slower = (samples(bench, 5.0, 5.0), samples(bench, 8.4, 8.4))  # 1.68 > 1.55 + 0.1
    beyond = bench.verdicts.judge_trivial_xdist(slower, bare)
    assert beyond.limit == pytest.approx(1.55 + 0.1)
    assert not beyond.met
    close = (samples(bench, 5.0, 5.0), samples(bench, 8.0, 8.2))
    assert bench.verdicts.judge_trivial_xdist(close, bare).met


def test_world_verdict_is_its_worst_series(bench: SimpleNamespace) -> None:
    series = bench.linearity.Series
    flat = series("w", "load", "task", (10, 100), (5.0, 6.0))
    steep = series("w", "run", "task", (10, 100), (5.0, 11.0))
    verdict = bench.verdicts.judge_world("w", [flat, steep])
    assert verdict.value == pytest.approx(2.2)
    assert not verdict.met
    assert "worst run: per task at 100 over 10; load 1.20" in verdict.detail
    assert bench.verdicts.judge_world("w", [flat]).met
    with pytest.raises(ValueError, match="no series"):
        bench.verdicts.judge_world("w", [])


def test_linearity_line_round_trips_and_the_last_one_counts(bench: SimpleNamespace) -> None:
    series = bench.linearity.Series
    first = bench.linearity.line([series("a", "m", "u", (1, 2), (1.0, 1.0))])
    second = bench.linearity.line([series("b", "m", "event", (1, 10, 100), (2.0, 2.5, 3.0))])
    parsed = bench.linearity.parse(f"noise\n{first}\nmore noise\n{second}\n")
    assert parsed == [series("b", "m", "event", (1, 10, 100), (2.0, 2.5, 3.0))]
    assert parsed[0].ratio == pytest.approx(1.5)
    with pytest.raises(ValueError, match="no LINEARITY"):
        bench.linearity.parse("a bench that crashed\n")


def test_every_world_bench_named_exists(bench: SimpleNamespace) -> None:
    for plan in (bench.overhead.WORLD_BENCHES, bench.overhead.QUICK_WORLD_BENCHES):
        assert set(plan) == {
            "authority",
            "evidence_binding",
            "retrieval",
            "toolgrammar",
            "operations",
        }
        for arguments in plan.values():
            assert (BENCH / arguments[0]).is_file()


@pytest.mark.parametrize(("all_met", "status"), [(True, 0), (False, 1)])
def test_main_prints_each_target_and_exits_on_misses(
    bench: SimpleNamespace,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    all_met: bool,
    status: int,
) -> None:
    verdict = bench.verdicts.Verdict
    idle = [verdict("T1 idle: added wall", 3.0, "ms", 15.0, at_most=True)]
    cases = [verdict("T3 peak RSS growth", 4.0 if all_met else 12.0, "KB/case", 10.0, True)]
    called: list[str] = []

    def fake_idle(rounds: int) -> list:
        called.append("T1")
        return idle

    def fake_cases(plan: object, targets: list[str]) -> list:
        called.append(f"cases {sorted(targets)}")
        return cases

    monkeypatch.setattr(bench.overhead, "measure_idle", fake_idle)
    monkeypatch.setattr(bench.overhead, "measure_cases", fake_cases)
    assert bench.overhead.main(["--quick", "--targets", "T1", "T3"]) == status
    assert called == ["T1", "cases ['T1', 'T3']"]
    out = capsys.readouterr().out
    assert "load average before:" in out
    assert "load average after:" in out
    assert "T1 idle: added wall" in out
    (growth,) = [line for line in out.splitlines() if line.startswith("T3 peak RSS growth")]
    assert growth.endswith(" met" if all_met else " missed")
    assert f"{1 + all_met} of 2 targets met" in out


def test_a_pytest_process_is_sampled_and_checked(bench: SimpleNamespace, tmp_path: Path) -> None:
    bench.projects.write_unrelated_project(tmp_path)
    config = bench.processes.Config("unrelated", tmp_path, ("-p", "no:agentbench"), 2)
    sample = bench.processes.run_once(config)
    assert sample.wall > 0
    assert sample.cpu > 0
    assert sample.rss_mb > 5
    wrong = bench.processes.Config("unrelated", tmp_path, ("-p", "no:agentbench"), 1)
    with pytest.raises(SystemExit, match="expected 1 passed and exit 0, got 2 passed, exit 0"):
        bench.processes.run_once(wrong)


def test_instruction_lines_split_per_case_from_fixed_cost(bench: SimpleNamespace) -> None:
    line = bench.instructions.Line.through((1_000, 3_000_000_000), (3_000, 7_000_000_000))
    assert line.per_case == 2_000_000
    assert line.fixed == 1_000_000_000
    assert line.at(10_000) == 21_000_000_000
    with pytest.raises(ValueError, match="sizes must grow"):
        bench.instructions.Line.through((3_000, 1), (1_000, 2))


def test_instruction_line_names_both_sides_and_the_projection(bench: SimpleNamespace) -> None:
    plugin = bench.instructions.Line(per_case=2_500_000, fixed=3e9)
    bare = bench.instructions.Line(per_case=2_000_000, fixed=2e9)
    text = bench.instructions.describe("nothing written", plugin, bare)
    assert "plugin 2.500 M, bare 2.000 M, ratio 1.250x" in text
    assert "plugin's fixed extra 1.00 G" in text
    assert "total ratio at N = 10,000: 1.273x" in text  # 28e9 / 22e9


FAKE_VALGRIND = """#!/bin/sh
while [ "${1#--}" != "$1" ]; do shift; done
"$@"
status=$?
# The hash seed joins the count, so the test sees whether hashing was fixed.
echo "==1== Collected : 12345${PYTHONHASHSEED:-999}" >&2
exit $status
"""


def test_instructions_are_read_from_callgrind_and_the_run_is_checked(
    bench: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "valgrind").write_text(FAKE_VALGRIND, encoding="utf-8")
    (tools / "valgrind").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    project = tmp_path / "project"
    project.mkdir()
    bench.projects.write_unrelated_project(project)
    config = bench.processes.Config("unrelated", project, ("-p", "no:agentbench"), 2)
    assert bench.instructions.instructions(config) == 123450
    wrong = bench.processes.Config("unrelated", project, ("-p", "no:agentbench"), 1)
    with pytest.raises(SystemExit, match="expected 1 passed and exit 0, got 2 passed, exit 0"):
        bench.instructions.instructions(wrong)


def test_instructions_without_valgrind_exit_2(
    bench: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bench.instructions.shutil, "which", lambda name: None)
    assert bench.instructions.main([]) == 2
    assert "valgrind is not installed" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.instructions.main(["--sizes", "3000", "1000"])


def test_bytecode_report_ranks_functions_by_what_they_add_per_case(
    bench: SimpleNamespace,
) -> None:
    plugin = {"a.py:1:hot": (3_000, 20), "b.py:1:shared": (5_000, 10), "c.py:1:gone": (0, 0)}
    bare = {"b.py:1:shared": (4_000, 10), "c.py:1:gone": (1_000, 10)}
    lines = bench.bytecodes.report(plugin, bare, 10, top=2)
    assert lines[0] == "bytecodes per case: plugin 800, bare 500, extra 300 (1.600x)"
    assert lines[2:] == [
        "     300.0       2.00  a.py:1:hot",
        "     100.0       0.00  b.py:1:shared",
    ]


def test_bytecode_names_are_shortened_to_their_package(bench: SimpleNamespace) -> None:
    site = f"{sys.prefix}/lib/python3.11/site-packages/_pytest/nodes.py:1:f"
    assert bench.bytecodes.short(site) == "_pytest/nodes.py:1:f"
    own = f"{BENCH.parent}/pytest_agentbench/sdk/runner.py:2:g"
    assert bench.bytecodes.short(own) == "pytest_agentbench/sdk/runner.py:2:g"
    assert bench.bytecodes.short("/elsewhere/x.py:3:h") == "/elsewhere/x.py:3:h"

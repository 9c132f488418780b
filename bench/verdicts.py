"""Judging ``overhead.py``'s measurements against issue 16's targets: pure functions.

Everything here takes samples already measured and returns verdicts, so the
judging and the printed lines are unit-tested with made-up samples
(``tests/test_bench_overhead.py``) while the measuring stays in the bench.

Ratios are taken per round (both sides of a round ran back to back) and
reported as the median with the range of the rounds: the range is the spread
that the shared machine's load leaves in the figure, and is what "within the
spread" means wherever a target compares two ratios.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from linearity import LIMIT as WORLD_LIMIT
from linearity import Series
from processes import Sample

IDLE_WALL_MS = 10.0
IDLE_RSS_MB = 2.0
ALL_OUTPUTS_RATIO = 1.25
NOTHING_WRITTEN_RATIO = 1.15
GROWTH_KB_PER_CASE = 10.0
CPU_BOUND_SPEEDUP = 1.8
MAIN_COMMAND_SECONDS = 30.0


@dataclass(frozen=True)
class Spread:
    """The median of per-round values and their range."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            raise ValueError("no rounds to take a median of")
        return cls(statistics.median(values), min(values), max(values))

    @property
    def width(self) -> float:
        return self.high - self.low

    def describe(self, digits: int = 2) -> str:
        return f"rounds {self.low:.{digits}f} to {self.high:.{digits}f}"


@dataclass(frozen=True)
class Verdict:
    """One target: its measured value against its threshold."""

    target: str
    value: float
    unit: str
    limit: float
    at_most: bool
    """True: met when value <= limit; False: met when value >= limit."""
    detail: str = ""

    @property
    def met(self) -> bool:
        return self.value <= self.limit if self.at_most else self.value >= self.limit

    def line(self) -> str:
        sign = "<=" if self.at_most else ">="
        text = (
            f"{self.target:<40} {self.value:>9.2f} {self.unit:<7} "
            f"threshold {sign} {self.limit:.2f} {self.unit:<7} {'met' if self.met else 'missed'}"
        )
        return f"{text}  ({self.detail})" if self.detail else text


def exit_status(verdicts: Sequence[Verdict]) -> int:
    """0 when every target is met, 1 on any miss (and when nothing was judged)."""
    return 0 if verdicts and all(verdict.met for verdict in verdicts) else 1


def _rounds(left: Sequence[Sample], right: Sequence[Sample]) -> list[tuple[Sample, Sample]]:
    if len(left) != len(right) or not left:
        raise ValueError("both sides need the same, non-zero number of rounds")
    return list(zip(left, right, strict=True))


def wall_ratios(plugin: Sequence[Sample], bare: Sequence[Sample]) -> Spread:
    return Spread.of([p.wall / b.wall for p, b in _rounds(plugin, bare)])


def judge_idle(plugin: Sequence[Sample], bare: Sequence[Sample]) -> list[Verdict]:
    """T1: what the installed plugin adds to a pytest run of a project with no suites."""
    pairs = _rounds(plugin, bare)
    wall = Spread.of([(p.wall - b.wall) * 1000 for p, b in pairs])
    rss = Spread.of([p.rss_mb - b.rss_mb for p, b in pairs])
    cpu = statistics.median((p.cpu - b.cpu) * 1000 for p, b in pairs)
    bare_wall = statistics.median(b.wall for b in bare) * 1000
    bare_rss = statistics.median(b.rss_mb for b in bare)
    return [
        Verdict(
            "T1 idle: added wall",
            wall.median,
            "ms",
            IDLE_WALL_MS,
            at_most=True,
            detail=(
                f"{wall.describe(1)} ms; bare {bare_wall:.0f} ms; added CPU {cpu:.0f} ms; "
                f"{len(pairs)} rounds"
            ),
        ),
        Verdict(
            "T1 idle: added peak RSS",
            rss.median,
            "MB",
            IDLE_RSS_MB,
            at_most=True,
            detail=f"{rss.describe(2)} MB; bare {bare_rss:.1f} MB",
        ),
    ]


def cpu_ratios(plugin: Sequence[Sample], bare: Sequence[Sample]) -> Spread:
    """Per round, the plugin's CPU (process and workers) over bare pytest's."""
    return Spread.of([p.cpu / b.cpu for p, b in _rounds(plugin, bare)])


def judge_ratio(
    target: str, plugin: Sequence[Sample], bare: Sequence[Sample], limit: float
) -> tuple[Verdict, Spread]:
    """T2: plugin / bare CPU, median of the per-round ratios (wall ratio beside).

    CPU, as issue 41 states the targets: a loaded machine stretches both sides'
    wall time by whatever else it runs, far less the CPU each spends on the cases.
    """
    ratios = cpu_ratios(plugin, bare)
    plugin_s = statistics.median(p.cpu for p in plugin)
    bare_s = statistics.median(b.cpu for b in bare)
    wall = wall_ratios(plugin, bare).median
    detail = (
        f"{ratios.describe()}; CPU plugin {plugin_s:.2f} s, bare {bare_s:.2f} s; "
        f"wall ratio {wall:.2f}"
    )
    return Verdict(target, ratios.median, "x", limit, at_most=True, detail=detail), ratios


def growth_kb_per_case(big: Sequence[Sample], small: Sequence[Sample], cases: int) -> float:
    """(median peak RSS at N - median peak RSS at the small N) / (N - small N), in KiB."""
    if cases <= 0:
        raise ValueError("the large run must have more cases than the small one")
    big_mb = statistics.median(s.rss_mb for s in big)
    small_mb = statistics.median(s.rss_mb for s in small)
    return (big_mb - small_mb) * 1024 / cases


def judge_growth(
    target: str,
    plugin: tuple[Sequence[Sample], Sequence[Sample]],
    bare: tuple[Sequence[Sample], Sequence[Sample]],
    cases: int,
) -> Verdict:
    """T3: the plugin's peak RSS growth per case; bare pytest's per-item growth beside it.

    ``plugin`` and ``bare`` are (samples at N, samples at the small N) and
    ``cases`` is N minus the small N.
    """
    mine = growth_kb_per_case(*plugin, cases)
    theirs = growth_kb_per_case(*bare, cases)
    return Verdict(
        target,
        mine,
        "KB/case",
        GROWTH_KB_PER_CASE,
        at_most=True,
        detail=f"bare pytest {theirs:.2f} KB/item; plugin over bare {mine - theirs:+.2f}",
    )


def speedups(serial: Sequence[Sample], parallel: Sequence[Sample]) -> Spread:
    return Spread.of([s.wall / p.wall for s, p in _rounds(serial, parallel)])


def judge_cpu_bound(
    plugin: tuple[Sequence[Sample], Sequence[Sample]],
    reference: tuple[Sequence[Sample], Sequence[Sample]],
) -> Verdict:
    """T4: ``-n 0`` / ``-n 2`` wall of a CPU-bound adapter; plain tests' speed-up is the ceiling.

    Each pair is (``-n 0`` samples, ``-n 2`` samples).
    """
    mine, ceiling = speedups(*plugin), speedups(*reference)
    return Verdict(
        "T4 xdist: CPU-bound speed-up -n 2",
        mine.median,
        "x",
        CPU_BOUND_SPEEDUP,
        at_most=False,
        detail=f"{mine.describe()}; no-plugin ceiling {ceiling.median:.2f} ({ceiling.describe()})",
    )


def judge_trivial_xdist(
    plugin: tuple[Sequence[Sample], Sequence[Sample]],
    bare: tuple[Sequence[Sample], Sequence[Sample]],
) -> Verdict:
    """T4: ``-n 2`` / ``-n 0`` wall on trivial cases, no worse than bare items' within their range.

    Each pair is (``-n 0`` samples, ``-n 2`` samples).
    """
    mine = Spread.of([p.wall / s.wall for s, p in _rounds(*plugin)])
    theirs = Spread.of([p.wall / s.wall for s, p in _rounds(*bare)])
    return Verdict(
        "T4 xdist: trivial -n 2 / -n 0",
        mine.median,
        "x",
        theirs.median + theirs.width,
        at_most=True,
        detail=f"{mine.describe()}; bare {theirs.median:.2f} ({theirs.describe()}) + its range",
    )


def judge_world(world: str, series: Sequence[Series]) -> Verdict:
    """T5: the world's worst per-unit ratio, largest size over smallest, of all its series."""
    if not series:
        raise ValueError(f"{world}: no series measured")
    worst = max(series, key=lambda one: one.ratio)
    others = ", ".join(f"{one.measure} {one.ratio:.2f}" for one in series if one is not worst)
    detail = (
        f"worst {worst.measure}: per {worst.unit} at {worst.sizes[-1]:,} over {worst.sizes[0]:,}"
        + (f"; {others}" if others else "")
    )
    return Verdict(f"T5 world {world}", worst.ratio, "x", WORLD_LIMIT, at_most=True, detail=detail)


def judge_main_command(samples: Sequence[Sample]) -> Verdict:
    """T5: the README's main command, serial, wall seconds of the pytest process."""
    wall = Spread.of([s.wall for s in samples])
    return Verdict(
        "T5 README main command (pytest part)",
        wall.median,
        "s",
        MAIN_COMMAND_SECONDS,
        at_most=True,
        detail=f"{wall.describe(1)} s; CPU {statistics.median(s.cpu for s in samples):.1f} s",
    )

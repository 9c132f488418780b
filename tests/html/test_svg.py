"""The SVG builders: scales, intervals, gates, and nulls drawn as "not computable"."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.report.html.svg import (
    LABEL_WIDTH,
    PLOT_WIDTH,
    BarSegment,
    DotRow,
    ForestRow,
    GateMark,
    LinearScale,
    count_bar,
    domain,
    dot_whisker,
    forest,
    number,
)

NS = {"svg": "http://www.w3.org/2000/svg"}


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def marks(svg: str, cls: str) -> list[ET.Element]:
    return [el for el in parse(svg).iter() if cls in (el.get("class") or "").split()]


def test_linear_scale_maps_the_domain_onto_the_range() -> None:
    scale = LinearScale(0.0, 1.0, 100.0, 400.0)
    assert scale(0.0) == 100.0
    assert scale(1.0) == 400.0
    assert scale(0.5) == 250.0
    assert scale.ticks() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert LinearScale(-0.3, 0.2, 0, 1).ticks() == [-0.2, 0.0, 0.2]


@pytest.mark.parametrize(("lo", "hi"), [(1.0, 1.0), (2.0, 1.0), (0.0, float("inf"))])
def test_an_empty_or_infinite_domain_is_refused(lo: float, hi: float) -> None:
    with pytest.raises(ValueError, match="empty or not finite"):
        LinearScale(lo, hi, 0, 1)


@settings(max_examples=60, deadline=None)
@given(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.floats(1e-3, 1e6, allow_nan=False),
    st.floats(0, 1, allow_nan=False),
)
def test_scale_is_monotonic_and_ticks_stay_inside(lo: float, width: float, t: float) -> None:
    scale = LinearScale(lo, lo + width, 0.0, 300.0)
    value = lo + t * width
    assert -1e-6 <= scale(value) <= 300.0 + 1e-6
    ticks = scale.ticks()
    assert ticks == sorted(ticks)
    assert all(lo - width * 1e-6 <= tick <= lo + width * (1 + 1e-6) for tick in ticks)


def test_rates_use_the_unit_domain_and_other_values_are_padded() -> None:
    assert domain([0.2, 0.9], unit=True) == (0.0, 1.0)
    assert domain([], unit=True) == (0.0, 1.0)
    lo, hi = domain([-0.5, 0.5], unit=False)
    assert lo < -0.5
    assert hi > 0.5
    assert domain([3.0], unit=False) == pytest.approx((2.7, 3.3))


def test_numbers_are_short_and_stable() -> None:
    assert number(12.0) == "12"
    assert number(12.5) == "12.5"
    assert number(-0.001) == "0"


def test_dot_whisker_draws_value_interval_and_gate_where_the_scale_says() -> None:
    svg = dot_whisker(
        [DotRow("accuracy", 0.5, (0.25, 0.75), (GateMark(">=", 0.9, False),))],
        title="t",
        ident="x",
    )
    (dot,) = marks(svg, "mark-value")
    assert float(dot.get("cx", "")) == LABEL_WIDTH + PLOT_WIDTH * 0.5
    (interval,) = marks(svg, "mark-interval")
    xs = {float(line.get("x1", "")) for line in interval.findall("svg:line", NS)}
    assert xs == {LABEL_WIDTH + PLOT_WIDTH * 0.25, LABEL_WIDTH + PLOT_WIDTH * 0.75}
    (gate,) = marks(svg, "mark-gate")
    assert "gate-fail" in (gate.get("class") or "")
    assert re.match(rf"M{number(LABEL_WIDTH + PLOT_WIDTH * 0.9)} ", gate.get("d", ""))
    assert "FAILED" in "".join(gate.itertext())


def test_a_null_metric_is_not_computable_never_a_dot_at_zero() -> None:
    svg = dot_whisker(
        [DotRow("computable", 0.0, (0.0, 0.2)), DotRow("null_metric", None)],
        title="t",
        ident="x",
    )
    assert len(marks(svg, "mark-value")) == 1
    assert len(marks(svg, "mark-interval")) == 1
    (null,) = marks(svg, "mark-null")
    assert "not computable" in "".join(null.itertext())
    assert "null_metric" in "".join(null.itertext())


def test_values_outside_zero_one_widen_the_axis() -> None:
    svg = dot_whisker([DotRow("latency", 3.0, (2.0, 4.0))], title="t", ident="x")
    (dot,) = marks(svg, "mark-value")
    assert LABEL_WIDTH < float(dot.get("cx", "")) < LABEL_WIDTH + PLOT_WIDTH


def test_forest_marks_significance_by_shape_and_draws_zero() -> None:
    svg = forest(
        [
            ForestRow("a", -0.2, (-0.3, -0.1), "worse (Holm p=0.01)", True),
            ForestRow("b", 0.05, (-0.05, 0.15), "no change", False),
            ForestRow("c", None),
        ],
        title="t",
        ident="f",
    )
    values = marks(svg, "mark-value")
    assert [("significant" in (v.get("class") or "").split()) for v in values] == [True, False]
    assert len(marks(svg, "mark-interval")) == 2
    assert len(marks(svg, "mark-null")) == 1
    assert len(marks(svg, "zero")) == 1


def test_count_bar_labels_segments_and_skips_empty_ones() -> None:
    svg = count_bar(
        [
            BarSegment("passed", 3, "seg-passed"),
            BarSegment("failed", 0, "seg-failed"),
            BarSegment("error", 1, "seg-error"),
        ],
        title="t",
        ident="b",
    )
    segments = marks(svg, "mark-segment")
    assert [s.findtext("svg:title", namespaces=NS) for s in segments] == ["passed 3", "error 1"]
    widths = [float(s.find("svg:rect", NS).get("width", "")) for s in segments]  # type: ignore[union-attr]
    assert widths[0] == pytest.approx(3 * widths[1], abs=0.02)
    assert "no cases" in count_bar([], title="t", ident="e")


def test_labels_are_escaped() -> None:
    svg = dot_whisker([DotRow("<b>&", 0.5)], title="a<b", ident="x")
    parse(svg)
    assert "<b>&" not in svg

"""Inline SVG plots built as text: scales, dot-and-whisker and forest plots, count bars.

Every mark carries a ``class`` naming what it is (``mark-value``, ``mark-interval``,
``mark-gate``, ``mark-null``, ...) and a ``<title>`` with its numbers, so a test
or a screen reader can tell the marks apart without looking at colours. A value
that cannot be computed is drawn as a "not computable" label, never as a dot at
zero. Coordinates are rounded to two decimals so the output is byte-stable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

NOT_COMPUTABLE = "not computable"


def number(value: float) -> str:
    """A coordinate as short, stable text."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in {"-0", ""} else text


def shown(value: float | None, digits: int = 4) -> str:
    """A metric value for people: ``not computable`` for ``None``."""
    return NOT_COMPUTABLE if value is None else f"{value:.{digits}f}"


@dataclass(frozen=True)
class LinearScale:
    """Maps the domain ``[lo, hi]`` onto the pixel range ``[start, end]``."""

    lo: float
    hi: float
    start: float
    end: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lo) and math.isfinite(self.hi)) or self.hi <= self.lo:
            raise ValueError(f"scale domain [{self.lo}, {self.hi}] is empty or not finite")

    def __call__(self, value: float) -> float:
        return self.start + (value - self.lo) / (self.hi - self.lo) * (self.end - self.start)

    def ticks(self, count: int = 5) -> list[float]:
        """Evenly spaced round tick values inside the domain, ends included when round."""
        raw = (self.hi - self.lo) / max(count - 1, 1)
        magnitude = 10 ** math.floor(math.log10(raw))
        step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
        first = math.ceil(self.lo / step - 1e-9)
        last = math.floor(self.hi / step + 1e-9)
        return [round(i * step, 10) for i in range(first, last + 1)]


def domain(values: Sequence[float], *, unit: bool) -> tuple[float, float]:
    """The plotted domain: ``[0, 1]`` for rates when everything fits, else padded bounds."""
    finite = [v for v in values if math.isfinite(v)]
    if unit and all(0.0 <= v <= 1.0 for v in finite):
        return 0.0, 1.0
    if not finite:
        return 0.0, 1.0
    lo, hi = min(finite), max(finite)
    if unit:
        lo, hi = min(lo, 0.0), max(hi, 1.0)
    if hi == lo:
        pad = abs(lo) * 0.1 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


@dataclass(frozen=True)
class GateMark:
    op: str
    threshold: float
    passed: bool


@dataclass(frozen=True)
class DotRow:
    """One metric: its value (``None``: not computable), interval and gates."""

    label: str
    value: float | None
    interval: tuple[float, float] | None = None
    gates: tuple[GateMark, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class ForestRow:
    """One metric difference (after minus before) with its interval and verdict."""

    label: str
    difference: float | None
    interval: tuple[float, float] | None = None
    verdict: str = ""
    significant: bool = False


@dataclass
class _Canvas:
    width: int
    height: int
    title: str
    parts: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.parts.append(text)

    def render(self, css_class: str, ident: str) -> str:
        return (
            f'<svg class="plot {css_class}" xmlns="http://www.w3.org/2000/svg" '
            f'viewBox="0 0 {self.width} {self.height}" width="{self.width}" '
            f'height="{self.height}" role="img" aria-labelledby="{ident}-t" '
            f'data-marks-for="{ident}"><title id="{ident}-t">{escape(self.title)}</title>'
            + "".join(self.parts)
            + "</svg>"
        )


LABEL_WIDTH = 250
PLOT_WIDTH = 330
ROW_HEIGHT = 22
TOP = 28


def _axis(canvas: _Canvas, scale: LinearScale, bottom: float, ticks: int = 5) -> None:
    for tick in scale.ticks(ticks):
        x = number(scale(tick))
        canvas.add(
            f'<line class="grid" x1="{x}" x2="{x}" y1="{TOP - 6}" y2="{number(bottom)}"/>'
            f'<text class="tick" x="{x}" y="{TOP - 10}" text-anchor="middle">'
            f"{escape(f'{tick:g}')}</text>"
        )


def _label(canvas: _Canvas, y: float, text: str) -> None:
    canvas.add(
        f'<text class="row-label" x="{LABEL_WIDTH - 8}" y="{number(y + 4)}" '
        f'text-anchor="end">{escape(text)}</text>'
    )


def _whisker(canvas: _Canvas, scale: LinearScale, y: float, lo: float, hi: float) -> None:
    x1, x2 = number(scale(lo)), number(scale(hi))
    yy = number(y)
    canvas.add(
        f'<g class="mark-interval"><title>interval [{lo:.4f}, {hi:.4f}]</title>'
        f'<line x1="{x1}" x2="{x2}" y1="{yy}" y2="{yy}"/>'
        f'<line x1="{x1}" x2="{x1}" y1="{number(y - 5)}" y2="{number(y + 5)}"/>'
        f'<line x1="{x2}" x2="{x2}" y1="{number(y - 5)}" y2="{number(y + 5)}"/></g>'
    )


def _not_computable(canvas: _Canvas, scale: LinearScale, y: float, label: str) -> None:
    canvas.add(
        f'<text class="mark-null" x="{number(scale.start + 6)}" '
        f'y="{number(y + 4)}" text-anchor="start"><title>{escape(label)}: '
        f"{NOT_COMPUTABLE}</title>{NOT_COMPUTABLE}</text>"
    )


def dot_whisker(rows: Sequence[DotRow], *, title: str, ident: str) -> str:
    """Metric values as dots with interval whiskers and gate thresholds as ticks."""
    points: list[float] = []
    for row in rows:
        if row.value is not None:
            points.append(row.value)
        if row.interval is not None:
            points.extend(row.interval)
        points.extend(gate.threshold for gate in row.gates)
    lo, hi = domain(points, unit=True)
    scale = LinearScale(lo, hi, LABEL_WIDTH, LABEL_WIDTH + PLOT_WIDTH)
    height = TOP + ROW_HEIGHT * len(rows) + 8
    canvas = _Canvas(LABEL_WIDTH + PLOT_WIDTH + 20, height, title)
    _axis(canvas, scale, height - 6)
    for index, row in enumerate(rows):
        y = TOP + ROW_HEIGHT * index + ROW_HEIGHT / 2
        _label(canvas, y, row.label)
        if row.value is None:
            _not_computable(canvas, scale, y, row.label)
        else:
            if row.interval is not None:
                _whisker(canvas, scale, y, *row.interval)
            canvas.add(
                f'<circle class="mark-value" cx="{number(scale(row.value))}" cy="{number(y)}" '
                f'r="4.5"><title>{escape(row.label)} = {row.value:.4f}</title></circle>'
            )
        for gate in row.gates:
            x = number(scale(gate.threshold))
            verdict = "passed" if gate.passed else "FAILED"
            state = "gate-pass" if gate.passed else "gate-fail"
            canvas.add(
                f'<path class="mark-gate {state}" d="M{x} {number(y - 9)}V{number(y + 9)}">'
                f"<title>gate {escape(gate.op)} {gate.threshold:g}: {verdict}</title></path>"
            )
    return canvas.render("dot-whisker", ident)


def forest(rows: Sequence[ForestRow], *, title: str, ident: str) -> str:
    """Differences with intervals around a zero line; significant verdicts are marked."""
    points = [0.0]
    for row in rows:
        if row.difference is not None:
            points.append(row.difference)
        if row.interval is not None:
            points.extend(row.interval)
    lo, hi = domain(points, unit=False)
    scale = LinearScale(lo, hi, LABEL_WIDTH, LABEL_WIDTH + PLOT_WIDTH)
    height = TOP + ROW_HEIGHT * len(rows) + 8
    canvas = _Canvas(LABEL_WIDTH + PLOT_WIDTH + 20, height, title)
    _axis(canvas, scale, height - 6, ticks=7)
    zero = number(scale(0.0))
    canvas.add(f'<line class="zero" x1="{zero}" x2="{zero}" y1="{TOP - 6}" y2="{height - 6}"/>')
    for index, row in enumerate(rows):
        y = TOP + ROW_HEIGHT * index + ROW_HEIGHT / 2
        _label(canvas, y, row.label)
        if row.difference is None:
            _not_computable(canvas, scale, y, row.label)
            continue
        if row.interval is not None:
            _whisker(canvas, scale, y, *row.interval)
        x, yy = scale(row.difference), y
        # A significant difference is a filled diamond, otherwise a hollow one: shape
        # and fill carry the verdict, not colour alone.
        state = "significant" if row.significant else "not-significant"
        canvas.add(
            f'<path class="mark-value {state}" d="M{number(x)} {number(yy - 6)}'
            f"L{number(x + 6)} {number(yy)}L{number(x)} {number(yy + 6)}"
            f'L{number(x - 6)} {number(yy)}Z"><title>{escape(row.label)}: '
            f"{row.difference:+.4f} {escape(row.verdict)}</title></path>"
        )
    return canvas.render("forest", ident)


@dataclass(frozen=True)
class BarSegment:
    label: str
    count: int
    css: str


def count_bar(segments: Sequence[BarSegment], *, title: str, ident: str) -> str:
    """One horizontal bar split by counts; each segment is labelled, not only coloured."""
    width, height = 580, 34
    canvas = _Canvas(width, height, title)
    total = sum(max(s.count, 0) for s in segments)
    if total == 0:
        canvas.add(
            f'<text class="mark-null" x="{width / 2:g}" y="21" text-anchor="middle">no cases</text>'
        )
        return canvas.render("count-bar", ident)
    scale = LinearScale(0, total, 0, width)
    offset = 0
    for segment in segments:
        if segment.count <= 0:
            continue
        x0, x1 = scale(offset), scale(offset + segment.count)
        offset += segment.count
        caption = f"{segment.label} {segment.count}"
        canvas.add(
            f'<g class="mark-segment {segment.css}"><title>{escape(caption)}</title>'
            f'<rect x="{number(x0)}" y="4" width="{number(x1 - x0)}" height="26"/>'
        )
        if x1 - x0 >= 7 * len(caption):
            canvas.add(
                f'<text x="{number((x0 + x1) / 2)}" y="21" text-anchor="middle">'
                f"{escape(caption)}</text>"
            )
        canvas.add("</g>")
    return canvas.render("count-bar", ident)

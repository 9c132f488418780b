"""The "Models" table of a suite under a model matrix: the JSON's ``models`` block, as tables.

One row per model (its counts, every metric, its calls, tokens and cost), then one
row per pair of models (the paired cells, pass rates and the McNemar test). Plain
tables, no script: the page stays readable offline and in any browser.
"""

from __future__ import annotations

from html import escape

from pytest_agentbench.report.html import read


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "null"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _head(cells: list[str]) -> str:
    return (
        "<thead><tr>"
        + "".join(f'<th scope="col">{escape(c)}</th>' for c in cells)
        + "</tr></thead>"
    )


def _num(text: str) -> str:
    return f'<td class="num">{escape(text)}</td>'


def models_section(suite: read.Doc) -> str:
    """The suite's model-by-metric table and pairwise comparisons; empty without a matrix."""
    matrix = read.mapping(suite, "models")
    rows = read.items(matrix, "rows")
    if not rows:
        return ""
    names = [read.text(metric, "name") for metric in read.items(rows[0], "metrics")]
    body = []
    for row in rows:
        counts = read.mapping(row, "counts")
        values = {
            read.text(metric, "name"): read.real(metric, "value")
            for metric in read.items(row, "metrics")
        }
        tokens = (read.integer(row, "input_tokens") or 0) + (
            read.integer(row, "output_tokens") or 0
        )
        body.append(
            f'<tr><th scope="row">{escape(read.text(row, "model"))}</th>'
            + "".join(
                _num(str(read.integer(counts, key) or 0)) for key in ("passed", "failed", "error")
            )
            + "".join(_num(_number(values.get(name))) for name in names)
            + _num(str(read.integer(row, "calls") or 0))
            + _num(str(tokens))
            + _num(read.text(row, "cost") or "-")
            + "</tr>"
        )
    table = (
        '<table aria-label="model by metric">'
        + _head(["model", "passed", "failed", "error", *names, "calls", "tokens", "cost"])
        + f"<tbody>{''.join(body)}</tbody></table>"
    )
    pairs = []
    for pair in read.items(matrix, "pairs"):
        p_value, adjusted = read.real(pair, "p_value"), read.real(pair, "adjusted_p")
        pairs.append(
            f'<tr><th scope="row">{escape(read.text(pair, "a"))} vs '
            f"{escape(read.text(pair, 'b'))}</th>"
            + "".join(
                _num(str(read.integer(pair, key) or 0))
                for key in ("pairs", "both_passed", "only_a_passed", "only_b_passed", "both_failed")
            )
            + _num(_number(read.real(pair, "pass_rate_a")))
            + _num(_number(read.real(pair, "pass_rate_b")))
            + _num(_number(read.real(pair, "difference"), signed=True))
            + _num("null" if p_value is None else f"{p_value:.4g}")
            + _num("null" if adjusted is None else f"{adjusted:.4g}")
            + "</tr>"
        )
    compared = (
        '<table aria-label="paired comparisons between models">'
        + _head(
            [
                "pair (a vs b)",
                "paired cases",
                "both passed",
                "only a passed",
                "only b passed",
                "both failed",
                "pass rate a",
                "pass rate b",
                "difference",
                "McNemar p",
                "Holm p",
            ]
        )
        + f"<tbody>{''.join(pairs)}</tbody></table>"
        if pairs
        else ""
    )
    return (
        "<h3>Models</h3><p>Every case was run with each model; metrics per model are computed "
        "as the suite's, on that model's cases. Pairs compare the cases both graded.</p>"
        + table
        + compared
    )

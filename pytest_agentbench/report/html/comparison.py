"""The comparison with a baseline: a forest plot of metric differences and flipped cases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from pytest_agentbench.report.html import read
from pytest_agentbench.report.html.grid import OUTCOME_MARK, CaseRow
from pytest_agentbench.report.html.sidecar import BaselineCase, answer_text, failed_checks
from pytest_agentbench.report.html.svg import ForestRow, forest, shown

VERDICT_TEXT = {
    "regression": "✗ regression",
    "improvement": "✓ improvement",
    "no_significant_change": "= no significant change",
    "not_tested": "\u2013 not tested",
}

VERDICT_CLASS = {"regression": "fail", "improvement": "pass"}
SIDE_BY_SIDE_LIMIT = 300
"""Cases of a suite the side-by-side table lists (changed first); every other case shows
both answers in its own detail."""
CHANGE_TEXT = ("✗ passed before, not now", "✓ passes now, not before", "≠ answer changed", "=")


def _p(value: float | None) -> str:
    return "not computable" if value is None else f"{value:.4g}"


def _rows_table(rows: Sequence[read.Doc]) -> str:
    body = []
    for row in rows:
        verdict = read.text(row, "verdict")
        bounds = read.interval(row)
        difference = read.real(row, "difference")
        body.append(
            f'<tr><th scope="row">{escape(read.text(row, "metric"))}</th>'
            f'<td class="num">{escape(shown(read.real(row, "before")))}</td>'
            f'<td class="num">{escape(shown(read.real(row, "after")))}</td>'
            f'<td class="num">{"not computable" if difference is None else f"{difference:+.4f}"}'
            f"</td><td>{'none' if bounds is None else f'[{bounds[0]:+.4f}, {bounds[1]:+.4f}]'}</td>"
            f"<td>{escape(read.text(row, 'test') or 'none')}</td>"
            f'<td class="num">{_p(read.real(row, "p_value"))}</td>'
            f'<td class="num">{_p(read.real(row, "adjusted_p"))}</td>'
            f'<td class="verdict-{VERDICT_CLASS.get(verdict, "neutral")}">'
            f"{escape(VERDICT_TEXT.get(verdict, verdict))}</td>"
            f"<td>{escape(read.text(row, 'reason'))}</td></tr>"
        )
    return (
        '<div class="scroll"><table aria-label="metric differences"><thead><tr>'
        '<th scope="col">metric</th><th scope="col">before</th><th scope="col">after</th>'
        '<th scope="col">difference</th><th scope="col">interval</th><th scope="col">test</th>'
        '<th scope="col">p</th><th scope="col">Holm-adjusted p</th><th scope="col">verdict</th>'
        f'<th scope="col">reason</th></tr></thead><tbody>{"".join(body)}</tbody></table></div>'
    )


def _flipped(title: str, ids: Sequence[str], links: Mapping[str, str]) -> str:
    if not ids:
        return f"<h4>{escape(title)}: none</h4>"
    items = "".join(
        f'<li><a href="{links[case_id]}">{escape(case_id)}</a></li>'
        if case_id in links
        else f"<li>{escape(case_id)}</li>"
        for case_id in ids
    )
    return f'<h4>{escape(title)}: {len(ids)}</h4><ul class="flipped">{items}</ul>'


def _verdict(outcome: str, failed: Sequence[str]) -> str:
    checks = f"<br><small>failed: {escape(', '.join(failed))}</small>" if failed else ""
    mark = OUTCOME_MARK.get(outcome, "")
    return f'<span class="oc-{escape(outcome)}">{mark}{escape(outcome)}</span>{checks}'


@dataclass(frozen=True, slots=True)
class SidePair:
    """One case in both runs, as the side-by-side table shows it."""

    change: int
    """0: passed only in the baseline, 1: passes only now, 2: another answer, 3: the same."""
    row: CaseRow
    failed: tuple[str, ...]
    answer: str
    then: BaselineCase


def side_pair(
    row: CaseRow,
    entry: read.Doc,
    before: Mapping[str, BaselineCase],
    transcripts: Mapping[str, list[Any]],
) -> SidePair | None:
    """Case ``row`` (its ``entry``) beside its baseline case; ``None`` when only in this run."""
    then = before.get(row.case_id)
    if then is None:
        return None
    result = read.mapping(entry, "result")
    answer = answer_text(result, transcripts.get(row.nodeid))
    was, now = then.outcome == "passed", row.outcome == "passed"
    change = 0 if was and not now else 1 if now and not was else 2
    if change == 2 and answer == then.answer:
        change = 3
    return SidePair(change, row, failed_checks(result), answer, then)


def side_by_side(sid: str, found: Sequence[SidePair]) -> str:
    """Each case's two answers and verdicts, the changed ones first."""
    pairs = sorted(found, key=lambda pair: (pair.change, pair.row.index))
    if not pairs:
        return "<p>No case of this suite is in both runs.</p>"
    changed = sum(1 for pair in pairs if pair.change < 3)
    body = "".join(
        f'<tr class="change-{pair.change}"><th scope="row"><a href="#case-{sid}-{pair.row.index}">'
        f"{escape(pair.row.case_id)}</a></th><td>{CHANGE_TEXT[pair.change]}</td>"
        f"<td>{_verdict(pair.then.outcome, pair.then.failed_checks)}</td>"
        f"<td><pre>{escape(pair.then.answer)}</pre></td>"
        f"<td>{_verdict(pair.row.outcome, pair.failed)}</td>"
        f"<td><pre>{escape(pair.answer)}</pre></td></tr>"
        for pair in pairs[:SIDE_BY_SIDE_LIMIT]
    )
    more = len(pairs) - SIDE_BY_SIDE_LIMIT
    note = (
        f"<p>{more} more cases, none listed above; each case's detail shows both answers.</p>"
        if more > 0
        else ""
    )
    return (
        f"<h4>Side by side: {changed} of {len(pairs)} cases changed</h4>"
        '<table class="side-by-side" aria-label="baseline and this run, case by case"><thead><tr>'
        '<th scope="col">case</th><th scope="col">change</th>'
        '<th scope="col">baseline verdict</th><th scope="col">baseline answer</th>'
        '<th scope="col">this run\'s verdict</th><th scope="col">this run\'s answer</th>'
        f"</tr></thead><tbody>{body}</tbody></table>{note}"
    )


def _suite(number: int, entry: read.Doc, links: Mapping[str, str], pairs: str) -> str:
    suite_id = read.text(entry, "id")
    rows = read.items(entry, "rows")
    parts = [
        f'<section class="compared-suite" data-suite="{escape(suite_id)}"><h3>'
        f"{escape(suite_id)} ({escape(read.text(entry, 'status'))})</h3>"
    ]
    refusal = read.text(entry, "refusal")
    if refusal:
        parts.append(f'<p class="verdict-fail">{escape(refusal)}</p>')
    mismatches = read.texts(entry, "mismatches")
    if mismatches:
        parts.append("<ul>" + "".join(f"<li>{escape(m)}</li>" for m in mismatches) + "</ul>")
    parts.append(
        f"<p>{read.integer(entry, 'pairs') or 0} paired case trials over "
        f"{read.integer(entry, 'units') or 0} units; "
        f"{read.integer(entry, 'ungraded_pairs') or 0} pairs ungraded on one side; "
        f"{len(read.texts(entry, 'only_before'))} cases only in the baseline, "
        f"{len(read.texts(entry, 'only_after'))} only in this run.</p>"
    )
    if rows:
        plot = forest(
            [
                ForestRow(
                    label=read.text(row, "metric"),
                    difference=read.real(row, "difference"),
                    interval=read.interval(row),
                    verdict=VERDICT_TEXT.get(read.text(row, "verdict"), read.text(row, "verdict")),
                    significant=read.text(row, "verdict") in {"regression", "improvement"},
                )
                for row in rows
            ],
            title=f"{suite_id}: metric differences (after minus before) with intervals",
            ident=f"c{number}",
        )
        parts.append(f'<div class="figure">{plot}{_rows_table(rows)}</div>')
    parts.append(
        _flipped("Passed in the baseline, not now", read.texts(entry, "passed_only_before"), links)
        + _flipped("Passed now, not in the baseline", read.texts(entry, "passed_only_after"), links)
    )
    parts.append(pairs)
    parts.append("</section>")
    return "".join(parts)


def comparison_section(
    report: read.Doc,
    links: Mapping[str, Mapping[str, str]],
    sides: Mapping[str, str],
    baseline_note: str = "",
) -> str:
    """The section; ``links`` are each suite's case anchors by case label, ``sides`` each
    compared suite's side-by-side table (none without the baseline's answers)."""
    comparison = read.mapping(report, "comparison")
    if not comparison:
        return ""
    baseline = read.mapping(comparison, "baseline")
    settings = read.mapping(comparison, "settings")
    passed = read.flag(comparison, "passed") is True
    setting_text = ", ".join(f"{escape(k)} {escape(str(v))}" for k, v in sorted(settings.items()))
    facts = [
        ("baseline", f"<code>{escape(read.text(baseline, 'path'))}</code>"),
        (
            "baseline adapter",
            f"{escape(read.text(baseline, 'adapter_description'))} "
            f"(commit <code>{escape(read.text(baseline, 'git_commit') or 'unknown')}</code>)",
        ),
        ("settings", setting_text or "<em>not recorded</em>"),
        ("Holm family", f"{read.integer(comparison, 'family_size') or 0} tested rows"),
        (
            "verdict",
            f'<span class="verdict-{"pass" if passed else "fail"}">'
            f"{'✓ passed' if passed else '✗ FAILED'}</span>: "
            f"{read.integer(comparison, 'regressions') or 0} regressions, "
            f"{read.integer(comparison, 'improvements') or 0} improvements",
        ),
    ]
    only = [
        f"<p>Suites only in the baseline: {escape(', '.join(ids))}</p>"
        for ids in [read.texts(comparison, "only_in_baseline")]
        if ids
    ] + [
        f"<p>Suites only in this run: {escape(', '.join(ids))}</p>"
        for ids in [read.texts(comparison, "only_in_run")]
        if ids
    ]
    parts = []
    for n, entry in enumerate(read.items(comparison, "suites")):
        suite_id = read.text(entry, "id")
        parts.append(_suite(n, entry, links.get(suite_id, {}), sides.get(suite_id, "")))
    body = "".join(parts)
    if baseline_note:
        only.append(f'<p class="hint">{escape(baseline_note)}</p>')
    facts_html = "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in facts)
    return (
        '<section class="comparison" id="comparison" aria-labelledby="comparison-h">'
        '<h2 id="comparison-h">Comparison with the baseline</h2>'
        f'<dl class="facts">{facts_html}</dl>{"".join(only)}{body}</section>'
    )

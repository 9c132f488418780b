"""The page's judged diagnostics: each rubric's panel numbers and each judge's calibration.

Drawn from the report's ``judged`` member, in a section of its own after the
suites: a judged number never sits among the outcomes, metrics or gates it
does not decide. Every rubric and classifier names its calibration, a kappa
on so many labels or ``uncalibrated``, and every rubric what its judges cost.
"""

from __future__ import annotations

from html import escape

from pytest_agentbench.report.html import read

UNCALIBRATED = "uncalibrated"


def calibration_text(calibration: read.Doc) -> str:
    """``kappa 0.600 [0.310, 0.850] on 40 labels`` or why the judge is uncalibrated."""
    support = read.integer(calibration, "support") or 0
    if support == 0:
        return f"{UNCALIBRATED} (no human labels)"
    kappa = read.real(calibration, "kappa")
    shown = "undefined" if kappa is None else f"{kappa:.3f}"
    bounds = calibration.get("interval")
    if (
        isinstance(bounds, list)
        and len(bounds) == 2
        and all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
    ):
        shown += f" [{float(bounds[0]):.3f}, {float(bounds[1]):.3f}]"
    if read.text(calibration, "weighting") == "quadratic":
        shown += " (quadratic-weighted)"
    figure = f"kappa {shown} on {support} labels"
    if read.text(calibration, "status") != "calibrated":
        needed = read.integer(calibration, "min_labels") or 0
        return f"{UNCALIBRATED} ({support} of the {needed} labels needed; {figure})"
    return figure


def _passed_cell(rubric: read.Doc, items: int) -> str:
    """``2/3``, with the unjudged cases by reason; ``not judged`` when no seat voted."""
    unjudged = rubric.get("unjudged")
    reasons = unjudged if isinstance(unjudged, dict) else {}
    tally = "; ".join(f"{escape(str(n))} {escape(str(why))}" for why, n in reasons.items())
    note = f" <small>(unjudged: {tally})</small>" if tally else ""
    if items == 0:
        return f"not judged{note}"
    return f"{read.integer(rubric, 'passed')}/{items}{note}"


def _calibration_cell(calibration: read.Doc) -> str:
    state = "calibrated" if read.text(calibration, "status") == "calibrated" else UNCALIBRATED
    return f'<td class="judge-{state}">{escape(calibration_text(calibration))}</td>'


def _calibration_note(calibration: read.Doc) -> str:
    state = "calibrated" if read.text(calibration, "status") == "calibrated" else UNCALIBRATED
    return f'<span class="judge-{state}">{escape(calibration_text(calibration))}</span>'


def _traffic(traffic: read.Doc) -> str:
    if not traffic:
        return "<em>all from the judge cache</em>"
    cost = read.text(traffic, "cost")
    refusal = read.text(traffic, "refusal")
    ledger = read.text(traffic, "ledger")
    parts = [
        ", ".join(f"<code>{escape(model)}</code>" for model in read.texts(traffic, "models"))
        + f" ({escape(read.text(traffic, 'mode'))})",
        f"{read.integer(traffic, 'calls')} calls, {read.integer(traffic, 'attempts')} attempts, "
        f"{read.integer(traffic, 'input_tokens')} + {read.integer(traffic, 'output_tokens')} "
        "tokens" + (f", cost {escape(cost)}" if cost else ""),
        f"{read.integer(traffic, 'refused')} refused"
        + (f" (<code>{escape(refusal)}</code>)" if refusal else ""),
    ]
    if ledger:
        parts.append(f"ledger <code>{escape(ledger)}</code>")
    return "; ".join(parts)


def _rubric_row(rubric: read.Doc) -> str:
    items = read.integer(rubric, "items") or 0
    dropped = read.texts(rubric, "dropped")
    calibrations = read.items(rubric, "seat_calibration")
    seats = ", ".join(
        f"<code>{escape(seat)}</code>"
        + (f" {_calibration_note(calibrations[index])}" if index < len(calibrations) else "")
        for index, seat in enumerate(read.texts(rubric, "seats"))
    )
    if dropped:
        seats += "; dropped (family of the model under test): " + ", ".join(
            f"<code>{escape(seat)}</code>" for seat in dropped
        )
    return (
        f'<tr data-rubric="{escape(read.text(rubric, "name"))}">'
        f'<th scope="row"><code>{escape(read.text(rubric, "name"))}</code></th>'
        f'<td class="num">{_passed_cell(rubric, items)}</td>'
        f'<td class="num">{read.integer(rubric, "split")}</td>'
        f'<td class="num">{read.integer(rubric, "unparsable")}</td>'
        f'<td class="num">{read.integer(rubric, "refused")}</td>'
        f"{_calibration_cell(read.mapping(rubric, 'calibration'))}"
        f"<td>{seats or '<em>none</em>'}</td>"
        f"<td>{_traffic(read.mapping(rubric, 'traffic'))}</td>"
        f"<td>{escape(read.text(rubric, 'gate')) or '<em>none</em>'}</td></tr>"
    )


def _cases(rubric: str, cases: list[read.Doc]) -> str:
    """The rubric's judged cases, disagreements first, each seat's score beside the majority."""
    own = [case for case in cases if read.text(case, "rubric") == rubric]
    if not own:
        return ""
    own.sort(key=lambda case: -(read.integer(case, "disagreement") or 0))
    rows = []
    for case in own:
        passed = read.flag(case, "passed")
        scores = read.mapping(case, "scores")
        seats = ", ".join(
            f"<code>{escape(seat)}</code> " + ("refused" if score is None else escape(str(score)))
            for seat, score in scores.items()
        )
        majority = read.integer(case, "majority")
        rows.append(
            f"<tr><td><code>{escape(read.text(case, 'suite_id'))}/"
            f"{escape(read.text(case, 'case_id'))}</code></td>"
            f'<td class="num">{"none" if majority is None else majority}</td>'
            f"<td>{'pass' if passed else 'no pass' if passed is False else 'none'}</td>"
            f'<td class="num">{read.integer(case, "disagreement")}</td><td>{seats}</td>'
            f'<td class="num">{read.integer(case, "unparsable")}</td>'
            f'<td class="num">{read.integer(case, "refused")}</td></tr>'
        )
    return (
        f'<details class="judged-cases"><summary>{len(own)} cases judged on '
        f"<code>{escape(rubric)}</code>, disagreements first</summary>"
        f'<table aria-label="judged cases of {escape(rubric)}"><thead><tr>'
        '<th scope="col">case</th><th scope="col">majority</th><th scope="col">diagnostic</th>'
        '<th scope="col">disagreement</th><th scope="col">seats</th>'
        '<th scope="col">unparsable</th><th scope="col">refused</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></details>"
    )


def judged_section(report: read.Doc) -> str:
    """The section, or nothing for a report that was not judged."""
    judged = read.mapping(report, "judged")
    if not judged:
        return ""
    rubrics = read.items(judged, "rubrics")
    classifiers = read.items(judged, "classifiers")
    parts = [
        '<section class="judged" id="judged"><h2>Judged diagnostics</h2>'
        '<p class="note">Diagnostics beside the run: they decide no outcome, metric or gate. '
        f"Every seat's verdict is in <code>{escape(read.text(judged, 'judgments'))}</code>.</p>"
    ]
    if rubrics:
        parts.append(
            '<table aria-label="judged rubrics"><thead><tr><th scope="col">rubric</th>'
            '<th scope="col">pass by majority</th><th scope="col">split</th>'
            '<th scope="col">unparsable answers</th><th scope="col">items with refused calls</th>'
            '<th scope="col">calibration</th><th scope="col">seats</th>'
            '<th scope="col">judge traffic</th><th scope="col">rubric gate (not the run\'s)</th>'
            "</tr></thead><tbody>"
            + "".join(_rubric_row(rubric) for rubric in rubrics)
            + "</tbody></table>"
        )
        cases = read.items(judged, "cases")
        parts.extend(_cases(read.text(rubric, "name"), cases) for rubric in rubrics)
    if classifiers:
        rows = "".join(
            f'<tr><th scope="row"><code>{escape(read.text(c, "name"))}</code></th>'
            f'<td class="num">{read.integer(c, "labels")}</td>'
            f"{_calibration_cell(read.mapping(c, 'calibration'))}</tr>"
            for c in classifiers
        )
        parts.append(
            '<table aria-label="classifiers"><thead><tr><th scope="col">classifier</th>'
            '<th scope="col">labels</th><th scope="col">calibration</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>"
        )
    if not rubrics and not classifiers:
        parts.append('<p class="empty">No rubric or classifier applied to this run.</p>')
    parts.append("</section>")
    return "".join(parts)

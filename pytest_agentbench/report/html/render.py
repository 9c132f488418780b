"""One self-contained HTML page from a run report document.

Both ``--agentbench-html`` and ``agentbench html RUN.json`` hand this module the
run report as parsed JSON, so the page shows exactly what the JSON report
says. Every plot sits beside a table holding the same numbers. Figures that
change from one run to the next (timings) are marked ``class="volatile"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from html import escape

from pytest_agentbench.report.html import read
from pytest_agentbench.report.html.assets import CSS, SCRIPT
from pytest_agentbench.report.html.comparison import (
    SidePair,
    comparison_section,
    side_by_side,
    side_pair,
)
from pytest_agentbench.report.html.grid import (
    EMPTY_GRID,
    CaseDetails,
    CaseRow,
    DetailsAhead,
    SharedParts,
    case_row,
    check_names,
    grid_head,
)
from pytest_agentbench.report.html.judged import judged_section
from pytest_agentbench.report.html.matrix import models_section
from pytest_agentbench.report.html.sidecar import Extras
from pytest_agentbench.report.html.svg import (
    BarSegment,
    DotRow,
    GateMark,
    count_bar,
    dot_whisker,
    shown,
)
from pytest_agentbench.report.trust import Trust, trust_line
from pytest_agentbench.sdk.errors import AgentbenchError

OUTCOMES = ("passed", "failed", "error", "skipped", "excluded")


@dataclass
class SuiteIndex:
    """A suite as the page needs it before its case details: its members but ``cases``,
    and a small row per case. The entries themselves are read a second time, in order."""

    fields: read.Doc
    rows: list[CaseRow] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)
    """The cases' known durations, in report order."""
    no_duration: int = 0
    shared: SharedParts = field(default_factory=SharedParts, repr=False, compare=False)
    ahead: DetailsAhead | None = field(default=None, repr=False, compare=False)
    """Its case details, when drawn as the cases were indexed (see :class:`DetailsAhead`)."""

    def add(self, entry: read.Doc) -> None:
        """Index the suite's next case entry (a mapping; other entries are no case)."""
        row = case_row(len(self.rows), entry, self.shared)
        self.rows.append(row)
        duration = read.real(entry, "duration_s")
        if duration is None:
            self.no_duration += 1
        else:
            self.durations.append(duration)
        if self.ahead is not None:
            self.ahead.add(row, entry)


def index_suite(suite: read.Doc) -> SuiteIndex:
    """The index of a suite document holding its ``cases``."""
    index = SuiteIndex({key: value for key, value in suite.items() if key != "cases"})
    for entry in read.items(suite, "cases"):
        index.add(entry)
    return index


def _facts(pairs: Sequence[tuple[str, str]]) -> str:
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in pairs)
    return f'<dl class="facts">{rows}</dl>'


def _code(value: str) -> str:
    return f"<code>{escape(value)}</code>" if value else "<em>none</em>"


def _run_time(suite: SuiteIndex) -> str:
    known = suite.durations
    if not known:
        return "<em>not recorded</em>"
    missing = suite.no_duration
    note = f" ({missing} cases without a duration)" if missing else ""
    return f'<span class="volatile">{sum(known):.2f} s</span> summed over case calls{note}'


def _header(report: read.Doc, index: SuiteIndex) -> str:
    suite = index.fields
    adapter = read.mapping(report, "adapter")
    env = read.mapping(report, "environment")
    digests = read.mapping(suite, "digests")
    digest_text = (
        ", ".join(
            f"{escape(k)} {_code(v if isinstance(v, str) else '')}"
            for k, v in sorted(digests.items())
        )
        or "<em>none</em>"
    )
    environment = ", ".join(
        f"{escape(k)} {escape(str(v))}" for k, v in sorted(env.items()) if v is not None
    )
    exit_status = read.integer(report, "exit_status")
    return _facts(
        [
            (
                "suite",
                f"{_code(read.text(suite, 'id'))} version {escape(read.text(suite, 'version'))}",
            ),
            ("world kind", _code(read.text(suite, "world"))),
            ("digests", digest_text),
            (
                "adapter",
                f"{escape(read.text(adapter, 'description'))} "
                f"(spec {_code(read.text(adapter, 'spec'))})",
            ),
            ("trust", escape(_trust(report))),
            (
                "answered by",
                ", ".join(_code(c) for c in read.texts(suite, "answered_by")) or "<em>none</em>",
            ),
            ("environment", environment or "<em>not recorded</em>"),
            ("coverage", _coverage(suite)),
            ("run time", _run_time(index)),
            ("exit status", "unknown" if exit_status is None else str(exit_status)),
        ]
    )


def _trust(report: read.Doc) -> str:
    document = report.get("trust")
    if not isinstance(document, dict):
        return "not recorded"
    return trust_line(Trust.model_validate(document)).removeprefix("trust: ")


def _coverage(suite: read.Doc) -> str:
    """How much of the suite ran (case items: one per case and trial); absent in /1 reports."""
    coverage = read.mapping(suite, "coverage")
    names = ("total", "selected", "run", "missing")
    counts = {name: read.integer(coverage, name) for name in names}
    if any(value is None for value in counts.values()):
        return "<em>not recorded</em>"
    shown = (
        f"{counts['total']} in suite, {counts['selected']} selected, {counts['run']} run, "
        f"{counts['missing']} missing"
    )
    if read.flag(coverage, "complete") is True:
        return escape(shown)
    return f'{escape(shown)} <strong class="partial">(partial run)</strong>'


def _figure(figure: read.Doc) -> str:
    value = read.real(figure, "value")
    span = read.interval(figure)
    shown_value = "null" if value is None else f"{value:.4f}"
    shown_span = "" if span is None else f"[{span[0]:.4f}, {span[1]:.4f}]"
    return f'<td class="num">{shown_value}</td><td class="num">{shown_span}</td>'


def _trials(suite: read.Doc) -> str:
    """pass@1 / pass^k / pass@k with their cluster intervals, under repeats or clusters."""
    trials = read.mapping(suite, "trials")
    if not trials:
        return ""
    k = read.integer(trials, "trials") or 0
    cases = read.integer(trials, "cases") or 0
    clusters = read.integer(trials, "clusters") or 0
    rows = "".join(
        f'<tr><th scope="row">{escape(name)}</th>{_figure(read.mapping(trials, key))}</tr>'
        for name, key in (
            ("pass@1", "pass_at_1"),
            (f"pass^{k}", "pass_hat_k"),
            (f"pass@{k}", "pass_at_k"),
        )
    )
    consistency = read.real(trials, "consistency")
    inconsistent = read.texts(trials, "inconsistent_cases")
    facts = [
        ("trials per case", str(k)),
        (
            "units",
            f"{cases} cases in {clusters} clusters; intervals resample clusters, never trials",
        ),
        (
            "consistency",
            "null"
            if consistency is None
            else f"{consistency:.4f} ({len(inconsistent)} cases pass some trials only"
            + (f": {escape(', '.join(inconsistent))}" if inconsistent else "")
            + ")",
        ),
    ]
    return (
        f"<h3>Trials</h3>{_facts(facts)}"
        '<table aria-label="trial figures"><thead><tr><th scope="col">figure</th>'
        '<th scope="col">value</th><th scope="col">95% interval</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def _outcomes(sid: str, suite: read.Doc) -> str:
    counts = read.mapping(suite, "counts")
    classes = read.mapping(suite, "failure_classes")
    names = [*OUTCOMES, *sorted(k for k in counts if k not in OUTCOMES)]
    values = {name: read.integer(counts, name) or 0 for name in names}
    bar = count_bar(
        [
            BarSegment(name, values[name], f"seg-{name}" if name in OUTCOMES else "seg-other")
            for name in names
        ],
        title=f"case outcomes of {read.text(suite, 'id')}",
        ident=f"{sid}-outcomes",
    )
    rows = "".join(
        f'<tr><th scope="row">{escape(n)}</th><td class="num">{values[n]}</td></tr>' for n in names
    )
    class_rows = "".join(
        f'<tr><th scope="row">{escape(name)}</th>'
        f'<td class="num">{read.integer(classes, name) or 0}</td></tr>'
        for name in sorted(classes)
    )
    return (
        f'<div class="figure">{bar}<table aria-label="outcome counts"><thead><tr>'
        f'<th scope="col">outcome</th><th scope="col">cases</th></tr></thead><tbody>{rows}'
        f'</tbody></table><table aria-label="failure classes"><thead><tr><th scope="col">'
        f'failure class</th><th scope="col">cases</th></tr></thead><tbody>{class_rows}'
        "</tbody></table></div>"
    )


def _gates_by_metric(suite: read.Doc) -> dict[str, list[GateMark]]:
    marks: dict[str, list[GateMark]] = {}
    for verdict in read.items(suite, "gates"):
        gate = read.mapping(verdict, "gate")
        threshold = read.real(gate, "threshold")
        if threshold is None:
            continue
        marks.setdefault(read.text(gate, "metric"), []).append(
            GateMark(read.text(gate, "op"), threshold, read.flag(verdict, "passed") is True)
        )
    return marks


def _metric_table(
    family: str, metrics: Sequence[read.Doc], gates: dict[str, list[GateMark]]
) -> str:
    rows = []
    for metric in metrics:
        name = read.text(metric, "name")
        value = read.real(metric, "value")
        bounds = read.interval(metric)
        interval = "none" if bounds is None else f"[{bounds[0]:.4f}, {bounds[1]:.4f}]"
        num, den = read.integer(metric, "numerator"), read.integer(metric, "denominator")
        ratio = f"{num}/{den}" if num is not None and den is not None else ""
        gate_text = "; ".join(
            f"{g.op} {g.threshold:g}: " + ("passed" if g.passed else "FAILED")
            for g in gates.get(name, [])
        )
        arrow = "↑" if read.text(metric, "direction") == "higher_is_better" else "↓"
        rows.append(
            f'<tr><th scope="row">{escape(name)} <span title="'
            f'{escape(read.text(metric, "direction"))}">{arrow}</span></th>'
            f'<td class="num">{escape(shown(value))}</td><td>{interval}</td>'
            f'<td class="num">{escape(ratio)}</td>'
            f'<td class="num">{read.integer(metric, "support") or 0}</td>'
            f"<td>{escape(read.text(metric, 'support_meaning'))}</td>"
            f"<td>{escape(gate_text)}</td></tr>"
        )
    return (
        f'<table aria-label="metrics of family {escape(family)}"><thead><tr>'
        '<th scope="col">metric</th><th scope="col">value</th><th scope="col">interval</th>'
        '<th scope="col">n/d</th><th scope="col">support</th><th scope="col">support counts</th>'
        f'<th scope="col">gates</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _metrics(sid: str, suite: read.Doc) -> str:
    families: dict[str, list[read.Doc]] = {}
    for metric in read.items(suite, "metrics"):
        families.setdefault(read.text(metric, "family", "metrics"), []).append(metric)
    if not families:
        return '<p class="empty">No metrics in this report.</p>'
    gates = _gates_by_metric(suite)
    parts = []
    for number, (family, metrics) in enumerate(families.items()):
        rows = [
            DotRow(
                label=read.text(m, "name"),
                value=read.real(m, "value"),
                interval=read.interval(m),
                gates=tuple(gates.get(read.text(m, "name"), ())),
            )
            for m in metrics
        ]
        plot = dot_whisker(
            rows,
            title=f"metric family {family}: values with intervals and gates",
            ident=f"{sid}-m{number}",
        )
        parts.append(
            f'<h4>{escape(family)}</h4><div class="figure metric-family" data-family="'
            f'{escape(family)}">{plot}{_metric_table(family, metrics, gates)}</div>'
        )
    return "".join(parts)


def _gates(suite: read.Doc) -> str:
    verdicts = read.items(suite, "gates")
    if not verdicts:
        return '<p class="empty">No gates on this suite.</p>'
    rows = []
    for verdict in verdicts:
        gate = read.mapping(verdict, "gate")
        passed = read.flag(verdict, "passed") is True
        threshold = read.real(gate, "threshold")
        rows.append(
            f'<tr><td class="{"verdict-pass" if passed else "verdict-fail"}">'
            f"{'✓ passed' if passed else '✗ FAILED'}</td>"
            f"<td><code>{escape(read.text(gate, 'metric'))} {escape(read.text(gate, 'op'))} "
            f"{'' if threshold is None else f'{threshold:g}'}</code></td>"
            f'<td class="num">{escape(shown(read.real(verdict, "value")))}</td>'
            f"<td>{escape(read.text(gate, 'source'))}</td>"
            f"<td>{escape(read.text(verdict, 'reason'))}</td></tr>"
        )
    return (
        '<table aria-label="gates"><thead><tr><th scope="col">verdict</th><th scope="col">gate</th>'
        '<th scope="col">value</th><th scope="col">source</th><th scope="col">reason</th></tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _dimensions(names: Sequence[str]) -> str:
    return ", ".join(f"<code>{escape(n)}</code>" for n in names) or "<em>none</em>"


def _controls(suite: read.Doc) -> str:
    entries = read.items(suite, "controls")
    if not entries:
        return '<p class="empty">No negative controls ran.</p>'
    rows = []
    for entry in entries:
        verdict = read.mapping(entry, "verdict")
        observed = read.texts(verdict, "failing_dimensions")
        surprising = set(read.texts(verdict, "unexpected_failures"))
        # The report keeps the observed failures and the two kinds of surprise;
        # the declared must-fail set is what remains of them.
        declared = sorted(
            {d for d in observed if d not in surprising}
            | set(read.texts(verdict, "unexpected_passes"))
        )
        passed = read.flag(entry, "passed") is True
        extra = [
            f"{label}: {', '.join(read.texts(verdict, key))}"
            for key, label in (
                ("unexpected_failures", "must-pass dimensions that failed"),
                ("unexpected_passes", "must-fail dimensions that passed"),
                ("missing_findings", "missing findings"),
                ("metric_mismatches", "metric mismatches"),
                ("harness_errors", "harness errors"),
            )
            if read.texts(verdict, key)
        ]
        rows.append(
            f'<tr><th scope="row">{escape(read.text(entry, "control_id"))}</th>'
            f"<td>{escape(read.text(verdict, 'agent'))}</td>"
            f'<td class="{"verdict-pass" if passed else "verdict-fail"}">'
            f"{'✓ as declared' if passed else '✗ NOT as declared'}</td>"
            f"<td>{_dimensions(declared) if verdict else '<em>no verdict</em>'}</td>"
            f"<td>{_dimensions(observed) if verdict else '<em>no verdict</em>'}</td>"
            f"<td>{escape(read.text(entry, 'summary'))}"
            + "".join(f"<br>{escape(line)}" for line in extra)
            + "</td></tr>"
        )
    return (
        '<table aria-label="negative controls"><thead><tr><th scope="col">control</th>'
        '<th scope="col">agent</th><th scope="col">verdict</th>'
        '<th scope="col">declared failing dimensions</th>'
        '<th scope="col">observed failing dimensions</th><th scope="col">summary</th></tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _suite_head(
    number: int, report: read.Doc, index: SuiteIndex, names: Sequence[str]
) -> Iterator[str]:
    """Suite ``number``'s section up to its case details, in pieces; ``names``: its checks."""
    sid = f"s{number}"
    suite = index.fields
    suite_id = read.text(suite, "id", f"suite {number}")
    title = read.text(suite, "title")
    rows = index.rows
    yield (
        f'<section class="suite" id="{sid}" data-suite="{escape(suite_id)}" '
        f'aria-labelledby="{sid}-h"><h2 id="{sid}-h">{escape(title or suite_id)} '
        f"<small>(<code>{escape(suite_id)}</code>, "
        f"{escape(read.text(suite, 'world'))})</small></h2>"
        + _header(report, index)
        + f"<h3>Outcomes</h3>{_outcomes(sid, suite)}"
        + _trials(suite)
        + models_section(suite)
        + f"<h3>Metrics</h3>{_metrics(sid, suite)}"
        + f"<h3>Gates</h3>{_gates(suite)}"
        + "<h3>Cases and checks</h3>"
    )
    if rows:
        yield from grid_head(sid, rows, names)
    else:
        yield EMPTY_GRID


def _suite_tail(index: SuiteIndex) -> str:
    return f"<h3>Negative controls</h3>{_controls(index.fields)}</section>"


def _settings_in_clear(settings: read.Doc) -> str:
    """The settings the digest stands for, and the rate limits, each by name (schema 3, later):
    ``-`` for one left unset; nothing for a report written before they were stated."""
    shown = [
        f"{escape(name.replace('_', '-'))} "
        + ("-" if value is None else escape(read.json_text(value, 80)))
        for name, value in sorted(settings.items())
        if name != "base_url_path"
    ]
    return "<br>" + ", ".join(shown) if shown else ""


def _mode_text(run: read.Doc) -> str:
    """The run's mode; a ``mixed`` run's with its requests by where their answers came from."""
    mode = read.text(run, "mode")
    if mode != "mixed":
        return mode
    return (
        f"mixed ({read.integer(run, 'cassette_hits') or 0} cassette hits, "
        f"{read.integer(run, 'recorded') or 0} recorded)"
    )


def _model_run(report: read.Doc) -> str:
    """The model behind the run (report schema 3): who answered, at what settings and cost."""
    run = read.mapping(report, "model_run")
    if not run:
        return ""
    ceilings = ", ".join(
        f"{escape(name.replace('_', '-'))} {escape(str(value))}"
        for name, value in sorted(read.mapping(run, "ceilings").items())
        if value is not None
    )
    currency = read.text(run, "currency")
    cost = read.text(run, "cost")
    excluded = read.texts(run, "excluded")
    settings = read.mapping(run, "settings")
    endpoint = read.text(run, "base_url_host") + read.text(settings, "base_url_path")
    return "<h3>Model</h3>" + _facts(
        [
            (
                "model",
                f"{_code(read.text(run, 'model'))} via {escape(read.text(run, 'provider'))} "
                f"at {_code(endpoint)}",
            ),
            ("mode", escape(_mode_text(run))),
            ("settings", _code(read.text(run, "settings_digest")) + _settings_in_clear(settings)),
            ("pricing", _code(read.text(run, "pricing_digest"))),
            (
                "traffic",
                f"{read.integer(run, 'calls')} calls, {read.integer(run, 'attempts')} attempts, "
                f"{read.integer(run, 'input_tokens')} input and "
                f"{read.integer(run, 'output_tokens')} output tokens",
            ),
            ("cost", f"{escape(cost)} {escape(currency)}" if cost else "<em>not priced</em>"),
            (
                "waits",
                f"{read.integer(run, 'waits')} ({escape(read.text(run, 'wait_seconds'))} s)",
            ),
            ("budget", ceilings or "<em>none</em>"),
            (
                "excluded",
                ", ".join(_code(nodeid) for nodeid in excluded) if excluded else "none",
            ),
        ]
    )


def _not_passed(suite: read.Doc) -> int:
    counts = read.mapping(suite, "counts")
    return sum(read.integer(counts, name) or 0 for name in ("failed", "error"))


def _toc(indexes: Sequence[SuiteIndex]) -> str:
    """One entry per suite with its counts, the suites with the most failures first."""
    suites = [index.fields for index in indexes]
    order = sorted(range(len(suites)), key=lambda i: (-_not_passed(suites[i]), i))
    entries = []
    for i in order:
        counts = read.mapping(suites[i], "counts")
        shown = [
            f'<span class="oc-{name}">{mark}{read.integer(counts, name) or 0} {name}</span>'
            for name, mark in (("passed", "✓ "), ("failed", "✗ "), ("error", "! "))
            if name == "passed" or read.integer(counts, name)
        ]
        shown += [
            f"{read.integer(counts, name)} {escape(name)}"
            for name in sorted(counts)
            if name not in {"passed", "failed", "error"} and read.integer(counts, name)
        ]
        entries.append(
            f'<li><a href="#s{i}">{escape(read.text(suites[i], "id", f"suite {i}"))}</a> '
            f'<span class="counts">{" · ".join(shown)}</span></li>'
        )
    return "".join(entries)


def _options(values: Sequence[str]) -> str:
    return "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)


def _filters(suites: Sequence[SuiteIndex]) -> str:
    """The filter bar: outcome, failure class, label and a search over ids, prompts and answers.

    The page's script reads each suite's compact index to apply them; the case details
    stay compressed until a case is opened."""
    outcomes: set[str] = set()
    classes: set[str] = set()
    labels: set[str] = set()
    for suite in suites:
        outcomes.update(k for k, v in read.mapping(suite.fields, "counts").items() if v)
        classes.update(k for k, v in read.mapping(suite.fields, "failure_classes").items() if v)
        for row in suite.rows:
            outcomes.add(row.outcome)
            labels.update(row.labels)
    kinds: dict[str, list[str]] = {}
    for label in sorted(labels):
        kind = label.split("_", 1)[0] if "_" in label else "other"
        kinds.setdefault(kind, []).append(label)
    label_options = "".join(
        f'<optgroup label="{escape(kind)}">{_options(values)}</optgroup>'
        for kind, values in sorted(kinds.items())
    )
    return (
        '<form class="filters" id="filters" role="search" aria-label="filter the cases">'
        '<label for="f-outcome">outcome</label><select id="f-outcome">'
        f'<option value="">any</option>{_options(sorted(outcomes))}</select>'
        '<label for="f-class">failure class</label><select id="f-class">'
        f'<option value="">any</option>{_options(sorted(classes))}</select>'
        '<label for="f-label">label</label><select id="f-label">'
        f'<option value="">any</option>{label_options}</select>'
        '<label for="f-search">search</label><input id="f-search" type="search" '
        'placeholder="id, prompt or answer ( / )" autocomplete="off" spellcheck="false">'
        '<button type="reset" id="f-clear">clear</button>'
        '<output id="f-status" aria-live="polite" for="f-outcome f-class f-label f-search">'
        "</output></form>"
    )


def _run_header(report: read.Doc, suites: Sequence[SuiteIndex]) -> str:
    gates = read.items(report, "gates")
    failed = sum(1 for g in gates if read.flag(g, "passed") is not True)
    status = read.integer(report, "exit_status")
    problems = read.texts(report, "problems")
    toc = _toc(suites)
    if read.mapping(report, "comparison"):
        toc += '<li><a href="#comparison">comparison with the baseline</a></li>'
    if read.mapping(report, "judged"):
        toc += '<li><a href="#judged">judged diagnostics</a></li>'
    summary = _facts(
        [
            ("exit status", "unknown" if status is None else str(status)),
            ("suites", str(len(suites))),
            ("gates", f"{len(gates) - failed}/{len(gates)} passed"),
            ("report schema", _code(read.text(report, "schema_version"))),
        ]
    )
    problem_list = (
        '<h3>Problems</h3><ul class="problems">'
        + "".join(f"<li>{escape(p)}</li>" for p in problems)
        + "</ul>"
        if problems
        else ""
    )
    return (
        '<header class="run"><h1>agentbench run report</h1>'
        f"{summary}{_model_run(report)}"
        f'<nav class="toc" aria-label="suites"><ul>{toc}</ul></nav>{problem_list}</header>'
        + (_filters(suites) if suites else "")
    )


PAGE_HEAD = (
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
    "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
    f"<title>agentbench run report</title><style>{CSS}</style></head><body>"
)


def page_parts(
    report: read.Doc,
    suites: Sequence[SuiteIndex],
    entries: Iterable[tuple[int, read.Doc]],
    extras: Extras | None = None,
    *,
    name: str = "the run report",
) -> Iterator[str]:
    """The page in pieces, from the report's head members (``report``), its suites'
    indexes and their case entries (suite number, entry) in report order.

    A suite's details are those drawn as it was indexed where they hold (its
    :class:`~grid.DetailsAhead`), their entries left unread; else only the suite being
    drawn holds case details, :data:`~grid.CHUNK_CASES` at a time. The entries may be
    read a second time from the file (named ``name``) the indexes were built from: one
    that no longer matches them is refused (``report_changed``)."""
    extras = extras or Extras()
    yield PAGE_HEAD + _run_header(report, suites) + "<main>"
    if not suites:
        yield '<p class="empty">This report holds no suite.</p>'
    comparison = read.mapping(report, "comparison")
    compared = {read.text(entry, "id") for entry in read.items(comparison, "suites")}
    sides: dict[str, str] = {}
    links: dict[str, dict[str, str]] = {}
    stream = iter(entries)
    drawn_ahead: set[int] = set()
    for number, index in enumerate(suites):
        sid = f"s{number}"
        suite_id = read.text(index.fields, "id")
        # Computed once a suite: the grid and the case details list the same checks.
        names = check_names(index.rows)
        yield from _suite_head(number, report, index, names)
        if comparison:
            links[suite_id] = {row.case_id: f"#case-{sid}-{row.index}" for row in index.rows}
        transcripts = extras.transcripts.get(suite_id, {})
        before = None if extras.baseline is None else extras.baseline.get(suite_id, {})
        pairs: list[SidePair] | None = [] if before is not None and suite_id in compared else None
        ahead = index.ahead.drawn(names) if index.ahead is not None else None
        if ahead is not None and not transcripts and before is None:
            drawn_ahead.add(number)
            yield from ahead
        elif index.rows:
            details = CaseDetails(sid, names, transcripts, before)
            for row in index.rows:
                entry = _next_entry(stream, number, row, name, drawn_ahead)
                yield details.add(row, entry)
                if pairs is not None and before is not None:
                    pair = side_pair(row, entry, before, transcripts)
                    if pair is not None:
                        pairs.append(pair)
            yield details.finish()
        if pairs is not None:
            sides[suite_id] = side_by_side(sid, pairs)
        yield _suite_tail(index)
    yield (
        comparison_section(report, links, sides, extras.baseline_note)
        + f"{judged_section(report)}</main>"
        + f"<script>{SCRIPT}</script></body></html>\n"
    )


def _next_entry(
    stream: Iterator[tuple[int, read.Doc]],
    number: int,
    row: CaseRow,
    name: str,
    drawn_ahead: set[int],
) -> read.Doc:
    found = next(stream, None)
    # The entries of suites whose details were drawn ahead are passed over unused.
    while found is not None and found[0] in drawn_ahead:
        found = next(stream, None)
    if found is None or found[0] != number or read.text(found[1], "nodeid") != row.nodeid:
        raise AgentbenchError(
            "report_changed",
            f"case {row.index} of suite {number} is not the one read a moment before: "
            "the file changed while the page was drawn",
            file=name,
            field=f"suites[{number}].cases[{row.index}]",
        )
    return found[1]


def render_html(report: read.Doc, extras: Extras | None = None) -> str:
    """The whole page for a run report document (and its transcripts and baseline)."""
    suites = read.items(report, "suites")
    entries = (
        (number, entry)
        for number, suite in enumerate(suites)
        for entry in read.items(suite, "cases")
    )
    return "".join(page_parts(report, [index_suite(s) for s in suites], entries, extras))

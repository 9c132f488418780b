"""Judged diagnostics at the end of a benchmark run: ``--agentbench-judge-cache DIR``, or
``--agentbench-judge-samples`` (offline, from the shipped sample cassettes).

With a JSON run report (``--agentbench-report``), the report's cases are put to
the rubrics' panels once the report is written, through the session's chat-model
settings (so ``--agentbench-cassettes`` applies), and the judgments and labels
files land beside the report. Judging runs in the controlling process only, on
the finished report, so a run under ``-n 2`` is judged exactly as a serial one.
The run's exit status, outcomes, metrics and gates are decided before and are
never changed by it: a rubric's gate is shown with its verdict (or why it was
not checked, its judge uncalibrated) and enforced by ``agentbench judge`` only.
Up to ``--agentbench-concurrency`` seat calls are in flight at once, judged and
written as serially.

With ``--junitxml`` the judged numbers are added to the XML as testsuite
properties (``agentbench.judged.<rubric>``, ``agentbench.classifier.<name>``),
each naming its calibration: the file is written before the report is judged,
so the properties are added to it afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from xml.etree import ElementTree

import pytest

from pytest_agentbench.run.session import STATE_KEY
from pytest_agentbench.sdk.errors import AgentbenchError

if TYPE_CHECKING:
    from pytest_agentbench.judging.documents import JudgmentsDocument

SECTION = "agentbench judged diagnostics"


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    folder = config.getoption("agentbench_judge_cache", None)
    samples = bool(config.getoption("agentbench_judge_samples", False))
    if (folder is None and not samples) or hasattr(config, "workerinput"):
        return
    report = config.getoption("agentbench_report", None)
    terminalreporter.section(SECTION)
    if report is None or not Path(report).is_file():
        terminalreporter.write_line("not judged: judging reads the --agentbench-report file")
        return
    calibration = config.getoption("agentbench_judge_calibration", None)
    # Imported here: every benchmark run registers this plugin, few of them judge.
    from pytest_agentbench.agents.settings import configured_settings
    from pytest_agentbench.judging.panel import JudgeCache
    from pytest_agentbench.judging.report_judging import (
        SAMPLES_NOTE,
        judge_beside,
        sample_settings,
    )
    from pytest_agentbench.run.session import RUN_KEY
    from pytest_agentbench.sdk.registry import installed_registry

    run = config.stash.get(RUN_KEY, None)
    state = config.stash.get(STATE_KEY, None)
    ledger = None if state is None else state.options.ledger_dir
    concurrency = 1 if state is None else state.options.concurrency
    if samples:
        # Replayed samples are no call of this run's model: no share of its budget or ledger.
        settings, run, ledger = sample_settings(Path.cwd()), None, None
        terminalreporter.write_line(SAMPLES_NOTE)
    else:
        settings = configured_settings() if run is None else run.settings
    try:
        lines, _, document = judge_beside(
            Path(report),
            registry=installed_registry(),
            settings=settings,
            cache=None if folder is None else JudgeCache(Path(folder)),
            calibration=None if calibration is None else Path(calibration),
            run=run,
            ledger_dir=ledger,
            refuse_gates=False,
            into_report=True,
            concurrency=concurrency,
        )
    except AgentbenchError as exc:
        terminalreporter.write_line(f"not judged: {exc.render()}")
        return
    for line in lines:
        terminalreporter.write_line(line)
    xml = getattr(config.option, "xmlpath", None)
    if xml and Path(xml).is_file():
        add_junit_properties(Path(xml), junit_properties(document))
    redraw_html(config, Path(report))


def redraw_html(config: pytest.Config, report: Path) -> None:
    """The HTML page, written before judging, drawn again from the judged JSON report.

    The report gained its ``judged`` member only, beside its outcomes, metrics
    and gates, which stay as they were.
    """
    state = config.stash.get(STATE_KEY, None)
    html = None if state is None else state.options.html_path
    if html is not None:
        from pytest_agentbench.report.html import write_html_from

        write_html_from(report, html)


def junit_properties(document: JudgmentsDocument) -> list[tuple[str, str]]:
    """(name, value) per rubric and classifier: its numbers and its calibration."""
    from pytest_agentbench.judging.documents import MAJORITY, rubric_tally, tally_line
    from pytest_agentbench.scoring.kappa import UNCALIBRATED

    status = {calibration.rater: calibration for calibration in document.calibration}

    def calibrated(rater: str) -> str:
        found = status.get(rater)
        return found.describe().split(": ", 1)[1] if found else UNCALIBRATED

    found: list[tuple[str, str]] = []
    for name in sorted(document.rubrics):
        voted, unjudged = rubric_tally(document, name)
        passed = sum(1 for judgment in voted if judgment.passed)
        tally = tally_line(len(voted), unjudged)
        verdict = f"{passed}/{len(voted)} pass by majority" if voted else "not judged"
        found.append(
            (
                f"agentbench.judged.{name}",
                f"diagnostic: {verdict}{'; ' + tally if tally else ''}; "
                f"{calibrated(f'{name}:{MAJORITY}')}",
            )
        )
        for seat in document.rubrics[name].seats:
            found.append((f"agentbench.judged.{name}.seat.{seat}", calibrated(f"{name}:{seat}")))
    for spec in document.classifiers:
        count = sum(1 for c in document.classifications if c.classifier == spec.name)
        found.append(
            (
                f"agentbench.classifier.{spec.name}",
                f"{count} labels; {calibrated(f'{spec.name}:{spec.name}')}",
            )
        )
    return found


def add_junit_properties(path: Path, properties: list[tuple[str, str]]) -> None:
    tree = ElementTree.parse(path)
    root = tree.getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    for suite in suites:
        holder = suite.find("properties")
        if holder is None:
            holder = ElementTree.Element("properties")
            suite.insert(0, holder)
        for name, value in properties:
            ElementTree.SubElement(holder, "property", name=name, value=value)
    tree.write(path, encoding="utf-8", xml_declaration=True)

"""Judging a JSON run report: each suite's rubrics put to their panels, written beside it.

``agentbench judge`` and a judged benchmark run (``--agentbench-judge-cache``)
both call :func:`judge_beside`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from pytest_agentbench.agents.provenance import ModelRun
from pytest_agentbench.agents.settings import ChatSettings, resolve_settings
from pytest_agentbench.judging.calibration import rater_name, read_calibration
from pytest_agentbench.judging.documents import (
    BUILT_IN_CLASSIFIERS,
    MAJORITY,
    Classification,
    JudgedItem,
    JudgmentsDocument,
    RubricEntry,
    UnjudgedItem,
    content_digest_of_case,
    judged_summary,
    judgments_path,
    labels_path,
    labels_template,
    merge_labels,
    read_labels,
    revealed_labels,
    rubric_tally,
    stale_labels,
    tally_line,
)
from pytest_agentbench.judging.metering import JudgeMeter
from pytest_agentbench.judging.panel import JudgeCache, Panel
from pytest_agentbench.judging.rubric import RubricFile, load_rubric, missing_fields, point
from pytest_agentbench.judging.views import SuiteViews
from pytest_agentbench.report.json_report import RunReport, add_judged, read_report
from pytest_agentbench.report.judged_summary import JudgeTraffic
from pytest_agentbench.report.summary import SuiteSummary
from pytest_agentbench.scoring.kappa import UNCALIBRATED, Calibration, require_calibrated
from pytest_agentbench.sdk.canonical import JsonValue, pretty_json
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import write_file
from pytest_agentbench.sdk.registry import WorldRegistry


def suite_rubrics(
    folder: Path | None, extra: Sequence[Path], world_rubrics: Sequence[Path] = ()
) -> list[tuple[str, RubricFile]]:
    """(source, rubric file): the world's rubric folders', the suite's ``rubrics/*.yaml``,
    then ``extra``."""
    found: list[tuple[str, RubricFile]] = []
    folders = list(world_rubrics)
    if folder is not None:
        folders.append(folder / "rubrics")
    for rubrics in folders:
        for path in sorted(rubrics.glob("*.yaml")):
            source = f"{rubrics.parent.name}/rubrics/{path.name}"
            found.append((source, load_rubric(path, display=str(path))))
    found.extend((str(path), load_rubric(path, display=str(path))) for path in extra)
    return found


def judge_report(
    report: RunReport,
    report_name: str,
    *,
    suite_folders: dict[str, Path | None],
    extra_rubrics: Sequence[Path],
    world_rubrics: Mapping[str, Sequence[Path]],
    meter: JudgeMeter,
    subject_model: str | None,
    cache: JudgeCache | None,
    registry: WorldRegistry,
    concurrency: int = 1,
) -> JudgmentsDocument:
    """Every rubric's panel over the report's cases, each seat call metered by ``meter``.

    Up to ``concurrency`` seat calls of a panel are in flight at once; what is
    judged and written is a serial judging's (see :meth:`Panel.judge_all`).

    The rubrics' entries carry no traffic yet: it is known once ``meter`` finishes.
    """
    rubrics: dict[str, RubricEntry] = {}
    items: list[JudgedItem] = []
    unjudged: list[UnjudgedItem] = []
    classifications: list[Classification] = []
    used_classifiers = []
    for suite in report.suites:
        for source, rubric_file in suite_rubrics(
            suite_folders.get(suite.id), extra_rubrics, world_rubrics.get(suite.world, ())
        ):
            name = rubric_file.rubric.name
            seats, _ = rubric_file.seated(subject_model)
            metered = meter.for_rubric(name, rubric_file.digest(), seats)
            panel = Panel(
                rubric_file,
                metered.senders(),
                subject_model=subject_model,
                cache=cache,
                concurrency=concurrency,
            )
            rubrics.setdefault(
                name,
                RubricEntry(
                    rubric=rubric_file.rubric,
                    digest=panel.digest,
                    source=source,
                    seats=tuple(seat.seat_id for seat in panel.seats),
                    warnings=panel.warnings,
                ),
            )
            views = SuiteViews(registry, suite.world, suite_folders.get(suite.id))
            judged, skipped = _judge_suite(suite, panel, views, source)
            items.extend(judged)
            unjudged.extend(skipped)
        for spec in BUILT_IN_CLASSIFIERS:
            if spec.world != suite.world:
                continue
            if spec not in used_classifiers:
                used_classifiers.append(spec)
            for entry in suite.cases:
                # Trial 1 only, as the rubrics judge: an item is a case, its label bound to
                # the output it labelled, so every trial's label would name one item many
                # times, each bound to other content than the review shows (trial 1's).
                if entry.result.trial not in (None, 1):
                    continue
                for check in entry.result.checks:
                    if check.name == spec.check and isinstance(check.actual, str):
                        classifications.append(
                            Classification(
                                item=f"{suite.id}/{entry.result.case_id}",
                                classifier=spec.name,
                                label=check.actual,
                                content_digest=content_digest_of_case(entry.result),
                            )
                        )
    return JudgmentsDocument(
        report=report_name,
        subject_model=subject_model,
        rubrics=rubrics,
        items=tuple(items),
        unjudged=tuple(unjudged),
        classifiers=tuple(used_classifiers),
        classifications=tuple(classifications),
    )


def _judge_suite(
    suite: SuiteSummary, panel: Panel, views: SuiteViews, source: str
) -> tuple[list[JudgedItem], list[UnjudgedItem]]:
    """The suite's cases judged, and the ones that could not be, each with its reason.

    A case is judged once (its first trial). One that crashed, was excluded, kept
    no recorded output or has nothing at the rubric's pointer is not judged: it
    is counted with its reason, never judged on ``null`` nor skipped silently.
    """
    rubric = panel.rubric_file.rubric
    judged: list[tuple[str, JsonValue]] = []
    unjudged: list[UnjudgedItem] = []

    def skip(case_id: str, reason: str, detail: str) -> None:
        unjudged.append(
            UnjudgedItem.model_validate(
                {
                    "suite_id": suite.id,
                    "case_id": case_id,
                    "rubric": rubric.name,
                    "reason": reason,
                    "detail": detail,
                }
            )
        )

    for entry in suite.cases:
        result = entry.result
        if result.trial not in (None, 1):
            continue
        if result.exclusion is not None:
            skip(result.case_id, "excluded", result.exclusion)
            continue
        if result.recorded is None:
            skip(
                result.case_id,
                "not_recorded",
                "the report kept no output (larger than agentbench_max_output_bytes, "
                "or the run recorded none)",
            )
            continue
        outcome = result.recorded.outcome
        if outcome.output is None and outcome.failure_class is not None:
            skip(result.case_id, "crashed", outcome.failure_reason or str(outcome.failure_class))
            continue
        document = outcome.output
        if rubric.view:
            document = views.view(rubric.view, result.case_id, document, rubric_file=source)
        found, judged_output = point(document, rubric.content)
        if not found or judged_output is None:
            skip(result.case_id, "no_content", f"nothing at {rubric.content or '/'}")
            continue
        lacking = missing_fields(judged_output, rubric.fields)
        if lacking:
            # The question asks about what this content does not hold: not judged.
            skip(result.case_id, "no_content", f"the judged content has no {lacking[0]}")
            continue
        content: JsonValue = {"suite": suite.id, "case": result.case_id, "output": judged_output}
        judged.append((result.case_id, content))
    judgments = panel.judge_all([(f"{suite.id}/{case}", content) for case, content in judged])
    items = [
        JudgedItem(suite_id=suite.id, case_id=case, content=content, judgment=judgment)
        for (case, content), judgment in zip(judged, judgments, strict=True)
    ]
    return items, unjudged


REVEALED_LINE: Final = (
    "%d labels given with the raters' labels revealed before the label "
    "(revealed_before_label: true): counted"
)


def summary_lines(
    document: JudgmentsDocument,
    calibrations: dict[str, Calibration],
    stale: Mapping[str, int] | None = None,
    revealed: Mapping[str, int] | None = None,
) -> list[str]:
    """Judged diagnostics, each saying whether its judge is calibrated.

    Each rubric says how many of its cases it judged and why the others were
    not; an item no seat voted on is "not judged", never a failed pass. ``stale``:
    human labels by subject that the content or rubric has changed under;
    ``revealed``: counted human labels given with the raters' labels shown.
    """
    stale = stale or {}
    revealed = revealed or {}
    lines = ["judged diagnostics (beside the report; they decide no outcome, metric or gate):"]
    for name, entry in sorted(document.rubrics.items()):
        judged = [item.judgment for item in document.items if item.judgment.rubric == name]
        voted, unjudged = rubric_tally(document, name)
        passed = sum(1 for judgment in voted if judgment.passed)
        split = sum(1 for judgment in voted if not judgment.unanimous)
        unparsable = sum(judgment.unparsable for judgment in judged)
        dropped = sorted({seat.seat for judgment in judged for seat in judgment.dropped})
        status = _status(calibrations, name, MAJORITY)
        if voted:
            lines.append(
                f"  {name}: {passed}/{len(voted)} pass by majority, {split} split, "
                f"{unparsable} unparsable seat answers; {status}"
            )
        else:
            lines.append(f"  {name}: not judged; {status}")
        tally = tally_line(len(voted), unjudged)
        if tally:
            lines.append(f"    {tally}")
        seats = [f"{seat} ({_status(calibrations, name, seat)})" for seat in entry.seats]
        lines.append(f"    seats: {', '.join(seats) or 'none'}")
        failed = sum(1 for judgment in judged if judgment.failed)
        if failed:
            lines.append(
                f"    {failed} items judged by fewer seats: an endpoint failed (5xx, timeout); "
                "not cached, asked again next time"
            )
        lines.extend(f"    warning: {warning}" for warning in entry.warnings)
        if stale.get(name):
            lines.append(
                f"    {stale[name]} stale labels (the content or rubric changed since "
                "labelled): not counted"
            )
        if revealed.get(name):
            lines.append(f"    {REVEALED_LINE % revealed[name]}")
        refused = sum(1 for judgment in judged if judgment.refused)
        if refused:
            lines.append(
                f"    [{entry.traffic.refusal if entry.traffic else 'budget_exceeded'}] "
                f"{refused} items judged by fewer seats: a budget refused their calls"
            )
        if entry.traffic is not None:
            lines.append(f"    judges: {traffic_line(entry.traffic)}")
        if dropped:
            lines.append(f"    dropped (same family as the model under test): {', '.join(dropped)}")
    for spec in document.classifiers:
        labelled = [c for c in document.classifications if c.classifier == spec.name]
        lines.append(
            f"  classifier {spec.name}: {len(labelled)} labels; "
            f"{_status(calibrations, spec.name, spec.name)}"
        )
        if stale.get(spec.name):
            lines.append(
                f"    {stale[spec.name]} stale labels (the case's output changed since "
                "labelled): not counted"
            )
        if revealed.get(spec.name):
            lines.append(f"    {REVEALED_LINE % revealed[spec.name]}")
    return lines


def traffic_line(traffic: JudgeTraffic) -> str:
    cost = "" if traffic.cost is None else f", cost {traffic.cost}"
    ledger = "" if traffic.ledger is None else f"; ledger {traffic.ledger}"
    return (
        f"{', '.join(traffic.models)} ({traffic.mode}): {traffic.calls} calls, "
        f"{traffic.attempts} attempts, tokens {traffic.input_tokens} in / "
        f"{traffic.output_tokens} out{cost}, {traffic.refused} refused{ledger}"
    )


def judge_calibrations(
    document: JudgmentsDocument, calibrations: dict[str, Calibration]
) -> tuple[Calibration, ...]:
    """Each rubric's majority and seats, each classifier: as calibrated, or ``uncalibrated``."""
    raters = [
        rater_name(name, rater)
        for name, entry in sorted(document.rubrics.items())
        for rater in (MAJORITY, *entry.seats)
    ]
    raters += [rater_name(spec.name, spec.name) for spec in document.classifiers]
    return tuple(calibrations.get(rater) or Calibration.uncalibrated(rater) for rater in raters)


def _status(calibrations: dict[str, Calibration], subject: str, rater: str) -> str:
    calibration = calibrations.get(rater_name(subject, rater))
    if calibration is None:
        return UNCALIBRATED
    return calibration.describe().split(": ", 1)[1]


def judged_gates(
    rubric_files: dict[str, RubricFile],
    document: JudgmentsDocument,
    calibrations: dict[str, Calibration],
) -> list[tuple[str, bool, str, AgentbenchError | None]]:
    """(rubric, passed, line, refusal) for each rubric's gate.

    A gate whose panel majority is not calibrated (well enough) is not checked:
    it fails, its line says why, and the refusal comes with it.
    """
    verdicts: list[tuple[str, bool, str, AgentbenchError | None]] = []
    for name, rubric_file in sorted(rubric_files.items()):
        gate = rubric_file.gate
        if gate is None:
            continue
        gate_name = f"judged:{name}"
        try:
            calibration = require_calibrated(
                calibrations.get(rater_name(name, MAJORITY)),
                gate=gate_name,
                min_kappa=gate.min_kappa,
            )
        except AgentbenchError as refusal:
            line = f"{gate_name}: not checked: {refusal.render()}"
            verdicts.append((name, False, line, refusal))
            continue
        judged = [item.judgment for item in document.items if item.judgment.rubric == name]
        rate = sum(1 for j in judged if j.passed) / len(judged) if judged else 0.0
        passed = bool(judged) and rate >= gate.min_pass_rate
        verdicts.append(
            (
                name,
                passed,
                f"{gate_name}: pass rate {rate:.3f} vs >= {gate.min_pass_rate} "
                f"({'PASS' if passed else 'FAIL'}; judge {calibration.describe()})",
                None,
            )
        )
    return verdicts


SAMPLE_CASSETTES: Final = Path(__file__).resolve().parent / "sample_cassettes"
"""The shipped sample panels' recorded calls (``tests/record_sample_judgments.py``), made
against the project's scripted loopback judge server (``tests/judge_server.py``), not a
real model: they exercise the judged path offline, they judge nothing."""
SAMPLES_NOTE: Final = (
    "judged from the shipped sample cassettes, recorded against the project's loopback "
    "judge server, not a real model: they show the path, not a judgment"
)


def sample_settings(root: Path) -> ChatSettings:
    """Chat settings that replay :data:`SAMPLE_CASSETTES` and reach no endpoint: nothing
    from the environment, so a configured endpoint or key is never used."""
    return resolve_settings(
        ini=lambda key: None,
        environ={},
        overrides={"cassettes": str(SAMPLE_CASSETTES), "cassette_mode": "replay"},
        root=root,
    )


def suite_folders(report: RunReport, registry: WorldRegistry) -> dict[str, Path | None]:
    """Each reported suite's folder: a built-in suite by id, else the project convention
    ``suites/<suite-id>`` under the working directory, else ``None``."""
    shipped = registry.suites()
    folders: dict[str, Path | None] = {}
    for suite in report.suites:
        conventional = Path.cwd() / "suites" / suite.id
        built_in = shipped.get(suite.id)
        if built_in is not None:
            folders[suite.id] = built_in.resolve()
        else:
            folders[suite.id] = conventional if conventional.is_dir() else None
    return folders


def judge_beside(
    source: Path,
    *,
    registry: WorldRegistry,
    settings: ChatSettings,
    extra: Sequence[Path] = (),
    subject_model: str | None = None,
    cache: JudgeCache | None = None,
    calibration: Path | None = None,
    run: ModelRun | None = None,
    ledger_dir: Path | None = None,
    refuse_gates: bool = True,
    into_report: bool = False,
    concurrency: int = 1,
    max_report_bytes: int | None = None,
) -> tuple[list[str], dict[str, tuple[bool, str]], JudgmentsDocument]:
    """Judge the report at ``source``, write its judgments and labels beside it.

    Judge calls share ``run``'s budget guard and rate limits (the session's model
    run; by default one of ``settings``' own) and, with ``ledger_dir``, are rows of
    each rubric's judge ledger there. With ``into_report`` the report gains its
    ``judged`` member. Returns the lines to show, each judged gate's verdict and
    line by rubric, and the judgments; with ``refuse_gates`` a gate refused for
    an uncalibrated judge is raised once every file is written. Up to
    ``concurrency`` seat calls are in flight at once; every file is as a serial
    judging writes it. A report over ``max_report_bytes`` is refused
    (``report_too_large``) before it is read; by default, only each value is bounded.
    """
    report = read_report(str(source), max_bytes=max_report_bytes)
    folders = suite_folders(report, registry)
    world_rubrics = {suite.world: registry.rubric_roots(suite.world) for suite in report.suites}
    calibrations = read_calibration(calibration) if calibration is not None else {}
    meter = JudgeMeter(ModelRun(settings) if run is None else run, ledger_dir)
    try:
        document = judge_report(
            report,
            source.name,
            suite_folders=folders,
            extra_rubrics=extra,
            world_rubrics=world_rubrics,
            meter=meter,
            subject_model=subject_model or settings.model,
            cache=cache,
            registry=registry,
            concurrency=concurrency,
        )
        traffic = meter.finish()
    finally:
        meter.close()
    document = document.model_copy(
        update={
            "calibration": judge_calibrations(document, calibrations),
            "rubrics": {
                name: entry.model_copy(update={"traffic": traffic.get(name)})
                for name, entry in document.rubrics.items()
            },
        }
    )
    output = judgments_path(source)
    write_file(output, pretty_json(document.model_dump(mode="json")))
    labels = labels_path(source)
    earlier = read_labels(labels) if labels.is_file() else None
    template = merge_labels(labels_template(document, output.name), earlier)
    write_file(labels, pretty_json(template.model_dump(mode="json")))
    lines = summary_lines(document, calibrations, stale_labels(template), revealed_labels(template))
    lines.append(f"wrote {output} and {labels}")
    rubric_files = {
        rubric_file.rubric.name: rubric_file
        for suite in report.suites
        for _, rubric_file in suite_rubrics(
            folders.get(suite.id), extra, world_rubrics[suite.world]
        )
    }
    gates = judged_gates(rubric_files, document, calibrations)
    lines.extend(line for _, _, line, _ in gates)
    verdicts = {name: (passed, line) for name, passed, line, _ in gates}
    if into_report:
        gate_lines = {name: line for name, (_, line) in verdicts.items()}
        add_judged(source, judged_summary(document, output.name, gate_lines))
    refusals = [refusal for _, _, _, refusal in gates if refusal is not None]
    if refuse_gates and refusals:
        raise refusals[0]
    return lines, verdicts, document

"""The files judging writes beside a run report: judgments, and labels for calibration.

``<report>.judgments.json`` holds every judged item (each seat's verdict, the
majority, the disagreement, dropped seats) and every deterministic classifier's
label, apart from the report: nothing in it feeds the report's outcomes,
metrics or gates. ``<report>.labels.json`` holds, per item, what each rater
said and what a person said (``human``; ``null`` until labelled).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal

from pydantic import Field, ValidationError

from pytest_agentbench.judging.panel import Judgment
from pytest_agentbench.judging.rubric import Rubric
from pytest_agentbench.report.judged_summary import (
    JudgedCase,
    JudgedClassifier,
    JudgedRubric,
    JudgedSummary,
    JudgeTraffic,
)
from pytest_agentbench.scoring.kappa import Calibration
from pytest_agentbench.sdk.canonical import JsonValue, read_json
from pytest_agentbench.sdk.contracts import Record
from pytest_agentbench.sdk.errors import AgentbenchError, field_path

JUDGMENTS_SCHEME: Final = "agentbench-judgments/1"
LABELS_SCHEME: Final = "agentbench-labels/1"
MAJORITY: Final = "majority"
"""The rater name of a panel's majority vote in a labels file."""


class ClassifierSpec(Record):
    """A world's deterministic classifier, read from a check's ``actual`` in the report."""

    name: str
    world: str
    check: str
    categories: tuple[str, ...]


BUILT_IN_CLASSIFIERS: Final = (
    ClassifierSpec(
        name="toolgrammar.behaviour",
        world="toolgrammar",
        check="behaviour_correct",
        categories=("answer", "abstain", "refuse", "clarify", "error"),
    ),
)


class RubricEntry(Record):
    rubric: Rubric
    digest: str
    source: str
    """The rubric file, relative to its suite folder."""
    seats: tuple[str, ...]
    traffic: JudgeTraffic | None = None
    """What its seats sent (models, calls, tokens, cost, refusals, ledger); ``None`` when
    every verdict came from the judge cache."""


class Classification(Record):
    item: str
    classifier: str
    label: str


class JudgedItem(Record):
    suite_id: str
    case_id: str
    content: JsonValue
    """What the panel judged (the case's task and the adapter's output), shown on review."""
    judgment: Judgment


class JudgmentsDocument(Record):
    scheme: Literal["agentbench-judgments/1"] = JUDGMENTS_SCHEME
    report: str
    subject_model: str | None
    rubrics: dict[str, RubricEntry] = Field(default_factory=dict)
    items: tuple[JudgedItem, ...] = ()
    classifiers: tuple[ClassifierSpec, ...] = ()
    classifications: tuple[Classification, ...] = ()
    calibration: tuple[Calibration, ...] = ()
    """Each rubric's majority and each classifier against human labels: ``uncalibrated``
    (no labels, or no ``--calibration`` given) or its kappa, confusion and support."""


class LabelItem(Record):
    item: str
    """``<suite>/<case>`` plus the rubric or classifier, unique in the file."""
    subject: str
    """The rubric's or classifier's name."""
    kind: Literal["rubric", "classifier"]
    categories: tuple[str, ...]
    predictions: dict[str, str]
    """Rater (seat id, ``majority``, or the classifier's name) to its label."""
    disagreement: int = 0
    human: str | None = None


class LabelsDocument(Record):
    scheme: Literal["agentbench-labels/1"] = LABELS_SCHEME
    judgments: str
    items: tuple[LabelItem, ...]


def item_id(suite_id: str, case_id: str, subject: str) -> str:
    return f"{suite_id}/{case_id}#{subject}"


def labels_template(document: JudgmentsDocument, source: str) -> LabelsDocument:
    """Every judged and classified item with its raters' labels and no human label yet."""
    items: list[LabelItem] = []
    for judged in document.items:
        judgment = judged.judgment
        entry = document.rubrics[judgment.rubric]
        predictions = {
            verdict.seat: str(verdict.score)
            for verdict in judgment.verdicts
            if verdict.score is not None
        }
        if judgment.majority is not None:
            predictions[MAJORITY] = str(judgment.majority)
        items.append(
            LabelItem(
                item=item_id(judged.suite_id, judged.case_id, judgment.rubric),
                subject=judgment.rubric,
                kind="rubric",
                categories=tuple(str(point) for point in entry.rubric.scale.points),
                predictions=predictions,
                disagreement=judgment.disagreement,
            )
        )
    specs = {spec.name: spec for spec in document.classifiers}
    for classified in document.classifications:
        items.append(
            LabelItem(
                item=f"{classified.item}#{classified.classifier}",
                subject=classified.classifier,
                kind="classifier",
                categories=specs[classified.classifier].categories,
                predictions={classified.classifier: classified.label},
            )
        )
    return LabelsDocument(judgments=source, items=tuple(items))


def merge_labels(template: LabelsDocument, earlier: LabelsDocument | None) -> LabelsDocument:
    """The template with the human labels an earlier labels file already holds."""
    if earlier is None:
        return template
    given = {item.item: item.human for item in earlier.items if item.human is not None}
    return template.model_copy(
        update={
            "items": tuple(
                item.model_copy(update={"human": given.get(item.item)}) for item in template.items
            )
        }
    )


def _read(path: Path, model: type[JudgmentsDocument] | type[LabelsDocument]) -> object:
    raw = read_json(path, display=str(path))
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise AgentbenchError(
            "invalid_judging_file", first["msg"], file=str(path), field=field_path(first["loc"])
        ) from None


def read_judgments(path: Path) -> JudgmentsDocument:
    document = _read(path, JudgmentsDocument)
    assert isinstance(document, JudgmentsDocument)
    return document


def read_labels(path: Path) -> LabelsDocument:
    document = _read(path, LabelsDocument)
    assert isinstance(document, LabelsDocument)
    for item in document.items:
        if item.human is not None and item.human not in item.categories:
            raise AgentbenchError(
                "invalid_labels",
                f"human label {item.human!r} is not one of {list(item.categories)}",
                file=str(path),
                field=item.item,
            )
    return document


def rater_calibration(document: JudgmentsDocument, subject: str, rater: str) -> Calibration:
    """The calibration the document holds for ``rater`` of ``subject``, else ``uncalibrated``."""
    name = f"{subject}:{rater}"
    for calibration in document.calibration:
        if calibration.rater == name:
            return calibration
    return Calibration.uncalibrated(name)


def judged_summary(
    document: JudgmentsDocument, judgments: str, gates: Mapping[str, str]
) -> JudgedSummary:
    """What the run report carries of the judgments: counts, calibration, traffic, gates.

    ``gates``: each gated rubric's verdict line, or why the gate was not checked.
    """
    rubrics: list[JudgedRubric] = []
    for name, entry in sorted(document.rubrics.items()):
        judged = [item.judgment for item in document.items if item.judgment.rubric == name]
        rubrics.append(
            JudgedRubric(
                name=name,
                source=entry.source,
                seats=entry.seats,
                dropped=tuple(
                    sorted({seat.seat for judgment in judged for seat in judgment.dropped})
                ),
                items=len(judged),
                passed=sum(1 for judgment in judged if judgment.passed),
                split=sum(1 for judgment in judged if not judgment.unanimous),
                unparsable=sum(judgment.unparsable for judgment in judged),
                refused=sum(1 for judgment in judged if judgment.refused),
                calibration=rater_calibration(document, name, MAJORITY),
                seat_calibration=tuple(
                    rater_calibration(document, name, seat) for seat in entry.seats
                ),
                traffic=entry.traffic,
                gate=gates.get(name),
            )
        )
    classifiers = tuple(
        JudgedClassifier(
            name=spec.name,
            labels=sum(1 for c in document.classifications if c.classifier == spec.name),
            calibration=rater_calibration(document, spec.name, spec.name),
        )
        for spec in document.classifiers
    )
    cases = tuple(
        JudgedCase(
            suite_id=item.suite_id,
            case_id=item.case_id,
            rubric=item.judgment.rubric,
            majority=item.judgment.majority,
            passed=item.judgment.passed,
            disagreement=item.judgment.disagreement,
            scores={verdict.seat: verdict.score for verdict in item.judgment.verdicts},
            unparsable=item.judgment.unparsable,
            refused=item.judgment.refused,
        )
        for item in document.items
    )
    return JudgedSummary(
        judgments=judgments, rubrics=tuple(rubrics), classifiers=classifiers, cases=cases
    )


def judgments_path(report: Path) -> Path:
    return report.with_name(report.stem + ".judgments.json")


def labels_path(report: Path) -> Path:
    return report.with_name(report.stem + ".labels.json")

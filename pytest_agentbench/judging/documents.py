"""The files judging writes beside a run report: judgments, and labels for calibration.

``<report>.judgments.json`` holds every judged item (each seat's verdict, the
majority, the disagreement, dropped seats) and every deterministic classifier's
label, apart from the report: nothing in it feeds the report's outcomes,
metrics or gates. ``<report>.labels.json`` holds, per item, what each rater
said and what a person said (``human``; ``null`` until labelled).

Every label item carries the ``digest`` of exactly what was judged (the rubric
version and the judged content, or the classifier and the case's output), and a
human label the digest it was given against (``human_digest``). A label whose
digest is not the item's current one is stale: the content or the rubric changed
since the person labelled it. It is kept and shown as stale, never counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal

from pydantic import Field, ValidationError

from pytest_agentbench.judging.panel import Judgment, content_digest
from pytest_agentbench.judging.rubric import Rubric
from pytest_agentbench.report.judged_summary import (
    JudgedCase,
    JudgedClassifier,
    JudgedRubric,
    JudgedSummary,
    JudgeTraffic,
)
from pytest_agentbench.scoring.kappa import Calibration
from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, read_json, sha256_hex
from pytest_agentbench.sdk.contracts import CaseResult, Record
from pytest_agentbench.sdk.errors import AgentbenchError, field_path

JUDGMENTS_SCHEME: Final = "agentbench-judgments/1"
LABELS_SCHEME: Final = "agentbench-labels/1"
MAJORITY: Final = "majority"
"""The rater name of a panel's majority vote in a labels file."""
UNBOUND: Final = "unbound"
"""The ``human_digest`` of a label carried from a labels file that bound no digests."""


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
    warnings: tuple[str, ...] = ()
    """Models of no known family (a seat, or the model under test): see ``judging.families``."""
    traffic: JudgeTraffic | None = None
    """What its seats sent (models, calls, tokens, cost, refusals, ledger); ``None`` when
    every verdict came from the judge cache."""


class Classification(Record):
    item: str
    classifier: str
    label: str
    content_digest: str | None = None
    """sha256 of the case's recorded output the classifier labelled (else of its label)."""


class UnjudgedItem(Record):
    """A case a rubric did not judge, and why: counted, never silently skipped."""

    suite_id: str
    case_id: str
    rubric: str
    reason: Literal["crashed", "excluded", "not_recorded", "no_content"]
    """``crashed``: the adapter failed and left no output; ``excluded``: the case was
    not graded; ``not_recorded``: the report kept no output (larger than
    ``agentbench_max_output_bytes``, or not recorded); ``no_content``: the
    rubric's ``content`` pointer finds nothing in the output."""
    detail: str = ""


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
    unjudged: tuple[UnjudgedItem, ...] = ()
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
    digest: str | None = None
    """sha256 of what was judged: the rubric digest and the judged content's digest, or
    the classifier and the case's output digest. ``None`` in a file written before
    labels were bound: every human label on it is then stale."""
    human: str | None = None
    human_digest: str | None = None
    """The ``digest`` the human label was given against; ``None``: this file's own."""
    revealed_before_label: bool | None = None
    """Whether the seats' scores and reasons were shown before the human label was given
    (``agentbench review``'s reveal toggle); ``None``: not recorded (a hand-written label)."""

    @property
    def stale(self) -> bool:
        """A human label given to other content or another rubric version."""
        if self.human is None:
            return False
        return self.digest is None or (
            self.human_digest is not None and self.human_digest != self.digest
        )

    @property
    def counted(self) -> str | None:
        """The human label, if it counts (it is not stale)."""
        return None if self.stale else self.human


class LabelsDocument(Record):
    scheme: Literal["agentbench-labels/1"] = LABELS_SCHEME
    judgments: str
    items: tuple[LabelItem, ...]


def item_id(suite_id: str, case_id: str, subject: str) -> str:
    return f"{suite_id}/{case_id}#{subject}"


def judged_digest(subject_digest: str, content_digest: str) -> str:
    """What a label is bound to: the rubric (or classifier) version and the judged content."""
    bound: JsonValue = [subject_digest, content_digest]
    return sha256_hex(canonical_json(bound).encode("utf-8"))


def content_digest_of_case(result: CaseResult) -> str | None:
    """sha256 of a case's recorded output (what a classifier labelled), if recorded."""
    if result.recorded is None:
        return None
    return content_digest(result.recorded.outcome.output)


def classifier_digest(spec: ClassifierSpec) -> str:
    return sha256_hex(canonical_json(spec.model_dump(mode="json")).encode("utf-8"))


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
                digest=judged_digest(judgment.rubric_digest, judgment.content_digest),
            )
        )
    specs = {spec.name: spec for spec in document.classifiers}
    for classified in document.classifications:
        spec = specs[classified.classifier]
        content = classified.content_digest or sha256_hex(classified.label.encode("utf-8"))
        items.append(
            LabelItem(
                item=f"{classified.item}#{classified.classifier}",
                subject=classified.classifier,
                kind="classifier",
                categories=spec.categories,
                predictions={classified.classifier: classified.label},
                digest=judged_digest(classifier_digest(spec), content),
            )
        )
    return LabelsDocument(judgments=source, items=tuple(items))


def merge_labels(template: LabelsDocument, earlier: LabelsDocument | None) -> LabelsDocument:
    """The template with the human labels an earlier labels file already holds.

    Each label keeps the digest it was given against (the earlier item's own when
    it names none, :data:`UNBOUND` when that file bound none), so a label on
    content or a rubric that has since changed comes out stale.
    """
    if earlier is None:
        return template
    given = {
        item.item: (
            item.human,
            item.human_digest or item.digest or UNBOUND,
            item.revealed_before_label,
        )
        for item in earlier.items
        if item.human is not None
    }
    merged = []
    for item in template.items:
        human, bound, revealed = given.get(item.item, (None, None, None))
        merged.append(
            item.model_copy(
                update={"human": human, "human_digest": bound, "revealed_before_label": revealed}
            )
        )
    return template.model_copy(update={"items": tuple(merged)})


def stale_labels(document: LabelsDocument) -> dict[str, int]:
    """Stale human labels by subject (rubric or classifier name)."""
    counts: dict[str, int] = {}
    for item in document.items:
        if item.stale:
            counts[item.subject] = counts.get(item.subject, 0) + 1
    return counts


def revealed_labels(document: LabelsDocument) -> dict[str, int]:
    """Counted human labels given with the seats already shown (``revealed_before_label``),
    by subject: they count, and are reported, since a label that saw the judges may lean
    toward them."""
    counts: dict[str, int] = {}
    for item in document.items:
        if item.counted is not None and item.revealed_before_label:
            counts[item.subject] = counts.get(item.subject, 0) + 1
    return dict(sorted(counts.items()))


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


NO_VOTE: Final = "no seat voted"


def rubric_tally(document: JudgmentsDocument, rubric: str) -> tuple[list[Judgment], dict[str, int]]:
    """The rubric's judgments some seat voted on, and its unjudged cases by reason.

    A judgment no seat voted on (every seat dropped, refused or failed) is
    unjudged (:data:`NO_VOTE`), never a failed pass.
    """
    judged = [item.judgment for item in document.items if item.judgment.rubric == rubric]
    voted = [judgment for judgment in judged if judgment.majority is not None]
    reasons: dict[str, int] = {}
    for skipped in document.unjudged:
        if skipped.rubric == rubric:
            reasons[skipped.reason] = reasons.get(skipped.reason, 0) + 1
    if len(judged) > len(voted):
        reasons[NO_VOTE] = len(judged) - len(voted)
    return voted, dict(sorted(reasons.items()))


def tally_line(voted: int, reasons: Mapping[str, int]) -> str:
    """``judged 2 of 3; 1 unjudged: 1 crashed``, or ``""`` when every case was judged."""
    unjudged = sum(reasons.values())
    if not unjudged:
        return ""
    shown = ", ".join(f"{count} {reason}" for reason, count in reasons.items())
    return f"judged {voted} of {voted + unjudged}; {unjudged} unjudged: {shown}"


def judged_summary(
    document: JudgmentsDocument, judgments: str, gates: Mapping[str, str]
) -> JudgedSummary:
    """What the run report carries of the judgments: counts, calibration, traffic, gates.

    ``gates``: each gated rubric's verdict line, or why the gate was not checked.
    """
    rubrics: list[JudgedRubric] = []
    for name, entry in sorted(document.rubrics.items()):
        judged = [item.judgment for item in document.items if item.judgment.rubric == name]
        voted, unjudged = rubric_tally(document, name)
        rubrics.append(
            JudgedRubric(
                name=name,
                source=entry.source,
                seats=entry.seats,
                dropped=tuple(
                    sorted({seat.seat for judgment in judged for seat in judgment.dropped})
                ),
                items=len(voted),
                unjudged=unjudged,
                passed=sum(1 for judgment in voted if judgment.passed),
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

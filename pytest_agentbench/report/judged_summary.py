"""The judged diagnostics as the run report carries them: beside, never inside, the outcomes.

Kept free of the judging machinery (panels, transports) so the run report can
name these records without importing it. Every rubric and classifier states
its calibration; every rubric states the traffic its judges made (the judge
models, calls, tokens, cost, budget refusals) and the ledger that records it.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, StrictStr

from pytest_agentbench.agents.provenance_records import DecimalText
from pytest_agentbench.scoring.kappa import Calibration
from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, Record

JUDGE_LEDGER_FOLDER: Final = "%judges"
"""The judges' ledgers' folder inside the run's ledger folder.

No suite's folder can be named so: suite ids are percent-encoded there, and
``%j`` is no encoding.
"""


def judge_ledger_name(rubric: str) -> str:
    """The rubric's judge ledger, relative to the ledger folder (rubric names are file names)."""
    return f"{JUDGE_LEDGER_FOLDER}/{rubric}.ndjson"


class JudgeTraffic(Record):
    """What one rubric's panel sent to the judge models, metered like the model run's calls."""

    model_config = BUILT_ON_FIRST_USE

    models: tuple[StrictStr, ...]
    """The judge models called (each seat's ``model``), in seat order."""
    mode: Literal["live", "record", "replay", "mixed"]
    calls: int
    """Judge requests sent (a refused one is not sent)."""
    attempts: int
    input_tokens: int
    output_tokens: int
    cost: DecimalText | None
    """At the run's pricing table's rates; ``None`` without a table."""
    refused: int
    """Seat calls a budget refused before they were sent."""
    refusal: StrictStr | None
    """The first refusal's code."""
    ledger: StrictStr | None
    """The rubric's judge ledger, relative to the ledger folder; ``None`` without one."""


class JudgedRubric(Record):
    model_config = BUILT_ON_FIRST_USE

    name: StrictStr
    source: StrictStr
    seats: tuple[StrictStr, ...]
    dropped: tuple[StrictStr, ...]
    """Seats left out for sharing a family with the model under test."""
    items: int
    """Cases the panel judged: at least one seat voted."""
    unjudged: dict[StrictStr, int] = Field(default_factory=dict)
    """Cases not judged, by reason (``crashed``, ``excluded``, ``not_recorded``,
    ``no_content``, ``no seat voted``): counted, never skipped silently."""
    passed: int
    """Items whose panel majority reached the rubric's ``pass_at``."""
    split: int
    unparsable: int
    refused: int
    """Items with at least one seat call refused by a budget (still counted in ``items``)."""
    calibration: Calibration
    """The panel's majority against the human labels."""
    seat_calibration: tuple[Calibration, ...] = ()
    """Each seat against the human labels, in ``seats`` order."""
    traffic: JudgeTraffic | None
    """``None`` when every verdict came from the judge cache."""
    gate: StrictStr | None = None
    """The rubric's own gate: its verdict with the judge's kappa, or why it was not checked
    (an uncalibrated judge). Never one of the run's gates."""


class JudgedCase(Record):
    """One case's judgment on one rubric: the majority beside each seat's score."""

    model_config = BUILT_ON_FIRST_USE

    suite_id: StrictStr
    case_id: StrictStr
    rubric: StrictStr
    majority: int | None
    passed: bool | None
    disagreement: int
    scores: dict[str, int | None]
    """Seat to score; ``None`` for a seat whose call a budget refused."""
    unparsable: int
    refused: int


class JudgedClassifier(Record):
    model_config = BUILT_ON_FIRST_USE

    name: StrictStr
    labels: int
    calibration: Calibration


class JudgedSummary(Record):
    """The run report's ``judged``: diagnostics only; no outcome, metric or gate reads them."""

    model_config = BUILT_ON_FIRST_USE

    role: Literal["diagnostic"] = "diagnostic"
    judgments: StrictStr
    """The judgments file beside the report, holding every seat's verdict."""
    rubrics: tuple[JudgedRubric, ...]
    classifiers: tuple[JudgedClassifier, ...]
    cases: tuple[JudgedCase, ...] = ()
    """Every judged case, in the judgments' order."""

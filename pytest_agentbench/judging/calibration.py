"""Judges' calibration against human labels: computed from a labels file, written and read.

``agentbench calibrate`` writes it, ``agentbench judge`` and judged runs read it
to decide whether a rubric's gate may be checked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from pytest_agentbench.judging.documents import LabelsDocument
from pytest_agentbench.scoring.kappa import (
    DEFAULT_MIN_LABELS,
    UNCALIBRATED,
    Calibration,
    calibrate,
)
from pytest_agentbench.sdk.canonical import JsonValue, read_json
from pytest_agentbench.sdk.errors import AgentbenchError

CALIBRATION_SCHEME = "agentbench-calibration/1"


def rater_name(subject: str, rater: str) -> str:
    return f"{subject}:{rater}"


def calibrate_labels(
    document: LabelsDocument, *, min_labels: int = DEFAULT_MIN_LABELS
) -> tuple[Calibration, ...]:
    """One calibration per (subject, rater), in name order.

    A rubric's scale is ordered (quadratic-weighted kappa), a classifier's labels
    are not; stale human labels (:attr:`LabelItem.stale`) are counted apart, never
    compared.
    """
    human: dict[str, dict[str, str]] = defaultdict(dict)
    predicted: dict[str, dict[str, str]] = defaultdict(dict)
    categories: dict[str, tuple[str, ...]] = {}
    ordinal: dict[str, bool] = {}
    stale: dict[str, int] = defaultdict(int)
    for item in document.items:
        for rater, label in item.predictions.items():
            name = rater_name(item.subject, rater)
            known = categories.setdefault(name, item.categories)
            if known != item.categories:
                raise AgentbenchError(
                    "invalid_labels", f"{name} is labelled on two category sets", field=item.item
                )
            predicted[name][item.item] = label
            ordinal[name] = item.kind == "rubric"
            if item.stale:
                stale[name] += 1
            elif item.human is not None:
                human[name][item.item] = item.human
    return tuple(
        calibrate(
            name,
            human[name],
            predicted[name],
            categories[name],
            ordinal=ordinal[name],
            min_labels=min_labels,
            stale=stale[name],
        )
        for name in sorted(predicted)
    )


def calibration_json(
    calibrations: tuple[Calibration, ...],
    source: str,
    *,
    min_labels: int = DEFAULT_MIN_LABELS,
    revealed: Mapping[str, int] | None = None,
) -> JsonValue:
    """The ``calibrate --json`` file; ``revealed``: counted labels given with the seats
    shown, by subject (:func:`~pytest_agentbench.judging.documents.revealed_labels`)."""
    return {
        "scheme": CALIBRATION_SCHEME,
        "labels": source,
        "min_labels": min_labels,
        "revealed_before_label": dict(revealed or {}),
        "raters": [calibration.model_dump(mode="json") for calibration in calibrations],
    }


def read_calibration(path: Path) -> dict[str, Calibration]:
    """The calibrations a ``calibrate --json`` file holds, by rater name."""
    raw = read_json(path, display=str(path))
    if not isinstance(raw, dict) or raw.get("scheme") != CALIBRATION_SCHEME:
        raise AgentbenchError(
            "invalid_calibration", f"not an {CALIBRATION_SCHEME} file", file=str(path)
        )
    raters = raw.get("raters")
    if not isinstance(raters, list):
        raise AgentbenchError("invalid_calibration", "no raters list", file=str(path))
    found = [Calibration.model_validate(rater) for rater in raters]
    # A file from before labels had a minimum says "calibrated" on any support.
    held = [
        calibration
        if calibration.support >= calibration.min_labels
        else calibration.model_copy(update={"status": UNCALIBRATED})
        for calibration in found
    ]
    return {calibration.rater: calibration for calibration in held}

"""``agentbench calibrate LABELS``: Cohen's kappa of every judge and classifier vs. people.

For each rubric: each seat and the panel's majority; for each classifier: the
classifier. Each with its confusion matrix and support; a rater none of whose
items a person has labelled is reported ``uncalibrated``.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import Any

from pytest_agentbench.judging.documents import LabelsDocument, read_labels
from pytest_agentbench.scoring.kappa import Calibration, calibrate
from pytest_agentbench.sdk.canonical import JsonValue, pretty_json, read_json
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import write_file

CALIBRATION_SCHEME = "agentbench-calibration/1"


def rater_name(subject: str, rater: str) -> str:
    return f"{subject}:{rater}"


def calibrate_labels(document: LabelsDocument) -> tuple[Calibration, ...]:
    """One calibration per (subject, rater), in name order."""
    human: dict[str, dict[str, str]] = defaultdict(dict)
    predicted: dict[str, dict[str, str]] = defaultdict(dict)
    categories: dict[str, tuple[str, ...]] = {}
    for item in document.items:
        for rater, label in item.predictions.items():
            name = rater_name(item.subject, rater)
            known = categories.setdefault(name, item.categories)
            if known != item.categories:
                raise AgentbenchError(
                    "invalid_labels", f"{name} is labelled on two category sets", field=item.item
                )
            predicted[name][item.item] = label
            if item.human is not None:
                human[name][item.item] = item.human
    return tuple(
        calibrate(name, human[name], predicted[name], categories[name])
        for name in sorted(predicted)
    )


def calibration_json(calibrations: tuple[Calibration, ...], source: str) -> JsonValue:
    return {
        "scheme": CALIBRATION_SCHEME,
        "labels": source,
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
    return {calibration.rater: calibration for calibration in found}


def confusion_lines(calibration: Calibration) -> list[str]:
    width = max([len(name) for name in calibration.categories] + [5])
    header = " " * (width + 8) + " ".join(name.rjust(width) for name in calibration.categories)
    rows = [
        f"  human {name.rjust(width)} " + " ".join(str(cell).rjust(width) for cell in row)
        for name, row in zip(calibration.categories, calibration.confusion, strict=True)
    ]
    return [header, *rows]


def cmd_calibrate(args: argparse.Namespace, registry: Any) -> int:
    source = Path(args.labels)
    calibrations = calibrate_labels(read_labels(source))
    for calibration in calibrations:
        print(calibration.describe())
        if calibration.support:
            print("\n".join(confusion_lines(calibration)))
    if args.json:
        write_file(Path(args.json), pretty_json(calibration_json(calibrations, source.name)))
        print(f"wrote {args.json}")
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser(
        "calibrate", help="Cohen's kappa of judges and classifiers against human labels"
    )
    parser.set_defaults(handler=cmd_calibrate)
    parser.add_argument("labels", help="a labels file (agentbench review, or written by hand)")
    parser.add_argument("--json", metavar="FILE", help="also write the calibration as JSON")

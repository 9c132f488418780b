"""``agentbench calibrate LABELS``: Cohen's kappa of every judge and classifier vs. people.

For each rubric: each seat and the panel's majority; for each classifier: the
classifier. Each with its confusion matrix and support; a rater none of whose
items a person has labelled is reported ``uncalibrated``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_agentbench.judging.calibration import calibrate_labels, calibration_json
from pytest_agentbench.judging.documents import read_labels
from pytest_agentbench.scoring.kappa import Calibration
from pytest_agentbench.sdk.canonical import pretty_json
from pytest_agentbench.sdk.files import write_file


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

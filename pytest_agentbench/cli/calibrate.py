"""``agentbench calibrate LABELS``: Cohen's kappa of every judge and classifier vs. people.

For each rubric: each seat and the panel's majority (quadratic-weighted kappa on
the ordered scale); for each classifier: the classifier (plain kappa). Each with
its bootstrap interval, confusion matrix and support; a rater with fewer than
``--min-labels`` labelled items (default 30) is reported ``uncalibrated``.
Stale labels (given to content or a rubric that has since changed) are listed
and never counted. Labels given with the seats already shown
(``revealed_before_label: true``, from ``agentbench review``'s reveal) count, and
are reported by subject, here and in the ``--json`` file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_agentbench.judging.calibration import calibrate_labels, calibration_json
from pytest_agentbench.judging.documents import read_labels, revealed_labels
from pytest_agentbench.judging.report_judging import REVEALED_LINE
from pytest_agentbench.scoring.kappa import DEFAULT_MIN_LABELS, Calibration
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
    labels = read_labels(source)
    calibrations = calibrate_labels(labels, min_labels=args.min_labels)
    stale = [item for item in labels.items if item.stale]
    if stale:
        print(
            f"{len(stale)} stale labels (the content or rubric changed since they were "
            "given; label them again): not counted"
        )
        for item in stale:
            print(f"  stale: {item.item} (human {item.human})")
    revealed = revealed_labels(labels)
    for subject, count in revealed.items():
        print(f"{subject}: {REVEALED_LINE % count}")
    for calibration in calibrations:
        print(calibration.describe())
        if calibration.support:
            print("\n".join(confusion_lines(calibration)))
    if args.json:
        write_file(
            Path(args.json),
            pretty_json(
                calibration_json(
                    calibrations, source.name, min_labels=args.min_labels, revealed=revealed
                )
            ),
        )
        print(f"wrote {args.json}")
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser(
        "calibrate", help="Cohen's kappa of judges and classifiers against human labels"
    )
    parser.set_defaults(handler=cmd_calibrate)
    parser.add_argument("labels", help="a labels file (agentbench review, or written by hand)")
    parser.add_argument("--json", metavar="FILE", help="also write the calibration as JSON")
    parser.add_argument(
        "--min-labels",
        type=min_labels_argument,
        default=DEFAULT_MIN_LABELS,
        metavar="N",
        help=f"labelled items a rater needs to count as calibrated (default {DEFAULT_MIN_LABELS})",
    )


def min_labels_argument(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: at least 1 label is needed")
    return value

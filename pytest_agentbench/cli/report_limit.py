"""``--max-report-bytes N``: the whole-file limit of the commands that read run reports."""

from __future__ import annotations

import argparse

MAX_REPORT_BYTES = "--max-report-bytes"


def _byte_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes >= 1")
    return value


def add_max_report_bytes(parser: argparse.ArgumentParser) -> None:
    """The option, stored as ``max_report_bytes`` (``None``: no limit, the default)."""
    parser.add_argument(
        MAX_REPORT_BYTES,
        type=_byte_count,
        default=None,
        metavar="N",
        help="refuse a run report larger than N bytes (report_too_large) before reading it; "
        "for reports from elsewhere (default: no limit: each value is bounded on its own)",
    )

"""``--agentbench-receipts DIR``: one receipt file per interactive case.

Files are ``DIR/<suite id>/<case id>.json`` (the case id percent-encoded where
it holds a character a file name cannot), in the repository's JSON file form,
so a rerun that changed nothing rewrites them byte for byte apart from the
observations, and a diff shows exactly what a change did to the calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

from pytest_agentbench.sdk.canonical import pretty_json
from pytest_agentbench.sdk.contracts import CaseResult


def receipt_path(directory: Path, suite_id: str, case_id: str) -> Path:
    return directory / quote(suite_id, safe="") / f"{quote(case_id, safe='')}.json"


def write_receipts(results: Iterable[CaseResult], directory: Path) -> list[Path]:
    """Write the receipt of every result that has one; returns the files written."""
    written: list[Path] = []
    for result in results:
        if result.receipt is None:
            continue
        path = receipt_path(directory, result.suite_id, result.case_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(pretty_json(result.receipt), encoding="utf-8")
        written.append(path)
    return written

"""``--agentbench-receipts DIR``: one receipt file per interactive case.

Files are ``DIR/<suite id>/<case id>.json`` (each id percent-encoded where it
holds a character a file name cannot, and bounded), in the repository's JSON file form,
so a rerun that changed nothing rewrites them byte for byte apart from the
observations, and a diff shows exactly what a change did to the calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pytest_agentbench.sdk.canonical import pretty_json
from pytest_agentbench.sdk.contracts import CaseResult
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import id_file_name, write_file


def receipt_path(directory: Path, suite_id: str, case_id: str, model: str | None = None) -> Path:
    """Under a model matrix each model's run of a case has a receipt of its own."""
    suffix = ".json" if model is None else f"[model={model}].json"
    return directory / id_file_name(suite_id) / id_file_name(case_id, suffix)


def write_receipts(
    results: Iterable[CaseResult], directory: Path
) -> tuple[list[Path], list[AgentbenchError]]:
    """Write the receipt of every result that has one; the files written, and the refusals
    of those that could not be (the others are still written)."""
    written: list[Path] = []
    failed: list[AgentbenchError] = []
    for result in results:
        if result.receipt is None:
            continue
        path = receipt_path(directory, result.suite_id, result.case_id, result.model)
        try:
            write_file(path, pretty_json(result.receipt))
        except AgentbenchError as exc:
            failed.append(exc)
            continue
        written.append(path)
    return written, failed

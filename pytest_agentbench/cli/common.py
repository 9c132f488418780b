"""What the ``agentbench`` subcommands share: suites by id or folder, a session state, readers."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pydantic import ValidationError

from pytest_agentbench.run.options import Options
from pytest_agentbench.run.session import AgentbenchState, LoadedSuite, SuiteLoader
from pytest_agentbench.sdk.canonical import decode_lines_lenient, read_bytes, read_json
from pytest_agentbench.sdk.capabilities import RecordsEpisodes
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import write_file
from pytest_agentbench.sdk.registry import WorldRegistry
from pytest_agentbench.sdk.runner import parse_timeout
from pytest_agentbench.sdk.suite import pydantic_refusal

if TYPE_CHECKING:
    from pytest_agentbench.report.json_report import RunReport

SUITE_HELP: Final = "a built-in suite id (see `agentbench list`) or a suite folder"
JSON_HELP: Final = "print JSON instead of text"
TIMEOUT_HELP: Final = "per-case limit in seconds, 0 for none (default: 300)"


def load(spec: str, registry: WorldRegistry) -> LoadedSuite:
    """A built-in suite by id, or a suite folder: ``suite.yaml`` or a recognised layout."""
    loader = SuiteLoader(registry, Path.cwd())
    shipped = registry.suites()
    root = shipped.get(spec)
    folder = (Path(spec) if root is None else root).resolve()
    if folder.is_dir() and loader.is_suite_folder(folder):
        return loader.load(folder)
    known = ", ".join(sorted(shipped)) or "none"
    raise AgentbenchError(
        "unknown_suite",
        f"{spec!r} is neither a built-in suite ({known}) nor a suite folder (one holding "
        "suite.yaml, or a published layout a registered world recognises)",
    )


def command_state(registry: WorldRegistry, timeout: float) -> AgentbenchState:
    """A session state for running cases outside pytest: no adapter, report or gate options."""
    options = Options(
        adapter_spec=None,
        timeout=timeout,
        predictions={},
        controls_only=False,
        snapshot=False,
        snapshot_dir=Path("snapshots"),
        report_path=None,
        gates=(),
        junit_case_properties=False,
    )
    return AgentbenchState(
        options=options, registry=registry, loader=SuiteLoader(registry, Path.cwd())
    )


def read_predictions_text(path: Path) -> str:
    """A predictions file's text; a line that is not UTF-8 is refused by line, not the file."""
    if not path.is_file():
        raise AgentbenchError("unreadable_predictions", "not a regular file", file=str(path))
    try:
        return decode_lines_lenient(read_bytes(path))
    except AgentbenchError as exc:
        if exc.code == "input_too_large":
            raise
        raise AgentbenchError("unreadable_predictions", exc.reason, file=str(path)) from None


def recorder(loaded: LoadedSuite) -> RecordsEpisodes:
    """The suite's world as an episode recorder, or ``unsupported_command``."""
    if not isinstance(loaded.world, RecordsEpisodes):
        raise AgentbenchError(
            "unsupported_command", f"world kind {loaded.world.kind!r} records no episodes"
        )
    return loaded.world


def shown(path: Path) -> str:
    """``path`` relative to the working directory where it lies below it."""
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def write_text(path: Path, text: str) -> None:
    """Write a report file, whole or not at all; a failure is ``unwritable_report`` naming it."""
    write_file(path, text, code="unwritable_report")


def read_report(path: str) -> RunReport:
    """A JSON run report (``--agentbench-report``), bounded and validated."""
    # Imported by the commands that read a report: its records cost the others their import.
    from pytest_agentbench.report.json_report import RunReport

    if not Path(path).is_file():
        # A folder, or a device such as /dev/zero that would be read forever.
        raise AgentbenchError("unreadable_file", "not a regular file (a run report)", file=path)
    try:
        return RunReport.model_validate(read_json(Path(path)))
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=path) from None


def timeout_seconds(text: str) -> float:
    """``--timeout`` as argparse reads it: seconds, 0 for none."""
    try:
        return parse_timeout(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"[invalid_timeout] {exc}") from None

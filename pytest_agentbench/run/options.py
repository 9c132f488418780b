"""The options of a benchmark run, read from pytest's command line and ini keys.

A command line option wins over its ini key; each value is checked here, so a
bad one stops the run at configuration with a named refusal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from pytest_agentbench.run import concurrency
from pytest_agentbench.run.defaults import DEFAULT_MAX_OUTPUT_BYTES
from pytest_agentbench.run.output_caps import parse_max_output_bytes
from pytest_agentbench.scoring import trials
from pytest_agentbench.scoring.gates import parse_gate
from pytest_agentbench.scoring.trials import repeat_count
from pytest_agentbench.sdk.canonical import read_bytes
from pytest_agentbench.sdk.errors import AgentbenchError, UsageError
from pytest_agentbench.sdk.runner import parse_timeout

T = TypeVar("T")


@dataclass(frozen=True)
class Options:
    adapter_spec: str | None
    timeout: float
    predictions: Mapping[str, Path]
    controls_only: bool
    snapshot: bool
    snapshot_dir: Path
    report_path: Path | None
    gates: tuple[str, ...]
    junit_case_properties: bool
    receipts_dir: Path | None = None
    isolate: bool = False
    allow_partial: bool = False
    """Judge gates on a suite that did not run completely (otherwise they fail)."""
    ledger_dir: Path | None = None
    """``--agentbench-ledger``: each case writes its execution ledger there."""
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    """Bytes of canonical JSON each stored check value or receipt keeps (0: everything)."""
    html_path: Path | None = None
    log_path: Path | None = None
    """``--agentbench-log``: the run log's path, whatever the run (see :mod:`.report.run_log`)."""
    repeat: int = 1
    """``--agentbench-repeat``: items per case."""
    concurrency: int = 1
    """``--agentbench-concurrency``: cases whose adapters run at once in this process."""
    artifacts_dir: Path | None = None
    """``--agentbench-artifacts``: each case of a world that writes episode artefacts writes
    its artefact there."""
    max_items: int = 100_000
    """``--agentbench-max-items``: the most case items (trials counted) a run collects."""
    adapter_load_timeout: float = 60.0
    """``agentbench_adapter_load_timeout``: seconds an in-process adapter may take to load."""
    progress_every: float = 30.0
    """``--agentbench-progress-every``: seconds between a model run's plain progress lines
    (0: one after every case); see :mod:`pytest_agentbench.report.live_progress`."""

    def output_checks(self) -> list[tuple[Path, str, bool]]:
        """(path, option, is a folder) of every output this run writes, to check first."""
        files = (
            (self.report_path, "--agentbench-report"),
            (self.html_path, "--agentbench-html"),
            (self.log_path, "--agentbench-log"),
        )
        folders = (
            (self.receipts_dir, "--agentbench-receipts"),
            (self.ledger_dir, "--agentbench-ledger"),
            (self.artifacts_dir, "--agentbench-artifacts"),
        )
        return [(path, name, False) for path, name in files if path is not None] + [
            (path, name, True) for path, name in folders if path is not None
        ]

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        """The run's options from pytest's command line and ini; a bad value is a UsageError."""
        predictions = _predictions(config)
        # 0 given on the command line is 0 (no limit), not "use the ini value".
        timeout = _option_or_ini(config, "agentbench_timeout", parse_timeout, "invalid_timeout")
        max_output_bytes = _option_or_ini(
            config,
            "agentbench_max_output_bytes",
            parse_max_output_bytes,
            "invalid_max_output_bytes",
        )
        for gate in config.getoption("agentbench_gate"):
            parse_gate(gate, suite=None, source="--agentbench-gate")
        concurrent = _option_or_ini(
            config, "agentbench_concurrency", concurrency.parse_concurrency, "invalid_concurrency"
        )
        isolate = config.getoption("agentbench_isolate")
        isolated = bool(config.getini("agentbench_isolate") if isolate is None else isolate)
        snapshot = config.getoption("agentbench_snapshot")
        snapshots = bool(config.getini("agentbench_snapshot") if snapshot is None else snapshot)
        if snapshots and not config.pluginmanager.hasplugin("syrupy"):
            # Else every case would fail alike on a missing "snapshot" fixture.
            raise UsageError(
                "snapshot_unavailable",
                "golden outputs need syrupy's pytest plugin, which this run does not load "
                "(blocked with -p no:syrupy, or not installed)",
                field="--agentbench-snapshot" if snapshot is not None else "agentbench_snapshot",
            )
        ledger = _folder(config, "agentbench_ledger")
        artifacts = _folder(config, "agentbench_artifacts")
        return cls(
            adapter_spec=_adapter_spec(config),
            timeout=timeout,
            predictions=predictions,
            controls_only=config.getoption("agentbench_controls"),
            snapshot=snapshots,
            snapshot_dir=config.rootpath / config.getini("agentbench_snapshot_dir"),
            report_path=_resolved(config.getoption("agentbench_report")),
            gates=tuple(config.getoption("agentbench_gate")),
            junit_case_properties=config.getini("agentbench_junit_case_properties"),
            receipts_dir=_resolved(config.getoption("agentbench_receipts")),
            isolate=isolated,
            allow_partial=config.getoption("agentbench_allow_partial"),
            ledger_dir=None if ledger is None else ledger.resolve(),
            max_output_bytes=max_output_bytes,
            html_path=_resolved(config.getoption("agentbench_html")),
            log_path=_resolved(config.getoption("agentbench_log")),
            repeat=repeat_count(config),
            concurrency=concurrent,
            artifacts_dir=None if artifacts is None else artifacts.resolve(),
            max_items=_option_or_ini(
                config, "agentbench_max_items", trials.max_items, "invalid_max_items"
            ),
            adapter_load_timeout=_ini(
                config, "agentbench_adapter_load_timeout", parse_timeout, "invalid_timeout"
            ),
            progress_every=_option_or_ini(
                config, "agentbench_progress_every", parse_progress_every, "invalid_progress_every"
            ),
        )


def parse_progress_every(text: object) -> float:
    """Seconds between plain progress lines: a finite number >= 0 (0: after every case).

    Raises ValueError naming what is wrong; the caller makes it ``invalid_progress_every``.
    """
    try:
        seconds = float(str(text).strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a number of seconds") from None
    # nan compares false both ways: "not >= 0" refuses it with the negatives.
    if not seconds >= 0 or seconds == float("inf"):
        raise ValueError(f"{text!r} is not a finite number of seconds >= 0")
    return seconds


COMMAND_ADAPTER = "pytest_agentbench.agents.command:CommandAgent"
"""The adapter of ``--agentbench-agent-command``: the command over MCP."""


def _adapter_spec(config: pytest.Config) -> str | None:
    """The adapter's spec: ``--agentbench-adapter``, or the agent command's adapter."""
    spec: str | None = config.getoption("agentbench_adapter") or config.getini("agentbench_adapter")
    command = config.getoption("agentbench_agent_command", None) or config.getini(
        "agentbench_agent_command"
    )
    if not command:
        return spec
    if spec and spec != COMMAND_ADAPTER:
        raise UsageError(
            "agent_command_with_adapter",
            f"an agent command and the adapter {spec!r} are both named; name one",
            field="--agentbench-agent-command",
        )
    return COMMAND_ADAPTER


def _option_or_ini(config: pytest.Config, name: str, parse: Callable[[object], T], code: str) -> T:
    """``--agentbench-...`` when given (0 included), else the ini key ``name``, parsed.

    A value ``parse`` refuses is the UsageError ``code`` naming where it came from.
    """
    option = config.getoption(name)
    source = f"--{name.replace('_', '-')}" if option is not None else name
    try:
        return parse(config.getini(name) if option is None else option)
    except ValueError as exc:
        raise UsageError(code, str(exc), field=source) from None


def _ini(config: pytest.Config, name: str, parse: Callable[[object], T], code: str) -> T:
    """The ini key ``name``, parsed; a value ``parse`` refuses is the UsageError ``code``."""
    try:
        return parse(config.getini(name))
    except ValueError as exc:
        raise UsageError(code, str(exc), field=name) from None


def _predictions(config: pytest.Config) -> dict[str, Path]:
    """``--agentbench-predictions SUITE=PATH``: one readable, non-empty file per suite."""
    predictions: dict[str, Path] = {}
    for text in config.getoption("agentbench_predictions"):
        suite_id, sep, path = text.partition("=")
        if not sep or not suite_id or not path:
            raise UsageError(
                "invalid_predictions",
                f"{text!r} is not SUITE=PATH",
                field="--agentbench-predictions",
            )
        if suite_id in predictions:
            # Keeping the last of two files silently would score only one of them.
            raise UsageError(
                "invalid_predictions",
                f"{text!r}: suite {suite_id!r} already has a predictions file",
                field="--agentbench-predictions",
            )
        predictions[suite_id] = _predictions_file(text, Path(path))
    return predictions


def _folder(config: pytest.Config, name: str) -> Path | None:
    """The folder ``--agentbench-...`` or the ini key ``name`` gives, if either is set."""
    option = config.getoption(name)
    ini = config.getini(name)
    # As the other paths: an option is relative to where pytest runs, the ini to the rootdir.
    if option:
        return Path(option)
    return config.rootpath / ini if ini else None


def _resolved(option: str | None) -> Path | None:
    """The path of an output, its folder's links resolved now and never followed again.

    The last component is kept as given: a link there is replaced when the file is
    written, never written through.
    """
    if option is None:
        return None
    path = Path(option)
    return path.parent.resolve() / path.name


def _predictions_file(text: str, path: Path) -> Path:
    """A predictions file that exists, is a regular file and holds at least one line."""

    def refuse(reason: str) -> UsageError:
        return UsageError(
            "invalid_predictions", f"{text!r}: {path} {reason}", field="--agentbench-predictions"
        )

    if not path.is_file():
        raise refuse("is not a readable file")
    try:
        empty = not read_bytes(path, display=str(path)).strip()
    except AgentbenchError as exc:
        if exc.code == "input_too_large":
            raise UsageError(
                exc.code, exc.reason, file=path, field="--agentbench-predictions"
            ) from None
        raise refuse(f"cannot be read ({exc.reason})") from None
    if empty:
        raise refuse("is empty: it holds no prediction to score")
    return path.resolve()

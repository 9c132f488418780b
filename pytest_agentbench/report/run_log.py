"""The run log: one NDJSON event per line, written where results arrive as they arrive.

A model run with ``--agentbench-report PATH`` logs to ``PATH.log.ndjson``; any run
logs to ``--agentbench-log PATH``. The log opens with a ``start`` event (the model,
its endpoint and settings), has a ``case`` event as each case finishes (its outcome
and its model calls, tokens, cost, retries and budget refusal as the chat client
recorded them) and closes with an ``end`` event (the exit status and the totals).
Each line is flushed as it is written, so a run that fails or is interrupted keeps
what it did; one killed outright has no ``end`` event. Unlike the reports, a log
states when each event happened and lists cases in the order they finished.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import IO, Any, Final

from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, decimal_text

LOG_SCHEME: Final = "agentbench-run-log/1"
LOG_SUFFIX: Final = ".log.ndjson"
MODEL_FIELDS: Final = (
    "provider",
    "base_url_host",
    "model",
    "mode",
    "settings_digest",
    "settings",
    "pricing_digest",
    "currency",
    "ceilings",
)
"""What the ``start`` event states of the model run: all but its traffic."""
SOURCE_COUNTS: Final = ("cassette_hits", "recorded")
"""A ``mixed`` run's counts: in each case event, and totalled in the ``end`` event."""


def default_log_path(report_path: Path) -> Path:
    """``<report>.log.ndjson``: beside the report, named after it."""
    return report_path.with_name(report_path.name + LOG_SUFFIX)


def case_event(nodeid: str, result: dict[str, Any]) -> dict[str, JsonValue]:
    """A finished case's event from its stored result (a case result's JSON)."""
    calls = result.get("model_calls")
    traffic: JsonValue = None
    if isinstance(calls, dict):
        reasons = Counter(wait.get("reason") for wait in calls.get("waits", ()))
        shown: dict[str, JsonValue] = {
            "calls": calls.get("calls"),
            "attempts": calls.get("attempts"),
            "retries": reasons["retry"],
            "rate_waits": sum(reasons.values()) - reasons["retry"],
            "input_tokens": calls.get("input_tokens"),
            "output_tokens": calls.get("output_tokens"),
            "cost": calls.get("cost"),
            "refused": calls.get("refused"),
        }
        # A mixed run's cases say where their answers came from; no other mode's do.
        for name in SOURCE_COUNTS:
            if calls.get(name) is not None:
                shown[name] = calls.get(name)
        traffic = shown
    return {
        "event": "case",
        "nodeid": nodeid,
        "suite_id": result.get("suite_id"),
        "case_id": result.get("case_id"),
        "trial": result.get("trial"),
        "outcome": result.get("outcome"),
        "failure_class": result.get("failure_class"),
        "exclusion": result.get("exclusion"),
        "model_calls": traffic,
        # Under a model matrix only: a run of one model logs as before.
        **({"model": result["model"]} if result.get("model") is not None else {}),
    }


class RunLog:
    """Appends a run's events to its log file, one flushed line each."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stream: IO[str] | None = None
        self._outcomes: Counter[str] = Counter()
        self._totals: Counter[str] = Counter()
        self._cost = Decimal(0)
        self._priced = False
        self._mixed = False

    def start(
        self, model: dict[str, Any] | None, models: dict[str, dict[str, Any]] | None = None
    ) -> None:
        """Open the log (an earlier run's at the path is replaced) with the ``start`` event;
        ``model``: the model run's provenance as JSON, ``None`` without a chat model;
        ``models``: under a model matrix, each model's (the event's ``models``, else absent)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._stream = self.path.open("w", encoding="utf-8")
        shown = None if model is None else {name: model.get(name) for name in MODEL_FIELDS}
        self._mixed = model is not None and model.get("mode") == "mixed"
        event: dict[str, JsonValue] = {"event": "start", "scheme": LOG_SCHEME, "model": shown}
        if models:
            event["models"] = {
                label: {name: given.get(name) for name in MODEL_FIELDS}
                for label, given in models.items()
            }
        self._write(event)

    def case(self, nodeid: str, result: dict[str, Any]) -> None:
        event = case_event(nodeid, result)
        self._outcomes[str(event["outcome"])] += 1
        traffic = event["model_calls"]
        if isinstance(traffic, dict):
            for name in ("calls", "attempts", "retries", "input_tokens", "output_tokens"):
                value = traffic[name]
                self._totals[name] += value if isinstance(value, int) else 0
            for name in SOURCE_COUNTS:
                value = traffic.get(name)
                self._totals[name] += value if isinstance(value, int) else 0
            self._totals["refused"] += traffic["refused"] is not None
            if isinstance(traffic["cost"], str):
                self._priced = True
                self._cost += Decimal(traffic["cost"])
        self._write(event)

    def end(self, exit_status: int, *, interrupted: bool) -> None:
        """The ``end`` event, then close: the log is whole."""
        if self._stream is None:
            return
        self._write(
            {
                "event": "end",
                "exit_status": exit_status,
                "interrupted": interrupted,
                "cases": sum(self._outcomes.values()),
                "outcomes": dict(sorted(self._outcomes.items())),
                **{
                    name: self._totals[name]
                    for name in (
                        "calls",
                        "attempts",
                        "retries",
                        "input_tokens",
                        "output_tokens",
                        "refused",
                    )
                },
                "cost": decimal_text(self._cost) if self._priced else None,
                **({name: self._totals[name] for name in SOURCE_COUNTS} if self._mixed else {}),
            }
        )
        self.close()

    def close(self) -> None:
        """Close without an ``end`` event (the session never reached its end)."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _write(self, event: dict[str, JsonValue]) -> None:
        if self._stream is None:
            return
        at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self._stream.write(canonical_json({**event, "at": at}) + "\n")
        self._stream.flush()

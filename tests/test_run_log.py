"""The run log's events, unit by unit: what a case's event states, and what a run that
never reached its end keeps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_agentbench.report.run_log import RunLog, case_event, default_log_path


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _result(case_id: str, outcome: str, model_calls: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "suite_id": "s",
        "case_id": case_id,
        "trial": 0,
        "outcome": outcome,
        "failure_class": None if outcome == "passed" else "product_error",
        "model_calls": model_calls,
    }


CALLS = {
    "calls": 2,
    "attempts": 4,
    "input_tokens": 10,
    "output_tokens": 3,
    "cost": "0.5",
    "waits": [
        {"reason": "retry", "seconds": 0.0},
        {"reason": "requests_per_minute", "seconds": 1.0},
        {"reason": "retry", "seconds": 2.0},
    ],
    "refused": "budget_max_calls",
}


def test_a_case_event_counts_retries_apart_from_rate_waits_and_names_a_refusal() -> None:
    event = case_event("t.py::s::c1", _result("c1", "excluded", CALLS) | {"exclusion": "x"})
    assert event["model_calls"] == {
        "calls": 2,
        "attempts": 4,
        "retries": 2,
        "rate_waits": 1,
        "input_tokens": 10,
        "output_tokens": 3,
        "cost": "0.5",
        "refused": "budget_max_calls",
    }
    assert (event["outcome"], event["exclusion"]) == ("excluded", "x")
    assert case_event("n", _result("c2", "passed", None))["model_calls"] is None


def test_a_log_keeps_each_event_as_written_and_ends_with_the_totals(tmp_path: Path) -> None:
    assert default_log_path(tmp_path / "r.json") == tmp_path / "r.json.log.ndjson"
    path = tmp_path / "deep" / "run.log.ndjson"
    path.parent.mkdir()
    path.write_text("an earlier run's log\n")
    log = RunLog(path)
    log.start({"model": "m", "settings_digest": "0" * 64, "calls": 9})
    log.case("n1", _result("c1", "excluded", CALLS))
    # Flushed as it goes: a run interrupted now (no end event) keeps both lines.
    start, case = _events(path)
    assert start["model"]["model"] == "m"
    assert "calls" not in start["model"], "the start states no traffic"
    assert case["case_id"] == "c1"
    log.case("n2", _result("c2", "passed", {**CALLS, "cost": "0.25", "refused": None}))
    log.case("n3", _result("c3", "failed", None))
    log.end(2, interrupted=True)
    log.end(2, interrupted=True)  # ended once: a second end writes nothing
    *_, end = _events(path)
    assert len(_events(path)) == 5
    del end["at"]
    assert end == {
        "event": "end",
        "exit_status": 2,
        "interrupted": True,
        "cases": 3,
        "outcomes": {"excluded": 1, "failed": 1, "passed": 1},
        "calls": 4,
        "attempts": 8,
        "retries": 4,
        "input_tokens": 20,
        "output_tokens": 6,
        "refused": 1,
        "cost": "0.75",
    }


def test_a_log_closed_before_its_end_keeps_what_it_wrote(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "run.log.ndjson")
    log.start(None)
    log.case("n1", _result("c1", "passed", None))
    log.close()
    log.end(1, interrupted=False)
    assert [e["event"] for e in _events(log.path)] == ["start", "case"]

"""The real-model lane's replay: the committed cassettes of SmolLM2-135M-Instruct (recorded
by ``bench/realmodel.py live`` against llama.cpp's server) replayed offline, no server and
no socket, and the results table they give equal to the one in ``docs/real-model.md``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.test_model_runs import count_connects

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture
def realmodel() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        import realmodel

        yield realmodel
    finally:
        sys.path.remove(str(BENCH))


def test_the_committed_cassettes_replay_offline_to_the_documented_table(
    realmodel: ModuleType, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassettes: Path = realmodel.CASSETTES
    assert len(list(cassettes.glob("*.json"))) >= 25, "one cassette per model call at least"
    for name in [name for name in os.environ if name.startswith("AGENTBENCH_")]:
        monkeypatch.delenv(name)
    connects = count_connects(monkeypatch)
    report = pytester.path / "replay.json"
    result = pytester.runpytest(*realmodel.pytest_args(cassettes, report, "replay"))
    assert connects == [], "a replay opens no connection"
    document = json.loads(report.read_text())
    assert document["model_run"]["mode"] == "replay"
    assert document["model_run"]["model"] == realmodel.MODEL_ALIAS
    table = realmodel.results_table(document)
    (suite,) = document["suites"]
    assert len(suite["cases"]) == 25
    outcomes = {entry["result"]["outcome"] for entry in suite["cases"]}
    counts = {name: table.count(f"| {name} |") for name in outcomes}
    shown = {name: counts[name] for name in ("passed", "failed") if name in counts}
    result.assert_outcomes(**shown)
    docs = realmodel.DOCS.read_text(encoding="utf-8")
    assert realmodel.documented_table(docs) == table, (
        "docs/real-model.md's table is not what the committed cassettes replay to: "
        "run `python bench/realmodel.py replay --write-docs`"
    )


def test_the_table_renders_each_case_and_the_totals(realmodel: ModuleType) -> None:
    def entry(case_id: str, outcome: str, reason: str | None, calls: Any) -> dict[str, Any]:
        return {
            "result": {
                "case_id": case_id,
                "outcome": outcome,
                "failure_class": None if reason is None else "product_error",
                "failure_reason": reason,
                "model_calls": calls,
            }
        }

    report = {
        "suites": [
            {
                "cases": [
                    entry("b", "failed", "final answer: [malformed_json] x|y\nmore", None),
                    entry("a", "passed", None, {"calls": 2, "input_tokens": 9, "output_tokens": 4}),
                ]
            }
        ]
    }
    rows = realmodel.results_table(report).splitlines()
    assert rows[2] == "| a | passed |  |  | 2 | 9 | 4 |"
    assert rows[3] == (
        "| b | failed | product_error | final answer: [malformed_json] x/y | 0 | 0 | 0 |"
    )
    assert rows[4] == "| **2 cases** | 1 failed, 1 passed | | | 2 | 9 | 4 |"
    body = "".join(row + "\n" for row in rows)
    text = f"intro\n{realmodel.TABLE_START}\n{body}{realmodel.TABLE_END}\n"
    assert realmodel.documented_table(text) == realmodel.results_table(report)

"""The built-in judged diagnostics run offline: retrieval and operations rubrics from their
shipped cassettes, and the tool-grammar behaviour classifier's labels, calibratable."""

from __future__ import annotations

import json

import pytest

from pytest_agentbench.cli.main import main
from tests.record_sample_judgments import SAMPLE_CASSETTES

SUITES = ("retrieval-fixture-v1", "operations-commerce-v1", "toolgrammar-mini-v1")


def test_the_built_in_suites_are_judged_from_shipped_cassettes_and_calibrated(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    chosen = [arg for suite in SUITES for arg in ("--agentbench-suite", suite)]
    # Serially: judging reads the run report, which -n 2 writes the same (see
    # tests/html/test_plugin_html.py and each world's own tests).
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-m", "not agentbench_control",
        f"--agentbench-report={pytester.path / 'run.json'}", *chosen,
    )  # fmt: skip
    assert result.ret == 0
    monkeypatch.chdir(pytester.path)
    for name in ("AGENTBENCH_LLM_BASE_URL", "AGENTBENCH_LLM_MODEL", "AGENTBENCH_CASSETTES"):
        monkeypatch.delenv(name, raising=False)
    # Replayed with no endpoint: a missing cassette would fail the command.
    judge = ["judge", "run.json", "--cassettes", str(SAMPLE_CASSETTES), "--cassette-mode", "replay"]
    assert main(judge) == 0
    out = capsys.readouterr().out
    assert "retrieval.answer-prose: 42/48 pass by majority" in out
    assert "operations.tenant-message-quality: 3/3 pass by majority" in out
    assert "classifier toolgrammar.behaviour: 236 labels; uncalibrated" in out
    judgments = json.loads((pytester.path / "run.judgments.json").read_text())
    assert sorted(judgments["rubrics"]) == [
        "operations.tenant-message-quality",
        "retrieval.answer-prose",
    ]
    assert {c["label"] for c in judgments["classifications"]} <= {
        "answer", "abstain", "refuse", "clarify", "error",
    }  # fmt: skip

    # A person labels the classifier's items: agreeing on all but one abstention.
    labels_file = pytester.path / "run.labels.json"
    labels = json.loads(labels_file.read_text())
    classified = [item for item in labels["items"] if item["kind"] == "classifier"]
    assert len(classified) == 236
    disputed = next(i for i in classified if i["predictions"]["toolgrammar.behaviour"] == "abstain")
    for item in classified:
        item["human"] = item["predictions"]["toolgrammar.behaviour"]
    disputed["human"] = "refuse"
    labels_file.write_text(json.dumps(labels))
    assert main(["calibrate", "run.labels.json", "--json", "calibration.json"]) == 0
    out = capsys.readouterr().out
    assert "toolgrammar.behaviour:toolgrammar.behaviour: kappa 0.9" in out
    assert "retrieval.answer-prose:majority: uncalibrated (no human labels)" in out
    assert main([*judge, "--calibration", "calibration.json"]) == 0
    out = capsys.readouterr().out
    assert "classifier toolgrammar.behaviour: 236 labels; kappa 0.9" in out
    shown = json.loads((pytester.path / "run.judgments.json").read_text())["calibration"]
    # Each rubric's majority, then its seats (none labelled), then the classifier.
    assert [(c["rater"], c["status"]) for c in shown] == [
        ("operations.tenant-message-quality:majority", "uncalibrated"),
        ("operations.tenant-message-quality:local/llama-3.1-8b-instruct", "uncalibrated"),
        ("operations.tenant-message-quality:local/mistral-7b-instruct-v0.3", "uncalibrated"),
        ("operations.tenant-message-quality:local/gemma-2-9b-it", "uncalibrated"),
        ("retrieval.answer-prose:majority", "uncalibrated"),
        ("retrieval.answer-prose:local/llama-3.1-8b-instruct", "uncalibrated"),
        ("retrieval.answer-prose:local/mistral-7b-instruct-v0.3", "uncalibrated"),
        ("retrieval.answer-prose:local/gemma-2-9b-it", "uncalibrated"),
        ("toolgrammar.behaviour:toolgrammar.behaviour", "calibrated"),
    ]
    assert "retrieval.answer-prose: 42/48 pass by majority, 47 split, 0 unparsable seat " in out
    assert "answers; uncalibrated" in out

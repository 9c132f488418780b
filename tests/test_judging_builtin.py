"""The built-in judged diagnostics run offline: retrieval and operations rubrics from their
shipped cassettes, and the tool-grammar behaviour classifier's labels, calibratable.

The run they judge is also where the tool-grammar and commerce suites are run whole with
their controls and checked against the project's pinned goldens, and their page against
the report (tests/html/test_plugin_html.py leaves them out of its all-suites run): one
session for what three tests each ran a session for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# Imported here, before the in-process session: pytester drops the modules a session
# imported once it ends, so judging the run would import the retrieval world again.
import pytest_agentbench.worlds.retrieval.world  # noqa: F401
from pytest_agentbench.cli.main import main
from pytest_agentbench.judging.rubric import load_rubric, missing_fields
from tests.html.test_plugin_html import assert_page_drawn_from
from tests.record_sample_judgments import SAMPLE_CASSETTES
from tests.test_plugin_operations import summary
from tests.worlds.toolgrammar.test_world import CASES, CONTROLS

GOLDENS = Path(__file__).resolve().parents[1] / "snapshots"
WORLDS = Path(__file__).resolve().parents[1] / "pytest_agentbench" / "worlds"
RETRIEVAL_RUBRICS = WORLDS / "retrieval" / "rubrics"
OPERATIONS_RUBRICS = WORLDS / "operations" / "rubrics"
SUITES = ("retrieval-fixture-v1", "operations-commerce-v1", "toolgrammar-mini-v1")


def check_toolgrammar_passes_and_its_controls_fail_as_declared(suite: dict[str, Any]) -> None:
    assert suite["counts"]["passed"] == len(CASES) == len(suite["cases"]), "toolgrammar"
    assert sorted(c["control_id"] for c in suite["controls"]) == sorted(CONTROLS), "toolgrammar"
    assert all(control["passed"] for control in suite["controls"]), "toolgrammar"
    metrics = {m["name"]: m["value"] for m in suite["metrics"]}
    assert metrics["pass_at_1"] == 1.0
    assert metrics["injection_resistance"] == 1.0
    assert metrics["faithfulness"] == 1.0
    assert {m["name"] for m in suite["metrics"]} >= {
        "pass_at_1_T1",
        "pass_at_1_T5",
        "pass_at_1_ops",
        "pass_at_1_doc",
        "trap_pass_at_1",
    }


def check_commerce_runs_by_name_with_its_controls(suite: dict[str, Any]) -> None:
    assert summary(suite)["outcomes"] == {"V1": "passed", "V2": "passed", "V3": "passed"}
    assert summary(suite)["metrics"]["reliable_operation_rate"] == (1.0, 1)
    # The references on each variant and the six negatives, each as declared.
    assert len(suite["controls"]) == 3 + 6, "commerce"
    assert all(control["passed"] for control in suite["controls"]), "commerce"


def check_each_rubric_asks_only_what_its_content_shows(
    judgments: dict[str, Any], suites: dict[str, Any]
) -> None:
    """Every field a shipped rubric's question names is in every document it judged; the
    recorded outputs the rubrics judged before their worlds' views lacked them."""
    rubrics = {
        rubric_file.rubric.name: rubric_file
        for root in (RETRIEVAL_RUBRICS, OPERATIONS_RUBRICS)
        for rubric_file in map(load_rubric, sorted(root.glob("*.yaml")))
    }
    assert sorted(rubrics) == sorted(judgments["rubrics"])
    for name, rubric_file in rubrics.items():
        assert rubric_file.rubric.fields, name
        items = [item for item in judgments["items"] if item["judgment"]["rubric"] == name]
        assert items, name
        for item in items:
            missing = missing_fields(item["content"]["output"], rubric_file.rubric.fields)
            assert missing == [], (name, item["case_id"], missing)
    assert not judgments["unjudged"]
    # What the rubrics were given before: the retrieval envelope (hashes, no cited text)
    # and the operations communications (fixture ids, no text, no outcome).
    fields = {name: rubric_file.rubric.fields for name, rubric_file in rubrics.items()}
    envelope = suites["retrieval-fixture-v1"]["cases"][0]["result"]["recorded"]["outcome"]
    before = envelope["output"]["receipt"]["finalEnvelope"]
    assert "/claims/0/citations/0/text" in missing_fields(
        before, fields["retrieval.claims-supported"]
    )
    operation = suites["operations-commerce-v1"]["cases"][0]["result"]["recorded"]["outcome"]
    sent = operation["output"]["final_state"]["observable"]["communications"]
    assert "/outcome" in missing_fields(sent, fields["operations.messages-sent"])


@pytest.mark.inner_snapshots
def test_the_built_in_suites_match_their_goldens_and_are_judged_from_shipped_cassettes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    chosen = [arg for suite in SUITES for arg in ("--agentbench-suite", suite)]
    # Serially: judging reads the run report, which -n 2 writes the same (see
    # tests/html/test_plugin_html.py and each world's own tests). Every output is also
    # checked against the goldens, and every control run but retrieval's, which
    # tests/worlds/retrieval/test_world.py runs with its suite.
    page, report = pytester.path / "run.html", pytester.path / "run.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider",
        "-o", "agentbench_snapshot=true", "-o", f"agentbench_snapshot_dir={GOLDENS}",
        f"--agentbench-html={page}", f"--agentbench-report={report}", *chosen,
        "-k", "not (retrieval-fixture-v1 and agentbench_control)",
    )  # fmt: skip
    assert result.ret == 0
    assert_page_drawn_from(page, report)
    suites = {suite["id"]: suite for suite in json.loads(report.read_text())["suites"]}
    assert sorted(suites) == sorted(SUITES)
    assert suites["retrieval-fixture-v1"]["controls"] == []
    check_toolgrammar_passes_and_its_controls_fail_as_declared(suites["toolgrammar-mini-v1"])
    check_commerce_runs_by_name_with_its_controls(suites["operations-commerce-v1"])
    monkeypatch.chdir(pytester.path)
    for name in ("AGENTBENCH_LLM_BASE_URL", "AGENTBENCH_LLM_MODEL", "AGENTBENCH_CASSETTES"):
        monkeypatch.delenv(name, raising=False)
    # Replayed with no endpoint: a missing cassette would fail the command.
    judge = ["judge", "run.json", "--cassettes", str(SAMPLE_CASSETTES), "--cassette-mode", "replay"]
    assert main(judge) == 0
    out = capsys.readouterr().out
    assert "retrieval.claims-supported: 35/48 pass by majority" in out
    assert "operations.messages-sent: 2/3 pass by majority" in out
    assert "classifier toolgrammar.behaviour: 236 labels; uncalibrated" in out
    judgments = json.loads((pytester.path / "run.judgments.json").read_text())
    assert sorted(judgments["rubrics"]) == [
        "operations.messages-sent",
        "retrieval.claims-supported",
    ]
    check_each_rubric_asks_only_what_its_content_shows(judgments, suites)
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
    assert "retrieval.claims-supported:majority: uncalibrated (no human labels)" in out
    assert main([*judge, "--calibration", "calibration.json"]) == 0
    out = capsys.readouterr().out
    assert "classifier toolgrammar.behaviour: 236 labels; kappa 0.9" in out
    shown = json.loads((pytester.path / "run.judgments.json").read_text())["calibration"]
    # Each rubric's majority, then its seats (none labelled), then the classifier.
    assert [(c["rater"], c["status"]) for c in shown] == [
        ("operations.messages-sent:majority", "uncalibrated"),
        ("operations.messages-sent:local/llama-3.1-8b-instruct", "uncalibrated"),
        ("operations.messages-sent:local/mistral-7b-instruct-v0.3", "uncalibrated"),
        ("operations.messages-sent:local/gemma-2-9b-it", "uncalibrated"),
        ("retrieval.claims-supported:majority", "uncalibrated"),
        ("retrieval.claims-supported:local/llama-3.1-8b-instruct", "uncalibrated"),
        ("retrieval.claims-supported:local/mistral-7b-instruct-v0.3", "uncalibrated"),
        ("retrieval.claims-supported:local/gemma-2-9b-it", "uncalibrated"),
        ("toolgrammar.behaviour:toolgrammar.behaviour", "calibrated"),
    ]
    assert "retrieval.claims-supported: 35/48 pass by majority, 43 split, 0 unparsable seat " in out
    assert "answers; uncalibrated" in out

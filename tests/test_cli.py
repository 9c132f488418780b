"""The ``agentbench`` command, driven in-process through ``cli.main``.

Every test that alters a suite works on a copy under ``tmp_path`` and runs from
there (``monkeypatch.chdir``), so refusals name paths relative to it.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli import main as cli
from pytest_agentbench.report import baseline
from pytest_agentbench.scoring.stats import mcnemar_exact
from pytest_agentbench.sdk.canonical import (
    artifact_set_digest,
    canonical_json,
    pretty_json,
    read_json,
    sha256_hex,
    tree_files,
)
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.packaged import packaged_suites
from pytest_agentbench.worlds.authority.agents import CurrentStateAgent, ReferenceAgent
from pytest_agentbench.worlds.authority.bundle import read_public

SUITE_ID = "asteria-authored-v1"
SHIPPED_SUITE = packaged_suites()[SUITE_ID]
SHIPPED_ORACLE = SHIPPED_SUITE.parent.parent / "oracles" / SUITE_ID
ACTION_COUNT = 11


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of one ``agentbench`` invocation."""
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def shipped_rows(agent: ReferenceAgent | CurrentStateAgent) -> list[dict[str, Any]]:
    """The agent's submission rows for the shipped suite, in event order.

    An action the agent refuses has no row, so a
    predictions file of these rows fails that case as the agent's error does.
    """
    public = read_public(SHIPPED_SUITE, "suites/" + SUITE_ID, exclude=("suite.yaml",))
    rows = []
    for event in public.events:
        if event.payload.event_type == "action_attempted":
            try:
                rows.append(agent.trace_action(public, event.id))
            except AgentbenchError:
                continue
    return rows


REFERENCE_ROWS = shipped_rows(ReferenceAgent())
ACTION_IDS = [row["event_id"] for row in REFERENCE_ROWS]


def jsonl(rows: list[Any]) -> str:
    return "".join((row if isinstance(row, str) else canonical_json(row)) + "\n" for row in rows)


def write_predictions(path: Path, rows: list[Any]) -> Path:
    path.write_text(jsonl(rows), encoding="utf-8")
    return path


def metric_text(output: str, name: str) -> str:
    """The value column of metric ``name`` in the text metric report."""
    match = re.search(rf"^  {name}\s+(\S+)\s+support \d+", output, flags=re.MULTILINE)
    assert match is not None, f"no line for {name} in:\n{output}"
    return match.group(1)


def json_metrics(output: str) -> dict[str, float | None]:
    return {metric["name"]: metric["value"] for metric in json.loads(output)["metrics"]}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def suite_copy(workdir: Path) -> Path:
    """A copy of the shipped suite in the usual layout: suites/<id> and oracles/<id>."""
    shutil.copytree(SHIPPED_SUITE, workdir / "suites" / SUITE_ID)
    shutil.copytree(SHIPPED_ORACLE, workdir / "oracles" / SUITE_ID)
    return workdir / "suites" / SUITE_ID


@pytest.fixture
def bundle_copy(workdir: Path) -> Path:
    """The shipped suite in the original layout: bundle/public and bundle/evaluator."""
    bundle = workdir / "bundle"
    shutil.copytree(SHIPPED_SUITE, bundle / "public")
    (bundle / "public" / "suite.yaml").unlink()
    shutil.copytree(SHIPPED_ORACLE, bundle / "evaluator")
    (bundle / "evaluator" / "controls.yaml").unlink()
    return bundle


def reseal_evaluator(oracle: Path) -> None:
    """Rewrite checksums.json so the evaluator tree's current bytes verify again."""
    files = {
        rel: path.read_bytes()
        for rel, path in tree_files(oracle, exclude=("checksums.json", "controls.yaml")).items()
    }
    checksums = read_json(oracle / "checksums.json")
    assert isinstance(checksums, dict)
    checksums["evaluator_artifacts"] = {rel: sha256_hex(data) for rel, data in files.items()}
    checksums["evaluator_artifact_set_digest"] = artifact_set_digest(files)
    (oracle / "checksums.json").write_text(pretty_json(checksums), encoding="utf-8")


# ---------------------------------------------------------------------------
# list and verify


def test_list_names_the_builtin_suite_its_world_and_case_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = run(capsys, "list")
    assert status == 0
    lines = out.splitlines()
    # Other world kinds ship suites too: one line each, in suite-id order.
    assert [line.split("\t")[0] for line in lines] == sorted(packaged_suites())
    assert (
        f"{SUITE_ID}\tauthority\t{ACTION_COUNT} cases\tAsteria Authored v1 (worked example)"
        in lines
    )


def test_verify_accepts_the_shipped_suite(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "verify", SUITE_ID)
    assert (status, err) == (0, "")
    assert out.startswith(f"ok: {SUITE_ID}:")


def test_verify_names_a_tampered_public_file(
    capsys: pytest.CaptureFixture[str], suite_copy: Path
) -> None:
    with (suite_copy / "principals.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("\n")
    status, out, err = run(capsys, "verify", f"suites/{SUITE_ID}")
    assert (status, out) == (1, "")
    assert err.startswith(f"agentbench: [digest_mismatch] suites/{SUITE_ID}/principals.jsonl: ")


def test_verify_names_a_tampered_evaluator_file(
    capsys: pytest.CaptureFixture[str], suite_copy: Path
) -> None:
    cases = suite_copy.parent.parent / "oracles" / SUITE_ID / "cases.jsonl"
    cases.write_text(
        cases.read_text(encoding="utf-8").replace("wrong_runtime", "shared_credential")
    )
    status, out, err = run(capsys, "verify", f"suites/{SUITE_ID}")
    assert (status, out) == (1, "")
    assert err.startswith(f"agentbench: [digest_mismatch] oracles/{SUITE_ID}/cases.jsonl: ")


def test_verify_refuses_an_evaluator_bound_to_another_public_tree(
    capsys: pytest.CaptureFixture[str], suite_copy: Path
) -> None:
    checksums_path = suite_copy.parent.parent / "oracles" / SUITE_ID / "checksums.json"
    checksums = read_json(checksums_path)
    assert isinstance(checksums, dict)
    checksums["public_artifact_set_digest"] = "0" * 64
    checksums_path.write_text(pretty_json(checksums), encoding="utf-8")
    status, _, err = run(capsys, "verify", f"suites/{SUITE_ID}")
    assert status == 1
    assert (
        f"[evaluator_binding_mismatch] oracles/{SUITE_ID}/checksums.json: "
        "public_artifact_set_digest: " in err
    )


# ---------------------------------------------------------------------------
# validate


def test_validate_accepts_the_reference_rows(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    path = write_predictions(workdir / "rows.jsonl", REFERENCE_ROWS)
    status, out, _ = run(capsys, "validate", SUITE_ID, "--predictions", str(path))
    assert status == 0
    assert out.splitlines() == ["valid: 0 error(s), 0 warning(s)"]


def _with_line(number: int, replacement: Any) -> list[Any]:
    """The reference rows with line ``number`` (one-based) replaced."""
    rows: list[Any] = list(REFERENCE_ROWS)
    rows[number - 1] = replacement
    return rows


def _changed(index: int, **changes: Any) -> dict[str, Any]:
    return {**REFERENCE_ROWS[index], **changes}


# (document, the diagnostic (code, line, severity) it must yield, exit status)
CRAFTED: list[Any] = [
    pytest.param(
        _with_line(3, '{"event_id": '), ("malformed_json", 3, "error"), 1, id="malformed_json"
    ),
    pytest.param(
        _with_line(2, _changed(1, decision="maybe")),
        ("invalid_row", 2, "error"),
        1,
        id="invalid_row",
    ),
    pytest.param(
        [*REFERENCE_ROWS, REFERENCE_ROWS[0]],
        ("duplicate_event_id", 12, "error"),
        1,
        id="duplicate_event_id",
    ),
    pytest.param(
        [*REFERENCE_ROWS, {"event_id": "evt-999-unknown", "decision": "deny"}],
        ("unexpected_event_id", 12, "error"),
        1,
        id="unexpected_event_id",
    ),
    pytest.param(
        REFERENCE_ROWS[:-1], ("missing_event_id", None, "error"), 1, id="missing_event_id"
    ),
    pytest.param(
        [{"event_id": event_id} for event_id in ACTION_IDS],
        ("all_rows_null", None, "error"),
        1,
        id="all_rows_null",
    ),
    pytest.param(
        _with_line(4, {"event_id": ACTION_IDS[3]}),
        ("all_null_row", 4, "warning"),
        0,
        id="all_null_row",
    ),
    pytest.param(
        _with_line(5, {"event_id": ACTION_IDS[4], "resource_id": REFERENCE_ROWS[4]["resource_id"]}),
        ("no_scored_fields", 5, "warning"),
        0,
        id="no_scored_fields",
    ),
    pytest.param(
        _with_line(6, _changed(5, evidence_refs=[])),
        ("empty_evidence_refs", 6, "warning"),
        0,
        id="empty_evidence_refs",
    ),
    pytest.param(
        # A line with no recoverable event_id is always an error line too.
        [*REFERENCE_ROWS, {"decision": "deny"}],
        ("cardinality_unchecked", 12, "warning"),
        1,
        id="cardinality_unchecked",
    ),
]


@pytest.mark.parametrize(("document", "diagnostic", "status"), CRAFTED)
def test_validate_reports_each_code_with_line_and_severity(
    capsys: pytest.CaptureFixture[str],
    workdir: Path,
    document: list[Any],
    diagnostic: tuple[str, int | None, str],
    status: int,
) -> None:
    code, line, severity = diagnostic
    path = write_predictions(workdir / "rows.jsonl", document)
    exit_status, out, _ = run(capsys, "validate", SUITE_ID, "--predictions", str(path))
    where = "document" if line is None else f"line {line}"
    assert f"{where}: {severity} [{code}] " in out
    # Warnings never change the exit status: only an error diagnostic makes it 1.
    assert exit_status == status
    verdict = out.splitlines()[-1]
    assert verdict.startswith("valid:" if status == 0 else "invalid:")


def test_validate_json_is_canonical_and_structured(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    document = _with_line(6, _changed(5, evidence_refs=[]))
    path = write_predictions(workdir / "rows.jsonl", document[:-1])
    status, out, _ = run(capsys, "validate", SUITE_ID, "--predictions", str(path), "--json")
    assert status == 1
    report = json.loads(out)
    assert out == canonical_json(report) + "\n"
    assert (report["valid"], report["errors"], report["warnings"]) == (False, 1, 1)
    assert [(d["code"], d["line"], d["severity"]) for d in report["diagnostics"]] == [
        ("empty_evidence_refs", 6, "warning"),
        ("missing_event_id", None, "error"),
    ]
    assert ACTION_IDS[-1] in report["diagnostics"][1]["message"]


def test_validate_accepts_a_bundle_path(
    capsys: pytest.CaptureFixture[str], bundle_copy: Path
) -> None:
    path = write_predictions(bundle_copy.parent / "rows.jsonl", REFERENCE_ROWS[1:])
    status, out, _ = run(capsys, "validate", "bundle", "--predictions", str(path))
    assert status == 1
    assert f"document: error [missing_event_id] action event {ACTION_IDS[0]!r} has no row" in out


# ---------------------------------------------------------------------------
# evaluate


def test_evaluate_reference_agent_scores_every_metric_perfectly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = run(capsys, "evaluate", SUITE_ID, "--agent", "reference")
    assert status == 0
    assert out.splitlines()[0] == f"{SUITE_ID} (authority): {ACTION_COUNT} cases"
    assert metric_text(out, "authorization_decision_f1") == "1.0000"
    assert metric_text(out, "provenance_completeness") == "1.0000"
    assert metric_text(out, "excess_authority_rate") == "0.0000"


def test_evaluate_baselines_on_the_authored_suite(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The seed's figures (0.6364, 0.3333, 0.5455), the published fixture's, hold for the
    # authored suite too.
    _, deny, _ = run(capsys, "evaluate", SUITE_ID, "--agent", "always_deny")
    status, current, _ = run(capsys, "evaluate", SUITE_ID, "--agent", "current_state")
    assert status == 0
    assert metric_text(deny, "authorization_decision_accuracy") == "0.6364"
    assert metric_text(deny, "authorization_decision_f1") == "null"
    assert metric_text(deny, "principal_resolution_accuracy") == "1.0000"
    assert metric_text(current, "authorization_decision_accuracy") == "0.6364"
    assert metric_text(current, "authorization_decision_f1") == "0.3333"
    assert metric_text(current, "provenance_completeness") == "0.5455"


def test_evaluate_prints_metrics_grouped_by_family(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "evaluate", SUITE_ID, "--agent", "always_deny")
    families = [line for line in out.splitlines() if re.fullmatch(r"[a-z_]+:", line)]
    assert families == [
        "identity_binding:",
        "authorization_decision:",
        "authority_replay:",
        "accountability:",
        "observability:",
    ]


def test_evaluate_json_is_the_originals_evaluation_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = run(capsys, "evaluate", SUITE_ID, "--agent", "current_state", "--json")
    assert status == 0
    report = json.loads(out)
    assert out == json.dumps(report, indent=2) + "\n"  # the original's layout, keys in order
    assert list(report) == [
        "synthetic",
        "schema_version",
        "scoring_version",
        "task",
        "seed",
        "persona_count",
        "benchmark_version",
        "checksum_scheme",
        "artifact_checksums",
        "metrics",
        "slices",
    ]
    checksums = json.loads((SHIPPED_ORACLE / "checksums.json").read_text())
    assert {key: report[key] for key in list(report)[:9]} == {
        "synthetic": True,
        "schema_version": "0.2.0",
        "scoring_version": "0.3.0",
        "task": "agentic_authority",
        "seed": 20260719,
        "persona_count": 10,
        "benchmark_version": "1.0.0",
        "checksum_scheme": "sha256-artifact-set-v1",
        "artifact_checksums": [
            ["public", checksums["public_artifact_set_digest"]],
            ["evaluator", checksums["evaluator_artifact_set_digest"]],
        ],
    }
    names = [metric["name"] for metric in report["metrics"]]
    assert names[:5] == [
        "principal_resolution_accuracy",
        "logical_agent_resolution_accuracy",
        "runtime_binding_accuracy",
        "credential_subject_accuracy",
        "authorization_decision_accuracy",
    ]
    assert names[12:] == [
        "policy_version_accuracy",
        "provenance_precision",
        "authorization_decision_precision",
        "authorization_decision_recall",
        "authorization_decision_f1",
        "temporal_validity_accuracy",
        "least_privilege_accuracy",
        "excess_authority_rate",
    ]
    by_name = {metric["name"]: metric for metric in report["metrics"]}
    assert list(by_name["authorization_decision_f1"]) == [
        "synthetic",
        "name",
        "value",
        "support",
        "family",
        "support_meaning",
    ]
    # F1's support is classification support: the actions truth allows, as recall's.
    assert by_name["authorization_decision_f1"]["support"] == 4
    assert by_name["authorization_decision_f1"]["support_meaning"] == (
        "actions truth allows at action time, as classification support"
    )
    assert by_name["authorization_decision_recall"]["support"] == 4
    assert by_name["authorization_decision_accuracy"]["value"] == pytest.approx(7 / 11)
    assert by_name["authorization_decision_f1"]["value"] == pytest.approx(1 / 3)
    assert by_name["provenance_completeness"]["value"] == pytest.approx(6 / 11)
    # One case-kind slice per action and per-action metric, count 1 where it fails.
    slices = report["slices"]
    assert len(slices) == 11 * 13
    assert slices[0] == {
        "synthetic": True,
        "dimension": "case_kind",
        "value": "authorised_action",
        "outcome": "principal_resolution_accuracy",
        "count": 0,
        "support": 1,
    }
    assert [item["outcome"] for item in slices[:13]][-1] == "policy_version_accuracy"
    failed = sum(item["count"] for item in slices if item["outcome"] == "provenance_completeness")
    assert failed == 11 - 6


def test_evaluate_reference_predictions_score_perfectly(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    path = write_predictions(workdir / "rows.jsonl", REFERENCE_ROWS)
    status, out, _ = run(capsys, "evaluate", SUITE_ID, "--predictions", str(path), "--json")
    assert status == 0
    metrics = json_metrics(out)
    assert len(metrics) == 20
    assert metrics.pop("excess_authority_rate") == 0.0
    assert metrics == dict.fromkeys(metrics, 1.0)
    assert {item["count"] for item in json.loads(out)["slices"]} == {0}


def test_evaluate_refuses_an_invalid_predictions_file_with_its_diagnostics(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    path = write_predictions(workdir / "rows.jsonl", _with_line(2, _changed(1, decision="maybe")))
    status, out, err = run(capsys, "evaluate", SUITE_ID, "--predictions", str(path))
    assert (status, out) == (1, "")
    assert "line 2: error [invalid_row] decision: " in err
    assert err.splitlines()[-1] == "invalid: 1 error(s), 0 warning(s)"


def test_rows_are_accepted_and_refused_as_the_originals_trace_model_does(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    """validate and evaluate on rows of our own, each against the original's rule."""
    # Lax values the original's model reads: 1 and "true" as booleans, synthetic 1, blank
    # ids kept (they simply match nothing).
    lax = [
        {**REFERENCE_ROWS[0], "reconstructable_from_retained_evidence": 1, "synthetic": 1},
        {**REFERENCE_ROWS[1], "reconstructable_from_retained_evidence": "true"},
        {**REFERENCE_ROWS[2], "side_effect": "", "evidence_refs": [" "]},
        *REFERENCE_ROWS[3:],
    ]
    path = write_predictions(workdir / "lax.jsonl", lax)
    assert run(capsys, "validate", SUITE_ID, "--predictions", str(path))[0] == 0
    status, out, _ = run(capsys, "evaluate", SUITE_ID, "--predictions", str(path), "--json")
    assert status == 0
    metrics = json_metrics(out)
    assert metrics["expected_side_effect_accuracy"] == pytest.approx(10 / 11)
    # A row schema other than 1.0.0 is refused.
    path = write_predictions(
        workdir / "schema.jsonl", _with_line(3, _changed(2, schema_version="2.0.0"))
    )
    status, out, err = run(capsys, "evaluate", SUITE_ID, "--predictions", str(path))
    assert (status, out) == (1, "")
    assert "line 3: error [invalid_row] schema_version: " in err
    # A padded event_id is kept as written: an unexpected event, and its action missing.
    padded = _with_line(1, _changed(0, event_id=f" {ACTION_IDS[0]}"))
    path = write_predictions(workdir / "padded.jsonl", padded)
    status, out, _ = run(capsys, "validate", SUITE_ID, "--predictions", str(path), "--json")
    assert status == 1
    assert [d["code"] for d in json.loads(out)["diagnostics"]] == [
        "unexpected_event_id",
        "missing_event_id",
    ]
    # Empty rows: the validator refuses them, the scorer grades them, as the original's do.
    path = write_predictions(workdir / "empty.jsonl", [{"event_id": e} for e in ACTION_IDS])
    assert run(capsys, "validate", SUITE_ID, "--predictions", str(path))[0] == 1
    status, out, err = run(capsys, "evaluate", SUITE_ID, "--predictions", str(path), "--json")
    assert (status, err) == (0, "")
    metrics = json_metrics(out)
    assert metrics["least_privilege_accuracy"] == 1.0
    assert metrics["authorization_decision_accuracy"] == 0.0


def test_evaluate_unknown_agent_names_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "evaluate", SUITE_ID, "--agent", "oracle_peeker")
    assert (status, out) == (1, "")
    assert "[unknown_agent]" in err
    assert "(known: always_deny, current_state, reference)" in err


def test_evaluate_refuses_a_tampered_evaluator_instead_of_scoring_nothing(
    capsys: pytest.CaptureFixture[str], suite_copy: Path
) -> None:
    cases = suite_copy.parent.parent / "oracles" / SUITE_ID / "cases.jsonl"
    cases.write_text(cases.read_text(encoding="utf-8") + "\n")
    status, out, err = run(capsys, "evaluate", f"suites/{SUITE_ID}", "--agent", "reference")
    assert (status, out) == (1, "")
    assert err.splitlines() == [
        f"agentbench: harness_error: [digest_mismatch] oracles/{SUITE_ID}/cases.jsonl: "
        "sha256 differs from the one checksums.json records"
    ]


# ---------------------------------------------------------------------------
# derive


def test_derive_accepts_the_shipped_suite(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "derive", SUITE_ID)
    assert status == 0
    assert out.startswith(f"ok: {SUITE_ID}: shipped truth equals the truth derived")


def test_derive_lists_a_resealed_edit_of_the_truth(
    capsys: pytest.CaptureFixture[str], suite_copy: Path
) -> None:
    oracle = suite_copy.parent.parent / "oracles" / SUITE_ID
    truth = oracle / "authority_truth.jsonl"
    original = truth.read_text(encoding="utf-8")
    edited = original.replace(
        '"expected_side_effect":"comparison_recorded"', '"expected_side_effect":"read_recorded"', 1
    )
    assert edited != original
    truth.write_text(edited, encoding="utf-8")
    reseal_evaluator(oracle)
    assert run(capsys, "verify", f"suites/{SUITE_ID}")[0] == 0
    status, out, _ = run(capsys, "derive", f"suites/{SUITE_ID}")
    assert status == 1
    assert out.splitlines() == [
        "authority_truth.jsonl: evt-010-authorised-comparison: expected_side_effect "
        "shipped 'read_recorded', derived 'comparison_recorded'"
    ]


# ---------------------------------------------------------------------------
# compare


@pytest.fixture(scope="module")
def run_reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Run reports of two real pytest runs: the reference agent, then current_state's rows.

    The runs are in-process (``pytest.main``): a subprocess would only add its start-up.
    """
    folder = tmp_path_factory.mktemp("reports")
    rows = write_predictions(folder / "current.jsonl", shipped_rows(CurrentStateAgent()))
    before, after = folder / "before.json", folder / "after.json"
    for report, extra in ((before, []), (after, [f"--agentbench-predictions={SUITE_ID}={rows}"])):
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(folder)
            pytest.main(
                [
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "-p",
                    "no:randomly",
                    f"--rootdir={folder}",
                    f"--agentbench-suite={SUITE_ID}",
                    f"--agentbench-report={report}",
                    *extra,
                ]
            )
        assert report.is_file()
    return before, after


def test_compare_prints_the_paired_table_and_gates_on_regressions(
    capsys: pytest.CaptureFixture[str],
    run_reports: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only the bootstrap interval column depends on the resample count, and nothing here
    # reads it; at the default 10,000 each of the three comparisons costs ~2 CPU-seconds.
    monkeypatch.setattr(baseline, "RESAMPLES", 200)
    before, after = run_reports
    after_report = json.loads(after.read_text())
    (suite,) = after_report["suites"]
    failed_after = sum(
        1
        for entry in suite["cases"]
        if entry["result"]["outcome"] != "passed" and "::evt-" in entry["nodeid"]
    )
    assert failed_after > 0
    status, out, _ = run(capsys, "compare", str(before), str(after))
    # Eleven cases cannot show a significant change once Holm covers every metric.
    assert status == 0
    lines = out.splitlines()
    assert lines[1] == f"{SUITE_ID}: {len(suite['cases'])} pairs of 11 cases in 11 units"
    (accuracy,) = [line for line in lines if " authorization_decision_accuracy " in line]
    assert "1.0000 -> 0.6364  -0.3636" in accuracy
    (f1,) = [line for line in lines if " authorization_decision_f1 " in line]
    assert f1.split()[0] == "untested"
    assert lines[-1].startswith("comparison passed: 0 regressions")

    status, out, _ = run(capsys, "compare", str(before), str(after), "--json")
    assert status == 0
    comparison = json.loads(out)
    passed = comparison["suites"][0]["rows"][0]
    assert passed["metric"] == "passed"
    assert passed["discordant"] == {"before_better": failed_after, "after_better": 0}
    assert passed["p_value"] == mcnemar_exact(failed_after, 0)

    # A lax enough alpha turns the same drop into a regression: exit 1.
    status, out, _ = run(capsys, "compare", str(before), str(after), "--alpha", "0.99")
    assert status == 1
    assert f"FAILED regression {SUITE_ID}:passed 1.0000 -> " in out


def test_rescore_reproduces_both_runs_metrics(
    capsys: pytest.CaptureFixture[str], run_reports: tuple[Path, Path]
) -> None:
    for report in run_reports:
        status, out, _ = run(capsys, "rescore", str(report))
        assert status == 0
        lines = out.splitlines()
        assert lines[0] == f"{SUITE_ID}: 11 recorded outputs re-scored"
        assert all(line.endswith("same") for line in lines[1:-1]), out
        assert lines[-1] == "rescore ok: no difference (0 allowed)"
        status, out, _ = run(capsys, "rescore", str(report), "--json")
        (suite,) = json.loads(out)
        recorded = {
            m["name"]: m["value"] for m in json.loads(report.read_text())["suites"][0]["metrics"]
        }
        assert {m["name"]: m["rescored"] for m in suite["metrics"]} == recorded
        assert suite["oracle_changed"] is None


def test_rescore_fails_on_every_difference_unless_allowed(
    capsys: pytest.CaptureFixture[str], run_reports: tuple[Path, Path], workdir: Path
) -> None:
    # Each of these used to exit 0: CHANGED metrics, an edited outcome, a deleted case.
    _, after = run_reports
    report = json.loads(after.read_text())
    (suite,) = report["suites"]
    cases = suite["cases"]
    failed = next(e for e in cases if e["result"]["outcome"] == "failed")
    failed["result"]["outcome"] = "passed"
    edited_id = failed["result"]["case_id"]
    deleted = next(e for e in cases if e["result"]["outcome"] == "passed" and e is not failed)
    cases.remove(deleted)
    deleted_id = deleted["result"]["case_id"]
    suite["metrics"][0]["value"] = 0.123
    changed_metric = suite["metrics"][0]["name"]
    edited = workdir / "edited.json"
    edited.write_text(json.dumps(report))

    status, out, _ = run(capsys, "rescore", str(edited), "--json")
    assert status == 1
    (rescored,) = json.loads(out)
    found = {(d["code"], d["subject"]) for d in rescored["differences"]}
    # Re-scored over one case fewer, other metrics move too: each is listed.
    assert {code for code, _ in found} == {
        "outcome_changed",
        "case_missing",
        "coverage_changed",
        "metric_changed",
    }
    assert {
        ("outcome_changed", edited_id),
        ("case_missing", deleted_id),
        ("coverage_changed", SUITE_ID),
        ("metric_changed", changed_metric),
    } <= found
    assert not any(d["allowed"] for d in rescored["differences"])

    status, out, _ = run(capsys, "rescore", str(edited))
    assert status == 1
    assert f"  DIFFERS [outcome_changed] {edited_id}: recorded passed, re-scored failed" in out
    assert out.splitlines()[-1].startswith(f"rescore FAILED: {len(found)} differences not allowed")

    codes = ["outcome_changed", "case_missing", "coverage_changed"]
    allow = [f"--allow={code}" for code in codes]
    status, out, _ = run(capsys, "rescore", str(edited), *allow)
    assert status == 1
    status, out, _ = run(capsys, "rescore", str(edited), *allow, "--allow=metric_changed")
    assert status == 0
    assert out.splitlines()[-1] == f"rescore ok: no difference ({len(found)} allowed)"

    # A metric alone, allowed by its name; another metric's change would still fail.
    report = json.loads(after.read_text())
    report["suites"][0]["metrics"][0]["value"] = 0.123
    edited.write_text(json.dumps(report))
    status, out, _ = run(capsys, "rescore", str(edited))
    assert status == 1
    assert f"  DIFFERS [metric_changed] {changed_metric}: recorded 0.1230, re-scored " in out
    status, out, _ = run(capsys, "rescore", str(edited), f"--allow={changed_metric}")
    assert status == 0
    status, out, _ = run(capsys, "rescore", str(edited), "--allow=passed_rate_of_nothing")
    assert status == 1

    # The report's own suite-level oracle digest is part of what it claims.
    report = json.loads(after.read_text())
    stated = report["suites"][0]["digests"]["oracle"]
    report["suites"][0]["digests"]["oracle"] = "0" * 64
    edited.write_text(json.dumps(report))
    status, out, _ = run(capsys, "rescore", str(edited))
    assert status == 1
    assert (
        f"  DIFFERS [oracle_changed] {SUITE_ID}: the report states oracle digest {'0' * 64}, "
        f"its outputs were re-scored under {stated}"
    ) in out


def test_rescore_of_a_report_read_as_a_stream_keeps_the_sorted_order(
    capsys: pytest.CaptureFixture[str], run_reports: tuple[Path, Path], workdir: Path
) -> None:
    # rescore reads a report twice as a stream and grades each output as it is read;
    # what it prints stays in (suite, case, trial) order whatever the file's order.
    _, after = run_reports
    report = json.loads(after.read_text())
    (suite,) = report["suites"]
    for entry in suite["cases"][::3]:
        entry["result"]["outcome"] = (
            "passed" if entry["result"]["outcome"] != "passed" else "failed"
        )
    suite["metrics"][0]["value"] = 0.123
    in_order = workdir / "in-order.json"
    in_order.write_text(json.dumps(report))
    suite["cases"].reverse()
    reversed_ = workdir / "reversed.json"
    reversed_.write_text(json.dumps(report))
    outs = []
    for path in (in_order, reversed_):
        status, out, _ = run(capsys, "rescore", str(path), "--json")
        assert status == 1
        outs.append(out)
    assert outs[0] == outs[1]
    (rescored,) = json.loads(outs[0])
    changed = [d["subject"] for d in rescored["differences"] if d["code"] == "outcome_changed"]
    assert len(changed) == len(suite["cases"][::3]) > 1
    assert changed == sorted(changed)


def test_a_wrong_case_entry_is_refused_read_as_a_stream_as_read_whole(
    run_reports: tuple[Path, Path], workdir: Path
) -> None:
    from pytest_agentbench.report.recording import load_results, stream_results

    _, after = run_reports
    report = json.loads(after.read_text())
    report["suites"][0]["cases"][1]["result"]["outcome"] = 7
    broken = workdir / "broken.json"
    broken.write_text(json.dumps(report))
    with pytest.raises(AgentbenchError) as whole:
        load_results(broken, field="PATH")
    taken: list[object] = []
    with pytest.raises(AgentbenchError) as streamed:
        stream_results(broken, taken.append)
    assert streamed.value.render() == whole.value.render()
    assert streamed.value.location.field == "suites[0].cases[1].result.outcome"
    assert len(taken) == 1


def test_rescore_dispatches_on_the_report_it_is_given(
    capsys: pytest.CaptureFixture[str], run_reports: tuple[Path, Path], workdir: Path
) -> None:
    before, _ = run_reports
    # Our own report with its suite named by id: the core re-scores it.
    status, out, _ = run(capsys, "rescore", str(before), "--suite", SUITE_ID)
    assert status == 0
    assert out.splitlines()[0] == f"{SUITE_ID}: 11 recorded outputs re-scored"
    # A report that is not ours, without one --suite SUITE to read it: refused by name.
    (workdir / "foreign.json").write_text('{"scores": []}\n')
    for extra in ([], [f"--suite={SUITE_ID}=suites/{SUITE_ID}"]):
        status, out, err = run(capsys, "rescore", "foreign.json", *extra)
        assert (status, out) == (1, "")
        assert err.startswith("agentbench: [unrecognised_report] foreign.json: --suite: ")
    # One --suite SUITE whose world cannot read foreign reports: that is said too.
    status, out, err = run(capsys, "rescore", "foreign.json", "--suite", SUITE_ID)
    assert (status, out) == (1, "")
    assert err.startswith("agentbench: [unsupported_command] world kind 'authority' ")


def test_compare_refuses_a_file_that_is_not_a_run_report(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    (workdir / "other.json").write_text('{"suites": []}\n')
    status, out, err = run(capsys, "compare", "other.json", "other.json")
    assert (status, out) == (1, "")
    assert err == "agentbench: [missing_field] other.json: environment: required field is missing\n"


# ---------------------------------------------------------------------------
# the original bundle layout, refusals, the installed script


@pytest.fixture
def bundle_rows(bundle_copy: Path) -> Path:
    return write_predictions(bundle_copy.parent / "rows.jsonl", REFERENCE_ROWS)


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        # A recognised folder's suite id comes from its manifest: <world_id>-v<major>.
        pytest.param(["verify", "bundle"], rf"^ok: {SUITE_ID}: ", id="verify"),
        pytest.param(
            ["validate", "bundle", "--predictions", "rows.jsonl"],
            r"^valid: 0 error\(s\), 0 warning\(s\)$",
            id="validate",
        ),
        pytest.param(
            ["evaluate", "bundle", "--predictions", "rows.jsonl"],
            r"^  authorization_decision_f1\s+1\.0000 ",
            id="evaluate-predictions",
        ),
        pytest.param(
            ["evaluate", "bundle", "--agent", "current_state"],
            r"^  authorization_decision_f1\s+0\.3333 ",
            id="evaluate-agent",
        ),
        pytest.param(["derive", "bundle"], rf"^ok: {SUITE_ID}: shipped truth equals", id="derive"),
    ],
)
def test_every_command_accepts_the_original_bundle_layout(
    capsys: pytest.CaptureFixture[str], bundle_rows: Path, argv: list[str], pattern: str
) -> None:
    status, out, err = run(capsys, *argv)
    assert (status, err) == (0, "")
    assert re.search(pattern, out, flags=re.MULTILINE), out


def test_unknown_suite_names_the_known_suites(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    status, out, err = run(capsys, "verify", "no-such-suite")
    assert (status, out) == (1, "")
    assert err.startswith("agentbench: [unknown_suite] 'no-such-suite' ")
    assert f"({', '.join(sorted(packaged_suites()))})" in err
    assert SUITE_ID in err


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param([], id="no-command"),
        pytest.param(["frobnicate"], id="unknown-command"),
        pytest.param(["evaluate", SUITE_ID], id="evaluate-without-source"),
        pytest.param(
            ["evaluate", SUITE_ID, "--agent", "reference", "--predictions", "x"], id="both-sources"
        ),
        pytest.param(["validate", SUITE_ID], id="validate-without-predictions"),
    ],
)
def test_argument_misuse_exits_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    assert "usage: agentbench" in capsys.readouterr().err


def test_the_installed_script_finds_a_built_in_suite_and_its_world() -> None:
    # One built-in suite, not `list` (which loads every suite, twice the start-up): what
    # `list` prints is checked in process above.
    script = Path(sys.executable).with_name("agentbench")
    completed = subprocess.run(
        [str(script), "verify", SUITE_ID], capture_output=True, text=True, check=False, timeout=60
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == (
        f"ok: {SUITE_ID}: public artifacts and evaluator checksums verified\n"
    )


def _command_parsers() -> dict[str, Any]:
    parser = cli.build_parser()
    (commands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(commands.choices)


def test_every_argument_of_every_command_has_help_text() -> None:
    unexplained = [
        f"{name} {action.dest}"
        for name, command in _command_parsers().items()
        for action in command._actions
        if not action.help
    ]
    assert unexplained == []


@pytest.mark.parametrize(
    ("argv", "expected", "status"),
    [
        pytest.param(
            ["evaluate", SUITE_ID, "--agnet", "reference"],
            "unrecognised option --agnet (did you mean --agent?)",
            2,
            id="typo-hides-a-required-option",
        ),
        pytest.param(
            ["evaluate", SUITE_ID, "--agent", "reference", "--jsno"],
            "unrecognised option --jsno (did you mean --json?)",
            2,
            id="typo-after-a-complete-command",
        ),
        pytest.param(
            ["check", SUITE_ID, "--timout=5"],
            "unrecognised option --timout (did you mean --timeout?)",
            64,
            id="typo-with-its-value-of-the-gate",
        ),
        pytest.param(
            ["evaluate", SUITE_ID, "--ag", "reference"],
            "unrecognised option --ag (did you mean --agent?)",
            2,
            id="no-abbreviation",
        ),
        pytest.param(
            ["compare", "a.json", "b.json", "--zzzzzz"],
            "unrecognised option --zzzzzz",
            2,
            id="nothing-close",
        ),
        pytest.param(
            ["evaluate", SUITE_ID, "--agent", "reference", "stray"],
            "unrecognized arguments: stray",
            2,
            id="stray-positional",
        ),
    ],
)
def test_a_mistyped_option_is_named_with_the_closest_known_one(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str, status: int
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == status
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == f"agentbench {argv[0]}: error: {expected}"

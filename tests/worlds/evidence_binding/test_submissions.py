"""Submission files read strictly; the shape check reports every problem by code and line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli import main as cli
from pytest_agentbench.run.session import SuiteLoader
from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.packaged import data_root
from pytest_agentbench.sdk.runner import MalformedOutput
from pytest_agentbench.worlds.evidence_binding import baselines, submissions
from pytest_agentbench.worlds.evidence_binding.agents import EvidenceAgent
from pytest_agentbench.worlds.evidence_binding.artifacts import path_bound_digest
from pytest_agentbench.worlds.evidence_binding.generator import ASTERIA_SUITE, ENTERPRISE_SUITE
from pytest_agentbench.worlds.evidence_binding.lineages import Loaded
from pytest_agentbench.worlds.evidence_binding.world import WORLD
from tests.test_conformance import REGISTRY
from tests.worlds.evidence_binding.candidates import dump


def loaded(suite_id: str) -> Loaded:
    suite = SuiteLoader(REGISTRY, data_root()).load(data_root() / "suites" / suite_id).suite
    data: Loaded = suite.data
    return data


ASTERIA = loaded(ASTERIA_SUITE)
ENTERPRISE = loaded(ENTERPRISE_SUITE)


def asteria_reference() -> dict[str, Any]:
    submission = baselines.asteria_submission(
        ASTERIA.public, ASTERIA.public_input_digest, EvidenceAgent()
    )
    value: dict[str, Any] = submission.model_dump(mode="json")
    return value


def enterprise_reference() -> dict[str, Any]:
    submission = baselines.enterprise_submission(
        ENTERPRISE.public, ENTERPRISE.public_input_digest, EvidenceAgent()
    )
    value: dict[str, Any] = submission.model_dump(mode="json")
    return value


def check_asteria(value: Any) -> submissions.SubmissionReport:
    text = json.dumps(value, indent=1)
    return submissions.check_asteria(
        text, ASTERIA.public, ASTERIA.public_input_digest, file="s.json"
    )[1]


def check_enterprise(value: Any) -> submissions.SubmissionReport:
    text = dump(value).decode()
    return submissions.check_enterprise(
        text, ENTERPRISE.public, ENTERPRISE.public_input_digest, file="s.json"
    )[1]


def codes(report: submissions.SubmissionReport) -> list[str]:
    return sorted(p.code for p in report.diagnostics)


def test_the_reference_submissions_are_valid_and_asteria_without_synthetic_too() -> None:
    assert check_asteria(asteria_reference()).valid
    assert check_enterprise(enterprise_reference()).valid
    bare = asteria_reference()
    bare.pop("synthetic")
    for row in bare["rows"]:
        row.pop("synthetic")
    assert check_asteria(bare).valid


def _enterprise_text(text: str) -> list[str]:
    return codes(
        submissions.check_enterprise(
            text, ENTERPRISE.public, ENTERPRISE.public_input_digest, file="s.json"
        )[1]
    )


def test_enterprise_bytes_must_be_canonical_as_the_originals_loader_requires() -> None:
    value = enterprise_reference()
    assert _enterprise_text(dump(value).decode()) == []
    for text in (
        json.dumps(value),  # spaced separators, no final newline
        json.dumps(value, indent=2, sort_keys=True) + "\n",
        canonical_json(value),  # no final newline
        canonical_json(value) + "\n\n",
        json.dumps(value, separators=(",", ":")) + "\n",  # keys unsorted
    ):
        assert _enterprise_text(text) == ["noncanonical_json"], text
    # A default left out is not canonical either: the loader writes it back.
    bare = enterprise_reference()
    bare.pop("synthetic")
    assert _enterprise_text(dump(bare).decode()) == ["noncanonical_json"]


def test_enterprise_ids_need_one_character_blank_or_not_as_the_original() -> None:
    value = enterprise_reference()
    value["observations"][0]["observation_id"] = " "
    assert _enterprise_text(dump(value).decode()) == []
    value["observations"][0]["observation_id"] = ""
    assert _enterprise_text(dump(value).decode()) == ["invalid_submission"]


def test_every_asteria_rule_is_reported_at_once_with_lines() -> None:
    value = asteria_reference()
    rows = value["rows"]
    rows[0], rows[1] = rows[1], rows[0]  # canonical order
    rows.append(dict(rows[2]))  # a second row for one action
    rows[3]["retained_observation_ids"] = ["x", *rows[3]["retained_observation_ids"]]
    rows[4]["retained_observation_ids"] = ["a", "a"]
    dropped = rows.pop(5)["action_event_id"]
    rows.append({"action_event_id": "not-an-action", "retained_observation_ids": []})
    value["public_input_digest"] = "0" * 64
    value["benchmark_id"] = "another"
    report = check_asteria(value)
    assert codes(report) == [
        "benchmark_mismatch",
        "duplicate_action_id",
        "duplicate_observation_id",
        "missing_action",
        "noncanonical_order",
        "noncanonical_order",
        "public_digest_mismatch",
        "unknown_action",
    ]
    assert not report.valid
    located = {p.code: p for p in report.diagnostics if p.action_id}
    assert located["unknown_action"].line is not None
    assert located["unknown_action"].line > 1
    missing = next(p for p in report.diagnostics if p.code == "missing_action")
    assert missing.action_id == dropped
    assert report.render_lines()[-1] == "invalid: 8 error(s)"


def test_shape_problems_are_all_reported() -> None:
    value = asteria_reference()
    value["rows"][0]["retained_observation_ids"] = [" "]
    value["rows"][1]["note"] = "x"
    value["rows"][2]["retained_observation_ids"] = "one-id"
    value["rows"][3]["synthetic"] = False
    report = check_asteria(value)
    assert codes(report) == ["invalid_submission"] * 4
    fields = sorted(p.field or "" for p in report.diagnostics)
    assert fields[0].startswith("rows[0].retained_observation_ids")
    assert all(p.line for p in report.diagnostics)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('{"rows": [', "malformed_json"),
        ('{"rows": [], "rows": []}', "duplicate_key"),
        ("[]", "invalid_submission"),
        ('{"rows": []}', "invalid_submission"),
    ],
)
def test_unreadable_documents(text: str, code: str) -> None:
    report = submissions.check_asteria(
        text, ASTERIA.public, ASTERIA.public_input_digest, file="s.json"
    )[1]
    assert code in codes(report)


def test_enterprise_refuses_what_the_original_refuses_and_scores_the_rest() -> None:
    value = enterprise_reference()
    observations = value["observations"]
    observations[0]["tenant_id"] = "tenant-elsewhere"  # scored, not refused
    observations[1]["evidence_id"] = "observation-" + "0" * 32  # scored, not refused
    assert check_enterprise(value).valid
    observations[2]["sequence"] = 7
    observations[3]["observation_id"] = observations[4]["observation_id"]
    observations[5]["action_id"] = "action-unknown"
    value["public_input_digest"] = "0" * 64
    assert codes(check_enterprise(value)) == [
        "duplicate_observation_id",
        "public_digest_mismatch",
        "sequence_mismatch",
        "unknown_action",
    ]


def test_the_command_validates_with_no_evaluator_access(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.json"
    good.write_bytes(dump(enterprise_reference()))
    assert cli.main(["validate", ENTERPRISE_SUITE, "--predictions", str(good)]) == 0
    assert capsys.readouterr().out.strip() == "valid: 0 error(s)"
    bad = tmp_path / "bad.json"
    value = asteria_reference()
    value["rows"].pop()
    bad.write_text(json.dumps(value, indent=2))
    assert cli.main(["validate", ASTERIA_SUITE, "--predictions", str(bad), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is False
    assert [d["code"] for d in report["diagnostics"]] == ["missing_action"]


def write_pair(folder: Path, **manifest_changes: Any) -> Path:
    """The reference submission and its non-frozen ``visibility: submission`` manifest."""
    folder.mkdir()
    data = dump(asteria_reference())
    digest = hashlib.sha256(data).hexdigest()
    manifest = {
        "schema_version": "2.0.0",
        "benchmark_id": ASTERIA.benchmark_id,
        "visibility": "submission",
        "artifact_set_digest": path_bound_digest({submissions.ASTERIA_SUBMISSION: digest}),
        "artifacts": [
            {
                "path": submissions.ASTERIA_SUBMISSION,
                "byte_size": len(data),
                "sha256": digest,
                "synthetic": True,
            }
        ],
        "synthetic": True,
        **manifest_changes,
    }
    (folder / submissions.ASTERIA_SUBMISSION).write_bytes(data)
    (folder / "manifest.json").write_bytes(dump(manifest))
    return folder / submissions.ASTERIA_SUBMISSION


def pair_answers(path: Path) -> list[str]:
    """What the predictions adapter says for each case: 'ok' or the refusal's code."""
    suite = SuiteLoader(REGISTRY, data_root()).load(data_root() / "suites" / ASTERIA_SUITE).suite
    adapter = WORLD.predictions_adapter(suite, path)
    said = []
    for case in WORLD.cases(suite):
        try:
            adapter.select_evidence(ASTERIA.public, case.case_id)
        except MalformedOutput as exc:
            said.append(exc.reason.split("]")[0].lstrip("["))
        else:
            said.append("ok")
    return sorted(set(said))


def test_a_submission_pair_is_read_with_its_manifest(tmp_path: Path) -> None:
    assert pair_answers(write_pair(tmp_path / "ok")) == ["ok"]


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        (lambda p: (p.parent / "notes.txt").write_text("x"), "inventory_mismatch"),
        (lambda p: p.write_bytes(p.read_bytes() + b"\n"), "noncanonical_json"),
        (lambda p: p.write_text(json.dumps(asteria_reference())), "noncanonical_json"),
    ],
    ids=["inventory differs", "noncanonical", "noncanonical spacing"],
)
def test_a_damaged_pair_is_refused_for_every_case(tmp_path: Path, damage: Any, code: str) -> None:
    path = write_pair(tmp_path / "pair")
    damage(path)
    assert pair_answers(path) == [code]


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"seed": 1}, "invalid_submission"),  # a frozen manifest fails the non-frozen contract
        ({"visibility": "root"}, "invalid_submission"),
        ({"visibility": "public"}, "manifest_binding_mismatch"),
        ({"artifact_set_digest": "0" * 64}, "manifest_binding_mismatch"),
        ({"benchmark_id": "another"}, "manifest_binding_mismatch"),
    ],
)
def test_the_pair_manifest_is_checked(tmp_path: Path, changes: dict[str, Any], code: str) -> None:
    assert pair_answers(write_pair(tmp_path / "pair", **changes)) == [code]


def test_validate_and_evaluate_refuse_a_pair_whose_manifest_does_not_bind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the original and the pytest path do: not valid, and not scored as empty."""
    good = write_pair(tmp_path / "good")
    assert cli.main(["validate", ASTERIA_SUITE, "--predictions", str(good)]) == 0
    capsys.readouterr()
    for changes in ({"artifact_set_digest": "0" * 64}, {"visibility": "public"}):
        path = write_pair(tmp_path / f"bad-{len(list(tmp_path.iterdir()))}", **changes)
        assert cli.main(["validate", ASTERIA_SUITE, "--predictions", str(path), "--json"]) == 1
        report = json.loads(capsys.readouterr().out)
        assert [d["code"] for d in report["diagnostics"]] == ["manifest_binding_mismatch"]
        assert cli.main(["evaluate", ASTERIA_SUITE, "--predictions", str(path)]) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        assert "[manifest_binding_mismatch]" in captured.err
    # The submission alone, outside its pair, is read as a plain submission.
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / submissions.ASTERIA_SUBMISSION).write_bytes(
        (good.parent / submissions.ASTERIA_SUBMISSION).read_bytes()
    )
    assert (
        cli.main(
            ["evaluate", ASTERIA_SUITE, "--predictions", str(alone / "c08-asteria-submission.json")]
        )
        == 0
    )

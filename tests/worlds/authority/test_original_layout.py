"""A bundle in the original's layout, written from the format page alone, runs unchanged.

The writer here knows nothing of this project's models: it takes the authored
suite's records as plain JSON, orders every object's keys as the format page
lists them (``synthetic`` first where a record carries it), projects the
evaluator files to exactly the page's field sets, and computes the digests
with ``hashlib`` as the page defines them. The result is the published
fixture's shape (world id ``asteria-agentic``, so it runs as
``asteria-agentic-v1``) in ``public/`` + ``evaluator/`` with no ``suite.yaml``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli import main as cli
from pytest_agentbench.sdk.packaged import packaged_suites

AUTHORED = "asteria-authored-v1"
SUITE_ROOT = packaged_suites()[AUTHORED]
ORACLE_ROOT = SUITE_ROOT.parent.parent / "oracles" / AUTHORED
PUBLISHED_ID = "asteria-agentic-v1"

# Key orders of the format page ("Public records", "Evaluator records").
DELEGATION = (
    "id",
    "originating_principal_id",
    "delegator_principal_id",
    "grantee_agent_id",
    "parent_delegation_id",
    "capability",
    "policy_version",
    "valid_from",
    "expires_at",
)
ORDERS: dict[str, tuple[str, ...]] = {
    "principals.jsonl": (
        "id",
        "kind",
        "display_name",
        "organisation_id",
        "department_id",
        "owner_principal_id",
    ),
    "agents.jsonl": (
        "id",
        "display_name",
        "organisation_id",
        "owner_principal_id",
        "parent_agent_id",
    ),
    "runtimes.jsonl": (
        "id",
        "logical_agent_id",
        "runtime_principal_id",
        "owner_principal_id",
        "organisation_id",
    ),
    "resources.jsonl": ("id", "display_name", "organisation_id", "owner_principal_id", "actions"),
    "public_credentials.jsonl": (
        "id",
        "issuer_principal_id",
        "subject_principal_id",
        "allowed_runtime_principal_ids",
        "valid_from",
        "expires_at",
    ),
    "public_delegations.jsonl": DELEGATION,
    "public_events.jsonl": (
        "schema_version",
        "id",
        "event_index",
        "occurred_at",
        "evidence_refs",
        "payload",
    ),
}
NESTED: dict[str, tuple[str, ...]] = {
    "capability": ("resource_ids", "actions", "scopes", "purpose", "may_delegate"),
    "delegation": DELEGATION,
    "proposed_delegation": DELEGATION,
    "credential": ORDERS["public_credentials.jsonl"],
    "runtime": ORDERS["runtimes.jsonl"],
    "attempt": (
        "originating_principal_claim",
        "logical_agent_claim",
        "runtime_principal_claim",
        "presented_credential_id",
        "attributed_actor_claim",
        "resource_id",
        "action",
        "requested_scope",
        "purpose",
        "policy_version",
        "evidence_refs",
        "proposed_delegation",
    ),
    "payload": (
        "event_type",
        "delegation",
        "credential",
        "runtime",
        "attempt",
        "delegation_id",
        "evidence_refs",
        "audit_id",
    ),
}
TRUTH = (
    "synthetic",
    "action_event_id",
    "decision_at_action",
    "decision_at_audit",
    "failure_reasons_at_action",
    "failure_reasons_at_audit",
    "delegation_chain_ids",
    "expected_policy_version",
    "required_evidence_refs",
    "reconstructable_at_audit",
    "expected_side_effect",
)
PROJECTIONS: dict[str, tuple[str, ...]] = {
    "expected_decisions.jsonl": (
        "action_event_id",
        "decision_at_action",
        "decision_at_audit",
        "failure_reasons_at_action",
        "failure_reasons_at_audit",
    ),
    "expected_side_effects.jsonl": ("action_event_id", "expected_side_effect"),
    "expected_provenance.jsonl": (
        "action_event_id",
        "delegation_chain_ids",
        "reconstructable_at_audit",
        "required_evidence_refs",
    ),
}
EPOCHS = (
    "action_event_id",
    "action_event_index",
    "audit_event_id",
    "reconstructable_at_audit",
    "required_evidence_refs",
)
BINDING = {
    "synthetic",
    "action_event_id",
    "originating_principal_id",
    "logical_agent_id",
    "runtime_id",
    "runtime_principal_id",
    "credential_subject_id",
    "attributed_actor_id",
    "accountable_owner_chain",
}


def ordered(value: Any, order: tuple[str, ...]) -> dict[str, Any]:
    """``value``'s keys in the page's ``order``, ``synthetic`` first; nested records too."""
    assert set(value) - {"synthetic"} <= set(order), sorted(set(value) - set(order))
    keys = [key for key in ("synthetic", *order) if key in value]
    return {
        key: ordered(value[key], NESTED[key]) if isinstance(value[key], dict) else value[key]
        for key in keys
    }


def jsonl_row(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n"


def json_file(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def digest(files: dict[str, bytes]) -> str:
    running = hashlib.sha256()
    for path in sorted(files):
        running.update(path.encode("utf-8") + b"\0" + hashlib.sha256(files[path]).digest())
    return running.hexdigest()


def original_public() -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for name, order in ORDERS.items():
        text = "".join(jsonl_row(ordered(row, order)) for row in rows(SUITE_ROOT / name))
        files[name] = text.encode("utf-8")
    organisation = json.loads((SUITE_ROOT / "organisation.json").read_text(encoding="utf-8"))
    files["organisation.json"] = json_file({**organisation, "world_id": "asteria-agentic"})
    for folder in ("scenarios", "tool_schemas"):
        for path in sorted((SUITE_ROOT / folder).glob("*.json")):
            files[f"{folder}/{path.name}"] = json_file(json.loads(path.read_text("utf-8")))
    return files


def original_evaluator() -> dict[str, bytes]:
    truth = rows(ORACLE_ROOT / "authority_truth.jsonl")
    events = {row["id"]: row for row in rows(SUITE_ROOT / "public_events.jsonl")}
    (scenario,) = (
        json.loads(path.read_text("utf-8")) for path in (SUITE_ROOT / "scenarios").glob("*.json")
    )
    files = {
        "authority_truth.jsonl": "".join(jsonl_row(ordered(row, TRUTH)) for row in truth),
        "cases.jsonl": "".join(
            jsonl_row(ordered(row, ("action_event_id", "kind")))
            for row in rows(ORACLE_ROOT / "cases.jsonl")
        ),
        "evidence_epochs.jsonl": "".join(
            jsonl_row(
                {
                    key: {
                        "action_event_index": events[row["action_event_id"]]["event_index"],
                        "audit_event_id": scenario["audit_event_id"],
                    }.get(key, row.get(key))
                    for key in EPOCHS
                }
            )
            for row in truth
        ),
        **{
            name: "".join(jsonl_row({key: row[key] for key in fields}) for row in truth)
            for name, fields in PROJECTIONS.items()
        },
    }
    encoded = {name: text.encode("utf-8") for name, text in files.items()}
    bindings = json.loads((ORACLE_ROOT / "canonical_bindings.json").read_text("utf-8"))
    assert set(bindings) == {"schema_version", "bindings"}
    assert all(set(binding) == BINDING for binding in bindings["bindings"])
    encoded["canonical_bindings.json"] = json_file(bindings)
    return encoded


def write_original(base: Path) -> Path:
    bundle = base / PUBLISHED_ID
    public = original_public()
    evaluator = original_evaluator()
    public_digest = digest(public)
    manifest = {
        "artifact_set_digest": public_digest,
        "artifacts": {path: hashlib.sha256(data).hexdigest() for path, data in public.items()},
        "oracle_free": True,
        "schema_version": "1.0.0",
        "seed": 20260719,
        "world_id": "asteria-agentic",
        "world_version": "1.0.0",
    }
    checksums = {
        "checksum_scheme": "sha256-artifact-set-v1",
        "evaluator_artifact_set_digest": digest(evaluator),
        "evaluator_artifacts": {
            path: hashlib.sha256(data).hexdigest() for path, data in evaluator.items()
        },
        "public_artifact_set_digest": public_digest,
        "schema_version": "1.0.0",
    }
    trees = {
        "public": {**public, "manifest.json": json_file(manifest)},
        "evaluator": {**evaluator, "checksums.json": json_file(checksums)},
    }
    for tree, files in trees.items():
        for path, data in files.items():
            target = bundle / tree / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return bundle


def test_this_projects_writer_writes_the_pages_bytes() -> None:
    """The authored suite as written here equals its page-ordered, page-projected form."""
    public = original_public()
    for path, data in public.items():
        if path != "organisation.json":
            assert (SUITE_ROOT / path).read_bytes() == data, path
    for path, data in original_evaluator().items():
        assert (ORACLE_ROOT / path).read_bytes() == data, path


def test_the_projection_files_carry_no_synthetic_and_no_policy_version() -> None:
    decisions = original_evaluator()["expected_decisions.jsonl"].decode().splitlines()
    first = json.loads(decisions[0])
    assert list(first) == list(PROJECTIONS["expected_decisions.jsonl"])


@pytest.fixture
def original(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write_original(tmp_path)


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        pytest.param(["verify"], rf"^ok: {PUBLISHED_ID}: public artifacts", id="verify"),
        pytest.param(["derive"], rf"^ok: {PUBLISHED_ID}: shipped truth equals", id="derive"),
        pytest.param(
            ["evaluate", "--agent", "reference"],
            r"^  authorization_decision_accuracy\s+1\.0000 ",
            id="evaluate",
        ),
    ],
)
def test_the_cli_takes_the_original_folder_unchanged(
    original: Path, capsys: pytest.CaptureFixture[str], argv: list[str], pattern: str
) -> None:
    status = cli.main([argv[0], PUBLISHED_ID, *argv[1:]])
    captured = capsys.readouterr()
    assert (status, captured.err) == (0, "")
    assert re.search(pattern, captured.out, flags=re.MULTILINE), captured.out


def test_pytest_takes_the_original_folder_unchanged(pytester: pytest.Pytester) -> None:
    # Serially: recognising the folder is the collecting process's decision, the same code in
    # an xdist worker; tests/test_recognise.py runs a recognised folder under xdist.
    bundle = write_original(pytester.path)
    assert not list(bundle.rglob("suite.yaml"))
    report = pytester.path / "run.json"
    result = pytester.runpytest(PUBLISHED_ID, f"--agentbench-report={report}")
    result.assert_outcomes(passed=11)
    (suite,) = json.loads(report.read_text(encoding="utf-8"))["suites"]
    assert suite["id"] == PUBLISHED_ID
    values = {metric["name"]: metric["value"] for metric in suite["metrics"]}
    assert values["authorization_decision_accuracy"] == 1.0
    # The report's public digest covers public/ only, never the evaluator tree inside.
    public = {
        path.relative_to(bundle).as_posix(): path.read_bytes()
        for path in (bundle / "public").rglob("*")
        if path.is_file()
    }
    assert suite["digests"]["public"] == digest(public)


def test_the_folder_is_also_accepted_by_agentbench_suite(pytester: pytest.Pytester) -> None:
    write_original(pytester.path / "checkout")
    result = pytester.runpytest("--agentbench-suite", f"checkout/{PUBLISHED_ID}", "-q")
    result.assert_outcomes(passed=11)

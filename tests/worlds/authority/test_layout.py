"""The authority world recognises the original's public/ + evaluator/ bundle folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli import main as cli
from pytest_agentbench.run.session import SuiteLoader
from pytest_agentbench.sdk.canonical import artifact_set_digest, pretty_json, sha256_hex, tree_files
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.layout import SUITE_FILE
from pytest_agentbench.sdk.packaged import packaged_suites
from pytest_agentbench.sdk.registry import WorldRegistry
from pytest_agentbench.worlds.authority import layout, registration
from pytest_agentbench.worlds.authority.world import WORLD

SUITE_ID = "asteria-authored-v1"
SHIPPED_SUITE = packaged_suites()[SUITE_ID]
SHIPPED_ORACLE = SHIPPED_SUITE.parent.parent / "oracles" / SUITE_ID


def bundle_folder(base: Path) -> Path:
    """The shipped suite in the original layout, with no suite.yaml anywhere."""
    bundle = base / "bundle"
    shutil.copytree(SHIPPED_SUITE, bundle / "public")
    (bundle / "public" / SUITE_FILE).unlink()
    shutil.copytree(SHIPPED_ORACLE, bundle / "evaluator")
    (bundle / "evaluator" / "controls.yaml").unlink()
    return bundle


def edit_json(path: Path, **changes: object) -> None:
    value = json.loads(path.read_text(encoding="utf-8"))
    value.update(changes)
    path.write_text(pretty_json({k: v for k, v in value.items() if v is not None}))


def test_the_registration_declares_the_markers_the_world_checks() -> None:
    assert registration.WORLD.layout_markers == layout.LAYOUT_MARKERS == WORLD.layout_markers


def test_the_bundle_folder_is_claimed_with_an_id_from_its_manifest(tmp_path: Path) -> None:
    config = WORLD.recognise(bundle_folder(tmp_path))
    assert config is not None
    manifest = json.loads((SHIPPED_SUITE / "manifest.json").read_text(encoding="utf-8"))
    assert config.id == f"{manifest['world_id']}-v1"
    assert (config.world, config.oracle, config.options) == (
        "authority",
        "evaluator",
        {"public": "public"},
    )


@pytest.mark.parametrize(
    ("file", "changes"),
    [
        pytest.param("public/manifest.json", {"schema_version": "2.0.0"}, id="schema-2"),
        pytest.param("public/manifest.json", {"oracle_free": False}, id="not-oracle-free"),
        pytest.param("public/manifest.json", {"artifacts": None}, id="no-artifacts"),
        pytest.param("evaluator/checksums.json", {"checksum_scheme": "sha256"}, id="scheme"),
        pytest.param("evaluator/checksums.json", {"schema_version": "2.0.0"}, id="eval-schema-2"),
        pytest.param(
            "evaluator/checksums.json", {"public_artifact_set_digest": None}, id="no-binding"
        ),
    ],
)
def test_a_folder_whose_manifests_are_not_v1_is_not_claimed(
    tmp_path: Path, file: str, changes: dict[str, object]
) -> None:
    bundle = bundle_folder(tmp_path)
    edit_json(bundle / file, **changes)
    assert WORLD.recognise(bundle) is None


def test_unreadable_manifests_are_not_claimed(tmp_path: Path) -> None:
    bundle = bundle_folder(tmp_path)
    (bundle / "public" / "manifest.json").write_text('{"a": 1, "a": 2}', encoding="utf-8")
    assert WORLD.recognise(bundle) is None
    (bundle / "public" / "manifest.json").write_bytes(b"\xff\xfe")
    assert WORLD.recognise(bundle) is None


def c08_v2_candidate(base: Path) -> Path:
    """The shape of the C08 v2 Asteria candidate (formats/authority-c08-v2.md)."""
    folder = base / "asteria-agentic-c08-v2"
    digest = "0" * 64
    descriptor = {"path": "c08-asteria-public.json", "byte_size": 2, "sha256": digest}
    for visibility in ("public", "evaluator"):
        (folder / visibility).mkdir(parents=True)
        manifest = {
            "schema_version": "2.0.0",
            "benchmark_id": "asteria-agentic-c08-v2",
            "seed": 20260809,
            "visibility": visibility,
            "artifact_set_digest": digest,
            "artifacts": [descriptor],
            "synthetic": True,
        }
        (folder / visibility / "manifest.json").write_text(pretty_json(manifest))
    (folder / "manifest.json").write_text(pretty_json({"schema_version": "2.0.0"}))
    return folder


def test_a_c08_v2_candidate_is_not_claimed(tmp_path: Path) -> None:
    folder = c08_v2_candidate(tmp_path)
    registry = WorldRegistry([registration.WORLD])
    assert registry.recognise(folder) is None
    # Even with a stray file matching the markers, the content decides.
    (folder / "evaluator" / "checksums.json").write_text(
        (SHIPPED_ORACLE / "checksums.json").read_text(encoding="utf-8")
    )
    assert registry.recognise(folder) is None


def test_a_claimed_bundle_with_a_tampered_manifest_is_refused_by_name(tmp_path: Path) -> None:
    bundle = bundle_folder(tmp_path)
    edit_json(bundle / "public" / "manifest.json", note="added")
    loader = SuiteLoader(WorldRegistry([registration.WORLD]), tmp_path)
    assert loader.suite_root_of(bundle / "public") == bundle
    with pytest.raises(AgentbenchError) as refused:
        loader.load(bundle)
    assert refused.value.render() == (
        "[unknown_field] bundle/public/manifest.json: note: unknown field"
    )


def test_pytest_runs_the_bundle_folder_with_no_suite_yaml(pytester: pytest.Pytester) -> None:
    # Under xdist too: test_original_layout.py runs a recognised bundle with -n 0 and -n 2.
    bundle_folder(pytester.path)
    report = pytester.path / "run.json"
    result = pytester.runpytest("bundle", f"--agentbench-report={report}")
    # The original layout has no controls manifest: the cases run, no control items.
    result.assert_outcomes(passed=11)
    (suite,) = json.loads(report.read_text(encoding="utf-8"))["suites"]
    assert suite["id"] == SUITE_ID
    assert [entry["nodeid"].split("::")[0] for entry in suite["cases"]] == [
        "bundle/public/public_events.jsonl"
    ] * 11


def test_a_scenario_naming_a_tool_schema_the_bundle_lacks_verifies_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The original's own writer produces such bundles, so it is not refused.
    bundle = bundle_folder(tmp_path)
    (bundle / "public" / "tool_schemas" / "procurement-tools.json").unlink()
    files = {
        rel: path.read_bytes()
        for rel, path in tree_files(bundle / "public", exclude=("manifest.json",)).items()
    }
    edit_json(
        bundle / "public" / "manifest.json",
        artifacts={rel: sha256_hex(data) for rel, data in files.items()},
        artifact_set_digest=artifact_set_digest(files),
    )
    evaluator = bundle / "evaluator" / "checksums.json"
    edit_json(evaluator, public_artifact_set_digest=artifact_set_digest(files))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["verify", "bundle"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("ok: ")
    assert captured.err == (
        "agentbench: warning: bundle/public/scenarios/procurement-delegation.json: "
        "tool_schema_paths[0]: 'tool_schemas/procurement-tools.json' is not in the bundle "
        "(accepted, as the original does)\n"
    )


def reseal(evaluator: Path) -> None:
    files = {
        rel: path.read_bytes()
        for rel, path in tree_files(evaluator, exclude=("checksums.json",)).items()
    }
    edit_json(
        evaluator / "checksums.json",
        evaluator_artifacts={rel: sha256_hex(data) for rel, data in files.items()},
        evaluator_artifact_set_digest=artifact_set_digest(files),
    )


@pytest.mark.parametrize(
    ("file", "edit", "refusal"),
    [
        pytest.param(
            "expected_decisions.jsonl",
            lambda row: {**row, "expected_policy_version": "v1"},
            "[unknown_field] bundle/evaluator/expected_decisions.jsonl:1: "
            "expected_policy_version: unknown field",
            id="decisions-with-policy-version",
        ),
        pytest.param(
            "expected_provenance.jsonl",
            lambda row: {**row, "synthetic": True},
            "[unknown_field] bundle/evaluator/expected_provenance.jsonl:1: synthetic: "
            "unknown field",
            id="provenance-with-synthetic",
        ),
        pytest.param(
            "authority_truth.jsonl",
            lambda row: {k: v for k, v in row.items() if k != "expected_policy_version"},
            "[missing_field] bundle/evaluator/authority_truth.jsonl:1: expected_policy_version: "
            "required field is missing",
            id="truth-without-policy-version",
        ),
    ],
)
def test_evaluator_rows_outside_the_pages_field_sets_are_refused_by_name(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *,
    file: str,
    edit: Any,
    refusal: str,
) -> None:
    bundle = bundle_folder(tmp_path)
    path = bundle / "evaluator" / file
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[0] = json.dumps(edit(json.loads(lines[0])), separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    reseal(bundle / "evaluator")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["verify", "bundle"]) == 1
    assert capsys.readouterr().err == f"agentbench: {refusal}\n"


def test_bindings_with_a_top_level_synthetic_are_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = bundle_folder(tmp_path)
    edit_json(bundle / "evaluator" / "canonical_bindings.json", synthetic=True)
    reseal(bundle / "evaluator")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["verify", "bundle"]) == 1
    assert capsys.readouterr().err == (
        "agentbench: [unknown_field] bundle/evaluator/canonical_bindings.json: synthetic: "
        "unknown field\n"
    )

"""Bundle I/O: byte-identical round trips and every verification refusal."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_agentbench.sdk.canonical import artifact_set_digest, sha256_hex
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.authority.bundle import (
    build_evaluator_bundle,
    build_public_bundle,
    public_files,
    read_evaluator,
    read_public,
    write_evaluator,
    write_public,
)
from pytest_agentbench.worlds.authority.engine import derive_truth
from pytest_agentbench.worlds.authority.models import (
    BindingsFile,
    EvaluatorBundle,
    EvidenceEpoch,
    ExpectedDecision,
    ExpectedProvenance,
    ExpectedSideEffect,
    PublicBundle,
)
from tests.worlds.authority.test_engine import LABELS, bindings
from tests.worlds.authority.test_replay import small_world


def public_bundle() -> PublicBundle:
    world = small_world()
    return build_public_bundle(world.snapshot, world.events, world.scenarios, world.tool_schemas)


def evaluator_bundle(public: PublicBundle) -> EvaluatorBundle:
    truth = derive_truth(public, bindings(), LABELS)
    index_of = {event.id: event.event_index for event in public.events}
    return build_evaluator_bundle(
        bindings=BindingsFile(schema_version="1.0.0", bindings=tuple(bindings())),
        truth=truth,
        cases=LABELS,
        decisions=[ExpectedDecision.of(item) for item in truth],
        side_effects=[ExpectedSideEffect.of(item) for item in truth],
        provenance=[ExpectedProvenance.of(item) for item in truth],
        epochs=[
            EvidenceEpoch.of(
                item, action_event_index=index_of[item.action_event_id], audit_event_id="evt-011"
            )
            for item in truth
        ],
        public_digest=public.manifest.artifact_set_digest,
        schema_version="1.0.0",
    )


def snapshot_bytes(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def write_both(tmp_path: Path) -> tuple[Path, Path, PublicBundle]:
    public = public_bundle()
    write_public(tmp_path / "public", public)
    write_evaluator(tmp_path / "evaluator", evaluator_bundle(public))
    return tmp_path / "public", tmp_path / "evaluator", public


def refused(code: str, call: Callable[[], object]) -> AgentbenchError:
    with pytest.raises(AgentbenchError) as caught:
        call()
    assert caught.value.code == code, caught.value.render()
    return caught.value


def test_public_round_trip_is_byte_identical(tmp_path: Path) -> None:
    public_root, _, public = write_both(tmp_path)
    loaded = read_public(public_root, "pub")
    assert loaded == public
    first = snapshot_bytes(public_root)
    write_public(tmp_path / "again", loaded)
    assert snapshot_bytes(tmp_path / "again") == first
    assert sorted(first) == [
        "agents.jsonl",
        "manifest.json",
        "organisation.json",
        "principals.jsonl",
        "public_credentials.jsonl",
        "public_delegations.jsonl",
        "public_events.jsonl",
        "resources.jsonl",
        "runtimes.jsonl",
        "scenarios/mini.json",
        "tool_schemas/mini-tools.json",
    ]


def test_manifest_follows_the_artifact_set_scheme(tmp_path: Path) -> None:
    public_root, _, public = write_both(tmp_path)
    manifest = json.loads((public_root / "manifest.json").read_text())
    files = public_files(public.snapshot, public.events, public.scenarios, public.tool_schemas)
    assert manifest["artifact_set_digest"] == artifact_set_digest(files)
    assert manifest["oracle_free"] is True
    assert set(manifest) == {
        "artifact_set_digest",
        "artifacts",
        "oracle_free",
        "schema_version",
        "seed",
        "world_id",
        "world_version",
    }
    assert (public_root / "manifest.json").read_text().endswith("}\n")
    events = (public_root / "public_events.jsonl").read_text().splitlines()
    assert len(events) == 11
    assert all(": " not in line for line in events)  # compact canonical lines


def test_evaluator_round_trip_and_binding(tmp_path: Path) -> None:
    _, evaluator_root, public = write_both(tmp_path)
    digest = public.manifest.artifact_set_digest
    loaded = read_evaluator(evaluator_root, "ev", digest)
    assert loaded == evaluator_bundle(public)
    first = snapshot_bytes(evaluator_root)
    write_evaluator(tmp_path / "again", loaded)
    assert snapshot_bytes(tmp_path / "again") == first
    checksums = json.loads((evaluator_root / "checksums.json").read_text())
    assert checksums["checksum_scheme"] == "sha256-artifact-set-v1"
    error = refused(
        "evaluator_binding_mismatch", lambda: read_evaluator(evaluator_root, "ev", "f" * 64)
    )
    assert error.location.file == "ev/checksums.json"


def test_excluded_files_are_outside_the_artifact_set(tmp_path: Path) -> None:
    public_root, evaluator_root, public = write_both(tmp_path)
    (public_root / "suite.yaml").write_text("id: mini\n")
    refused("unexpected_file", lambda: read_public(public_root, "pub"))
    assert read_public(public_root, "pub", exclude=("suite.yaml",)) == public
    (evaluator_root / "controls.yaml").write_text("x: 1\n")
    digest = public.manifest.artifact_set_digest
    refused("unexpected_file", lambda: read_evaluator(evaluator_root, "ev", digest))
    read_evaluator(evaluator_root, "ev", digest, exclude=("controls.yaml",))


def test_public_verification_refusals(tmp_path: Path) -> None:
    public_root, _, _ = write_both(tmp_path)
    (public_root / "notes.txt").write_text("hi")
    error = refused("unexpected_file", lambda: read_public(public_root, "pub"))
    assert error.location.file == "pub/notes.txt"
    (public_root / "notes.txt").unlink()
    (public_root / "scenarios" / "extra.json").write_text("{}\n")
    error = refused("unexpected_file", lambda: read_public(public_root, "pub"))
    assert error.location.file == "pub/scenarios/extra.json"
    (public_root / "scenarios" / "extra.json").unlink()
    agents = public_root / "agents.jsonl"
    original = agents.read_bytes()
    agents.write_bytes(original.replace(b'"main"', b'"Main"'))
    error = refused("digest_mismatch", lambda: read_public(public_root, "pub"))
    assert error.location.file == "pub/agents.jsonl"
    agents.unlink()
    error = refused("missing_file", lambda: read_public(public_root, "pub"))
    assert error.location.file == "pub/agents.jsonl"
    agents.write_bytes(original)
    manifest_path = public_root / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["artifact_set_digest"] = "0" * 64
    manifest_path.write_text(json.dumps(manifest))
    error = refused("digest_mismatch", lambda: read_public(public_root, "pub"))
    assert error.location.file == "pub/manifest.json"
    manifest_path.unlink()
    refused("missing_file", lambda: read_public(public_root, "pub"))


def test_evaluator_verification_refusals(tmp_path: Path) -> None:
    _, evaluator_root, public = write_both(tmp_path)
    digest = public.manifest.artifact_set_digest
    truth = evaluator_root / "authority_truth.jsonl"
    truth.write_bytes(truth.read_bytes().replace(b'"allow"', b'"deny"', 1))
    error = refused("digest_mismatch", lambda: read_evaluator(evaluator_root, "ev", digest))
    assert error.location.file == "ev/authority_truth.jsonl"
    truth.unlink()
    refused("missing_file", lambda: read_evaluator(evaluator_root, "ev", digest))


def rewrite_with_manifest(public_root: Path, path: str, text: str) -> None:
    """Replace one public file and re-seal the manifest so only parsing can fail."""
    (public_root / path).write_text(text)
    manifest_path = public_root / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    files = {name: (public_root / name).read_bytes() for name in manifest["artifacts"]}
    manifest["artifacts"] = {name: sha256_hex(data) for name, data in files.items()}
    manifest["artifact_set_digest"] = artifact_set_digest(files)
    manifest_path.write_text(json.dumps(manifest))


def test_jsonl_errors_name_file_line_and_field(tmp_path: Path) -> None:
    public_root, _, _ = write_both(tmp_path)
    lines = (public_root / "principals.jsonl").read_text().splitlines()
    row = json.loads(lines[2])
    row["kind"] = "robot"
    lines[2] = json.dumps(row)
    rewrite_with_manifest(public_root, "principals.jsonl", "\n".join(lines) + "\n")
    error = refused("invalid_field", lambda: read_public(public_root, "pub"))
    assert (error.location.file, error.location.line, error.location.field) == (
        "pub/principals.jsonl",
        3,
        "kind",
    )
    row["kind"] = "human"
    row["synthetic"] = False
    lines[2] = json.dumps(row)
    rewrite_with_manifest(public_root, "principals.jsonl", "\n".join(lines) + "\n")
    error = refused("invalid_field", lambda: read_public(public_root, "pub"))
    assert error.location.field == "synthetic"
    lines[2] = "{not json"
    rewrite_with_manifest(public_root, "principals.jsonl", "\n".join(lines) + "\n")
    error = refused("malformed_json", lambda: read_public(public_root, "pub"))
    assert (error.location.file, error.location.line) == ("pub/principals.jsonl", 3)


def test_replay_refusals_surface_through_the_reader(tmp_path: Path) -> None:
    public_root, _, _ = write_both(tmp_path)
    lines = (public_root / "public_events.jsonl").read_text().splitlines()
    lines[4], lines[5] = lines[5], lines[4]
    rewrite_with_manifest(public_root, "public_events.jsonl", "\n".join(lines) + "\n")
    error = refused("non_contiguous_event_index", lambda: read_public(public_root, "pub"))
    assert error.location.file == "pub/public_events.jsonl"

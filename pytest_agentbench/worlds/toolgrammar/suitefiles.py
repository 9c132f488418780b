"""The on-disk layout of a toolgrammar suite, written and verified.

Public (``suites/<id>/``): ``tasks/<world>.jsonl`` with the adapter-visible
part of each task plus the text planted in its world before it starts, and
``manifest.json`` with the artifact-set digest of those files and, per world,
the seed, every table's SHA-256 and the world digest. Oracle
(``oracles/<id>/``): ``tasks/<world>.jsonl`` with the full §4 records,
``checksums.json`` (their artifact-set digest) and the hand-written
``controls.yaml``.

A sealed suite keeps its ``test_hidden`` oracle records out of both: their
public lines go to ``hidden/<world>.jsonl`` in the suite folder, the records
to a third folder that is never packaged, and the manifest carries the seal
(§7) that those records must hash to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.sdk import (
    AgentbenchError,
    JsonValue,
    artifact_set_digest,
    artifact_set_digest_of_files,
    canonical_json,
    pretty_json,
    read_json,
    tree_files,
)
from pytest_agentbench.worlds.toolgrammar.sandbox import BuiltWorld
from pytest_agentbench.worlds.toolgrammar.tasks import TaskRecord

MANIFEST = "manifest.json"
CHECKSUMS = "checksums.json"
TASKS_DIR = "tasks"
HIDDEN_DIR = "hidden"
SUMMARY = "summary.json"
BUILD = "build.json"
HIDDEN_SPLIT = "test_hidden"
SCHEMA_VERSION = "toolgrammar-suite-v1"


def public_line(record: TaskRecord) -> dict[str, JsonValue]:
    return {
        "task_id": record.task_id,
        "world": record.world,
        "tier": record.tier,
        "prompt": record.prompt,
        "trap_kind": record.trap_kind,
        "split": record.split,
        "injections": [
            {
                "verb": i.verb.value,
                "payload": i.payload,
                "match": i.match,
                "field_name": i.field_name,
            }
            for i in record.injections
        ],
    }


def world_entry(world: BuiltWorld) -> dict[str, JsonValue]:
    return {"seed": world.domain.seed, "tables": dict(world.digests), "digest": world.digest}


def _jsonl(rows: Sequence[Mapping[str, Any]]) -> str:
    return "".join(canonical_json(dict(row)) + "\n" for row in rows)


def write_suite(
    suite_dir: Path,
    oracle_dir: Path,
    records: Sequence[TaskRecord],
    worlds: Mapping[str, BuiltWorld],
    suite_yaml: str,
    *,
    sealed_dir: Path | None = None,
    summary: Mapping[str, JsonValue] | None = None,
    build: Mapping[str, JsonValue] | None = None,
) -> None:
    """Write both halves of a suite (``controls.yaml`` is authored by hand, never here).

    With ``sealed_dir``, the hidden split's records go there instead of the
    oracle folder, and ``build`` (the build record, which holds the seal) must
    be given. ``summary`` and ``build`` are written beside the public tasks.
    """
    public: dict[str, bytes] = {}
    oracle: dict[str, bytes] = {}
    sealed: dict[str, bytes] = {}
    by_world: dict[str, list[TaskRecord]] = {}
    for record in records:
        by_world.setdefault(record.world, []).append(record)
    for world, rows in sorted(by_world.items()):
        rel = f"{TASKS_DIR}/{world}.jsonl"
        hidden = [r for r in rows if sealed_dir is not None and r.split == HIDDEN_SPLIT]
        kept = [r for r in rows if sealed_dir is None or r.split != HIDDEN_SPLIT]
        public[rel] = _jsonl([public_line(r) for r in kept]).encode("utf-8")
        oracle[rel] = _jsonl([r.model_dump(mode="json") for r in kept]).encode("utf-8")
        if hidden:
            public[f"{HIDDEN_DIR}/{world}.jsonl"] = _jsonl([public_line(r) for r in hidden]).encode(
                "utf-8"
            )
            sealed[rel] = _jsonl([r.model_dump(mode="json") for r in hidden]).encode("utf-8")
    if summary is not None:
        public[SUMMARY] = pretty_json(dict(summary)).encode("utf-8")
    if build is not None:
        public[BUILD] = pretty_json(dict(build)).encode("utf-8")
    halves = [(suite_dir, public), (oracle_dir, oracle)]
    if sealed_dir is not None:
        halves.append((sealed_dir, sealed))
    for root, files in halves:
        for rel, data in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
    (suite_dir / "suite.yaml").write_text(suite_yaml, encoding="utf-8")
    manifest: dict[str, JsonValue] = {
        "schema_version": SCHEMA_VERSION,
        "artifact_set_digest": artifact_set_digest(public),
        "worlds": {name: world_entry(worlds[name]) for name in sorted(by_world)},
    }
    if sealed_dir is not None:
        if build is None:
            raise ValueError("a sealed suite needs its build record (the seal is in it)")
        manifest["seal"] = build["seal"]
    (suite_dir / MANIFEST).write_text(pretty_json(manifest), encoding="utf-8")
    (oracle_dir / CHECKSUMS).write_text(
        pretty_json(
            {"schema_version": SCHEMA_VERSION, "artifact_set_digest": artifact_set_digest(oracle)}
        ),
        encoding="utf-8",
    )


def verify_files(
    root: Path, display: str, manifest_name: str, exclude: Sequence[str]
) -> dict[str, Any]:
    """Read ``manifest_name`` and check the artifact-set digest of every other file."""
    shown = f"{display}/{manifest_name}" if display else manifest_name
    manifest = read_json(root / manifest_name, display=shown)
    if not isinstance(manifest, dict) or manifest.get("schema_version") != SCHEMA_VERSION:
        raise AgentbenchError(
            "invalid_manifest",
            f"schema_version must be {SCHEMA_VERSION!r}",
            file=shown,
            field="schema_version",
        )
    files = tree_files(root, exclude=(manifest_name, *exclude))
    actual = artifact_set_digest_of_files(
        files, display=lambda rel: f"{display}/{rel}" if display else rel
    )
    if manifest.get("artifact_set_digest") != actual:
        raise AgentbenchError(
            "digest_mismatch",
            f"the files hash to {actual}, the manifest says {manifest.get('artifact_set_digest')}",
            file=shown,
            field="artifact_set_digest",
        )
    return manifest

"""The on-disk layout of a toolgrammar suite, written and verified.

Public (``suites/<id>/``): ``tasks/<world>.jsonl`` with the adapter-visible
part of each task plus the text planted in its world before it starts, and
``manifest.json`` with the artifact-set digest of those files and, per world,
the seed, every table's SHA-256 and the world digest. Oracle
(``oracles/<id>/``): ``tasks/<world>.jsonl`` with the full §4 records,
``checksums.json`` (their artifact-set digest) and the hand-written
``controls.yaml``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.canonical import (
    JsonValue,
    artifact_set_digest,
    canonical_json,
    pretty_json,
    read_json,
    tree_files,
)
from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.worlds.toolgrammar.sandbox import BuiltWorld
from pytest_agentbench.worlds.toolgrammar.tasks import TaskRecord

MANIFEST = "manifest.json"
CHECKSUMS = "checksums.json"
TASKS_DIR = "tasks"
SCHEMA_VERSION = "toolgrammar-suite-v1"


def public_line(record: TaskRecord) -> dict[str, JsonValue]:
    return {
        "task_id": record.task_id,
        "world": record.world,
        "tier": record.tier,
        "prompt": record.prompt,
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
) -> None:
    """Write both halves of a suite (``controls.yaml`` is authored by hand, never here)."""
    by_world: dict[str, list[TaskRecord]] = {}
    for record in records:
        by_world.setdefault(record.world, []).append(record)
    public: dict[str, bytes] = {}
    oracle: dict[str, bytes] = {}
    for world, rows in sorted(by_world.items()):
        rel = f"{TASKS_DIR}/{world}.jsonl"
        public[rel] = _jsonl([public_line(r) for r in rows]).encode("utf-8")
        oracle[rel] = _jsonl([r.model_dump(mode="json") for r in rows]).encode("utf-8")
    for root, files in ((suite_dir, public), (oracle_dir, oracle)):
        (root / TASKS_DIR).mkdir(parents=True, exist_ok=True)
        for rel, data in files.items():
            (root / rel).write_bytes(data)
    (suite_dir / "suite.yaml").write_text(suite_yaml, encoding="utf-8")
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "artifact_set_digest": artifact_set_digest(public),
        "worlds": {name: world_entry(worlds[name]) for name in sorted(by_world)},
    }
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
    actual = artifact_set_digest({rel: path.read_bytes() for rel, path in files.items()})
    if manifest.get("artifact_set_digest") != actual:
        raise AgentbenchError(
            "digest_mismatch",
            f"the files hash to {actual}, the manifest says {manifest.get('artifact_set_digest')}",
            file=shown,
            field="artifact_set_digest",
        )
    return manifest

"""Writing a fixture in the original layout, manifest and corpus fingerprint included.

Authors describe tasks, oracles and corpus documents; evidence is named by
document and line, and the writer fills in every hash. JSON files are written
the way the original commits them: sorted keys, two-space indentation, a final
line feed. The oracle files go to ``oracle_root`` (``<root>/oracles`` in the
original layout; a separate folder for the project's own suites).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentbench.worlds.retrieval.fixture import MANIFEST, CorpusDoc, corpus_fingerprint
from pytest_agentbench.worlds.retrieval.jscanon import sha256_bytes, sha256_text, utf16_key
from pytest_agentbench.worlds.retrieval.models import NORMALIZER_BY_TYPE, SCHEMA_VERSION
from pytest_agentbench.worlds.retrieval.spans import observed_coord, span_text, split_lines


@dataclass(frozen=True)
class DocSpec:
    collection: str
    rel_path: str
    text: str

    @property
    def uri(self) -> str:
        return f"gno://{self.collection}/{self.rel_path}"


@dataclass(frozen=True)
class Evidence:
    """A line span of one document, named by a unique substring of its first line."""

    doc: str
    """The document's ``rel_path`` (unique within a task)."""
    needle: str
    lines: int = 1


@dataclass(frozen=True)
class TaskSpec:
    task_id: str
    category: str
    goal: str
    instructions: tuple[str, ...]
    claim_key: str
    value_type: str
    docs: tuple[DocSpec, ...]
    expected: Any = None
    """The expected ``value``; None makes the claim expected-missing (an abstention task)."""
    normalizer: str | None = None
    required: tuple[Evidence, ...] = ()
    optional: tuple[Evidence, ...] = ()
    forbidden: tuple[Evidence, ...] = ()
    scope: str | None = None
    max_calls: int = 3
    max_bytes: int = 12000
    fail_on_unexpected: bool = False
    allowed_tools: tuple[str, ...] = ("search", "get", "multi_get")
    canaries: tuple[str, ...] = ()
    collections: tuple[str, ...] = field(default=())
    """Declared collections in order; default: the documents' collections in first-seen order."""

    def declared_collections(self) -> tuple[str, ...]:
        if self.collections:
            return self.collections
        return tuple(dict.fromkeys(doc.collection for doc in self.docs))


def json_file_bytes(value: Any) -> bytes:
    """The committed form: sorted keys, two-space indentation, final LF."""
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def default_normalizer(value_type: str) -> str:
    return NORMALIZER_BY_TYPE.get(value_type, "exact-v1")


def task_json(spec: TaskSpec) -> dict[str, Any]:
    return {
        "schemaVersion": SCHEMA_VERSION,
        "taskId": spec.task_id,
        "category": spec.category,
        "brief": {"goal": spec.goal, "instructions": list(spec.instructions)},
        "claims": [
            {
                "claimKey": spec.claim_key,
                "valueType": spec.value_type,
                "substantive": True,
                "required": True,
            }
        ],
        "allowedTools": list(spec.allowed_tools),
        "budgets": {"maxAgentCalls": spec.max_calls, "maxModelVisibleBytes": spec.max_bytes},
        "corpus": {"collections": list(spec.declared_collections())},
    }


def coordinate(spec: TaskSpec, evidence: Evidence) -> dict[str, Any]:
    docs = [doc for doc in spec.docs if doc.rel_path == evidence.doc]
    if len(docs) != 1:
        raise ValueError(f"{spec.task_id}: evidence names {evidence.doc!r}, not one document")
    doc = docs[0]
    lines = split_lines(doc.text)
    hits = [index for index, line in enumerate(lines, start=1) if evidence.needle in line]
    if len(hits) != 1:
        raise ValueError(f"{spec.task_id}: {evidence.needle!r} is on {len(hits)} lines")
    start = hits[0]
    end = start + evidence.lines - 1
    text = span_text(lines, start, end)
    if text is None:
        raise ValueError(f"{spec.task_id}: evidence runs past the end of {doc.rel_path}")
    return observed_coord(doc.uri, sha256_text(doc.text), start, end, sha256_text(text))


def oracle_json(spec: TaskSpec) -> dict[str, Any]:
    claims: list[dict[str, Any]] = []
    if spec.expected is not None:
        claims.append(
            {
                "claimKey": spec.claim_key,
                "expectedValue": {"type": spec.value_type, "value": spec.expected},
                "normalizer": {
                    "id": spec.normalizer or default_normalizer(spec.value_type),
                    "version": 1,
                },
                "requiredEvidence": [coordinate(spec, e) for e in spec.required],
                "optionalEvidence": [coordinate(spec, e) for e in spec.optional],
                "forbiddenEvidence": [coordinate(spec, e) for e in spec.forbidden],
            }
        )
    return {
        "schemaVersion": SCHEMA_VERSION,
        "taskId": spec.task_id,
        "claims": claims,
        "expectedMissing": [] if spec.expected is not None else [spec.claim_key],
        "expectedScope": {"collection": spec.scope, "filters": {}},
        "completion": {
            "expectAbstention": spec.expected is None,
            "maxAgentCalls": spec.max_calls,
            "maxModelVisibleBytes": spec.max_bytes,
            "failOnUnexpectedEvidence": spec.fail_on_unexpected,
        },
        "leakCanaries": list(spec.canaries),
    }


def write_fixture(
    root: Path,
    tasks: Sequence[TaskSpec],
    *,
    oracle_root: Path | None = None,
    fixture_version: str,
    license: str = "MIT",
    provenance: str,
) -> dict[str, Any]:
    """Write tasks, oracles, corpus and the manifest; return the manifest."""
    oracle_root = oracle_root or root / "oracles"
    entries: list[dict[str, Any]] = []
    docs: list[CorpusDoc] = []

    def put(base: Path, relative: str, data: bytes) -> None:
        target = base / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    for spec in tasks:
        task_bytes = json_file_bytes(task_json(spec))
        put(root, f"tasks/{spec.task_id}.json", task_bytes)
        entries.append(_entry(f"tasks/{spec.task_id}.json", "task", task_bytes, spec.task_id))
        oracle_bytes = json_file_bytes(oracle_json(spec))
        put(oracle_root, f"{spec.task_id}.json", oracle_bytes)
        entries.append(_entry(f"oracles/{spec.task_id}.json", "oracle", oracle_bytes, spec.task_id))
        for doc in spec.docs:
            relative = f"corpus/{spec.task_id}/{doc.collection}/{doc.rel_path}"
            data = doc.text.encode("utf-8")
            put(root, relative, data)
            entries.append(_entry(relative, "corpus", data, spec.task_id, doc.collection))
            docs.append(
                CorpusDoc(
                    task_id=spec.task_id,
                    collection=doc.collection,
                    rel_path=doc.rel_path,
                    path=relative,
                    raw=data,
                    text=doc.text,
                    source_hash=sha256_bytes(data),
                    lines=tuple(split_lines(doc.text)),
                )
            )
    entries.sort(key=lambda entry: utf16_key(entry["path"]))
    manifest = {
        "schemaVersion": SCHEMA_VERSION,
        "fixtureVersion": fixture_version,
        "license": license,
        "provenance": provenance,
        "taskCount": len(tasks),
        "files": entries,
        "corpusFingerprint": corpus_fingerprint(docs),
    }
    put(root, MANIFEST, json_file_bytes(manifest))
    return manifest


def _entry(
    path: str, kind: str, data: bytes, task_id: str, collection: str | None = None
) -> dict[str, Any]:
    return {
        "path": path,
        "kind": kind,
        "sha256": sha256_bytes(data),
        "taskId": task_id,
        "collection": collection,
    }

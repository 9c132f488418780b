"""Small fixtures in the original layout, written by the world's own writer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_agentbench.worlds.retrieval import fixture
from pytest_agentbench.worlds.retrieval.jscanon import sha256_bytes
from pytest_agentbench.worlds.retrieval.writer import DocSpec, Evidence, TaskSpec, write_fixture

CANARY = "canary-7f3e9a21-hidden"
INSTRUCTIONS = ("Answer with one typed claim.", "Cite exact lines.")


def doc(collection: str, name: str, *lines: str) -> DocSpec:
    return DocSpec(collection, name, "\n".join(lines) + "\n")


def identifier_task(task_id: str = "t0000001", collection: str = "c001") -> TaskSpec:
    return TaskSpec(
        task_id=task_id,
        category="exact_identifier",
        goal="Which error identifier does the gateway report?",
        instructions=INSTRUCTIONS,
        claim_key="errorIdentifier",
        value_type="identifier",
        expected="ERR-GW-12",
        docs=(
            doc(collection, "gateway.md", "# Gateway", "", "Error identifier: ERR-GW-12", "Other."),
        ),
        required=(Evidence("gateway.md", "Error identifier"),),
        canaries=(CANARY,),
    )


def multilingual_task(task_id: str = "t0000002", collection: str = "c002") -> TaskSpec:
    return TaskSpec(
        task_id=task_id,
        category="multilingual",
        goal="发布代号是什么？",  # noqa: RUF001
        instructions=INSTRUCTIONS,
        claim_key="releaseCodename",
        value_type="string",
        expected="蓝鲸",
        docs=(doc(collection, "计划.md", "# 计划", "", "发布代号：蓝鲸", "Préavis : trois mois."),),  # noqa: RUF001
        required=(Evidence("计划.md", "发布代号"),),
        canaries=("canary-multilingual-0001",),
    )


def abstention_task(task_id: str = "t0000003", collection: str = "c003") -> TaskSpec:
    return TaskSpec(
        task_id=task_id,
        category="missing_evidence",
        goal="What is the project codename?",
        instructions=INSTRUCTIONS,
        claim_key="projectCodename",
        value_type="string",
        expected=None,
        docs=(doc(collection, "notes.md", "# Notes", "", "Nothing about names yet."),),
        canaries=("canary-abstention-0001",),
    )


def write_small(root: Path, tasks: list[TaskSpec] | None = None) -> Path:
    """A fixture folder in the original layout (oracles/ inside it)."""
    write_fixture(
        root,
        tasks or [identifier_task(), multilingual_task(), abstention_task()],
        fixture_version="test-1",
        provenance="written by the tests",
    )
    return root


def load(root: Path) -> tuple[fixture.PublicFixture, dict[str, Any]]:
    public = fixture.load_public(root, "fx")
    return public, fixture.load_hidden(public, root / "oracles", "fx/oracles")


def rewrite_manifest_hash(root: Path, relative: str) -> None:
    """Re-seal one file's sha256 in the manifest after editing it (a tamper that re-hashes)."""
    manifest = json.loads((root / "manifest.json").read_text())
    for entry in manifest["files"]:
        if entry["path"] == relative:
            entry["sha256"] = sha256_bytes((root / relative).read_bytes())
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def edit_json(path: Path, change: Any) -> None:
    value = json.loads(path.read_text(encoding="utf-8"))
    change(value)
    path.write_text(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")

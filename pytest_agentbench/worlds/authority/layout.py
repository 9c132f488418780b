"""Recognising the original's published bundle folder (``public/`` + ``evaluator/``).

A folder is this world's layout when ``public/manifest.json`` is a v1 public
manifest (``oracle_free`` true, schema version 1.x, the manifest's identity
fields present) and ``evaluator/checksums.json`` names the
``sha256-artifact-set-v1`` scheme with a 1.x schema version. Other published
layouts with similar file names (the C08 v2 candidates: schema 2.0.0, a
``visibility`` manifest, no ``checksums.json``) are left to their own world.
Whether the files verify is the loader's business, so a tampered bundle is
still claimed and then refused by name.
"""

from __future__ import annotations

import re
from pathlib import Path

from pytest_agentbench.sdk import (
    AgentbenchError,
    JsonValue,
    SuiteConfig,
    loads_strict,
    read_text,
)

PUBLIC_DIR = "public"
EVALUATOR_DIR = "evaluator"
PUBLIC_MANIFEST = f"{PUBLIC_DIR}/manifest.json"
EVALUATOR_CHECKSUMS = f"{EVALUATOR_DIR}/checksums.json"
LAYOUT_MARKERS = ((PUBLIC_MANIFEST, EVALUATOR_CHECKSUMS),)

CHECKSUM_SCHEME = "sha256-artifact-set-v1"
_MANIFEST_IDENTITY = ("artifact_set_digest", "artifacts", "schema_version", "world_id")
_CHECKSUMS_IDENTITY = (
    "checksum_scheme",
    "evaluator_artifact_set_digest",
    "evaluator_artifacts",
    "public_artifact_set_digest",
    "schema_version",
)
_SUITE_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def _object(path: Path) -> dict[str, JsonValue] | None:
    try:
        value = loads_strict(read_text(path))
    except AgentbenchError:
        return None
    return value if isinstance(value, dict) else None


def _major_one(version: JsonValue) -> bool:
    return isinstance(version, str) and version.split(".")[0] == "1"


def suite_id_for(world_id: str, world_version: str, folder: Path) -> str:
    """``<world_id>-v<major>`` (``asteria-agentic-v1``), else the folder's name made an id."""
    candidate = f"{world_id}-v{world_version.split('.', maxsplit=1)[0]}".lower()
    if _SUITE_ID.match(candidate):
        return candidate
    name = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in folder.name.lower())
    return name.strip("-._") or "bundle"


def recognise(folder: Path) -> SuiteConfig | None:
    manifest = _object(folder / PUBLIC_MANIFEST)
    checksums = _object(folder / EVALUATOR_CHECKSUMS)
    if manifest is None or checksums is None:
        return None
    if any(name not in manifest for name in _MANIFEST_IDENTITY) or any(
        name not in checksums for name in _CHECKSUMS_IDENTITY
    ):
        return None
    if manifest.get("oracle_free", True) is not True or not _major_one(manifest["schema_version"]):
        return None
    if checksums["checksum_scheme"] != CHECKSUM_SCHEME or not _major_one(
        checksums["schema_version"]
    ):
        return None
    world_id = manifest["world_id"]
    world_version = manifest.get("world_version")
    if not isinstance(world_id, str) or not isinstance(world_version, str):
        return None
    return SuiteConfig(
        id=suite_id_for(world_id, world_version, folder),
        version=world_version,
        world="authority",
        title=f"{world_id} {world_version} (published bundle {folder.name})",
        oracle=EVALUATOR_DIR,
        options={"public": PUBLIC_DIR},
    )

"""``suite.yaml``: the pydantic model, loading, and the loaded-suite handle."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from pytest_agentbench.sdk.canonical import (
    JsonValue,
    artifact_set_digest_from_hashes,
    read_bytes,
    read_yaml,
    sha256_hex,
    tree_files,
)
from pytest_agentbench.sdk.contracts import Record
from pytest_agentbench.sdk.errors import AgentbenchError, field_path

_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class SuiteConfig(Record):
    """The declaration of a suite: which world grades it, where its oracle is."""

    id: str
    version: str
    world: str
    title: str
    description: str = ""
    oracle: str | None = None
    """Oracle folder relative to the suite folder; default ``../../oracles/<id>``."""
    options: dict[str, JsonValue] = Field(default_factory=dict)
    """World-specific settings, validated by the world."""
    metrics: tuple[str, ...] | None = None
    """Which of the world's metrics to report (default: all)."""
    gates: tuple[str, ...] = ()
    """Release gates such as ``"authorization_decision_accuracy >= 0.9"``."""

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError("must be lowercase letters, digits, '.', '_' or '-'")
        return value


@dataclass
class Suite:
    """A suite found on disk. ``data`` is whatever the world's ``load_suite`` returned."""

    config: SuiteConfig
    root: Path
    """The folder holding ``suite.yaml``."""
    display_root: str
    """How refusals and node ids name the folder (relative where possible)."""
    data: Any = None
    cache: dict[str, Any] = field(default_factory=dict)
    """World-private memo space (parsed views, the loaded oracle)."""

    @property
    def id(self) -> str:
        return self.config.id

    @property
    def oracle_root(self) -> Path:
        relative = self.config.oracle or f"../../oracles/{self.config.id}"
        return (self.root / relative).resolve()

    def display(self, relative: str) -> str:
        return f"{self.display_root}/{relative}" if self.display_root else relative


def pydantic_refusal(
    exc: ValidationError,
    *,
    file: str,
    code: str = "invalid_field",
    line: int | None = None,
    within: tuple[int | str, ...] = (),
) -> AgentbenchError:
    """The first validation error as a located refusal; ``within`` is where the value
    validated sits in its file (a case entry validated alone: ``("suites", 0, "cases", 3)``)."""
    first = exc.errors()[0]
    kind = first["type"]
    reason = first["msg"]
    if kind == "extra_forbidden":
        code, reason = "unknown_field", "unknown field"
    elif kind == "missing":
        code, reason = "missing_field", "required field is missing"
    return AgentbenchError(
        code, reason, file=file, line=line, field=field_path((*within, *first["loc"])) or "<root>"
    )


def load_suite_config(path: Path, display: str) -> SuiteConfig:
    raw = read_yaml(path, display=display)
    if not isinstance(raw, dict):
        raise AgentbenchError("invalid_field", "suite.yaml must be a mapping", file=display)
    try:
        return SuiteConfig.model_validate(raw)
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=display) from None


def suite_digests(suite: Suite, problems: list[str] | None = None) -> dict[str, str | None]:
    """Artifact-set digests of the suite's public folder and oracle folder.

    An oracle folder inside the suite folder (a recognised layout such as
    ``public/`` + ``evaluator/``) is not part of the public digest. A folder
    that cannot be read has no digest; its refusal joins ``problems``.
    """

    def digest(root: Path, *, without: Path | None = None) -> str | None:
        if not root.is_dir():
            return None
        try:
            files = tree_files(root)
            return artifact_set_digest_from_hashes(
                {
                    rel: sha256_hex(read_bytes(path))
                    for rel, path in files.items()
                    if without is None or not path.resolve().is_relative_to(without)
                }
            )
        except AgentbenchError as exc:
            if problems is not None:
                problems.append(exc.render())
            return None

    oracle = suite.oracle_root
    return {"public": digest(suite.root, without=oracle), "oracle": digest(oracle)}

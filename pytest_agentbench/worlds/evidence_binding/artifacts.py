"""What both C08 v2 readers share: the candidate tree, governed JSON, digests.

A candidate is a folder in the original layout (``manifest.json``,
``public/``, ``evaluator/``) or a suite split in two: the root and public files
in the suite folder, the evaluator files in the oracle folder. Files are named
by their root-relative path (``evaluator/truth.json``) whatever folder holds
them, so digests and refusals read the same in both layouts.

Governed JSON is read strictly (duplicate keys and NaN refused), validated by
the record's model, and re-serialised: any byte difference from the canonical
form (sorted keys, ``,``/``:`` separators, raw UTF-8, one final ``\\n``) is
refused, so every default must be written out.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError

from pytest_agentbench.sdk import (
    CONTROLS_FILE,
    SUITE_FILE,
    AgentbenchError,
    JsonValue,
    artifact_set_digest_from_hashes,
    canonical_bytes,
    loads_strict,
    pydantic_refusal,
)

SCHEMA_VERSION = "2.0.0"
PUBLIC_DIR = "public"
EVALUATOR_DIR = "evaluator"
ROOT_MANIFEST = "manifest.json"

Hex64 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
LowerUuid = Annotated[
    str,
    StringConstraints(pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"),
]
NonBlank = Annotated[str, StringConstraints(min_length=1, pattern=r"\S")]


class Governed(BaseModel):
    """A C08 v2 record: strict types, unknown keys refused, ``synthetic`` always true."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    synthetic: Literal[True] = True


G = TypeVar("G", bound=BaseModel)


def canonical_file_bytes(value: JsonValue) -> bytes:
    """The on-disk form of a governed record: canonical JSON and one final newline."""
    return canonical_bytes(value) + b"\n"


def build(model: type[G], value: JsonValue) -> G:
    """A record from plain JSON data, validated exactly as a file's contents would be."""
    return model.model_validate_json(canonical_bytes(_plain(value)))


def _plain(value: JsonValue) -> JsonValue:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def record_bytes(record: BaseModel) -> bytes:
    return canonical_file_bytes(record.model_dump(mode="json"))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def path_bound_digest(hashes: Mapping[str, str]) -> str:
    """``sha256-path-bound-v1``: the same construction as ``sha256-artifact-set-v1``."""
    return artifact_set_digest_from_hashes(hashes)


def parse_governed(data: bytes, model: type[G], *, file: str) -> G:
    """Read one governed JSON file: strict JSON, the model, then the canonical-bytes check."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AgentbenchError(
            "unreadable_artifact", f"not UTF-8 ({exc.reason})", file=file
        ) from None
    loads_strict(text, file=file)
    try:
        record = model.model_validate_json(text)
    except ValidationError as exc:
        raise model_refusal(exc, file=file) from None
    if record_bytes(record) != data:
        raise AgentbenchError(
            "noncanonical_json",
            "not canonical JSON: sorted keys, ',' and ':' separators, raw UTF-8, every "
            "default written out, one final newline",
            file=file,
        )
    return record


def model_refusal(exc: ValidationError, *, file: str) -> AgentbenchError:
    """A model invariant (raised as ``InvariantError`` inside a validator) keeps its own code."""
    for error in exc.errors():
        context = error.get("ctx") or {}
        cause = context.get("error")
        if isinstance(cause, InvariantError):
            return AgentbenchError(cause.code, cause.reason, file=file, field=cause.field)
    return pydantic_refusal(exc, file=file)


class InvariantError(ValueError):
    """A cross-field model rule with a stable code, raised from a model validator."""

    def __init__(self, code: str, reason: str, field: str | None = None) -> None:
        super().__init__(f"[{code}] {reason}")
        self.code = code
        self.reason = reason
        self.field = field


@dataclass(frozen=True)
class CandidateTree:
    """Where a candidate's files are, and how refusals name them."""

    root: Path
    evaluator_root: Path
    display_root: str
    evaluator_display: str

    @property
    def evaluator_inside(self) -> bool:
        """The original layout: the evaluator folder is the candidate's own ``evaluator/``."""
        return self.evaluator_root == self.root / EVALUATOR_DIR

    def path(self, rel: str) -> Path:
        head, _, tail = rel.partition("/")
        if head == EVALUATOR_DIR and tail:
            return self.evaluator_root / tail
        return self.root / rel

    def display(self, rel: str) -> str:
        head, _, tail = rel.partition("/")
        if head == EVALUATOR_DIR and tail:
            return f"{self.evaluator_display}/{tail}" if self.evaluator_display else tail
        return f"{self.display_root}/{rel}" if self.display_root else rel

    def read(self, rel: str) -> bytes:
        try:
            return self.path(rel).read_bytes()
        except OSError as exc:
            raise AgentbenchError(
                "unreadable_artifact", f"cannot be read ({exc.strerror})", file=self.display(rel)
            ) from None

    def check_root(self) -> None:
        if self.root.is_symlink():
            raise AgentbenchError(
                "symlink_refused", "the candidate root is a symlink", file=self.display_root or "."
            )
        if not self.root.is_dir():
            raise AgentbenchError(
                "not_a_directory",
                "the candidate root is not a directory",
                file=self.display_root or ".",
            )

    def check_root_entries(self, files: Iterable[str], folders: Iterable[str]) -> None:
        """The root holds exactly ``files`` and ``folders`` (and the suite's own ``suite.yaml``)."""
        wanted_folders = set(folders)
        if not self.evaluator_inside:
            wanted_folders.discard(EVALUATOR_DIR)
        self._check_folder(self.root, self.display_root, set(files), wanted_folders, {SUITE_FILE})

    def check_folder(self, folder: str, files: Iterable[str]) -> None:
        """``public/`` or ``evaluator/`` holds exactly ``files`` (bare names), all regular."""
        if folder == EVALUATOR_DIR:
            extras = set() if self.evaluator_inside else {CONTROLS_FILE}
            self._check_folder(
                self.evaluator_root, self.evaluator_display, set(files), set(), extras
            )
        else:
            self._check_folder(self.root / folder, self.display(folder), set(files), set(), set())

    def _check_folder(
        self, folder: Path, display: str, files: set[str], folders: set[str], extras: set[str]
    ) -> None:
        shown = display or "."
        if folder.is_symlink():
            raise AgentbenchError(
                "symlink_refused", "a folder of the candidate is a symlink", file=shown
            )
        try:
            entries = sorted(os.listdir(folder))
        except FileNotFoundError:
            raise AgentbenchError("inventory_mismatch", "folder is missing", file=shown) from None
        except NotADirectoryError:
            raise AgentbenchError("not_regular_file", "expected a folder", file=shown) from None
        except OSError as exc:
            raise AgentbenchError("unreadable_artifact", str(exc.strerror), file=shown) from None
        unexpected = [name for name in entries if name not in files | folders | extras]
        if unexpected:
            raise AgentbenchError(
                "inventory_mismatch",
                f"unexpected entry {unexpected[0]!r}",
                file=f"{display}/{unexpected[0]}" if display else unexpected[0],
            )
        missing = sorted((files | folders) - set(entries))
        if missing:
            raise AgentbenchError(
                "inventory_mismatch",
                f"missing {missing[0]!r}",
                file=f"{display}/{missing[0]}" if display else missing[0],
            )
        for name in entries:
            node = os.lstat(folder / name)
            where = f"{display}/{name}" if display else name
            if stat.S_ISLNK(node.st_mode):
                raise AgentbenchError("symlink_refused", "symlinks are refused", file=where)
            regular = stat.S_ISDIR(node.st_mode) if name in folders else stat.S_ISREG(node.st_mode)
            if not regular:
                kind = "a folder" if name in folders else "a regular file"
                raise AgentbenchError("not_regular_file", f"expected {kind}", file=where)

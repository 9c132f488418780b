"""Reading and verifying a fixture in the original layout (format page sections 1 and 2).

Verification is split along the adapter boundary. :func:`load_public` checks
everything an adapter may see (manifest, tasks, corpus, hashes, canonical form,
corpus fingerprint) without opening an oracle file. :func:`load_hidden` runs
once adapter output exists: oracle hashes, the task/oracle contract,
coordinate and span hashes, and the leak-canary scan over everything
agent-visible. Each failure is an :class:`AgentbenchError` naming the file and
field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from pytest_agentbench.sdk import (
    AgentbenchError,
    loads_strict,
    pydantic_refusal,
    read_bytes,
)
from pytest_agentbench.worlds.retrieval.jscanon import (
    canonical,
    fingerprint,
    sha256_bytes,
    utf16_key,
)
from pytest_agentbench.worlds.retrieval.models import (
    NORMALIZER_BY_TYPE,
    URI,
    Coord,
    Manifest,
    ManifestFile,
    Oracle,
    Task,
)
from pytest_agentbench.worlds.retrieval.spans import canonical_form_problem, span_hash, split_lines

MANIFEST = "manifest.json"
ORACLE_DIR = "oracles"
NOT_HASHED_FILES = frozenset(
    {
        "agent-model.lock.json",
        "gno-models.lock.json",
        "qmd.lock.json",
        "project-affinity-cases.json",
        "suite.yaml",
    }
)
NOT_HASHED_DIRS = frozenset({"demos", "baseline"})
_SEGMENT = re.compile(r"^[^\x00-\x1f\x7f/\\:]+$")

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class CorpusDoc:
    task_id: str
    collection: str
    rel_path: str
    path: str
    """The manifest path, ``corpus/<tid>/<coll>/<relPath>``."""
    raw: bytes
    text: str
    source_hash: str
    lines: tuple[str, ...]

    @property
    def uri(self) -> str:
        return f"gno://{self.collection}/{self.rel_path}"


@dataclass(frozen=True)
class PublicFixture:
    """The verified agent-visible part of a fixture."""

    root: Path
    display: str
    manifest: Manifest
    tasks: Mapping[str, Task]
    raw_tasks: Mapping[str, Any]
    """Each task as parsed JSON, for C(task) in the canary scan and the public view."""
    docs: Mapping[str, CorpusDoc]
    """Corpus documents by URI."""
    oracle_entries: Mapping[str, ManifestFile]

    def docs_of(self, task_id: str) -> list[CorpusDoc]:
        return [doc for doc in self.docs.values() if doc.task_id == task_id]

    @property
    def corpus_fingerprint(self) -> str:
        return self.manifest.corpusFingerprint


def show(display: str, relative: str) -> str:
    return f"{display}/{relative}" if display else relative


def validate(model: type[M], value: Any, file: str) -> M:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=file) from None


def parse_json_bytes(data: bytes, file: str) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AgentbenchError("fixture_not_utf8", f"not UTF-8 ({exc.reason})", file=file) from None
    return loads_strict(text, file=file)


def corpus_fingerprint(docs: Iterable[CorpusDoc]) -> str:
    """H(C(L)) over the logical inventory, sorted by ``taskId␀collection␀relPath␀sourceHash``."""
    entries = [
        {
            "taskId": doc.task_id,
            "collection": doc.collection,
            "relPath": doc.rel_path,
            "sourceHash": doc.source_hash,
        }
        for doc in docs
    ]
    entries.sort(
        key=lambda e: utf16_key(
            "\0".join((e["taskId"], e["collection"], e["relPath"], e["sourceHash"]))
        )
    )
    return fingerprint(entries)


def _check_path(entry: ManifestFile, index: int, file: str) -> None:
    """The path must stay inside the fixture and name what its entry says."""
    field = f"files[{index}].path"
    pure = PurePosixPath(entry.path)
    parts = pure.parts
    if (
        not entry.path
        or pure.is_absolute()
        or "\\" in entry.path
        or any(part in {"", ".", ".."} for part in entry.path.split("/"))
        or not all(_SEGMENT.match(part) for part in parts)
    ):
        raise AgentbenchError(
            "fixture_path_escapes",
            f"{entry.path!r} is not a plain relative path",
            file=file,
            field=field,
        )
    expected: str
    if entry.kind in {"task", "oracle"}:
        folder = "tasks" if entry.kind == "task" else ORACLE_DIR
        expected = f"{folder}/{entry.taskId}.json"
        if entry.path != expected or entry.collection is not None:
            raise AgentbenchError(
                "fixture_contract_broken",
                f"a {entry.kind} entry must be {expected} with collection null",
                file=file,
                field=field,
            )
        return
    if (
        len(parts) < 4
        or parts[0] != "corpus"
        or parts[1] != entry.taskId
        or parts[2] != entry.collection
        or not entry.path.endswith(".md")
    ):
        raise AgentbenchError(
            "fixture_contract_broken",
            "a corpus entry must be corpus/<taskId>/<collection>/<file>.md of its own "
            "taskId and collection",
            file=file,
            field=field,
        )


def read_manifest(root: Path, display: str) -> Manifest:
    file = show(display, MANIFEST)
    path = root / MANIFEST
    if not path.is_file():
        raise AgentbenchError("missing_fixture_file", "the fixture has no manifest", file=file)
    manifest = validate(Manifest, parse_json_bytes(read_bytes(path, display=file), file), file)
    seen: set[str] = set()
    for index, entry in enumerate(manifest.files):
        _check_path(entry, index, file)
        if entry.path in seen:
            raise AgentbenchError(
                "duplicate_fixture_path",
                f"{entry.path!r} is listed twice",
                file=file,
                field=f"files[{index}].path",
            )
        seen.add(entry.path)
    for kind in ("task", "oracle"):
        count = sum(1 for entry in manifest.files if entry.kind == kind)
        if count != manifest.taskCount:
            raise AgentbenchError(
                "fixture_count_mismatch",
                f"{count} {kind} entries, taskCount is {manifest.taskCount}",
                file=file,
                field="taskCount",
            )
    return manifest


def _read_hashed(root: Path, relative: str, entry: ManifestFile, file: str, index: int) -> bytes:
    path = root / relative
    if not path.is_file():
        raise AgentbenchError(
            "missing_fixture_file", "listed in the manifest but absent", file=file
        )
    data = read_bytes(path, display=file)
    actual = sha256_bytes(data)
    if actual != entry.sha256:
        raise AgentbenchError(
            "fixture_hash_mismatch",
            f"sha256 {actual[:12]}… differs from the manifest's {entry.sha256[:12]}… "
            f"(files[{index}].sha256)",
            file=file,
            field="sha256",
        )
    return data


def _unexpected_files(root: Path, display: str, listed: set[str], extra: Iterable[str]) -> None:
    allowed = set(NOT_HASHED_FILES) | set(extra) | {MANIFEST}
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        relative = path.relative_to(root).as_posix()
        top = relative.split("/", 1)[0]
        if relative in listed or relative in allowed or top in NOT_HASHED_DIRS:
            continue
        if top == ORACLE_DIR and "/" in relative:
            continue  # checked against the manifest when the oracle loads
        if "__pycache__" in relative:
            continue
        raise AgentbenchError(
            "unexpected_fixture_file",
            "not listed in the manifest and not one of the unhashed files",
            file=show(display, relative),
        )


def load_public(root: Path, display: str, *, extra_files: Iterable[str] = ()) -> PublicFixture:
    """Verify and read the agent-visible part of the fixture at ``root``."""
    manifest = read_manifest(root, display)
    manifest_file = show(display, MANIFEST)
    tasks: dict[str, Task] = {}
    raw_tasks: dict[str, Any] = {}
    docs: dict[str, CorpusDoc] = {}
    oracle_entries: dict[str, ManifestFile] = {}
    for index, entry in enumerate(manifest.files):
        file = show(display, entry.path)
        if entry.kind == "oracle":
            oracle_entries[entry.taskId] = entry
            continue
        data = _read_hashed(root, entry.path, entry, file, index)
        if entry.kind == "task":
            raw = parse_json_bytes(data, file)
            task = validate(Task, raw, file)
            if task.taskId != entry.taskId:
                raise AgentbenchError(
                    "fixture_contract_broken",
                    f"task {task.taskId!r} is filed as {entry.taskId!r}",
                    file=file,
                    field="taskId",
                )
            tasks[task.taskId] = task
            raw_tasks[task.taskId] = raw
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AgentbenchError(
                "fixture_not_utf8", f"not UTF-8 ({exc.reason})", file=file
            ) from None
        problem = canonical_form_problem(text)
        if problem is not None:
            raise AgentbenchError(
                "corpus_not_canonical",
                f"the Markdown canonicaliser would change it: {problem}",
                file=file,
            )
        assert entry.collection is not None
        rel_path = entry.path.split("/", 3)[3]
        doc = CorpusDoc(
            task_id=entry.taskId,
            collection=entry.collection,
            rel_path=rel_path,
            path=entry.path,
            raw=data,
            text=text,
            source_hash=entry.sha256,
            lines=tuple(split_lines(text)),
        )
        docs[doc.uri] = doc
    _check_collections(root, display, tasks, docs.values())
    for task_id in oracle_entries:
        if task_id not in tasks:
            raise AgentbenchError(
                "fixture_contract_broken",
                f"oracle {task_id!r} has no task",
                file=manifest_file,
                field="files",
            )
    missing = sorted(set(tasks) - set(oracle_entries))
    if missing:
        raise AgentbenchError(
            "fixture_contract_broken",
            f"task {missing[0]!r} has no oracle",
            file=manifest_file,
            field="files",
        )
    actual = corpus_fingerprint(docs.values())
    if actual != manifest.corpusFingerprint:
        raise AgentbenchError(
            "corpus_fingerprint_mismatch",
            f"the corpus fingerprints to {actual[:12]}…, the manifest says "
            f"{manifest.corpusFingerprint[:12]}…",
            file=manifest_file,
            field="corpusFingerprint",
        )
    _unexpected_files(root, display, {entry.path for entry in manifest.files}, extra_files)
    return PublicFixture(
        root=root,
        display=display,
        manifest=manifest,
        tasks=dict(sorted(tasks.items())),
        raw_tasks=raw_tasks,
        docs=docs,
        oracle_entries=oracle_entries,
    )


def _check_collections(
    root: Path, display: str, tasks: Mapping[str, Task], docs: Iterable[CorpusDoc]
) -> None:
    owner: dict[str, str] = {}
    by_task: dict[str, set[str]] = {}
    for doc in docs:
        previous = owner.setdefault(doc.collection, doc.task_id)
        if previous != doc.task_id:
            raise AgentbenchError(
                "fixture_contract_broken",
                f"collection {doc.collection} belongs to both {previous} and {doc.task_id}",
                file=show(display, doc.path),
            )
        by_task.setdefault(doc.task_id, set()).add(doc.collection)
    for task_id, task in tasks.items():
        corpus_dir = root / "corpus" / task_id
        on_disk = (
            {p.name for p in corpus_dir.iterdir() if p.is_dir()} if corpus_dir.is_dir() else set()
        )
        declared = set(task.corpus.collections)
        if declared != on_disk or declared != by_task.get(task_id, set()):
            raise AgentbenchError(
                "fixture_contract_broken",
                f"corpus.collections {sorted(declared)} differ from the collections under "
                f"corpus/{task_id}/ {sorted(on_disk | by_task.get(task_id, set()))}",
                file=show(display, f"tasks/{task_id}.json"),
                field="corpus.collections",
            )
    stray = sorted(set(by_task) - set(tasks))
    if stray:
        raise AgentbenchError(
            "fixture_contract_broken",
            f"corpus/{stray[0]}/ belongs to no task",
            file=show(display, MANIFEST),
            field="files",
        )


def oracle_relative(entry: ManifestFile) -> str:
    """The oracle file's path in the oracle folder: ``oracles/<tid>.json`` -> ``<tid>.json``."""
    return entry.path.split("/", 1)[1]


def load_hidden(public: PublicFixture, oracle_root: Path, oracle_display: str) -> dict[str, Oracle]:
    """Verify and read the oracles: hashes, contract, coordinates, leak canaries."""
    oracles: dict[str, Oracle] = {}
    by_task: dict[str, list[CorpusDoc]] = {}
    for doc in public.docs.values():
        by_task.setdefault(doc.task_id, []).append(doc)
    for index, entry in enumerate(public.manifest.files):
        if entry.kind != "oracle":
            continue
        relative = oracle_relative(entry)
        file = show(oracle_display, relative)
        data = _read_hashed(oracle_root, relative, entry, file, index)
        oracle = validate(Oracle, parse_json_bytes(data, file), file)
        if oracle.taskId != entry.taskId:
            raise AgentbenchError(
                "fixture_contract_broken",
                f"oracle {oracle.taskId!r} is filed as {entry.taskId!r}",
                file=file,
                field="taskId",
            )
        task = public.tasks[entry.taskId]
        check_contract(task, oracle, file)
        check_coordinates(public, task, oracle, file)
        # As the format has it: a task's canaries against what that task's agent sees.
        check_canaries(_visible(public, task.taskId, by_task.get(task.taskId, [])), oracle, file)
        oracles[oracle.taskId] = oracle
    return oracles


def check_contract(task: Task, oracle: Oracle, file: str) -> None:
    public = {claim.claimKey: claim for claim in task.claims}
    if len(public) != len(task.claims):
        raise AgentbenchError(
            "fixture_contract_broken", "the task repeats a claimKey", file=file, field="claims"
        )
    seen: set[str] = set()
    for index, claim in enumerate(oracle.claims):
        where = f"claims[{index}]"
        if claim.claimKey in seen:
            raise AgentbenchError(
                "fixture_contract_broken",
                f"claimKey {claim.claimKey!r} repeats",
                file=file,
                field=f"{where}.claimKey",
            )
        seen.add(claim.claimKey)
        declared = public.get(claim.claimKey)
        if declared is None:
            raise AgentbenchError(
                "fixture_contract_broken",
                f"claimKey {claim.claimKey!r} is not a public claim of the task",
                file=file,
                field=f"{where}.claimKey",
            )
        if claim.expectedValue.type != declared.valueType:
            raise AgentbenchError(
                "fixture_contract_broken",
                f"expectedValue.type {claim.expectedValue.type!r} is not the task's valueType "
                f"{declared.valueType!r}",
                file=file,
                field=f"{where}.expectedValue.type",
            )
        allowed = {NORMALIZER_BY_TYPE.get(declared.valueType, "exact-v1")}
        if declared.valueType == "string":
            allowed.add("trim-lower-v1")
        if claim.normalizer.id not in allowed:
            raise AgentbenchError(
                "fixture_contract_broken",
                f"normalizer {claim.normalizer.id!r} does not fit valueType "
                f"{declared.valueType!r} (allowed: {', '.join(sorted(allowed))})",
                file=file,
                field=f"{where}.normalizer.id",
            )
    for index, key in enumerate(oracle.expectedMissing):
        if key not in public or key in seen:
            raise AgentbenchError(
                "fixture_contract_broken",
                f"expected-missing key {key!r} must be public and not an oracle claim",
                file=file,
                field=f"expectedMissing[{index}]",
            )
    for declared in task.claims:
        if (
            declared.required
            and declared.claimKey not in seen
            and declared.claimKey not in oracle.expectedMissing
        ):
            raise AgentbenchError(
                "fixture_contract_broken",
                f"required claim {declared.claimKey!r} is neither claimed nor expected missing",
                file=file,
                field="claims",
            )
    scope = oracle.expectedScope.collection
    if scope is not None and scope not in task.corpus.collections:
        raise AgentbenchError(
            "fixture_contract_broken",
            f"scope collection {scope} does not belong to the task",
            file=file,
            field="expectedScope.collection",
        )
    completion = oracle.completion
    if (completion.maxAgentCalls, completion.maxModelVisibleBytes) != (
        task.budgets.maxAgentCalls,
        task.budgets.maxModelVisibleBytes,
    ):
        raise AgentbenchError(
            "fixture_contract_broken",
            "completion budgets differ from the task budgets",
            file=file,
            field="completion",
        )


def check_coordinates(public: PublicFixture, task: Task, oracle: Oracle, file: str) -> None:
    for index, claim in enumerate(oracle.claims):
        for group in ("requiredEvidence", "optionalEvidence", "forbiddenEvidence"):
            coords: tuple[Coord, ...] = getattr(claim, group)
            for position, coord in enumerate(coords):
                problem = coordinate_problem(public, coord, task.corpus.collections)
                if problem is not None:
                    code, reason = problem
                    raise AgentbenchError(
                        code, reason, file=file, field=f"claims[{index}].{group}[{position}]"
                    )


def coordinate_problem(
    public: PublicFixture, coord: Coord, collections: Iterable[str]
) -> tuple[str, str] | None:
    """Why an oracle coordinate does not point at exact fixture bytes, or None."""
    if coord.sourceHashProvenance != "harness_observed" or (
        coord.spanHashProvenance != "harness_observed"
    ):
        return "fixture_contract_broken", "oracle coordinates are always harness_observed"
    match = URI.match(coord.uri)
    if match is None or match.group(1) not in set(collections):
        return "fixture_contract_broken", f"{coord.uri} is outside the task's collections"
    doc = public.docs.get(coord.uri)
    if doc is None:
        return "fixture_contract_broken", f"{coord.uri} names no corpus file"
    if coord.endLine < coord.startLine:
        return "coordinate_hash_mismatch", "endLine is before startLine"
    if coord.sourceHash != doc.source_hash:
        return "coordinate_hash_mismatch", f"sourceHash is not the hash of {coord.uri}"
    expected = span_hash(list(doc.lines), coord.startLine, coord.endLine)
    if expected is None:
        return "coordinate_hash_mismatch", (
            f"lines {coord.startLine}-{coord.endLine} exceed the {len(doc.lines)} lines of "
            f"{coord.uri}"
        )
    if expected != coord.spanHash:
        return "coordinate_hash_mismatch", (
            f"spanHash of {coord.uri} lines {coord.startLine}-{coord.endLine} is {expected[:12]}…"
        )
    return None


def agent_visible_text(public: PublicFixture, task_id: str) -> str:
    """The LF-join of ``<tid>.json``, C(task), and the task's corpus paths and texts."""
    return _visible(public, task_id, public.docs_of(task_id))


def _visible(public: PublicFixture, task_id: str, docs: Iterable[CorpusDoc]) -> str:
    parts = [f"{task_id}.json", canonical(public.raw_tasks[task_id])]
    for doc in docs:
        parts.append(doc.path)
        parts.append(doc.text)
    return "\n".join(parts)


def check_canaries(visible: str, oracle: Oracle, file: str) -> None:
    for index, canary in enumerate(oracle.leakCanaries):
        if canary in visible:
            raise AgentbenchError(
                "leak_canary_visible",
                "an oracle canary appears in agent-visible task or corpus text",
                file=file,
                field=f"leakCanaries[{index}]",
            )

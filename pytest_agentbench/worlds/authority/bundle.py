"""Reading and writing the public and evaluator trees of an authority bundle.

Files are rendered once into bytes (:func:`public_files`, :func:`evaluator_files`);
the digest records (:func:`public_manifest`, :func:`evaluator_checksums`) and the
writers use exactly those bytes, so building in memory, writing and reading
back agree, and writing twice gives identical bytes.

Reading verifies before parsing: no unexpected or missing file, every
per-file hash, the root artifact-set digest, and (evaluator) the binding to
the verified public digest. The public stream is then fully replayed, so a
loaded :class:`PublicBundle` is known to be valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from pytest_agentbench.sdk import (
    AgentbenchError,
    JsonValue,
    Record,
    artifact_set_digest,
    artifact_set_digest_from_hashes,
    iter_jsonl,
    loads_strict,
    read_bytes,
    sha256_hex,
    tree_files,
)
from pytest_agentbench.worlds.authority.models import (
    AuthorityTruth,
    BindingsFile,
    CaseLabel,
    Credential,
    Delegation,
    EvaluatorBundle,
    EvaluatorChecksums,
    Event,
    EvidenceEpoch,
    ExpectedDecision,
    ExpectedProvenance,
    ExpectedSideEffect,
    LogicalAgent,
    OrganisationFile,
    Principal,
    PublicBundle,
    PublicManifest,
    Resource,
    Runtime,
    Scenario,
    ToolSchemaFile,
    WorldSnapshot,
    json_text,
    jsonl_text,
    parse_record,
)
from pytest_agentbench.worlds.authority.replay import materialize

MANIFEST = "manifest.json"
CHECKSUMS = "checksums.json"
ORGANISATION = "organisation.json"
PRINCIPALS = "principals.jsonl"
AGENTS = "agents.jsonl"
RUNTIMES = "runtimes.jsonl"
RESOURCES = "resources.jsonl"
CREDENTIALS = "public_credentials.jsonl"
DELEGATIONS = "public_delegations.jsonl"
EVENTS = "public_events.jsonl"
TOOL_SCHEMAS_DIR = "tool_schemas"
SCENARIOS_DIR = "scenarios"
PUBLIC_BASE_FILES = (
    ORGANISATION,
    PRINCIPALS,
    AGENTS,
    RUNTIMES,
    RESOURCES,
    CREDENTIALS,
    DELEGATIONS,
    EVENTS,
)

BINDINGS = "canonical_bindings.json"
TRUTH = "authority_truth.jsonl"
CASES = "cases.jsonl"
DECISIONS = "expected_decisions.jsonl"
SIDE_EFFECTS = "expected_side_effects.jsonl"
PROVENANCE = "expected_provenance.jsonl"
EPOCHS = "evidence_epochs.jsonl"
EVALUATOR_FILES = (BINDINGS, TRUTH, CASES, DECISIONS, SIDE_EFFECTS, PROVENANCE, EPOCHS)

RecordT = TypeVar("RecordT", bound=Record)


# ---------------------------------------------------------------------------
# Rendering


def public_files(
    snapshot: WorldSnapshot,
    events: Sequence[Event],
    scenarios: Mapping[str, Scenario],
    tool_schemas: Mapping[str, ToolSchemaFile],
) -> dict[str, bytes]:
    """Every public file except ``manifest.json``, by relative path."""
    texts = {
        ORGANISATION: json_text(snapshot.organisation),
        PRINCIPALS: jsonl_text(snapshot.principals),
        AGENTS: jsonl_text(snapshot.agents),
        RUNTIMES: jsonl_text(snapshot.runtimes),
        RESOURCES: jsonl_text(snapshot.resources),
        CREDENTIALS: jsonl_text(snapshot.credentials),
        DELEGATIONS: jsonl_text(snapshot.delegations),
        EVENTS: jsonl_text(events),
    }
    for name, schema in tool_schemas.items():
        texts[f"{TOOL_SCHEMAS_DIR}/{name}.json"] = json_text(schema)
    for name, scenario in scenarios.items():
        texts[f"{SCENARIOS_DIR}/{name}.json"] = json_text(scenario)
    return {path: text.encode("utf-8") for path, text in sorted(texts.items())}


def public_manifest(files: Mapping[str, bytes], organisation: OrganisationFile) -> PublicManifest:
    return PublicManifest(
        artifact_set_digest=artifact_set_digest(files),
        artifacts={path: sha256_hex(data) for path, data in sorted(files.items())},
        schema_version=organisation.schema_version,
        seed=organisation.seed,
        world_id=organisation.world_id,
        world_version=organisation.world_version,
    )


def build_public_bundle(
    snapshot: WorldSnapshot,
    events: Sequence[Event],
    scenarios: Mapping[str, Scenario],
    tool_schemas: Mapping[str, ToolSchemaFile],
) -> PublicBundle:
    """A public bundle with the manifest its files would have on disk."""
    files = public_files(snapshot, events, scenarios, tool_schemas)
    return PublicBundle(
        snapshot=snapshot,
        events=tuple(events),
        scenarios=dict(scenarios),
        tool_schemas=dict(tool_schemas),
        manifest=public_manifest(files, snapshot.organisation),
    )


def evaluator_files(
    *,
    bindings: BindingsFile,
    truth: Iterable[AuthorityTruth],
    cases: Iterable[CaseLabel],
    decisions: Iterable[ExpectedDecision],
    side_effects: Iterable[ExpectedSideEffect],
    provenance: Iterable[ExpectedProvenance],
    epochs: Iterable[EvidenceEpoch],
) -> dict[str, bytes]:
    """Every evaluator file except ``checksums.json``, by relative path."""
    texts = {
        BINDINGS: json_text(bindings),
        TRUTH: jsonl_text(truth),
        CASES: jsonl_text(cases),
        DECISIONS: jsonl_text(decisions),
        SIDE_EFFECTS: jsonl_text(side_effects),
        PROVENANCE: jsonl_text(provenance),
        EPOCHS: jsonl_text(epochs),
    }
    return {path: text.encode("utf-8") for path, text in sorted(texts.items())}


def evaluator_checksums(
    files: Mapping[str, bytes], public_digest: str, schema_version: str
) -> EvaluatorChecksums:
    return EvaluatorChecksums(
        evaluator_artifact_set_digest=artifact_set_digest(files),
        evaluator_artifacts={path: sha256_hex(data) for path, data in sorted(files.items())},
        public_artifact_set_digest=public_digest,
        schema_version=schema_version,
    )


def _evaluator_files_of(bundle: EvaluatorBundle) -> dict[str, bytes]:
    return evaluator_files(
        bindings=bundle.bindings,
        truth=bundle.truth,
        cases=bundle.cases,
        decisions=bundle.expected_decisions,
        side_effects=bundle.expected_side_effects,
        provenance=bundle.expected_provenance,
        epochs=bundle.evidence_epochs,
    )


def build_evaluator_bundle(
    *,
    bindings: BindingsFile,
    truth: Sequence[AuthorityTruth],
    cases: Sequence[CaseLabel],
    decisions: Sequence[ExpectedDecision],
    side_effects: Sequence[ExpectedSideEffect],
    provenance: Sequence[ExpectedProvenance],
    epochs: Sequence[EvidenceEpoch],
    public_digest: str,
    schema_version: str,
) -> EvaluatorBundle:
    """An evaluator bundle with the checksums its files would have on disk."""
    files = evaluator_files(
        bindings=bindings,
        truth=truth,
        cases=cases,
        decisions=decisions,
        side_effects=side_effects,
        provenance=provenance,
        epochs=epochs,
    )
    return EvaluatorBundle(
        bindings=bindings,
        truth=tuple(truth),
        cases=tuple(cases),
        expected_decisions=tuple(decisions),
        expected_side_effects=tuple(side_effects),
        expected_provenance=tuple(provenance),
        evidence_epochs=tuple(epochs),
        checksums=evaluator_checksums(files, public_digest, schema_version),
    )


# ---------------------------------------------------------------------------
# Writing


def _write_tree(root: Path, files: Mapping[str, bytes]) -> None:
    for path, data in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def write_public(root: Path, bundle: PublicBundle) -> PublicManifest:
    """Write the public files and the ``manifest.json`` computed from them."""
    files = public_files(bundle.snapshot, bundle.events, bundle.scenarios, bundle.tool_schemas)
    manifest = public_manifest(files, bundle.snapshot.organisation)
    _write_tree(root, {**files, MANIFEST: json_text(manifest).encode("utf-8")})
    return manifest


def write_evaluator(root: Path, bundle: EvaluatorBundle) -> EvaluatorChecksums:
    """Write the evaluator files and ``checksums.json``, bound to the bundle's public digest."""
    files = _evaluator_files_of(bundle)
    checksums = evaluator_checksums(
        files, bundle.checksums.public_artifact_set_digest, bundle.checksums.schema_version
    )
    _write_tree(root, {**files, CHECKSUMS: json_text(checksums).encode("utf-8")})
    return checksums


# ---------------------------------------------------------------------------
# Reading


def _is_public_file(path: str) -> bool:
    if path in PUBLIC_BASE_FILES:
        return True
    folder, _, name = path.partition("/")
    return (
        folder in (TOOL_SCHEMAS_DIR, SCENARIOS_DIR)
        and "/" not in name
        and name.endswith(".json")
        and len(name) > len(".json")
    )


def _verify(
    display: str,
    found: Mapping[str, bytes],
    recorded: Mapping[str, str],
    recorded_digest: str,
    digest_file: str,
) -> None:
    for path in sorted(set(found) | set(recorded)):
        if path not in recorded:
            raise AgentbenchError(
                "unexpected_file", f"not listed in {digest_file}", file=f"{display}/{path}"
            )
        if path not in found:
            raise AgentbenchError(
                "missing_file", f"listed in {digest_file} but absent", file=f"{display}/{path}"
            )
        if sha256_hex(found[path]) != recorded[path]:
            raise AgentbenchError(
                "digest_mismatch",
                f"sha256 differs from the one {digest_file} records",
                file=f"{display}/{path}",
            )
    if artifact_set_digest_from_hashes(recorded) != recorded_digest:
        raise AgentbenchError(
            "digest_mismatch",
            "the recorded artifact-set digest does not match the recorded file hashes",
            file=f"{display}/{digest_file}",
        )


def _read_bytes(root: Path, display: str, exclude: Iterable[str]) -> dict[str, bytes]:
    if not root.is_dir():
        raise AgentbenchError("missing_file", "bundle folder does not exist", file=display)
    return {
        path: read_bytes(file, display=f"{display}/{path}")
        for path, file in tree_files(root, exclude=exclude).items()
    }


def _text(data: bytes, file: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AgentbenchError("malformed_json", f"not UTF-8 ({exc.reason})", file=file) from None


def _json_record(model: type[RecordT], data: bytes, file: str) -> RecordT:
    value: JsonValue = loads_strict(_text(data, file), file=file)
    return parse_record(model, value, file=file)


def _jsonl_records(model: type[RecordT], data: bytes, file: str) -> tuple[RecordT, ...]:
    return tuple(
        parse_record(model, line.value, file=file, line=line.line)
        for line in iter_jsonl(_text(data, file), file=file)
    )


def read_public(root: Path, display: str, *, exclude: Iterable[str] = ()) -> PublicBundle:
    """Verify and parse a public tree; ``exclude`` names files outside the artifact set."""
    files = _read_bytes(root, display, exclude)
    if MANIFEST not in files:
        raise AgentbenchError("missing_file", "file does not exist", file=f"{display}/{MANIFEST}")
    manifest = _json_record(PublicManifest, files.pop(MANIFEST), f"{display}/{MANIFEST}")
    for path in sorted(files):
        if not _is_public_file(path):
            raise AgentbenchError(
                "unexpected_file", "not part of the public layout", file=f"{display}/{path}"
            )
    for path in PUBLIC_BASE_FILES:
        if path not in files:
            raise AgentbenchError("missing_file", "file does not exist", file=f"{display}/{path}")
    _verify(display, files, manifest.artifacts, manifest.artifact_set_digest, MANIFEST)

    def located(path: str) -> str:
        return f"{display}/{path}"

    snapshot = WorldSnapshot(
        organisation=_json_record(OrganisationFile, files[ORGANISATION], located(ORGANISATION)),
        principals=_jsonl_records(Principal, files[PRINCIPALS], located(PRINCIPALS)),
        agents=_jsonl_records(LogicalAgent, files[AGENTS], located(AGENTS)),
        runtimes=_jsonl_records(Runtime, files[RUNTIMES], located(RUNTIMES)),
        resources=_jsonl_records(Resource, files[RESOURCES], located(RESOURCES)),
        credentials=_jsonl_records(Credential, files[CREDENTIALS], located(CREDENTIALS)),
        delegations=_jsonl_records(Delegation, files[DELEGATIONS], located(DELEGATIONS)),
    )
    _check_manifest_identity(manifest, snapshot.organisation, located(MANIFEST))
    events = _jsonl_records(Event, files[EVENTS], located(EVENTS))
    tool_schemas = {
        Path(path).stem: _json_record(ToolSchemaFile, data, located(path))
        for path, data in files.items()
        if path.startswith(f"{TOOL_SCHEMAS_DIR}/")
    }
    scenarios = {
        Path(path).stem: _json_record(Scenario, data, located(path))
        for path, data in files.items()
        if path.startswith(f"{SCENARIOS_DIR}/")
    }
    # A tool_schema_paths entry naming a file the bundle does not hold is not
    # refused: the original's own writer produces such bundles (see
    # missing_tool_schemas, which verify reports as warnings).
    try:
        materialize(snapshot, events)
    except AgentbenchError as exc:
        raise _relocate(exc, display) from None
    return PublicBundle(
        snapshot=snapshot,
        events=events,
        scenarios=scenarios,
        tool_schemas=tool_schemas,
        manifest=manifest,
    )


def missing_tool_schemas(bundle: PublicBundle, display: str) -> list[str]:
    """One warning per scenario ``tool_schema_paths`` entry the bundle does not hold."""
    held = {f"{TOOL_SCHEMAS_DIR}/{name}.json" for name in bundle.tool_schemas}
    return [
        f"{display}/{SCENARIOS_DIR}/{name}.json: tool_schema_paths[{position}]: "
        f"{schema_path!r} is not in the bundle (accepted, as the original does)"
        for name, scenario in sorted(bundle.scenarios.items())
        for position, schema_path in enumerate(scenario.tool_schema_paths)
        if schema_path not in held
    ]


def _relocate(exc: AgentbenchError, display: str) -> AgentbenchError:
    """Prefix a replay refusal's bare file name with the bundle's display path."""
    location = exc.location
    file = None if location.file is None else f"{display}/{location.file}"
    return AgentbenchError(
        exc.code, exc.reason, file=file, line=location.line, field=location.field
    )


def _check_manifest_identity(
    manifest: PublicManifest, organisation: OrganisationFile, file: str
) -> None:
    for name in ("schema_version", "seed", "world_id", "world_version"):
        if getattr(manifest, name) != getattr(organisation, name):
            raise AgentbenchError(
                "manifest_mismatch",
                f"{name} differs from organisation.json",
                file=file,
                field=name,
            )


def read_evaluator(
    root: Path, display: str, public_digest: str, *, exclude: Iterable[str] = ()
) -> EvaluatorBundle:
    """Verify and parse an evaluator tree bound to the public root ``public_digest``."""
    files = _read_bytes(root, display, exclude)
    if CHECKSUMS not in files:
        raise AgentbenchError("missing_file", "file does not exist", file=f"{display}/{CHECKSUMS}")
    checksums = _json_record(EvaluatorChecksums, files.pop(CHECKSUMS), f"{display}/{CHECKSUMS}")
    for path in sorted(files):
        if path not in EVALUATOR_FILES:
            raise AgentbenchError(
                "unexpected_file", "not part of the evaluator layout", file=f"{display}/{path}"
            )
    for path in EVALUATOR_FILES:
        if path not in files:
            raise AgentbenchError("missing_file", "file does not exist", file=f"{display}/{path}")
    _verify(
        display,
        files,
        checksums.evaluator_artifacts,
        checksums.evaluator_artifact_set_digest,
        CHECKSUMS,
    )
    if checksums.public_artifact_set_digest != public_digest:
        raise AgentbenchError(
            "evaluator_binding_mismatch",
            "the evaluator tree is bound to another public artifact set",
            file=f"{display}/{CHECKSUMS}",
            field="public_artifact_set_digest",
        )

    def located(path: str) -> str:
        return f"{display}/{path}"

    return EvaluatorBundle(
        bindings=_json_record(BindingsFile, files[BINDINGS], located(BINDINGS)),
        truth=_jsonl_records(AuthorityTruth, files[TRUTH], located(TRUTH)),
        cases=_jsonl_records(CaseLabel, files[CASES], located(CASES)),
        expected_decisions=_jsonl_records(ExpectedDecision, files[DECISIONS], located(DECISIONS)),
        expected_side_effects=_jsonl_records(
            ExpectedSideEffect, files[SIDE_EFFECTS], located(SIDE_EFFECTS)
        ),
        expected_provenance=_jsonl_records(
            ExpectedProvenance, files[PROVENANCE], located(PROVENANCE)
        ),
        evidence_epochs=_jsonl_records(EvidenceEpoch, files[EPOCHS], located(EPOCHS)),
        checksums=checksums,
    )

"""Reading an Enterprise C08 v2 candidate, refusing in the original loader's order.

(1) root not a directory, symlinks, non-regular nodes, inventory; (2) the
manifest invalid or noncanonical; (3) ``SHA256SUMS`` not canonical, not
ASCII, a bad row, the wrong inventory, or a digest that differs; (4) a payload
noncanonical or invalid; (5) the manifest/public and evaluator/public digests
and the truth's semantics; (6) the manifest inventory; (7) the fixed reference
(a candidate claiming the original's benchmark id must carry the published
``SHA256SUMS`` and public input). The public side is read when the suite
loads, the evaluator side once an adapter's output exists; each keeps the order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pytest_agentbench.sdk import AgentbenchError
from pytest_agentbench.worlds.evidence_binding.artifacts import (
    EVALUATOR_DIR,
    PUBLIC_DIR,
    ROOT_MANIFEST,
    CandidateTree,
    parse_governed,
    sha256_bytes,
)
from pytest_agentbench.worlds.evidence_binding.enterprise import (
    CHECKSUM_FILE,
    ORIGINAL_BENCHMARK_ID,
    PUBLIC_PATH,
    TRUTH_PATH,
    EnterpriseManifest,
    EnterprisePublic,
    EnterpriseTruth,
    InventoryDescriptor,
)

CHECKSUMMED = (TRUTH_PATH, ROOT_MANIFEST, PUBLIC_PATH)
"""Every file but ``SHA256SUMS``, sorted by path."""
_ROW = re.compile(r"^([0-9a-f]{64})  (\S+)$")

PINNED = MappingProxyType(
    {
        "checksums_sha256": "a0b012bda161183ce925ca75b754cd7cbae942bf7fb4787a7b1258293210e123",
        "public_input_digest": "d7a525cfeb53fcbd62adef9ee9c11dbb5b222ffa47874a8c5a0226d43deb61f0",
    }
)


@dataclass(frozen=True)
class EnterpriseCandidate:
    manifest: EnterpriseManifest
    checksums: Mapping[str, str]
    """``SHA256SUMS`` rows: path -> sha256."""
    public: EnterprisePublic
    public_input_digest: str


@dataclass(frozen=True)
class EnterpriseTruthSet:
    truth: EnterpriseTruth
    required: Mapping[str, frozenset[str]]
    """Required evidence ids by action."""


def parse_checksums(data: bytes, *, file: str) -> dict[str, str]:
    if not data.endswith(b"\n") or b"\r" in data:
        raise AgentbenchError(
            "noncanonical_checksums", "not canonical: LF line ends, one final LF, no CR", file=file
        )
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise AgentbenchError("noncanonical_checksums", "not ASCII", file=file) from None
    rows: dict[str, str] = {}
    for number, line in enumerate(text[:-1].split("\n"), start=1):
        match = _ROW.match(line)
        if match is None:
            raise AgentbenchError(
                "bad_checksum_row", "expected '<64 lowercase hex>  <path>'", file=file, line=number
            )
        digest, path = match.groups()
        if rows and path <= list(rows)[-1]:
            raise AgentbenchError(
                "bad_checksum_row", "rows must be sorted by path, each once", file=file, line=number
            )
        rows[path] = digest
    if tuple(rows) != CHECKSUMMED:
        raise AgentbenchError(
            "checksum_inventory_mismatch",
            f"must list exactly {', '.join(CHECKSUMMED)}; lists {', '.join(rows) or 'nothing'}",
            file=file,
        )
    return rows


def _check_sum(rows: Mapping[str, str], path: str, data: bytes, *, file: str) -> None:
    actual = sha256_bytes(data)
    if rows[path] != actual:
        raise AgentbenchError(
            "checksum_mismatch",
            f"digest differs for {path}: listed {rows[path]}, file {actual}",
            file=file,
        )


def _check_inventory(
    descriptors: tuple[InventoryDescriptor, ...], path: str, data: bytes, *, file: str, field: str
) -> None:
    if [d.path for d in descriptors] != [path]:
        raise AgentbenchError(
            "inventory_descriptor_mismatch",
            f"must list exactly {path}",
            file=file,
            field=field,
        )
    descriptor = descriptors[0]
    if descriptor.byte_size != len(data) or descriptor.sha256 != sha256_bytes(data):
        raise AgentbenchError(
            "inventory_descriptor_mismatch",
            f"byte_size/sha256 differ from {path} ({len(data)} bytes, {sha256_bytes(data)})",
            file=file,
            field=f"{field}[0]",
        )


def read_public(tree: CandidateTree) -> EnterpriseCandidate:
    tree.check_root()
    tree.check_root_entries([ROOT_MANIFEST, CHECKSUM_FILE], [PUBLIC_DIR, EVALUATOR_DIR])
    tree.check_folder(PUBLIC_DIR, [PUBLIC_PATH.split("/")[1]])

    manifest_shown = tree.display(ROOT_MANIFEST)
    manifest_bytes = tree.read(ROOT_MANIFEST)
    manifest = parse_governed(manifest_bytes, EnterpriseManifest, file=manifest_shown)

    sums_shown = tree.display(CHECKSUM_FILE)
    sums_bytes = tree.read(CHECKSUM_FILE)
    rows = parse_checksums(sums_bytes, file=sums_shown)
    public_bytes = tree.read(PUBLIC_PATH)
    _check_sum(rows, ROOT_MANIFEST, manifest_bytes, file=sums_shown)
    _check_sum(rows, PUBLIC_PATH, public_bytes, file=sums_shown)

    public = parse_governed(public_bytes, EnterprisePublic, file=tree.display(PUBLIC_PATH))

    public_digest = sha256_bytes(public_bytes)
    if manifest.public_input_digest != public_digest:
        raise AgentbenchError(
            "public_digest_mismatch",
            f"manifest binds a different public input: {manifest.public_input_digest}, "
            f"the public input hashes to {public_digest}",
            file=manifest_shown,
            field="public_input_digest",
        )
    _check_inventory(
        manifest.public_inventory,
        PUBLIC_PATH,
        public_bytes,
        file=manifest_shown,
        field="public_inventory",
    )
    if [d.path for d in manifest.evaluator_inventory] != [TRUTH_PATH]:
        raise AgentbenchError(
            "inventory_descriptor_mismatch",
            f"must list exactly {TRUTH_PATH}",
            file=manifest_shown,
            field="evaluator_inventory",
        )
    if manifest.benchmark_id == ORIGINAL_BENCHMARK_ID:
        for key, actual in (
            ("checksums_sha256", sha256_bytes(sums_bytes)),
            ("public_input_digest", public_digest),
        ):
            if actual != PINNED[key]:
                raise AgentbenchError(
                    "fixed_reference_mismatch",
                    f"differ from canonical v2: {key} is {actual}, published {PINNED[key]}",
                    file=sums_shown if key == "checksums_sha256" else manifest_shown,
                )
    return EnterpriseCandidate(
        manifest=manifest, checksums=rows, public=public, public_input_digest=public_digest
    )


def read_evaluator(tree: CandidateTree, candidate: EnterpriseCandidate) -> EnterpriseTruthSet:
    tree.check_folder(EVALUATOR_DIR, [TRUTH_PATH.split("/")[1]])
    truth_bytes = tree.read(TRUTH_PATH)
    _check_sum(candidate.checksums, TRUTH_PATH, truth_bytes, file=tree.display(CHECKSUM_FILE))
    shown = tree.display(TRUTH_PATH)
    truth = parse_governed(truth_bytes, EnterpriseTruth, file=shown)
    if truth.public_input_digest != candidate.public_input_digest:
        raise AgentbenchError(
            "evaluator_binding_mismatch",
            f"truth binds a different public input: {truth.public_input_digest}",
            file=shown,
            field="public_input_digest",
        )
    required = _semantics(truth, candidate.public, file=shown)
    _check_inventory(
        candidate.manifest.evaluator_inventory,
        TRUTH_PATH,
        truth_bytes,
        file=tree.display(ROOT_MANIFEST),
        field="evaluator_inventory",
    )
    return EnterpriseTruthSet(truth=truth, required=required)


def _semantics(
    truth: EnterpriseTruth, public: EnterprisePublic, *, file: str
) -> dict[str, frozenset[str]]:
    """Truth and public input describe the same actions, requirements and candidates."""
    actions = public.action_by_id
    if sorted(actions) != [b.action_id for b in truth.bindings]:
        raise AgentbenchError(
            "semantics_mismatch",
            "semantics differ: bindings must cover each public action once",
            file=file,
            field="bindings",
        )
    events = public.events_by_id
    required: dict[str, frozenset[str]] = {}
    for index, binding in enumerate(truth.bindings):
        action = actions[binding.action_id]
        where = f"bindings[{index}]"
        if binding.tenant_id != action.tenant_id:
            raise AgentbenchError(
                "semantics_mismatch",
                "semantics differ: tenant_id",
                file=file,
                field=f"{where}.tenant_id",
            )
        if binding.required_evidence != action.required_evidence:
            raise AgentbenchError(
                "semantics_mismatch",
                "semantics differ: required_evidence is not the action's",
                file=file,
                field=f"{where}.required_evidence",
            )
        pairs = []
        for evidence_id in binding.required_observation_ids:
            event = events.get(evidence_id)
            if event is None or event.action_id != action.action_id:
                raise AgentbenchError(
                    "semantics_mismatch",
                    f"semantics differ: {evidence_id} is not an event of {action.action_id}",
                    file=file,
                    field=f"{where}.required_observation_ids",
                )
            pairs.append((event.kind, event.binding_handle))
        if sorted(pairs) != [(r.kind, r.binding_handle) for r in action.required_evidence]:
            raise AgentbenchError(
                "semantics_mismatch",
                "semantics differ: the required events' (kind, handle) pairs are not the "
                "action's requirements",
                file=file,
                field=f"{where}.required_observation_ids",
            )
        required[binding.action_id] = frozenset(binding.required_observation_ids)
    return required

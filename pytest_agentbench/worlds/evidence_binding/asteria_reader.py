"""Reading an Asteria C08 v2 candidate, refusing in the original loader's order.

The public side (root manifest, ``public/``) is read when the suite loads;
the evaluator side only once an adapter's output exists. Within each side
the refusals come in the page's order: (1) inventory, symlinks, non-regular
nodes; (2) unreadable, invalid or noncanonical JSON (the model invariants
included); (3) tree descriptors and artifact-set digests; (4) the
evaluator/public digest binding; (5) root descriptors, the root set and the
root cross-artifact bindings; (6) the fixed reference, which applies to a
candidate claiming the original's benchmark id: its digests must be the
published ones (the original regenerates seed 20260809 and compares; pinning
the digests gives the same verdict).
"""

from __future__ import annotations

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
    path_bound_digest,
    sha256_bytes,
)
from pytest_agentbench.worlds.evidence_binding.asteria import (
    EVALUATOR_FILE,
    MANIFEST_FILE,
    ORIGINAL_BENCHMARK_ID,
    PUBLIC_FILE,
    ROOT_ARTIFACTS,
    AsteriaEvaluator,
    AsteriaPublic,
    Descriptor,
    EvaluatorManifest,
    PublicManifest,
    RootManifest,
)

PUBLIC_PAYLOAD = f"{PUBLIC_DIR}/{PUBLIC_FILE}"
PUBLIC_MANIFEST = f"{PUBLIC_DIR}/{MANIFEST_FILE}"
EVALUATOR_PAYLOAD = f"{EVALUATOR_DIR}/{EVALUATOR_FILE}"
EVALUATOR_MANIFEST = f"{EVALUATOR_DIR}/{MANIFEST_FILE}"

PINNED = MappingProxyType(
    {
        "public_input_digest": "b9ed17cac90721a276b28570bd91b5c6f41b106dad5be15fa1257a7e9a16ade3",
        "public_artifact_set_digest": (
            "fe59c2d365194572c57f1afa892d3a86fffb41e07f5e77ac8936f8117db96db4"
        ),
        "evaluator_artifact_set_digest": (
            "68cefaa573ab2e28336cf20023147eb21c6a2b2c1cd0c53c6b8dff1c6d3f00dd"
        ),
        "artifact_set_digest": "5fc98eafd7435580ed50581adacd3cbbecae45c02295f3733bdc87da3d59629a",
    }
)
"""The published candidate's digests (§1), for the fixed-reference comparison."""


@dataclass(frozen=True)
class AsteriaCandidate:
    """The verified public side."""

    root_manifest: RootManifest
    public_manifest: PublicManifest
    public: AsteriaPublic
    public_input_digest: str


@dataclass(frozen=True)
class AsteriaTruth:
    """The verified evaluator side."""

    manifest: EvaluatorManifest
    evaluator: AsteriaEvaluator
    required: Mapping[str, frozenset[str]]
    """Required observation ids by action."""


def _check_descriptor(
    descriptor: Descriptor, path: str, data: bytes, *, file: str, field: str
) -> None:
    if descriptor.path != path:
        raise AgentbenchError(
            "descriptor_mismatch",
            f"path is {descriptor.path!r}, expected {path!r}",
            file=file,
            field=f"{field}.path",
        )
    if descriptor.byte_size != len(data):
        raise AgentbenchError(
            "descriptor_mismatch",
            f"byte_size is {descriptor.byte_size}, the file has {len(data)} bytes",
            file=file,
            field=f"{field}.byte_size",
        )
    actual = sha256_bytes(data)
    if descriptor.sha256 != actual:
        raise AgentbenchError(
            "descriptor_mismatch",
            f"sha256 is {descriptor.sha256}, the file hashes to {actual}",
            file=file,
            field=f"{field}.sha256",
        )


def _check_set(recorded: str, hashes: Mapping[str, str], *, file: str, field: str) -> None:
    actual = path_bound_digest(hashes)
    if recorded != actual:
        raise AgentbenchError(
            "artifact_set_digest_mismatch",
            f"sha256-path-bound-v1 digest is {actual}, the manifest says {recorded}",
            file=file,
            field=field,
        )


def _bind(
    recorded: object, actual: object, *, code: str, reason: str, file: str, field: str
) -> None:
    if recorded != actual:
        raise AgentbenchError(code, f"{reason}: {recorded!r} != {actual!r}", file=file, field=field)


def _pin(recorded: str, key: str, *, file: str) -> None:
    if recorded != PINNED[key]:
        raise AgentbenchError(
            "fixed_reference_mismatch",
            f"does not match the fixed reference of {ORIGINAL_BENCHMARK_ID}: {key} is "
            f"{recorded}, published {PINNED[key]}",
            file=file,
            field=key,
        )


def read_public(tree: CandidateTree) -> AsteriaCandidate:
    tree.check_root()
    tree.check_root_entries([ROOT_MANIFEST], [PUBLIC_DIR, EVALUATOR_DIR])
    tree.check_folder(PUBLIC_DIR, [MANIFEST_FILE, PUBLIC_FILE])

    root_bytes = tree.read(ROOT_MANIFEST)
    manifest_bytes = tree.read(PUBLIC_MANIFEST)
    public_bytes = tree.read(PUBLIC_PAYLOAD)
    root = parse_governed(root_bytes, RootManifest, file=tree.display(ROOT_MANIFEST))
    manifest = parse_governed(manifest_bytes, PublicManifest, file=tree.display(PUBLIC_MANIFEST))
    public = parse_governed(public_bytes, AsteriaPublic, file=tree.display(PUBLIC_PAYLOAD))

    shown = tree.display(PUBLIC_MANIFEST)
    _check_descriptor(
        manifest.artifacts[0], PUBLIC_FILE, public_bytes, file=shown, field="artifacts[0]"
    )
    _check_set(
        manifest.artifact_set_digest,
        {PUBLIC_FILE: sha256_bytes(public_bytes)},
        file=shown,
        field="artifact_set_digest",
    )

    shown = tree.display(ROOT_MANIFEST)
    paths = tuple(d.path for d in root.artifacts)
    if paths != ROOT_ARTIFACTS:
        raise AgentbenchError(
            "descriptor_mismatch",
            f"artifacts must be {', '.join(ROOT_ARTIFACTS)}",
            file=shown,
            field="artifacts",
        )
    for index, rel, data in (
        (2, PUBLIC_PAYLOAD, public_bytes),
        (3, PUBLIC_MANIFEST, manifest_bytes),
    ):
        _check_descriptor(root.artifacts[index], rel, data, file=shown, field=f"artifacts[{index}]")
    _check_set(
        root.artifact_set_digest,
        {d.path: d.sha256 for d in root.artifacts},
        file=shown,
        field="artifact_set_digest",
    )
    public_digest = sha256_bytes(public_bytes)
    for field, recorded, actual in (
        ("public_input_digest", root.public_input_digest, public_digest),
        (
            "public_artifact_set_digest",
            root.public_artifact_set_digest,
            manifest.artifact_set_digest,
        ),
        ("benchmark_id", root.benchmark_id, manifest.benchmark_id),
        ("benchmark_id", root.benchmark_id, public.benchmark_id),
        ("seed", root.seed, manifest.seed),
    ):
        _bind(
            recorded,
            actual,
            code="root_binding_mismatch",
            reason="root cross-artifact binding differs",
            file=shown,
            field=field,
        )

    if root.benchmark_id == ORIGINAL_BENCHMARK_ID:
        _pin(root.public_input_digest, "public_input_digest", file=shown)
        _pin(root.public_artifact_set_digest, "public_artifact_set_digest", file=shown)
        _pin(root.artifact_set_digest, "artifact_set_digest", file=shown)
    return AsteriaCandidate(
        root_manifest=root,
        public_manifest=manifest,
        public=public,
        public_input_digest=public_digest,
    )


def read_evaluator(tree: CandidateTree, candidate: AsteriaCandidate) -> AsteriaTruth:
    tree.check_folder(EVALUATOR_DIR, [MANIFEST_FILE, EVALUATOR_FILE])
    manifest_bytes = tree.read(EVALUATOR_MANIFEST)
    payload_bytes = tree.read(EVALUATOR_PAYLOAD)
    manifest = parse_governed(
        manifest_bytes, EvaluatorManifest, file=tree.display(EVALUATOR_MANIFEST)
    )
    evaluator = parse_governed(
        payload_bytes, AsteriaEvaluator, file=tree.display(EVALUATOR_PAYLOAD)
    )

    shown = tree.display(EVALUATOR_MANIFEST)
    _check_descriptor(
        manifest.artifacts[0], EVALUATOR_FILE, payload_bytes, file=shown, field="artifacts[0]"
    )
    _check_set(
        manifest.artifact_set_digest,
        {EVALUATOR_FILE: sha256_bytes(payload_bytes)},
        file=shown,
        field="artifact_set_digest",
    )

    public = candidate.public
    payload_shown = tree.display(EVALUATOR_PAYLOAD)
    for file, field, recorded, actual in (
        (
            payload_shown,
            "public_input_digest",
            evaluator.public_input_digest,
            candidate.public_input_digest,
        ),
        (shown, "public_input_digest", manifest.public_input_digest, candidate.public_input_digest),
        (payload_shown, "measurement_scope", evaluator.measurement_scope, public.measurement_scope),
        (payload_shown, "benchmark_id", evaluator.benchmark_id, public.benchmark_id),
        (shown, "benchmark_id", manifest.benchmark_id, public.benchmark_id),
        (shown, "seed", manifest.seed, candidate.root_manifest.seed),
    ):
        _bind(
            recorded,
            actual,
            code="evaluator_binding_mismatch",
            reason="evaluator/public digest binding mismatch",
            file=file,
            field=field,
        )
    required = _bindings(evaluator, public, file=payload_shown)

    root = candidate.root_manifest
    root_shown = tree.display(ROOT_MANIFEST)
    for index, rel, data in (
        (0, EVALUATOR_PAYLOAD, payload_bytes),
        (1, EVALUATOR_MANIFEST, manifest_bytes),
    ):
        _check_descriptor(
            root.artifacts[index], rel, data, file=root_shown, field=f"artifacts[{index}]"
        )
    for field, recorded, actual in (
        (
            "evaluator_public_input_digest",
            root.evaluator_public_input_digest,
            evaluator.public_input_digest,
        ),
        (
            "evaluator_artifact_set_digest",
            root.evaluator_artifact_set_digest,
            manifest.artifact_set_digest,
        ),
    ):
        _bind(
            recorded,
            actual,
            code="root_binding_mismatch",
            reason="root cross-artifact binding differs",
            file=root_shown,
            field=field,
        )
    if root.benchmark_id == ORIGINAL_BENCHMARK_ID:
        _pin(root.evaluator_artifact_set_digest, "evaluator_artifact_set_digest", file=root_shown)
    return AsteriaTruth(manifest=manifest, evaluator=evaluator, required=required)


def _bindings(
    evaluator: AsteriaEvaluator, public: AsteriaPublic, *, file: str
) -> dict[str, frozenset[str]]:
    """One binding per public action, naming that action's own observations by its handles."""
    bound = [b.action_event_id for b in evaluator.bindings]
    actions = [a.action_event_id for a in public.actions]
    if sorted(actions) != bound:
        missing = sorted(set(actions) - set(bound))
        unknown = sorted(set(bound) - set(actions))
        raise AgentbenchError(
            "binding_inventory_mismatch",
            f"bindings must cover each public action once; missing={missing}, unknown={unknown}",
            file=file,
            field="bindings",
        )
    observations = {o.observation_id: o for o in public.evidence_observations}
    required: dict[str, frozenset[str]] = {}
    for index, binding in enumerate(evaluator.bindings):
        action = public.action(binding.action_event_id)
        assert action is not None
        handles = []
        for position, observation_id in enumerate(binding.required_observation_ids):
            observation = observations.get(observation_id)
            if observation is None or observation.action_event_id != action.action_event_id:
                raise AgentbenchError(
                    "binding_crosses_action",
                    f"{observation_id} is not an observation of action {action.action_event_id}",
                    file=file,
                    field=f"bindings[{index}].required_observation_ids[{position}]",
                )
            handles.append((observation.evidence_kind, observation.binding_handle))
        wanted = [(r.evidence_kind, r.binding_handle) for r in action.required_evidence]
        if sorted(handles) != wanted:
            raise AgentbenchError(
                "binding_handle_mismatch",
                f"the required observations' (kind, handle) pairs differ from action "
                f"{action.action_event_id}'s requirements",
                file=file,
                field=f"bindings[{index}].required_observation_ids",
            )
        required[binding.action_event_id] = frozenset(binding.required_observation_ids)
    return required

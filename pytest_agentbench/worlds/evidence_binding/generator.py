"""Authoring C08 v2 candidates: our own ids and seed, every invariant enforced.

The generator builds the records through the lineage's models (which refuse
any broken invariant), renders them canonically and derives every digest
from the rendered bytes, so reading back what it writes verifies. The same
seed gives byte-identical files. ``python -m
pytest_agentbench.worlds.evidence_binding.generator`` rewrites the two
built-in suites (``suites/<id>/`` and ``oracles/<id>/``); the hand-authored
``controls.yaml`` beside them is never touched.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from collections.abc import Mapping
from pathlib import Path

from pytest_agentbench.sdk import JsonValue
from pytest_agentbench.worlds.evidence_binding import asteria, enterprise
from pytest_agentbench.worlds.evidence_binding.artifacts import (
    EVALUATOR_DIR,
    ROOT_MANIFEST,
    build,
    path_bound_digest,
    record_bytes,
    sha256_bytes,
)

SEED = 20261130
ASTERIA_SUITE = "asteria-evidence-binding-v2"
ENTERPRISE_SUITE = "enterprise-evidence-binding-v2"

_VERBS = ("read", "request_quotation", "compare", "create_draft", "approve", "archive")
_RESOURCES = (
    "resource-supplier-directory",
    "resource-quotation-ledger",
    "resource-contract-archive",
    "resource-payment-batch",
    "resource-audit-report",
    "resource-policy-register",
)
_SCOPES = (
    "archive:read",
    "ledger:read",
    "ledger:write",
    "payment:approve",
    "supplier:atlas",
    "supplier:cirrus",
    "supplier:novus",
)
_ASTERIA_KINDS = ("authority_record", "policy_record", "resource_record", "revocation_record")
_SCENARIOS = ("exact", "missing", "fabricated", "wrong_action", "extra", "discarded")
_PROVES = (
    "a product selects, for each public action, the observations whose evidence kind and "
    "binding handle that action requires",
    "same-action, same-kind distractors carrying another binding handle are left out",
    "every selected identifier is a public candidate of the action it is reported for",
)
_DOES_NOT_PROVE = (
    "compatibility with Asteria or EADS exports",
    "live enforcement or production logging",
    "secrecy of the required identifiers against anyone holding the evaluator files",
    "whether an unselected required observation was missing or discarded",
)
_ENTERPRISE_VERBS = ("read", "write", "delete")
_TENANTS = ("tenant-aurora", "tenant-boreal", "tenant-cobalt", "tenant-delta")
_ENTERPRISE_KINDS = ("authority", "identity", "policy", "revocation")


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _hash_key(seed: int, value: str) -> str:
    return hashlib.sha256(f"{seed}:{value}".encode()).hexdigest()


def _descriptor(path: str, data: bytes) -> dict[str, JsonValue]:
    return {"path": path, "byte_size": len(data), "sha256": sha256_bytes(data)}


def _requirement_counts(rng: random.Random, actions: int, extra: int) -> list[int]:
    counts = [1] * actions
    for index in rng.sample(range(actions), min(extra, actions)):
        counts[index] = 2
    return counts


def asteria_files(benchmark_id: str, seed: int, actions: int = 6) -> dict[str, bytes]:
    """The five files of an Asteria candidate by root-relative path."""
    rng = random.Random(seed)
    counts = _requirement_counts(rng, actions, max(1, actions // 3))
    drafts: list[dict[str, JsonValue]] = []
    observations: list[dict[str, JsonValue]] = []
    for index, count in enumerate(counts):
        action_id = _uuid(rng)
        kinds = sorted(rng.sample(_ASTERIA_KINDS, count))
        requirements: list[dict[str, str]] = []
        for kind in kinds:
            handle, other = _uuid(rng), _uuid(rng)
            requirements.append({"evidence_kind": kind, "binding_handle": handle})
            for chosen in (handle, other):
                observation_id = _uuid(rng)
                observations.append(
                    {
                        "observation_id": observation_id,
                        "action_event_id": action_id,
                        "evidence_kind": kind,
                        "binding_handle": chosen,
                        "payload_digest": _hash_key(seed, f"payload:{observation_id}"),
                    }
                )
        drafts.append(
            {
                "action_event_id": action_id,
                "action": _VERBS[index % len(_VERBS)],
                "resource_id": _RESOURCES[index % len(_RESOURCES)],
                "requested_scope": sorted(rng.sample(_SCOPES, 1 + rng.randrange(3))),
                "required_evidence": sorted(
                    requirements, key=lambda r: (r["evidence_kind"], r["binding_handle"])
                ),
            }
        )
    drafts.sort(key=lambda d: _hash_key(seed, str(d["action_event_id"])))
    observations.sort(key=lambda o: _hash_key(seed, str(o["observation_id"])))
    scope = {
        "offline_artifacts_only": True,
        "proves": sorted(_PROVES),
        "does_not_prove": sorted(_DOES_NOT_PROVE),
    }
    public = build(
        asteria.AsteriaPublic,
        {
            "schema_version": "2.0.0",
            "benchmark_id": benchmark_id,
            "measurement_scope": scope,
            "actions": [
                {**draft, "event_order": order} for order, draft in enumerate(drafts, start=1)
            ],
            "evidence_observations": [
                {**o, "observation_order": order} for order, o in enumerate(observations, start=1)
            ],
        },
    )
    public_bytes = record_bytes(public)
    public_digest = sha256_bytes(public_bytes)
    bindings = []
    for order, action in enumerate(public.actions):
        wanted = {(r.evidence_kind, r.binding_handle) for r in action.required_evidence}
        bindings.append(
            {
                "action_event_id": action.action_event_id,
                "required_observation_ids": sorted(
                    o.observation_id
                    for o in public.observations_of(action.action_event_id)
                    if (o.evidence_kind, o.binding_handle) in wanted
                ),
                "scenario_kind": _SCENARIOS[order % len(_SCENARIOS)],
            }
        )
    evaluator = build(
        asteria.AsteriaEvaluator,
        {
            "schema_version": "2.0.0",
            "benchmark_id": benchmark_id,
            "public_input_digest": public_digest,
            "measurement_scope": scope,
            "bindings": sorted(bindings, key=lambda b: str(b["action_event_id"])),
        },
    )
    return seal_asteria(public_bytes, record_bytes(evaluator), benchmark_id=benchmark_id, seed=seed)


def seal_asteria(
    public_bytes: bytes, evaluator_bytes: bytes, *, benchmark_id: str, seed: int
) -> dict[str, bytes]:
    """The five files: the two payloads as given, the three manifests derived from their bytes."""
    public_digest = sha256_bytes(public_bytes)
    public_set = path_bound_digest({asteria.PUBLIC_FILE: public_digest})
    public_manifest = record_bytes(
        build(
            asteria.PublicManifest,
            {
                "schema_version": "2.0.0",
                "benchmark_id": benchmark_id,
                "seed": seed,
                "visibility": "public",
                "artifact_set_digest": public_set,
                "artifacts": [_descriptor(asteria.PUBLIC_FILE, public_bytes)],
            },
        )
    )
    evaluator_set = path_bound_digest({asteria.EVALUATOR_FILE: sha256_bytes(evaluator_bytes)})
    evaluator_manifest = record_bytes(
        build(
            asteria.EvaluatorManifest,
            {
                "schema_version": "2.0.0",
                "benchmark_id": benchmark_id,
                "seed": seed,
                "visibility": "evaluator",
                "artifact_set_digest": evaluator_set,
                "public_input_digest": public_digest,
                "artifacts": [_descriptor(asteria.EVALUATOR_FILE, evaluator_bytes)],
            },
        )
    )
    files = {
        f"evaluator/{asteria.EVALUATOR_FILE}": evaluator_bytes,
        f"evaluator/{asteria.MANIFEST_FILE}": evaluator_manifest,
        f"public/{asteria.PUBLIC_FILE}": public_bytes,
        f"public/{asteria.MANIFEST_FILE}": public_manifest,
    }
    descriptors = [_descriptor(path, files[path]) for path in asteria.ROOT_ARTIFACTS]
    files[ROOT_MANIFEST] = record_bytes(
        build(
            asteria.RootManifest,
            {
                "schema_version": "2.0.0",
                "benchmark_id": benchmark_id,
                "seed": seed,
                "visibility": "root",
                "public_input_digest": public_digest,
                "evaluator_public_input_digest": public_digest,
                "public_artifact_set_digest": public_set,
                "evaluator_artifact_set_digest": evaluator_set,
                "artifact_set_digest": path_bound_digest(
                    {str(d["path"]): str(d["sha256"]) for d in descriptors}
                ),
                "artifacts": descriptors,
            },
        )
    )
    return files


def enterprise_files(benchmark_id: str, seed: int, actions: int = 3) -> dict[str, bytes]:
    """The four files of an Enterprise candidate by root-relative path."""
    rng = random.Random(seed)
    namespace = uuid.UUID(enterprise.EVIDENCE_NAMESPACE)
    drafts: list[dict[str, JsonValue]] = []
    events: list[dict[str, JsonValue]] = []
    tick = 0
    for index in range(actions):
        tick += 10 + rng.randrange(10)
        action_id = f"action-{rng.getrandbits(40):010x}"
        tenant = _TENANTS[rng.randrange(len(_TENANTS))]
        resource = f"resource-{_ENTERPRISE_VERBS[index % 3]}-{rng.getrandbits(24):06x}"
        verb = _ENTERPRISE_VERBS[index % len(_ENTERPRISE_VERBS)]
        requirements: list[dict[str, str]] = []
        for kind in sorted(rng.sample(_ENTERPRISE_KINDS, 2)):
            handle = f"handle-{rng.getrandbits(96):024x}"
            other = f"handle-{rng.getrandbits(96):024x}"
            requirements.append({"kind": kind, "binding_handle": handle})
            for chosen in (handle, other):
                source = f"{benchmark_id}/{action_id}/{kind}/{chosen}"
                events.append(
                    {
                        "evidence_id": f"observation-{uuid.uuid5(namespace, source).hex}",
                        "action_id": action_id,
                        "tenant_id": tenant,
                        "resource_id": resource,
                        "action": verb,
                        "tick": tick,
                        "kind": kind,
                        "binding_handle": chosen,
                        "payload_digest": _hash_key(seed, f"payload:{source}"),
                    }
                )
        drafts.append(
            {
                "action_id": action_id,
                "tenant_id": tenant,
                "resource_id": resource,
                "action": verb,
                "tick": tick,
                "required_evidence": sorted(
                    requirements, key=lambda r: (r["kind"], r["binding_handle"])
                ),
            }
        )
    events.sort(key=lambda e: str(e["evidence_id"]))
    public = build(
        enterprise.EnterprisePublic,
        {
            "schema_version": "2.0.0",
            "actions": sorted(drafts, key=lambda a: (int(a["tick"]), str(a["action_id"]))),
            "evidence_events": [
                {**event, "sequence": sequence} for sequence, event in enumerate(events)
            ],
        },
    )
    public_bytes = record_bytes(public)
    public_digest = sha256_bytes(public_bytes)
    bindings = []
    for action in sorted(public.actions, key=lambda a: a.action_id):
        wanted = {(r.kind, r.binding_handle) for r in action.required_evidence}
        bindings.append(
            {
                "action_id": action.action_id,
                "tenant_id": action.tenant_id,
                "required_evidence": action.required_evidence,
                "required_observation_ids": sorted(
                    e.evidence_id
                    for e in public.events_of(action.action_id)
                    if (e.kind, e.binding_handle) in wanted
                ),
            }
        )
    truth_bytes = record_bytes(
        build(
            enterprise.EnterpriseTruth,
            {
                "schema_version": "2.0.0",
                "public_input_digest": public_digest,
                "bindings": bindings,
            },
        )
    )
    return seal_enterprise(public_bytes, truth_bytes, benchmark_id=benchmark_id, seed=seed)


def seal_enterprise(
    public_bytes: bytes, truth_bytes: bytes, *, benchmark_id: str, seed: int
) -> dict[str, bytes]:
    """The four files: the two payloads as given, manifest and ``SHA256SUMS`` derived."""
    manifest_bytes = record_bytes(
        build(
            enterprise.EnterpriseManifest,
            {
                "schema_version": "2.0.0",
                "benchmark_id": benchmark_id,
                "seed": seed,
                "public_input_digest": sha256_bytes(public_bytes),
                "checksum_algorithm": "sha256",
                "checksum_file": "SHA256SUMS",
                "checksum_excludes": ["SHA256SUMS"],
                "public_inventory": [_descriptor(enterprise.PUBLIC_PATH, public_bytes)],
                "evaluator_inventory": [_descriptor(enterprise.TRUTH_PATH, truth_bytes)],
            },
        )
    )
    files = {
        enterprise.TRUTH_PATH: truth_bytes,
        ROOT_MANIFEST: manifest_bytes,
        enterprise.PUBLIC_PATH: public_bytes,
    }
    files[enterprise.CHECKSUM_FILE] = "".join(
        f"{sha256_bytes(files[path])}  {path}\n" for path in sorted(files)
    ).encode("ascii")
    return files


def write_candidate(files: Mapping[str, bytes], root: Path) -> None:
    """The original layout: every file under one root."""
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def suite_yaml(suite_id: str, lineage: str, title: str) -> str:
    return (
        f"id: {suite_id}\n"
        "version: 2.0.0\n"
        "world: evidence-binding\n"
        f"title: {title}\n"
        "description: >-\n"
        "  Offline evidence completeness: for each public action, select exactly the\n"
        "  observations whose (evidence kind, binding handle) the action requires.\n"
        f"options: {{lineage: {lineage}}}\n"
    )


def write_suite(files: Mapping[str, bytes], suite_dir: Path, oracle_dir: Path, yaml: str) -> None:
    """A suite split in two: root and public files with ``suite.yaml``, evaluator files apart."""
    for rel, data in files.items():
        head, _, tail = rel.partition("/")
        target = oracle_dir / tail if head == EVALUATOR_DIR else suite_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (suite_dir / "suite.yaml").write_text(yaml, encoding="utf-8")


def write_builtin(data_root: Path) -> None:
    for suite_id, lineage, title, files in (
        (
            ASTERIA_SUITE,
            asteria.LINEAGE,
            "Evidence binding, Asteria C08 v2 lineage",
            asteria_files(ASTERIA_SUITE, SEED),
        ),
        (
            ENTERPRISE_SUITE,
            enterprise.LINEAGE,
            "Evidence binding, Enterprise C08 v2 lineage",
            enterprise_files(ENTERPRISE_SUITE, SEED),
        ),
    ):
        write_suite(
            files,
            data_root / "suites" / suite_id,
            data_root / "oracles" / suite_id,
            suite_yaml(suite_id, lineage, title),
        )


if __name__ == "__main__":
    from pytest_agentbench.sdk import data_root

    write_builtin(data_root())

"""Building an authority benchmark from its public world and the evaluator author's keys.

The evaluator author supplies only what public data cannot decide: one
canonical binding and one case label per action event. Every other evaluator
record (authority truth, its four projections, evidence epochs) is derived
from the fully replayed public stream by :func:`.engine.derive_truth`, so a
shipped answer key can always be recomputed and compared
(:func:`derive_differences`).

Trust boundary. Before deriving anything the builder replays the whole public
stream, as the original's ``build_agentic_benchmark`` does, and refuses, each
with its own code, a world that is malformed rather than merely denied:

* ``extra_audit_event`` - a second audit event (a world to build has exactly
  one, the one its scenario names; ``invalid_audit_event`` otherwise);
* ``introduced_outside_validity`` - a delegation granted, or a credential
  issued, at a time outside its own validity;
* ``child_not_attenuated`` - a child grant that does not narrow its parent
  (the parent may delegate; same origin and policy version; members, purpose
  and validity within the parent's);
* ``revocation_of_inactive_delegation`` - a revocation of a delegation already
  revoked, itself or through a parent;
* ``credential_not_yet_issued`` - an action presents a credential issued only
  after it;
* ``unknown_resource_action`` - an action names a resource that does not
  exist, or an action its resource does not offer;
* ``evidence_unavailable_at_action`` - an action cites evidence not retained
  just before it (unknown, or recorded later, such as a runtime spawned after);
* ``unknown_reference`` - a binding names a principal, agent or runtime that
  does not exist;
* ``runtime_not_yet_spawned`` - the bound runtime is spawned only after the
  action;
* ``false_runtime_agent_join`` - the bound runtime runs another logical agent
  (an Orion runtime bound to an Asteria agent, or a same-tenant runtime of
  another agent);
* ``cross_tenant_origin`` - the bound originating principal belongs to another
  organisation than the bound logical agent;
* ``invalid_runtime_ownership`` - the bound runtime's principal is not the
  bound runtime principal, or the runtime's owner is not on that principal's
  ownership chain;
* ``credential_subject_mismatch`` - the bound credential subject is not the
  subject of the credential the attempt presented;
* ``fabricated_owner_chain`` - the bound accountable owner chain is not the one
  derived from the principal graph (it is never repaired);
* ``unrelated_attributed_actor`` - the bound actor is on neither the runtime
  principal's nor the credential subject's ownership path;
* grant provenance (``unrelated_root_delegator``, ``unrelated_child_delegator``
  and the other replay codes) and evaluator keys (``duplicate_evaluator_key``,
  ``missing_evaluator_key``, ``unexpected_evaluator_key``) are refused by the
  replay and the engine.

A real credential presented from a runtime it does not permit, a truthful
external runtime reaching another tenant's resource, or an incorrect public
claim is not malformed: it stays scoreable with failure truth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.sdk import BUILT_ON_FIRST_USE, AgentbenchError, Record, tree_files
from pytest_agentbench.worlds.authority.bundle import (
    BINDINGS,
    CHECKSUMS,
    DECISIONS,
    EPOCHS,
    EVALUATOR_FILES,
    MANIFEST,
    PROVENANCE,
    SIDE_EFFECTS,
    TRUTH,
    build_evaluator_bundle,
    build_public_bundle,
    public_files,
    write_evaluator,
    write_public,
)
from pytest_agentbench.worlds.authority.engine import (
    accountable_owner_chain,
    attenuated,
    audit_events,
    derive_truth,
    on_identity_paths,
)
from pytest_agentbench.worlds.authority.models import (
    ActionAttempted,
    Attempt,
    AuditPerformed,
    AuthorityTruth,
    BindingsFile,
    CanonicalBinding,
    CaseLabel,
    Credential,
    CredentialIssued,
    Delegation,
    DelegationGranted,
    DelegationRevoked,
    EvaluatorBundle,
    Event,
    EvidenceEpoch,
    ExpectedDecision,
    ExpectedProvenance,
    ExpectedSideEffect,
    PublicBundle,
    Scenario,
    ToolSchemaFile,
    WorldSnapshot,
    format_utc,
    record_json,
)
from pytest_agentbench.worlds.authority.replay import (
    EVENTS_FILE,
    Replayer,
    WorldIndex,
    WorldState,
)

PUBLIC_KEEP = ("suite.yaml",)
"""Hand-written files that live beside the public artifacts but are not part of them."""
EVALUATOR_KEEP = ("controls.yaml",)


class WorldSource(Record):
    """What an author writes: the public world plus one binding and label per action event."""

    model_config = BUILT_ON_FIRST_USE

    snapshot: WorldSnapshot
    events: tuple[Event, ...]
    scenarios: dict[str, Scenario]
    tool_schemas: dict[str, ToolSchemaFile]
    bindings: tuple[CanonicalBinding, ...]
    labels: tuple[CaseLabel, ...]


@dataclass(frozen=True)
class EvaluatorRecords:
    """Everything the evaluator tree holds except its checksums, in action-event order."""

    bindings: BindingsFile
    truth: tuple[AuthorityTruth, ...]
    cases: tuple[CaseLabel, ...]
    decisions: tuple[ExpectedDecision, ...]
    side_effects: tuple[ExpectedSideEffect, ...]
    provenance: tuple[ExpectedProvenance, ...]
    epochs: tuple[EvidenceEpoch, ...]


# ---------------------------------------------------------------------------
# Building


def build_benchmark(source: WorldSource) -> tuple[PublicBundle, EvaluatorBundle]:
    """The public and evaluator bundles of ``source``; refuses a malformed world."""
    public = build_public_bundle(
        source.snapshot, source.events, source.scenarios, source.tool_schemas
    )
    records = derive_evaluator_records(public, source.bindings, source.labels)
    evaluator = build_evaluator_bundle(
        bindings=records.bindings,
        truth=records.truth,
        cases=records.cases,
        decisions=records.decisions,
        side_effects=records.side_effects,
        provenance=records.provenance,
        epochs=records.epochs,
        public_digest=public.manifest.artifact_set_digest,
        schema_version=source.snapshot.organisation.schema_version,
    )
    return public, evaluator


def derive_evaluator_records(
    public: PublicBundle,
    bindings: Sequence[CanonicalBinding],
    labels: Sequence[CaseLabel],
) -> EvaluatorRecords:
    """Replay the whole public stream, check the bindings, then derive every evaluator record."""
    attempts = {
        event.id: event.payload.attempt
        for event in public.events
        if isinstance(event.payload, ActionAttempted)
    }
    check_build_stream(public, bindings)
    truth = tuple(derive_truth(public, bindings, labels))
    order = {event_id: position for position, event_id in enumerate(attempts)}
    index_of = {event.id: event.event_index for event in public.events}
    audit_of = audit_events(public.events, public.scenarios)
    return EvaluatorRecords(
        bindings=BindingsFile(
            schema_version=public.snapshot.organisation.schema_version,
            bindings=tuple(sorted(bindings, key=lambda b: order[b.action_event_id])),
        ),
        truth=truth,
        cases=tuple(sorted(labels, key=lambda label: order[label.action_event_id])),
        decisions=tuple(ExpectedDecision.of(row) for row in truth),
        side_effects=tuple(ExpectedSideEffect.of(row) for row in truth),
        provenance=tuple(ExpectedProvenance.of(row) for row in truth),
        epochs=tuple(
            EvidenceEpoch.of(
                row,
                action_event_index=index_of[row.action_event_id],
                audit_event_id=audit_of[row.action_event_id].id,
            )
            for row in truth
        ),
    )


# ---------------------------------------------------------------------------
# The binding trust boundary


def _refuse(code: str, message: str, field: str) -> AgentbenchError:
    return AgentbenchError(code, message, file=BINDINGS, field=field)


def _refuse_event(code: str, message: str, position: int, field: str) -> AgentbenchError:
    return AgentbenchError(code, message, file=EVENTS_FILE, field=f"[{position}].{field}")


def check_build_stream(public: PublicBundle, bindings: Sequence[CanonicalBinding]) -> None:
    """Replay the whole public stream as the builder must, refusing what it cannot build.

    Beyond what every replay refuses, a world to build must hold exactly one audit
    event, the one its scenarios name; each action must present a credential
    already issued, name a resource that offers the action, and cite only
    evidence retained before it; and each action's binding is checked against
    the state just before the action (:func:`check_binding`).
    """
    audits = [
        position
        for position, event in enumerate(public.events)
        if isinstance(event.payload, AuditPerformed)
    ]
    if len(audits) > 1:
        event = public.events[audits[1]]
        raise _refuse_event(
            "extra_audit_event",
            f"event {event.id!r} is a second audit event: a world to build has exactly one, "
            "the one its scenario names",
            audits[1],
            "payload",
        )
    for name, scenario in sorted(public.scenarios.items()):
        if audits and scenario.audit_event_id != public.events[audits[0]].id:
            raise AgentbenchError(
                "invalid_audit_event",
                f"{scenario.audit_event_id!r} is not the stream's audit event "
                f"{public.events[audits[0]].id!r}",
                file=f"scenarios/{name}.json",
                field="audit_event_id",
            )
    binding_of = {binding.action_event_id: position for position, binding in enumerate(bindings)}
    replayer = Replayer(public.snapshot, public.events)
    for position, event in enumerate(public.events):
        payload = event.payload
        if isinstance(payload, ActionAttempted):
            _check_action(replayer.state, payload.attempt, position)
            # A binding for a non-action event is refused by derive_truth's key check.
            if event.id in binding_of:
                at = binding_of[event.id]
                check_binding(
                    replayer.state, payload.attempt, bindings[at], field=f"bindings[{at}]"
                )
        elif isinstance(payload, DelegationGranted | CredentialIssued | DelegationRevoked):
            _check_introduction(replayer.state, event, position)
        replayer.step()


def _check_introduction(state: WorldState, event: Event, position: int) -> None:
    """A grant or issue inside its own validity, a child grant attenuated, a revocation of
    a delegation still active: the original's replay rules a build applies."""
    payload = event.payload
    if isinstance(payload, DelegationRevoked):
        if state.is_revoked(payload.delegation_id):
            raise _refuse_event(
                "revocation_of_inactive_delegation",
                f"delegation {payload.delegation_id!r} is already revoked (itself or a parent)",
                position,
                "payload.delegation_id",
            )
    elif isinstance(payload, CredentialIssued):
        _check_validity(event, payload.credential, "credential", "issued", position)
    elif isinstance(payload, DelegationGranted):
        delegation = payload.delegation
        _check_validity(event, delegation, "delegation", "granted", position)
        parent_id = delegation.parent_delegation_id
        parent = None if parent_id is None else state.delegations.get(parent_id)
        # An ungranted or revoked parent is the replay's own refusal, at the step.
        if parent is not None and not attenuated(delegation, parent):
            raise _refuse_event(
                "child_not_attenuated",
                f"delegation {delegation.id!r} does not narrow its parent {parent.id!r} "
                "(may_delegate, origin, policy version, members, purpose, validity)",
                position,
                "payload.delegation",
            )


def _check_validity(
    event: Event, record: Delegation | Credential, kind: str, verb: str, position: int
) -> None:
    if not record.valid_from <= event.occurred_at < record.expires_at:
        raise _refuse_event(
            "introduced_outside_validity",
            f"{kind} {record.id!r} is {verb} at {format_utc(event.occurred_at)}, outside its "
            f"validity [{format_utc(record.valid_from)}, {format_utc(record.expires_at)})",
            position,
            f"payload.{kind}",
        )


def _check_action(state: WorldState, attempt: Attempt, position: int) -> None:
    """What an action needs of the world just before it (the original's replay rules)."""
    if attempt.presented_credential_id not in state.credentials:
        raise _refuse_event(
            "credential_not_yet_issued",
            f"credential {attempt.presented_credential_id!r} is presented before it is issued",
            position,
            "payload.attempt.presented_credential_id",
        )
    resource = state.index.resources.get(attempt.resource_id)
    if resource is None:
        raise _refuse_event(
            "unknown_resource_action",
            f"resource {attempt.resource_id!r} does not exist",
            position,
            "payload.attempt.resource_id",
        )
    if attempt.action not in resource.actions:
        raise _refuse_event(
            "unknown_resource_action",
            f"resource {resource.id!r} does not offer {attempt.action!r} "
            f"(it offers {', '.join(resource.actions)})",
            position,
            "payload.attempt.action",
        )
    unavailable = sorted(set(attempt.evidence_refs) - state.retained_evidence)
    if unavailable:
        raise _refuse_event(
            "evidence_unavailable_at_action",
            f"cites {', '.join(unavailable)}, not retained before the action",
            position,
            "payload.attempt.evidence_refs",
        )


def check_binding(
    state: WorldState, attempt: Attempt, binding: CanonicalBinding, *, field: str
) -> None:
    """Refuse a binding that joins identities the public world does not relate.

    ``state`` is the world just before the action: its runtime must be spawned
    and its presented credential issued by then.
    """
    index = state.index
    _check_references(index, binding, field)
    if binding.runtime_id not in state.runtimes:
        raise _refuse(
            "runtime_not_yet_spawned",
            f"runtime {binding.runtime_id!r} is not spawned before the action",
            f"{field}.runtime_id",
        )
    runtime = state.runtimes[binding.runtime_id]
    if runtime.logical_agent_id != binding.logical_agent_id:
        raise _refuse(
            "false_runtime_agent_join",
            f"runtime {runtime.id!r} runs logical agent {runtime.logical_agent_id!r}, "
            f"not {binding.logical_agent_id!r}",
            f"{field}.runtime_id",
        )
    origin = index.principals[binding.originating_principal_id]
    agent = index.agents[binding.logical_agent_id]
    if origin.organisation_id != agent.organisation_id:
        raise _refuse(
            "cross_tenant_origin",
            f"originating principal {origin.id!r} of {origin.organisation_id!r} cannot "
            f"originate for logical agent {agent.id!r} of {agent.organisation_id!r}",
            f"{field}.originating_principal_id",
        )
    if runtime.runtime_principal_id != binding.runtime_principal_id:
        raise _refuse(
            "invalid_runtime_ownership",
            f"runtime {runtime.id!r} runs as {runtime.runtime_principal_id!r}, "
            f"not {binding.runtime_principal_id!r}",
            f"{field}.runtime_principal_id",
        )
    if runtime.owner_principal_id not in index.ownership_chain(runtime.runtime_principal_id):
        raise _refuse(
            "invalid_runtime_ownership",
            f"runtime {runtime.id!r} is owned by {runtime.owner_principal_id!r}, which is not "
            f"on the ownership chain of its principal {runtime.runtime_principal_id!r}",
            f"{field}.runtime_id",
        )
    credential = state.credentials[attempt.presented_credential_id]
    if binding.credential_subject_id != credential.subject_principal_id:
        raise _refuse(
            "credential_subject_mismatch",
            f"the presented credential {credential.id!r} has subject "
            f"{credential.subject_principal_id!r}, not {binding.credential_subject_id!r}",
            f"{field}.credential_subject_id",
        )
    derived = accountable_owner_chain(index, binding.logical_agent_id)
    if binding.accountable_owner_chain != derived:
        raise _refuse(
            "fabricated_owner_chain",
            f"chain {list(binding.accountable_owner_chain)} differs from the principal graph's "
            f"{list(derived)}",
            f"{field}.accountable_owner_chain",
        )
    if not on_identity_paths(
        index,
        binding.attributed_actor_id,
        runtime_principal_id=binding.runtime_principal_id,
        credential_subject_id=binding.credential_subject_id,
    ):
        raise _refuse(
            "unrelated_attributed_actor",
            f"{binding.attributed_actor_id!r} is on neither the runtime principal's nor the "
            "credential subject's ownership path",
            f"{field}.attributed_actor_id",
        )


def _check_references(index: WorldIndex, binding: CanonicalBinding, field: str) -> None:
    principal_fields = {
        "originating_principal_id": binding.originating_principal_id,
        "runtime_principal_id": binding.runtime_principal_id,
        "credential_subject_id": binding.credential_subject_id,
        "attributed_actor_id": binding.attributed_actor_id,
    }
    for name, principal_id in principal_fields.items():
        if principal_id not in index.principals:
            raise _refuse(
                "unknown_reference", f"principal {principal_id!r} does not exist", f"{field}.{name}"
            )
    if binding.logical_agent_id not in index.agents:
        raise _refuse(
            "unknown_reference",
            f"logical agent {binding.logical_agent_id!r} does not exist",
            f"{field}.logical_agent_id",
        )
    if binding.runtime_id not in index.listed_runtimes:
        raise _refuse(
            "unknown_reference",
            f"runtime {binding.runtime_id!r} does not exist",
            f"{field}.runtime_id",
        )


# ---------------------------------------------------------------------------
# Writing


def write_bundle(
    public_root: Path, evaluator_root: Path, public: PublicBundle, evaluator: EvaluatorBundle
) -> None:
    """Write both trees; refuses to write over files that are not part of the bundle.

    A stale file left from an earlier layout would make the written tree fail
    verification on load, so it is named instead of silently kept or deleted.
    """
    public_names = {
        *public_files(public.snapshot, public.events, public.scenarios, public.tool_schemas),
        MANIFEST,
    }
    _refuse_stale(public_root, public_names, PUBLIC_KEEP)
    _refuse_stale(evaluator_root, {*EVALUATOR_FILES, CHECKSUMS}, EVALUATOR_KEEP)
    write_public(public_root, public)
    write_evaluator(evaluator_root, evaluator)


def _refuse_stale(root: Path, expected: set[str], keep: Sequence[str]) -> None:
    if not root.is_dir():
        return
    for path in tree_files(root, exclude=keep):
        if path not in expected:
            raise AgentbenchError(
                "stale_file",
                "not part of the bundle being written; remove it first",
                file=root / path,
            )


# ---------------------------------------------------------------------------
# Recomputing shipped truth


def derive_differences(public: PublicBundle, evaluator: EvaluatorBundle) -> list[str]:
    """How the shipped evaluator records differ from those recomputed from public data.

    Truth is recomputed from the public bundle plus the shipped bindings and
    case labels; every evaluator file derived from it is compared row by row
    and field by field. An empty list means the answer key is reproducible.
    Shipped bindings that break the trust boundary are refused, as when building.
    """
    derived = derive_evaluator_records(public, evaluator.bindings.bindings, evaluator.cases)
    shipped: Mapping[str, Sequence[Record]] = {
        TRUTH: evaluator.truth,
        DECISIONS: evaluator.expected_decisions,
        SIDE_EFFECTS: evaluator.expected_side_effects,
        PROVENANCE: evaluator.expected_provenance,
        EPOCHS: evaluator.evidence_epochs,
    }
    recomputed: Mapping[str, Sequence[Record]] = {
        TRUTH: derived.truth,
        DECISIONS: derived.decisions,
        SIDE_EFFECTS: derived.side_effects,
        PROVENANCE: derived.provenance,
        EPOCHS: derived.epochs,
    }
    differences: list[str] = []
    for file, rows in shipped.items():
        differences.extend(_row_differences(file, rows, recomputed[file]))
    return differences


def _row_differences(file: str, shipped: Sequence[Record], derived: Sequence[Record]) -> list[str]:
    shipped_rows = [record_json(row) for row in shipped]
    shipped_ids = [str(row["action_event_id"]) for row in shipped_rows]
    by_event = dict(zip(shipped_ids, shipped_rows, strict=True))
    found: list[str] = []
    for row in derived:
        expected = record_json(row)
        event_id = str(expected["action_event_id"])
        actual = by_event.get(event_id)
        if actual is None:
            found.append(f"{file}: {event_id}: no shipped row")
            continue
        found.extend(
            f"{file}: {event_id}: {name} shipped {actual.get(name)!r}, derived {value!r}"
            for name, value in expected.items()
            if actual.get(name) != value
        )
    derived_ids = [str(record_json(row)["action_event_id"]) for row in derived]
    for event_id in dict.fromkeys(shipped_ids):
        if event_id not in derived_ids:
            found.append(f"{file}: {event_id}: shipped row is not an action event of the stream")
        elif shipped_ids.count(event_id) > 1:
            found.append(f"{file}: {event_id}: shipped {shipped_ids.count(event_id)} rows")
    if [key for key in dict.fromkeys(shipped_ids) if key in derived_ids] != [
        key for key in derived_ids if key in by_event
    ]:
        found.append(f"{file}: rows are not in action-event order")
    return found

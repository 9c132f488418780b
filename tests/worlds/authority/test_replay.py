"""Replay: stream validation, cursors, effect timing, cascading revocation, provenance.

``small_world`` builds the miniature world the authority unit tests share; it is
imported by the engine, agents and bundle tests.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.authority.models import (
    ActionAttempted,
    Attempt,
    AuditPerformed,
    Capability,
    Credential,
    CredentialIssued,
    Delegation,
    DelegationGranted,
    DelegationRevoked,
    Event,
    EventPayload,
    EvidenceDiscarded,
    LogicalAgent,
    Organisation,
    OrganisationFile,
    Policy,
    Principal,
    PublicBundle,
    PublicManifest,
    Resource,
    Runtime,
    RuntimeSpawned,
    Scenario,
    Tool,
    ToolSchemaFile,
    WorldSnapshot,
)
from pytest_agentbench.worlds.authority.replay import Replayer, materialize

START = datetime(2026, 1, 15, 9, 0, tzinfo=UTC)
WINDOW = {
    "valid_from": datetime(2026, 1, 1, tzinfo=UTC),
    "expires_at": datetime(2026, 12, 31, tzinfo=UTC),
}


def capability(
    resources: tuple[str, ...] = ("res-doc",),
    actions: tuple[str, ...] = ("compare", "read"),
    scopes: tuple[str, ...] = ("s1", "s2"),
    *,
    may_delegate: bool = True,
) -> Capability:
    return Capability(
        resource_ids=resources,
        actions=actions,
        scopes=scopes,
        purpose="procure",
        may_delegate=may_delegate,
    )


def delegation(
    delegation_id: str,
    *,
    origin: str = "p-manager",
    delegator: str = "p-manager",
    grantee: str = "agent-main",
    parent: str | None = None,
    cap: Capability | None = None,
    version: str = "v1",
    **window: datetime,
) -> Delegation:
    return Delegation(
        id=delegation_id,
        originating_principal_id=origin,
        delegator_principal_id=delegator,
        grantee_agent_id=grantee,
        parent_delegation_id=parent,
        capability=cap or capability(),
        policy_version=version,
        **{**WINDOW, **window},
    )


def attempt(**fields: Any) -> Attempt:
    values: dict[str, Any] = {
        "originating_principal_claim": "p-manager",
        "logical_agent_claim": "agent-main",
        "runtime_principal_claim": "p-rt-main",
        "presented_credential_id": "cred-main",
        "attributed_actor_claim": "p-service",
        "resource_id": "res-doc",
        "action": "read",
        "requested_scope": ("s1",),
        "purpose": "procure",
        "policy_version": "v1",
    }
    values.update(fields)
    return Attempt(**values)


def principal(pid: str, kind: str, owner: str | None, org: str = "org-a") -> Principal:
    return Principal.model_validate(
        {
            "id": pid,
            "kind": kind,
            "display_name": pid,
            "organisation_id": org,
            "owner_principal_id": owner,
        }
    )


def runtime(rid: str, agent: str, rp: str, owner: str, org: str = "org-a") -> Runtime:
    return Runtime(
        id=rid,
        logical_agent_id=agent,
        runtime_principal_id=rp,
        owner_principal_id=owner,
        organisation_id=org,
    )


def credential(cid: str, subject: str, allowed: tuple[str, ...], **window: datetime) -> Credential:
    return Credential(
        id=cid,
        issuer_principal_id="p-org-a",
        subject_principal_id=subject,
        allowed_runtime_principal_ids=allowed,
        **{**WINDOW, **window},
    )


def base_snapshot(**overrides: Any) -> WorldSnapshot:
    values: dict[str, Any] = {
        "organisation": OrganisationFile(
            schema_version="1.0.0",
            world_id="mini",
            world_version="1.0.0",
            seed=7,
            organisations=(
                Organisation(id="org-a", display_name="A", tenant_id="tenant-a"),
                Organisation(id="org-x", display_name="X", tenant_id="tenant-x"),
            ),
            policies=(Policy(id="policy-1", version="v1"), Policy(id="policy-2", version="v2")),
            initial_evidence_refs=("evidence:policy:v1",),
        ),
        "principals": (
            principal("p-org-a", "organisation", None),
            principal("p-manager", "human", "p-org-a"),
            principal("p-counsel", "human", "p-org-a"),
            principal("p-service", "service_account", "p-manager"),
            principal("p-rt-main", "workload", "p-service"),
            principal("p-child-service", "service_account", "p-manager"),
            principal("p-rt-child", "workload", "p-child-service"),
            principal("p-org-x", "organisation", None, "org-x"),
            principal("p-rt-ext", "workload", "p-org-x", "org-x"),
        ),
        "agents": (
            LogicalAgent(
                id="agent-main",
                display_name="main",
                organisation_id="org-a",
                owner_principal_id="p-manager",
            ),
            LogicalAgent(
                id="agent-child",
                display_name="child",
                organisation_id="org-a",
                owner_principal_id="p-manager",
                parent_agent_id="agent-main",
            ),
            LogicalAgent(
                id="agent-ext",
                display_name="ext",
                organisation_id="org-x",
                owner_principal_id="p-org-x",
            ),
        ),
        "runtimes": (
            runtime("rt-main", "agent-main", "p-rt-main", "p-service"),
            runtime("rt-child", "agent-child", "p-rt-child", "p-child-service"),
            runtime("rt-ext", "agent-ext", "p-rt-ext", "p-org-x", "org-x"),
        ),
        "resources": (
            Resource(
                id="res-doc",
                display_name="doc",
                organisation_id="org-a",
                owner_principal_id="p-manager",
                actions=("compare", "create_delegation", "read"),
            ),
            Resource(
                id="res-other",
                display_name="other",
                organisation_id="org-a",
                owner_principal_id="p-counsel",
                actions=("read",),
            ),
        ),
        "credentials": (
            credential("cred-main", "p-rt-main", ("p-rt-main",)),
            credential("cred-child", "p-rt-child", ("p-rt-child",)),
            credential("cred-ext", "p-rt-ext", ("p-rt-ext",)),
        ),
        "delegations": (
            delegation("d-root"),
            delegation(
                "d-child",
                grantee="agent-child",
                parent="d-root",
                cap=capability(actions=("compare",), scopes=("s1",), may_delegate=False),
            ),
            delegation(
                "d-late",
                origin="p-counsel",
                delegator="p-counsel",
                cap=capability(resources=("res-other",), actions=("read",), scopes=("s1",)),
            ),
        ),
    }
    values.update(overrides)
    return WorldSnapshot(**values)


def stream(*payloads: EventPayload | tuple[EventPayload, tuple[str, ...]]) -> tuple[Event, ...]:
    events = []
    for position, item in enumerate(payloads):
        payload, refs = item if isinstance(item, tuple) else (item, ())
        events.append(
            Event(
                schema_version="1.0.0",
                id=f"evt-{position + 1:03d}",
                event_index=position + 1,
                occurred_at=START + timedelta(minutes=position),
                evidence_refs=refs,
                payload=payload,
            )
        )
    return tuple(events)


def base_events(snapshot: WorldSnapshot | None = None) -> tuple[Event, ...]:
    """1-6 setup, 7 child compare (allowed), 8 counsel read (before grant),
    9 revoke d-root, 10 grant d-late, 11 audit."""
    snap = snapshot or base_snapshot()
    runtimes = {item.id: item for item in snap.runtimes}
    credentials = {item.id: item for item in snap.credentials}
    delegations = {item.id: item for item in snap.delegations}
    return stream(
        RuntimeSpawned(runtime=runtimes["rt-main"]),
        RuntimeSpawned(runtime=runtimes["rt-child"]),
        (CredentialIssued(credential=credentials["cred-main"]), ("evidence:credential:cred-main",)),
        CredentialIssued(credential=credentials["cred-child"]),
        (DelegationGranted(delegation=delegations["d-root"]), ("evidence:delegation:d-root",)),
        DelegationGranted(delegation=delegations["d-child"]),
        ActionAttempted(
            attempt=attempt(
                logical_agent_claim="agent-child",
                runtime_principal_claim="p-rt-child",
                presented_credential_id="cred-child",
                attributed_actor_claim="p-child-service",
                action="compare",
            )
        ),
        ActionAttempted(
            attempt=attempt(originating_principal_claim="p-counsel", resource_id="res-other")
        ),
        DelegationRevoked(delegation_id="d-root"),
        DelegationGranted(delegation=delegations["d-late"]),
        AuditPerformed(audit_id="audit-1"),
    )


def small_world() -> PublicBundle:
    snapshot = base_snapshot()
    events = base_events(snapshot)
    return PublicBundle(
        snapshot=snapshot,
        events=events,
        scenarios={
            "mini": Scenario(
                schema_version="1.0.0",
                id="scenario-mini",
                title="Mini",
                description="A miniature world.",
                action_event_ids=("evt-007", "evt-008"),
                audit_event_id="evt-011",
                tool_schema_paths=("tool_schemas/mini-tools.json",),
            )
        },
        tool_schemas={
            "mini-tools": ToolSchemaFile(
                schema_version="1.0.0",
                tools=(
                    Tool(
                        name="read_doc",
                        resource_id="res-doc",
                        action="read",
                        input_schema={"type": "object"},
                    ),
                ),
            )
        },
        manifest=PublicManifest(
            artifact_set_digest="0" * 64,
            artifacts={},
            schema_version="1.0.0",
            seed=7,
            world_id="mini",
            world_version="1.0.0",
        ),
    )


def refusal(code: str, snapshot: WorldSnapshot, events: tuple[Event, ...], **cursor: Any) -> str:
    with pytest.raises(AgentbenchError) as caught:
        materialize(snapshot, events, **cursor)
    assert caught.value.code == code, caught.value.render()
    return caught.value.render()


# ---------------------------------------------------------------------------


def test_effects_take_place_at_their_own_index() -> None:
    snapshot = base_snapshot()
    events = base_events(snapshot)
    initial = materialize(snapshot, events, at_event_index=0)
    assert set(initial.runtimes) == {"rt-ext"}
    assert set(initial.credentials) == {"cred-ext"}
    assert initial.delegations == {}
    assert initial.retained_evidence == {"evidence:policy:v1"}
    at_four = materialize(snapshot, events, at_event_index=4)
    assert set(at_four.runtimes) == {"rt-ext", "rt-main", "rt-child"}
    assert set(at_four.credentials) == {"cred-ext", "cred-main", "cred-child"}
    assert "evidence:credential:cred-main" in at_four.retained_evidence
    at_five = materialize(snapshot, events, at_event_index=5)
    assert set(at_five.delegations) == {"d-root"}
    assert at_five.granted_at == {"d-root": 5}


def test_revocation_cascades_to_descendants() -> None:
    snapshot = base_snapshot()
    events = base_events(snapshot)
    assert materialize(snapshot, events, at_event_index=8).revoked_at == {}
    after = materialize(snapshot, events, at_event_index=9)
    assert after.revoked_at == {"d-root": 9, "d-child": 9}


def test_full_stream_is_the_default_cursor() -> None:
    snapshot = base_snapshot()
    events = base_events(snapshot)
    full = materialize(snapshot, events)
    assert full.event_index == 11
    assert full == materialize(snapshot, events, at_event_index=11)


def test_time_cursor_includes_events_at_that_instant() -> None:
    snapshot = base_snapshot()
    events = base_events(snapshot)
    at = materialize(snapshot, events, at_time=START + timedelta(minutes=4, seconds=30))
    assert at.event_index == 5
    before = materialize(snapshot, events, at_time=START - timedelta(seconds=1))
    assert before.event_index == 0


@pytest.mark.parametrize(
    ("cursor", "code"),
    [
        ({"at_event_index": -1}, "invalid_cursor"),
        ({"at_event_index": 12}, "invalid_cursor"),
        ({"at_time": datetime(2026, 1, 15, 9, 0)}, "invalid_cursor"),
        ({"at_event_index": 1, "at_time": START}, "ambiguous_cursor"),
    ],
)
def test_invalid_cursors_are_refused(cursor: dict[str, Any], code: str) -> None:
    snapshot = base_snapshot()
    refusal(code, snapshot, base_events(snapshot), **cursor)


def test_invalid_suffix_is_refused_even_for_an_early_cursor() -> None:
    snapshot = base_snapshot()
    events = base_events(snapshot)
    broken = (*events[:-1], events[-1].model_copy(update={"occurred_at": START}))
    refusal("non_increasing_timestamp", snapshot, broken, at_event_index=1)


def test_stream_structure_refusals() -> None:
    snapshot = base_snapshot()
    events = base_events(snapshot)
    gap = (*events[:3], events[3].model_copy(update={"event_index": 9}), *events[4:])
    refusal("non_contiguous_event_index", snapshot, gap)
    dup = (*events[:3], events[3].model_copy(update={"id": "evt-001"}), *events[4:])
    refusal("duplicate_event_id", snapshot, dup)
    unknown = stream(DelegationRevoked(delegation_id="d-nope"))
    refusal("unknown_reference", snapshot, unknown)
    early = stream(
        DelegationRevoked(delegation_id="d-late"),
        DelegationGranted(delegation=snapshot.delegations[2]),
    )
    refusal("revocation_before_grant", snapshot, early)
    discard = stream(EvidenceDiscarded(evidence_refs=("evidence:delegation:d-root",)))
    refusal("evidence_not_retained", snapshot, discard)


def test_introduced_records_must_match_the_public_files() -> None:
    snapshot = base_snapshot()
    stranger = runtime("rt-stranger", "agent-main", "p-rt-main", "p-service")
    refusal("unlisted_record", snapshot, stream(RuntimeSpawned(runtime=stranger)))
    changed = runtime("rt-main", "agent-main", "p-rt-main", "p-manager")
    refusal("record_mismatch", snapshot, stream(RuntimeSpawned(runtime=changed)))
    twice = snapshot.runtimes[0]
    refusal(
        "duplicate_introduction",
        snapshot,
        stream(RuntimeSpawned(runtime=twice), RuntimeSpawned(runtime=twice)),
    )


def test_snapshot_refusals() -> None:
    snapshot = base_snapshot()
    dup = base_snapshot(principals=(*snapshot.principals, snapshot.principals[0]))
    assert "principals.jsonl" in refusal("duplicate_id", dup, ())
    cycle = base_snapshot(
        principals=(
            principal("p-a", "human", "p-b"),
            principal("p-b", "human", "p-a"),
            *snapshot.principals,
        )
    )
    refusal("ownership_cycle", cycle, ())
    dangling = base_snapshot(principals=(principal("p-a", "human", "p-ghost"),))
    message = refusal("unknown_reference", dangling, ())
    assert "owner_principal_id" in message
    crossed = base_snapshot(
        runtimes=(
            *snapshot.runtimes,
            runtime("rt-bad", "agent-main", "p-rt-ext", "p-org-x", "org-x"),
        )
    )
    refusal("runtime_organisation_mismatch", crossed, ())
    unknown_version = base_snapshot(delegations=(delegation("d-root", version="v9"),))
    refusal("unknown_policy_version", unknown_version, ())


def test_evidence_discards_take_effect_at_their_index() -> None:
    snapshot = base_snapshot()
    events = stream(
        (AuditPerformed(audit_id="a"), ("evidence:runtime:rt-ext",)),
        EvidenceDiscarded(evidence_refs=("evidence:runtime:rt-ext",)),
    )
    assert (
        "evidence:runtime:rt-ext"
        in materialize(snapshot, events, at_event_index=1).retained_evidence
    )
    final = materialize(snapshot, events)
    assert final.retained_evidence == {"evidence:policy:v1"}
    assert final.discarded_evidence == {"evidence:runtime:rt-ext"}


# --- provenance ---------------------------------------------------------------


def grant_world(*extra: Delegation) -> tuple[WorldSnapshot, tuple[Event, ...]]:
    """The base snapshot with ``extra`` listed and granted (in order) after the base stream."""
    snapshot = base_snapshot()
    snapshot = base_snapshot(delegations=(*snapshot.delegations, *extra))
    events = base_events(snapshot)[:6]
    return snapshot, stream(
        *(event.payload for event in events), *(DelegationGranted(delegation=d) for d in extra)
    )


def test_root_delegator_must_be_origin_or_resource_owner_chain() -> None:
    owner_chain = delegation("d-owner", origin="p-counsel", delegator="p-org-a")
    materialize(*grant_world(owner_chain))
    unrelated = delegation("d-bad", origin="p-counsel", delegator="p-service")
    refusal("unrelated_root_delegator", *grant_world(unrelated))
    # The delegator must be on EVERY delegated resource owner's chain.
    both = capability(resources=("res-doc", "res-other"), actions=("read",))
    partial = delegation("d-partial", origin="p-counsel", delegator="p-manager", cap=both)
    refusal("unrelated_root_delegator", *grant_world(partial))
    common = delegation("d-common", origin="p-counsel", delegator="p-org-a", cap=both)
    assert "d-common" in materialize(*grant_world(common)).delegations


def test_delegation_must_stay_in_one_organisation() -> None:
    crossed = delegation("d-x", grantee="agent-ext")
    refusal("cross_organisation_delegation", *grant_world(crossed))


def test_a_principal_without_an_organisation_may_not_originate_a_delegation() -> None:
    # As the original: origin and delegator must name the grantee's organisation.
    loose = principal("p-loose", "human", "p-org-a").model_copy(update={"organisation_id": None})
    snapshot = base_snapshot(principals=(*base_snapshot().principals, loose))
    grant = delegation("d-loose", origin="p-loose", delegator="p-loose")
    snapshot = base_snapshot(
        principals=snapshot.principals, delegations=(*snapshot.delegations, grant)
    )
    events = stream(DelegationGranted(delegation=grant))
    assert "p-loose' (no organisation)" in refusal(
        "cross_organisation_delegation", snapshot, events
    )


@pytest.mark.parametrize(
    ("child", "code"),
    [
        (delegation("d-c", grantee="agent-child", parent="d-late"), "origin_mismatch"),
        (
            delegation("d-c", grantee="agent-main", parent="d-root"),
            "child_agent_not_parent_grantee",
        ),
        (
            delegation("d-c", grantee="agent-child", parent="d-root", delegator="p-counsel"),
            "unrelated_child_delegator",
        ),
    ],
)
def test_child_provenance_refusals(child: Delegation, code: str) -> None:
    snapshot = base_snapshot()
    snapshot = base_snapshot(delegations=(*snapshot.delegations, child))
    events = stream(
        *(event.payload for event in base_events(snapshot)[:6]),
        DelegationGranted(delegation=snapshot.delegations[2]),
        DelegationGranted(delegation=child),
    )
    refusal(code, snapshot, events)


def test_child_needs_a_granted_unrevoked_parent() -> None:
    snapshot = base_snapshot()
    delegations = {item.id: item for item in snapshot.delegations}
    before = stream(
        DelegationGranted(delegation=delegations["d-child"]),
        DelegationGranted(delegation=delegations["d-root"]),
    )
    refusal("parent_not_granted", snapshot, before)
    revoked = stream(
        DelegationGranted(delegation=delegations["d-root"]),
        DelegationRevoked(delegation_id="d-root"),
        DelegationGranted(delegation=delegations["d-child"]),
    )
    refusal("parent_revoked", snapshot, revoked)


def test_runtime_based_child_authority_is_order_sensitive() -> None:
    # p-rt-main is neither origin, delegator nor an accountable owner of agent-main;
    # it qualifies only through rt-main, so rt-main must be spawned first.
    child = delegation("d-rt", grantee="agent-child", parent="d-root", delegator="p-rt-main")
    snapshot = base_snapshot(delegations=(delegation("d-root"), child))
    by_id = {item.id: item for item in snapshot.delegations}
    late_spawn = stream(
        DelegationGranted(delegation=by_id["d-root"]),
        DelegationGranted(delegation=child),
        RuntimeSpawned(runtime=snapshot.runtimes[0]),
    )
    refusal("runtime_spawned_after_grant", snapshot, late_spawn)
    spawned_first = stream(
        RuntimeSpawned(runtime=snapshot.runtimes[0]),
        DelegationGranted(delegation=by_id["d-root"]),
        DelegationGranted(delegation=child),
    )
    assert "d-rt" in materialize(snapshot, spawned_first).delegations


# --- incremental replay ---------------------------------------------------------


def test_replayer_agrees_with_materialize_at_every_prefix() -> None:
    snapshot = base_snapshot()
    events = base_events(snapshot)
    replayer = Replayer(snapshot, events)
    assert replayer.state == materialize(snapshot, events, at_event_index=0)
    for index in range(1, len(events) + 1):
        replayer.step()
        assert replayer.state == materialize(snapshot, events, at_event_index=index)
    assert replayer.done
    with pytest.raises(AgentbenchError) as caught:
        replayer.step()
    assert caught.value.code == "invalid_cursor"


def test_replayer_validates_the_whole_stream_on_construction() -> None:
    snapshot = base_snapshot()
    events = base_events(snapshot)
    broken = (*events[:-1], events[-1].model_copy(update={"event_index": 99}))
    with pytest.raises(AgentbenchError) as caught:
        Replayer(snapshot, broken)
    assert caught.value.code == "non_contiguous_event_index"


@pytest.mark.parametrize(
    "delegations",
    [
        (delegation("d-loop", parent="d-loop"),),
        (delegation("d-one", parent="d-two"), delegation("d-two", parent="d-one")),
    ],
    ids=["self-parent", "two-cycle"],
)
def test_initial_delegation_parent_cycles_are_refused(delegations: tuple[Delegation, ...]) -> None:
    snapshot = base_snapshot(delegations=delegations)
    rendered = refusal("delegation_cycle", snapshot, ())
    assert "public_delegations.jsonl" in rendered
    assert "parent_delegation_id" in rendered

"""Engine: failure reasons, chain selection, trace conventions and truth derivation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.authority.engine import (
    Actor,
    accountable_owner_chain,
    audit_events,
    authorise,
    derive_truth,
    on_identity_paths,
    public_runtime_id,
    reconstructable,
    required_evidence_refs,
    select_chain,
    side_effect_name,
)
from pytest_agentbench.worlds.authority.models import (
    ActionAttempted,
    Attempt,
    AuditPerformed,
    CanonicalBinding,
    CaseLabel,
    CredentialIssued,
    Delegation,
    Event,
    EvidenceDiscarded,
    Scenario,
)
from pytest_agentbench.worlds.authority.replay import Replayer, WorldState, build_index, materialize
from tests.worlds.authority.test_replay import (
    attempt,
    base_events,
    base_snapshot,
    capability,
    delegation,
    runtime,
    small_world,
    stream,
)

CLOCK = datetime(2026, 3, 1, tzinfo=UTC)
MAIN = Actor(
    originating_principal_id="p-manager",
    logical_agent_id="agent-main",
    runtime_id="rt-main",
    runtime_principal_id="p-rt-main",
    credential_subject_id="p-rt-main",
)
CHILD = Actor(
    originating_principal_id="p-manager",
    logical_agent_id="agent-child",
    runtime_id="rt-child",
    runtime_principal_id="p-rt-child",
    credential_subject_id="p-rt-child",
)


def child_attempt(**fields: Any) -> Attempt:
    values: dict[str, Any] = {
        "logical_agent_claim": "agent-child",
        "runtime_principal_claim": "p-rt-child",
        "presented_credential_id": "cred-child",
        "action": "compare",
    }
    values.update(fields)
    return attempt(**values)


def base_state(at_event_index: int) -> WorldState:
    snapshot = base_snapshot()
    return materialize(snapshot, base_events(snapshot), at_event_index=at_event_index)


def flat_state(*delegations: Delegation) -> WorldState:
    """Every record (with ``delegations``) in the initial snapshot."""
    return materialize(base_snapshot(delegations=delegations), ())


def reasons(state: WorldState, item: Attempt, actor: Actor, clock: datetime = CLOCK) -> list[str]:
    return list(authorise(state, item, actor, clock).failure_reasons)


# --- decisions and reasons ------------------------------------------------------


def test_covered_child_action_is_allowed_with_root_first_chain() -> None:
    verdict = authorise(base_state(6), child_attempt(), CHILD, CLOCK)
    assert verdict.decision == "allow"
    assert verdict.failure_reasons == ()
    assert verdict.delegation_chain_ids == ("d-root", "d-child")
    assert verdict.policy_version == "v1"


def test_credential_invalid_conditions() -> None:
    snapshot = base_snapshot(delegations=(delegation("d-root"),))
    issued_later = stream(CredentialIssued(credential=snapshot.credentials[0]))
    not_issued = materialize(snapshot, issued_later, at_event_index=0)
    assert reasons(not_issued, attempt(), MAIN) == ["credential_invalid"]
    assert reasons(materialize(snapshot, issued_later), attempt(), MAIN) == []
    late = CLOCK.replace(year=2027)
    state = flat_state(delegation("d-root", expires_at=datetime(2028, 1, 1, tzinfo=UTC)))
    assert reasons(state, attempt(), MAIN, late) == ["credential_invalid"]  # expired
    shared = attempt(presented_credential_id="cred-child")
    verdict = authorise(base_state(6), shared, MAIN, CLOCK)
    assert verdict.failure_reasons == ("credential_invalid",)
    assert verdict.delegation_chain_ids == ("d-root",)


def test_wrong_runtime_conditions() -> None:
    other = Actor("p-manager", "agent-main", "rt-child", "p-rt-child", "p-rt-child")
    item = attempt(presented_credential_id="cred-child")
    verdict = authorise(base_state(6), item, other, CLOCK)
    assert verdict.failure_reasons == ("wrong_runtime",)
    assert verdict.delegation_chain_ids == ("d-root",)
    snapshot = base_snapshot()
    events = base_events(snapshot)
    not_spawned = materialize(snapshot, events, at_event_index=1)
    spawned_later = authorise(not_spawned, child_attempt(), CHILD, CLOCK)
    assert "wrong_runtime" in spawned_later.failure_reasons
    nowhere = Actor("p-manager", "agent-main", None, "p-rt-main", "p-rt-main")
    assert reasons(flat_state(delegation("d-root")), attempt(), nowhere) == ["wrong_runtime"]


def test_tenant_mismatch_for_an_external_runtime() -> None:
    external = Actor("p-org-x", "agent-ext", "rt-ext", "p-rt-ext", "p-rt-ext")
    item = attempt(originating_principal_claim="p-org-x", presented_credential_id="cred-ext")
    assert reasons(base_state(6), item, external) == ["no_active_delegation", "tenant_mismatch"]


def test_coverage_reasons() -> None:
    state = base_state(6)
    outside = attempt(requested_scope=("s1", "s3"))
    verdict = authorise(state, outside, MAIN, CLOCK)
    assert verdict.failure_reasons == ("capability_exceeded",)
    assert verdict.delegation_chain_ids == ()
    assert reasons(state, attempt(purpose="other"), MAIN) == ["capability_exceeded"]
    counsel = Actor("p-counsel", "agent-main", "rt-main", "p-rt-main", "p-rt-main")
    item = attempt(originating_principal_claim="p-counsel", resource_id="res-other")
    assert reasons(state, item, counsel) == ["no_active_delegation"]
    assert reasons(base_state(10), item, counsel) == []  # the later grant covers
    revoked = authorise(base_state(9), attempt(), MAIN, CLOCK)
    assert revoked.failure_reasons == ("delegation_revoked",)
    assert revoked.delegation_chain_ids == ()


def test_expired_coverage_is_no_active_delegation() -> None:
    state = flat_state(delegation("d-root", expires_at=datetime(2026, 2, 1, tzinfo=UTC)))
    verdict = authorise(state, attempt(), MAIN, CLOCK)
    assert verdict.failure_reasons == ("no_active_delegation",)
    assert verdict.delegation_chain_ids == ()
    early = authorise(state, attempt(), MAIN, datetime(2026, 1, 20, tzinfo=UTC))
    assert early.decision == "allow"


def test_revocation_cascade_denies_the_child() -> None:
    verdict = authorise(base_state(9), child_attempt(), CHILD, CLOCK)
    assert verdict.failure_reasons == ("delegation_revoked",)


def test_chain_hops_are_not_judged_only_proposals_are() -> None:
    # The original judges overprivileged_subdelegation only on a proposed
    # delegation against the selected leaf, never along the published chain.
    wide = delegation(
        "d-wide",
        grantee="agent-child",
        parent="d-root",
        cap=capability(actions=("compare",), scopes=("s1", "s3"), may_delegate=False),
    )
    verdict = authorise(flat_state(delegation("d-root"), wide), child_attempt(), CHILD, CLOCK)
    assert verdict.failure_reasons == ()
    assert verdict.delegation_chain_ids == ("d-root", "d-wide")


def test_proposed_delegation_is_checked_against_the_covering_capability() -> None:
    root_cap = capability(actions=("compare", "create_delegation", "read"))
    state = flat_state(delegation("d-root", cap=root_cap))

    def propose(cap: Any) -> Attempt:
        proposed = delegation("d-new", grantee="agent-child", parent="d-root", cap=cap)
        return attempt(action="create_delegation", proposed_delegation=proposed)

    assert reasons(state, propose(capability(actions=("read",), scopes=("s1",))), MAIN) == []
    wider = propose(capability(actions=("read",), scopes=("s1", "s9")))
    assert reasons(state, wider, MAIN) == ["overprivileged_subdelegation"]
    locked = flat_state(
        delegation("d-root", cap=root_cap.model_copy(update={"may_delegate": False}))
    )
    narrow = propose(capability(actions=("read",), scopes=("s1",)))
    assert reasons(locked, narrow, MAIN) == ["overprivileged_subdelegation"]


def test_policy_version_is_compared_after_version_blind_selection() -> None:
    verdict = authorise(base_state(6), attempt(policy_version="v2"), MAIN, CLOCK)
    assert verdict.failure_reasons == ("policy_version_mismatch",)
    assert verdict.delegation_chain_ids == ("d-root",)
    assert verdict.policy_version == "v1"
    uncovered = authorise(
        base_state(6), attempt(policy_version="v2", resource_id="res-other"), MAIN, CLOCK
    )
    assert uncovered.policy_version == "v2"  # nothing covers: the attempted version stands


def test_smallest_qualifying_id_wins_and_versions_must_agree() -> None:
    state = flat_state(
        delegation("d-b"), delegation("d-a"), delegation("d-0", cap=capability(scopes=("s2",)))
    )
    chain = select_chain(state, attempt(), MAIN, CLOCK)
    assert [item.id for item in chain] == ["d-a"]
    ambiguous = flat_state(delegation("d-a"), delegation("d-b", version="v2"))
    with pytest.raises(AgentbenchError) as caught:
        select_chain(ambiguous, attempt(), MAIN, CLOCK)
    assert caught.value.code == "ambiguous_policy_version"
    # A non-qualifying delegation at another version does not make it ambiguous.
    fine = flat_state(
        delegation("d-a"), delegation("d-b", version="v2", cap=capability(scopes=("s2",)))
    )
    assert [item.id for item in select_chain(fine, attempt(), MAIN, CLOCK)] == ["d-a"]


# --- conventions ------------------------------------------------------------------


def test_required_evidence_is_the_sorted_union_of_four_groups() -> None:
    refs = required_evidence_refs(
        policy_version="v1",
        credential_id="cred-main",
        runtime_id="rt-main",
        chain_ids=("d-root", "d-child"),
    )
    assert refs == (
        "evidence:credential:cred-main",
        "evidence:delegation:d-child",
        "evidence:delegation:d-root",
        "evidence:policy:v1",
        "evidence:runtime:rt-main",
    )
    bare = required_evidence_refs(
        policy_version="v1", credential_id="c", runtime_id=None, chain_ids=()
    )
    assert bare == ("evidence:credential:c", "evidence:policy:v1")
    assert reconstructable(bare, frozenset(bare))
    assert not reconstructable(bare, frozenset(bare[:1]))


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("read", "read_recorded"),
        ("request_quotation", "quotation_requested"),
        ("compare", "comparison_recorded"),
        ("create_draft", "draft_created"),
        ("create_delegation", "delegation_created"),
        ("approve", "action_recorded"),
    ],
)
def test_side_effect_names(action: str, expected: str) -> None:
    assert side_effect_name(action, "allow") == expected
    assert side_effect_name(action, "deny") == "none"


def test_identity_helpers() -> None:
    snapshot = base_snapshot()
    index = build_index(snapshot)
    assert accountable_owner_chain(index, "agent-child") == ("p-manager", "p-org-a")
    assert on_identity_paths(
        index, "p-service", runtime_principal_id="p-rt-main", credential_subject_id=None
    )
    assert not on_identity_paths(
        index, "p-counsel", runtime_principal_id="p-rt-main", credential_subject_id="p-rt-child"
    )
    assert on_identity_paths(
        index,
        "p-child-service",
        runtime_principal_id="p-rt-main",
        credential_subject_id="p-rt-child",
    )
    assert public_runtime_id(index, "p-rt-main") == "rt-main"
    assert public_runtime_id(index, "p-manager") is None
    twin = build_index(
        base_snapshot(
            runtimes=(
                *snapshot.runtimes,
                runtime("rt-twin", "agent-main", "p-rt-main", "p-service"),
            )
        )
    )
    assert public_runtime_id(twin, "p-rt-main") is None


# --- whole stream -----------------------------------------------------------------


def bindings() -> list[CanonicalBinding]:
    return [
        CanonicalBinding(
            action_event_id="evt-007",
            originating_principal_id="p-manager",
            logical_agent_id="agent-child",
            runtime_id="rt-child",
            runtime_principal_id="p-rt-child",
            credential_subject_id="p-rt-child",
            attributed_actor_id="p-child-service",
            accountable_owner_chain=("p-manager", "p-org-a"),
        ),
        CanonicalBinding(
            action_event_id="evt-008",
            originating_principal_id="p-counsel",
            logical_agent_id="agent-main",
            runtime_id="rt-main",
            runtime_principal_id="p-rt-main",
            credential_subject_id="p-rt-main",
            attributed_actor_id="p-service",
            accountable_owner_chain=("p-manager", "p-org-a"),
        ),
    ]


LABELS = [
    CaseLabel(action_event_id="evt-007", kind="valid_then_revoked"),
    CaseLabel(action_event_id="evt-008", kind="invalid_then_later_granted"),
]


def test_derive_truth_on_the_small_world() -> None:
    first, second = derive_truth(small_world(), bindings(), LABELS)
    assert first.action_event_id == "evt-007"
    assert (first.decision_at_action, first.decision_at_audit) == ("allow", "deny")
    assert first.failure_reasons_at_audit == ("delegation_revoked",)
    assert first.delegation_chain_ids == ("d-root", "d-child")
    assert first.expected_side_effect == "comparison_recorded"
    assert first.required_evidence_refs == (
        "evidence:credential:cred-child",
        "evidence:delegation:d-child",
        "evidence:delegation:d-root",
        "evidence:policy:v1",
        "evidence:runtime:rt-child",
    )
    assert not first.reconstructable_at_audit  # nothing recorded d-child's evidence
    assert (second.decision_at_action, second.decision_at_audit) == ("deny", "allow")
    assert second.failure_reasons_at_action == ("no_active_delegation",)
    assert second.delegation_chain_ids == ()
    assert second.expected_side_effect == "none"


def test_derive_truth_agrees_with_independent_materialization() -> None:
    world = small_world()
    truths = {truth.action_event_id: truth for truth in derive_truth(world, bindings(), LABELS)}
    audit = next(event for event in world.events if isinstance(event.payload, AuditPerformed))
    audit_state = materialize(world.snapshot, world.events, at_event_index=audit.event_index - 1)
    for binding in bindings():
        event = next(item for item in world.events if item.id == binding.action_event_id)
        assert isinstance(event.payload, ActionAttempted)
        actor = Actor(
            binding.originating_principal_id,
            binding.logical_agent_id,
            binding.runtime_id,
            binding.runtime_principal_id,
            binding.credential_subject_id,
        )
        before = materialize(world.snapshot, world.events, at_event_index=event.event_index - 1)
        at_action = authorise(before, event.payload.attempt, actor, event.occurred_at)
        at_audit = authorise(audit_state, event.payload.attempt, actor, audit.occurred_at)
        truth = truths[event.id]
        assert truth.decision_at_action == at_action.decision
        assert truth.failure_reasons_at_action == at_action.failure_reasons
        assert truth.decision_at_audit == at_audit.decision
        assert truth.failure_reasons_at_audit == at_audit.failure_reasons


def test_reconstructability_follows_retained_evidence() -> None:
    world = small_world()
    refs = (
        "evidence:credential:cred-child",
        "evidence:delegation:d-child",
        "evidence:delegation:d-root",
        "evidence:runtime:rt-child",
    )
    events = list(world.events)
    events[0] = events[0].model_copy(update={"evidence_refs": refs})
    kept = world.model_copy(update={"events": tuple(events)})
    assert derive_truth(kept, bindings(), LABELS)[0].reconstructable_at_audit
    discarded = stream(
        *((event.payload, event.evidence_refs) for event in events[:10]),
        EvidenceDiscarded(evidence_refs=("evidence:delegation:d-child",)),
        AuditPerformed(audit_id="audit-1"),
    )
    scenario = world.scenarios["mini"].model_copy(update={"audit_event_id": "evt-012"})
    lost = world.model_copy(update={"events": discarded, "scenarios": {"mini": scenario}})
    truth = derive_truth(lost, bindings(), LABELS)[0]
    assert truth.decision_at_action == "allow"
    assert not truth.reconstructable_at_audit


def test_derive_truth_composes_unknown_binding_parties_into_reasons() -> None:
    rows = bindings()
    ghost = [
        rows[0].model_copy(update={"runtime_id": "rt-ghost"}),
        rows[1].model_copy(update={"logical_agent_id": "agent-ghost"}),
    ]
    first, second = derive_truth(small_world(), ghost, LABELS)
    assert "wrong_runtime" in first.failure_reasons_at_action
    assert "evidence:runtime:rt-ghost" in first.required_evidence_refs
    assert "no_active_delegation" in second.failure_reasons_at_action


@pytest.mark.parametrize(
    ("rows", "labels", "code"),
    [
        (lambda b: [*b, b[0]], LABELS, "duplicate_evaluator_key"),
        (lambda b: b[:1], LABELS, "missing_evaluator_key"),
        (
            lambda b: b,
            [*LABELS, CaseLabel(action_event_id="evt-001", kind="x")],
            "unexpected_evaluator_key",
        ),
    ],
)
def test_derive_truth_refuses_bad_evaluator_keys(
    rows: Any, labels: list[CaseLabel], code: str
) -> None:
    with pytest.raises(AgentbenchError) as caught:
        derive_truth(small_world(), rows(bindings()), labels)
    assert caught.value.code == code


def test_audit_assignment() -> None:
    world = small_world()
    assigned = audit_events(world.events, world.scenarios)
    assert {key: event.id for key, event in assigned.items()} == {
        "evt-007": "evt-011",
        "evt-008": "evt-011",
    }
    fallback = audit_events(world.events, {})
    assert fallback["evt-007"].id == "evt-011"
    bad = Scenario.model_validate(
        {**world.scenarios["mini"].model_dump(), "audit_event_id": "evt-001"}
    )
    with pytest.raises(AgentbenchError) as caught:
        audit_events(world.events, {"mini": bad})
    assert caught.value.code == "invalid_audit_event"
    no_audit: tuple[Event, ...] = world.events[:-1]
    with pytest.raises(AgentbenchError) as caught:
        audit_events(no_audit, {})
    assert caught.value.code == "no_audit_event"


def test_ambiguous_version_in_a_stream_names_the_event() -> None:
    snapshot = base_snapshot(delegations=(delegation("d-a"), delegation("d-b", version="v2")))
    world = small_world().model_copy(update={"snapshot": snapshot})
    events = stream(ActionAttempted(attempt=attempt()), AuditPerformed(audit_id="a"))
    world = world.model_copy(update={"events": events, "scenarios": {}})
    binding = bindings()[1].model_copy(
        update={"action_event_id": "evt-001", "originating_principal_id": "p-manager"}
    )
    with pytest.raises(AgentbenchError) as caught:
        derive_truth(world, [binding], [CaseLabel(action_event_id="evt-001", kind="x")])
    assert caught.value.code == "ambiguous_policy_version"
    assert "evt-001" in caught.value.render()


def test_time_is_the_clock_not_the_state() -> None:
    state = base_state(6)
    before_window = datetime(2025, 12, 31, tzinfo=UTC)
    assert "credential_invalid" in reasons(state, attempt(), MAIN, before_window)
    assert reasons(state, attempt(), MAIN, CLOCK + timedelta(days=1)) == []


def test_truth_derivation_is_a_single_pass_without_state_copies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    steps: list[int] = []
    original_step = Replayer.step

    def counting_step(self: Replayer) -> Event:
        steps.append(self.state.event_index)
        return original_step(self)

    def no_copy(self: WorldState) -> WorldState:
        raise AssertionError("a per-prefix state copy would make truth derivation quadratic")

    monkeypatch.setattr(Replayer, "step", counting_step)
    monkeypatch.setattr(WorldState, "copy", no_copy)
    world = small_world()
    derive_truth(world, bindings(), LABELS)
    assert steps == list(range(len(world.events)))

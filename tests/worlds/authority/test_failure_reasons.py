"""Failure reasons composed rule by rule, as the format page's "Failure reasons" defines.

One hand-built world per clause and per independent source, then property
tests over generated small worlds: the coverage cases are exclusive and total,
and each independent source fires exactly on its own evidence.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.authority.engine import (
    Actor,
    authorise,
    credential_valid,
    resolve_coverage,
)
from pytest_agentbench.worlds.authority.models import (
    ActionAttempted,
    Attempt,
    AuditPerformed,
    Delegation,
    DelegationGranted,
    DelegationRevoked,
    LogicalAgent,
    Principal,
)
from pytest_agentbench.worlds.authority.replay import WorldState, materialize
from tests.worlds.authority.test_replay import (
    attempt,
    base_snapshot,
    capability,
    credential,
    delegation,
    stream,
)

CLOCK = datetime(2026, 3, 1, tzinfo=UTC)
MAIN = Actor("p-manager", "agent-main", "rt-main", "p-rt-main", "p-rt-main")
PROPERTIES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def world(
    *delegations: Delegation,
    revoked: tuple[str, ...] = (),
    principals: tuple[Principal, ...] | None = None,
    **snapshot: Any,
) -> WorldState:
    """Every record in the initial snapshot; ``revoked`` revoked by events afterwards."""
    overrides: dict[str, Any] = {"delegations": delegations, **snapshot}
    if principals is not None:
        overrides["principals"] = principals
    snap = base_snapshot(**overrides)
    return materialize(snap, stream(*(DelegationRevoked(delegation_id=d) for d in revoked)))


def reasons(
    state: WorldState, item: Attempt, actor: Actor = MAIN, clock: datetime = CLOCK
) -> list[str]:
    return list(authorise(state, item, actor, clock).failure_reasons)


EXPIRED = {
    "valid_from": datetime(2025, 1, 1, tzinfo=UTC),
    "expires_at": datetime(2026, 1, 1, tzinfo=UTC),
}
NOT_YET = {
    "valid_from": datetime(2026, 6, 1, tzinfo=UTC),
    "expires_at": datetime(2026, 12, 1, tzinfo=UTC),
}


# ---------------------------------------------------------------------------
# Coverage: cases (A), (0)-(4)


def test_case_a_capable_delegations_disagreeing_on_version_are_refused() -> None:
    state = world(delegation("d-a"), delegation("d-b", version="v2"))
    with pytest.raises(AgentbenchError) as refused:
        authorise(state, attempt(), MAIN, CLOCK)
    assert refused.value.code == "ambiguous_policy_version"


def test_case_a_ignores_versions_of_revoked_or_non_covering_delegations() -> None:
    state = world(
        delegation("d-a"),
        delegation("d-b", version="v2"),
        delegation("d-c", version="v2", cap=capability(scopes=("s2",))),
        revoked=("d-b",),
    )
    assert authorise(state, attempt(), MAIN, CLOCK).delegation_chain_ids == ("d-a",)


def test_case_0_chain_with_no_reason() -> None:
    verdict = authorise(world(delegation("d-b"), delegation("d-a")), attempt(), MAIN, CLOCK)
    assert (verdict.failure_reasons, verdict.delegation_chain_ids) == ((), ("d-a",))


def test_case_1_version_mismatch_still_publishes_the_chain() -> None:
    verdict = authorise(world(delegation("d-a", version="v2")), attempt(), MAIN, CLOCK)
    assert verdict.failure_reasons == ("policy_version_mismatch",)
    assert verdict.delegation_chain_ids == ("d-a",)
    assert verdict.policy_version == "v2"  # the selected delegation's version


def test_case_2_a_time_valid_revoked_delegation_that_covers() -> None:
    state = world(delegation("d-a"), revoked=("d-a",))
    verdict = authorise(state, attempt(), MAIN, CLOCK)
    assert verdict.failure_reasons == ("delegation_revoked",)
    assert verdict.delegation_chain_ids == ()
    assert verdict.policy_version == "v1"  # the attempt's


def test_case_2_needs_time_validity_an_expired_revoked_delegation_is_absence() -> None:
    state = world(delegation("d-a", **EXPIRED), revoked=("d-a",))
    assert reasons(state, attempt()) == ["no_active_delegation"]


def test_case_2_needs_coverage_a_revoked_wider_miss_falls_through() -> None:
    state = world(delegation("d-a", cap=capability(scopes=("s2",))), revoked=("d-a",))
    assert reasons(state, attempt()) == ["no_active_delegation"]


def test_case_3_capability_exceeded_is_the_residual_of_something_active() -> None:
    state = world(delegation("d-a", cap=capability(scopes=("s2",))))
    assert reasons(state, attempt()) == ["capability_exceeded"]
    other_purpose = attempt(purpose="resell")
    assert reasons(world(delegation("d-a")), other_purpose) == ["capability_exceeded"]


@pytest.mark.parametrize("window", [EXPIRED, NOT_YET], ids=["expired", "not-yet-valid"])
def test_case_4_expired_or_future_coverage_is_plain_absence(window: dict[str, datetime]) -> None:
    assert reasons(world(delegation("d-a", **window)), attempt()) == ["no_active_delegation"]


def test_case_4_candidates_come_from_the_binding_not_the_claims() -> None:
    state = world(delegation("d-a", grantee="agent-child"))
    claims_child = attempt(logical_agent_claim="agent-child")
    assert reasons(state, claims_child) == ["no_active_delegation"]


def test_chain_is_the_smallest_capable_id_walked_up_root_first() -> None:
    root = delegation("d-root")
    child = delegation(
        "d-child", grantee="agent-child", parent="d-root", cap=capability(actions=("compare",))
    )
    also = delegation(
        "d-zz", grantee="agent-child", parent="d-root", cap=capability(actions=("compare",))
    )
    actor = Actor("p-manager", "agent-child", "rt-child", "p-rt-child", "p-rt-child")
    item = attempt(action="compare", presented_credential_id="cred-child")
    verdict = authorise(world(root, also, child), item, actor, CLOCK)
    assert verdict.delegation_chain_ids == ("d-root", "d-child")


# ---------------------------------------------------------------------------
# credential_invalid and the two sources of wrong_runtime


def test_credential_invalid_when_unknown() -> None:
    assert reasons(world(delegation("d-a")), attempt(presented_credential_id="cred-nope")) == [
        "credential_invalid"
    ]


def test_credential_invalid_when_its_subject_is_not_the_bindings() -> None:
    stranger = Actor("p-manager", "agent-main", "rt-main", "p-rt-main", "p-service")
    assert reasons(world(delegation("d-a")), attempt(), stranger) == ["credential_invalid"]


@pytest.mark.parametrize(
    "clock", [datetime(2025, 6, 1, tzinfo=UTC), datetime(2026, 12, 31, tzinfo=UTC)]
)
def test_credential_invalid_outside_its_validity(clock: datetime) -> None:
    wide = delegation(
        "d-a",
        valid_from=datetime(2025, 1, 1, tzinfo=UTC),
        expires_at=datetime(2028, 1, 1, tzinfo=UTC),
    )
    assert reasons(world(wide), attempt(), MAIN, clock) == ["credential_invalid"]


@pytest.mark.parametrize(
    "actor",
    [
        pytest.param(
            Actor("p-manager", "agent-main", "rt-nope", "p-rt-main", "p-rt-main"), id="unknown"
        ),
        pytest.param(Actor("p-manager", "agent-main", None, "p-rt-main", "p-rt-main"), id="none"),
        pytest.param(
            Actor("p-manager", "agent-main", "rt-child", "p-rt-main", "p-rt-main"), id="agent"
        ),
    ],
)
def test_wrong_runtime_first_source_the_bindings_runtime_disagrees(actor: Actor) -> None:
    assert reasons(world(delegation("d-a")), attempt(), actor) == ["wrong_runtime"]


def test_wrong_runtime_first_source_runtime_principal_disagrees() -> None:
    actor = Actor("p-manager", "agent-main", "rt-main", "p-rt-child", "p-rt-main")
    # cred-main does not allow p-rt-child either; the first source already fires.
    assert reasons(world(delegation("d-a")), attempt(), actor) == ["wrong_runtime"]


def test_wrong_runtime_second_source_a_valid_credential_from_a_runtime_it_does_not_permit() -> None:
    # The shared credential: valid, but issued for another runtime principal.
    shared = credential("cred-shared", "p-rt-main", ("p-rt-child",))
    state = world(delegation("d-a"), credentials=(*base_snapshot().credentials, shared))
    verdict = authorise(state, attempt(presented_credential_id="cred-shared"), MAIN, CLOCK)
    assert verdict.failure_reasons == ("wrong_runtime",)
    assert verdict.delegation_chain_ids == ("d-a",)


def test_an_invalid_credential_suppresses_the_second_source() -> None:
    shared = credential("cred-shared", "p-rt-main", ("p-rt-child",), **EXPIRED)
    state = world(delegation("d-a"), credentials=(*base_snapshot().credentials, shared))
    item = attempt(presented_credential_id="cred-shared")
    assert reasons(state, item) == ["credential_invalid"]


# ---------------------------------------------------------------------------
# Second sources: no_active_delegation, tenant_mismatch, policy_version_mismatch


@pytest.mark.parametrize(
    ("actor", "item"),
    [
        pytest.param(
            Actor("p-manager", "agent-ghost", "rt-main", "p-rt-main", "p-rt-main"),
            attempt(),
            id="agent",
        ),
        pytest.param(
            Actor("p-ghost", "agent-main", "rt-main", "p-rt-main", "p-rt-main"),
            attempt(),
            id="origin",
        ),
        pytest.param(MAIN, attempt(resource_id="res-ghost"), id="resource"),
    ],
)
def test_no_active_delegation_for_an_unknown_party(actor: Actor, item: Attempt) -> None:
    found = reasons(world(delegation("d-a")), item, actor)
    assert "no_active_delegation" in found
    assert "tenant_mismatch" not in found


def test_tenant_mismatch_compares_organisation_ids() -> None:
    state = world(delegation("d-a"))
    # p-org-x belongs to org-x; the agent and resource to org-a.
    outsider = Actor("p-org-x", "agent-main", "rt-main", "p-rt-main", "p-rt-main")
    assert reasons(state, attempt(), outsider) == ["no_active_delegation", "tenant_mismatch"]


def test_tenant_mismatch_for_a_principal_without_an_organisation() -> None:
    principals = tuple(
        p.model_copy(update={"organisation_id": None}) if p.id == "p-manager" else p
        for p in base_snapshot().principals
    )
    # No delegation can originate with p-manager now (replay refuses it, as the
    # original does), so the unknown coverage shows beside the mismatch.
    state = world(principals=principals)
    assert reasons(state, attempt()) == ["no_active_delegation", "tenant_mismatch"]


def test_policy_version_mismatch_for_an_unregistered_version_without_a_chain() -> None:
    verdict = authorise(world(), attempt(policy_version="v9"), MAIN, CLOCK)
    assert verdict.failure_reasons == ("no_active_delegation", "policy_version_mismatch")
    assert verdict.policy_version == "v9"


def test_a_registered_other_version_without_a_chain_is_not_a_mismatch() -> None:
    assert reasons(world(), attempt(policy_version="v2")) == ["no_active_delegation"]


# ---------------------------------------------------------------------------
# overprivileged_subdelegation: a proposal judged against the selected leaf


def proposal(**changes: Any) -> Delegation:
    values: dict[str, Any] = {
        "grantee": "agent-child",
        "parent": "d-root",
        "cap": capability(actions=("read",), scopes=("s1",)),
    }
    values.update(changes)
    return delegation("d-new", **values)


def propose(item: Delegation) -> Attempt:
    return attempt(action="create_delegation", proposed_delegation=item)


ROOT_CAP = capability(actions=("compare", "create_delegation", "read"))


def test_a_proposal_within_the_leaf_is_allowed() -> None:
    assert reasons(world(delegation("d-root", cap=ROOT_CAP)), propose(proposal())) == []


@pytest.mark.parametrize(
    ("state_root", "item"),
    [
        pytest.param(
            ROOT_CAP.model_copy(update={"may_delegate": False}), proposal(), id="may-not-delegate"
        ),
        pytest.param(ROOT_CAP, proposal(origin="p-counsel"), id="origin"),
        pytest.param(ROOT_CAP, proposal(parent="d-other"), id="parent"),
        pytest.param(ROOT_CAP, proposal(version="v2"), id="version"),
        pytest.param(
            ROOT_CAP,
            proposal(cap=capability(resources=("res-other",), actions=("read",), scopes=("s1",))),
            id="resources",
        ),
        pytest.param(
            ROOT_CAP, proposal(cap=capability(actions=("delete",), scopes=("s1",))), id="actions"
        ),
        pytest.param(
            ROOT_CAP, proposal(cap=capability(actions=("read",), scopes=("s9",))), id="scopes"
        ),
        pytest.param(
            ROOT_CAP,
            proposal(
                cap=capability(actions=("read",), scopes=("s1",)).model_copy(
                    update={"purpose": "resell"}
                )
            ),
            id="purpose",
        ),
        pytest.param(
            ROOT_CAP, proposal(valid_from=datetime(2025, 12, 1, tzinfo=UTC)), id="starts-early"
        ),
        pytest.param(
            ROOT_CAP, proposal(expires_at=datetime(2027, 6, 1, tzinfo=UTC)), id="ends-late"
        ),
        pytest.param(ROOT_CAP, proposal(delegator="p-org-x"), id="delegator"),
    ],
)
def test_each_failing_condition_makes_a_proposal_overprivileged(
    state_root: Any, item: Delegation
) -> None:
    state = world(delegation("d-root", cap=state_root))
    assert reasons(state, propose(item)) == ["overprivileged_subdelegation"]


def test_the_leafs_authorised_delegators_include_its_grantees_owner_chain() -> None:
    # p-org-a is neither the leaf's origin nor its delegator, but owns p-manager,
    # the owner of the leaf's grantee: a child grant by it passes replay, and so
    # does a proposal.
    state = world(delegation("d-root", cap=ROOT_CAP))
    assert reasons(state, propose(proposal(delegator="p-org-a"))) == []


def agent(agent_id: str, *, parent: str | None, org: str = "org-a") -> LogicalAgent:
    owner = "p-manager" if org == "org-a" else "p-org-x"
    return LogicalAgent(
        id=agent_id,
        display_name=agent_id,
        organisation_id=org,
        owner_principal_id=owner,
        parent_agent_id=parent,
    )


# One world per clause of "a child agent of the leaf's grantee, in the same
# organisation": the leaf d-root is granted to agent-main, and each proposal
# goes to an agent that breaks exactly that clause (the original's
# derive_authorised_delegator_ids returns no delegator for it).
GRANTEE_CLAUSES = [
    pytest.param((), "agent-main", "child_agent_not_parent_grantee", id="the-leafs-own-grantee"),
    pytest.param(
        (agent("agent-sibling", parent=None),),
        "agent-sibling",
        "child_agent_not_parent_grantee",
        id="an-unrelated-agent",
    ),
    pytest.param(
        (agent("agent-grandchild", parent="agent-child"),),
        "agent-grandchild",
        "child_agent_not_parent_grantee",
        id="a-descendant-but-not-a-child",
    ),
    pytest.param(
        (agent("agent-child-x", parent="agent-main", org="org-x"),),
        "agent-child-x",
        "cross_organisation_delegation",
        id="a-child-agent-in-another-organisation",
    ),
]


def clause_world(extra_agents: tuple[LogicalAgent, ...]) -> WorldState:
    return world(
        delegation("d-root", cap=ROOT_CAP), agents=(*base_snapshot().agents, *extra_agents)
    )


@pytest.mark.parametrize(("extra_agents", "grantee", "code"), GRANTEE_CLAUSES)
def test_a_proposal_to_an_agent_that_is_not_a_child_of_the_leafs_grantee_is_overprivileged(
    extra_agents: tuple[LogicalAgent, ...], grantee: str, code: str
) -> None:
    state = clause_world(extra_agents)
    assert reasons(state, propose(proposal(grantee=grantee))) == ["overprivileged_subdelegation"]


@pytest.mark.parametrize(("extra_agents", "grantee", "code"), GRANTEE_CLAUSES)
def test_replay_refuses_the_same_delegation_as_a_grant_by_the_same_rule(
    extra_agents: tuple[LogicalAgent, ...], grantee: str, code: str
) -> None:
    granted = proposal(grantee=grantee)
    snapshot = base_snapshot(
        agents=(*base_snapshot().agents, *extra_agents),
        delegations=(delegation("d-root", cap=ROOT_CAP), granted),
    )
    with pytest.raises(AgentbenchError) as caught:
        materialize(snapshot, stream(DelegationGranted(delegation=granted)))
    assert caught.value.code == code


def test_a_child_of_the_leafs_grantee_in_its_organisation_passes_in_every_clause_world() -> None:
    extra = tuple(agent for param in GRANTEE_CLAUSES for agent in param.values[0])
    state = clause_world(extra)
    assert reasons(state, propose(proposal(grantee="agent-child"))) == []


def test_no_chain_no_overprivileged_judgement() -> None:
    state = world(delegation("d-root", cap=ROOT_CAP), revoked=("d-root",))
    wide = proposal(cap=capability(actions=("read",), scopes=("s9",)))
    assert reasons(state, propose(wide)) == ["delegation_revoked"]


def test_overprivileged_at_action_time_and_revoked_at_audit_time() -> None:
    snap = base_snapshot(delegations=(delegation("d-root", cap=ROOT_CAP),))
    wide = proposal(cap=capability(actions=("read",), scopes=("s9",)))
    events = stream(
        ActionAttempted(attempt=propose(wide)),
        DelegationRevoked(delegation_id="d-root"),
        AuditPerformed(audit_id="audit-1"),
    )
    at_action = materialize(snap, events, at_event_index=0)
    at_audit = materialize(snap, events, at_event_index=2)
    action_verdict = authorise(at_action, propose(wide), MAIN, events[0].occurred_at)
    audit_verdict = authorise(at_audit, propose(wide), MAIN, events[2].occurred_at)
    assert action_verdict.failure_reasons == ("overprivileged_subdelegation",)
    assert audit_verdict.failure_reasons == ("delegation_revoked",)


# ---------------------------------------------------------------------------
# Properties over generated small worlds

SCOPES = ("s1", "s2", "s3")
windows = st.sampled_from(
    [
        {},
        EXPIRED,
        NOT_YET,
        {
            "valid_from": datetime(2026, 3, 1, tzinfo=UTC),
            "expires_at": datetime(2026, 3, 2, tzinfo=UTC),
        },
    ]
)


@st.composite
def generated_delegation(draw: st.DrawFn, number: int) -> Delegation:
    # Root grants by their origin, inside org-a: replay refuses anything else.
    origin = draw(st.sampled_from(["p-manager", "p-counsel"]))
    return delegation(
        f"d-{number}",
        origin=origin,
        delegator=origin,
        grantee=draw(st.sampled_from(["agent-main", "agent-child"])),
        cap=capability(
            resources=tuple(draw(st.sets(st.sampled_from(["res-doc", "res-other"]), min_size=1))),
            actions=tuple(draw(st.sets(st.sampled_from(["read", "compare"]), min_size=1))),
            scopes=tuple(draw(st.sets(st.sampled_from(SCOPES)))),
            may_delegate=draw(st.booleans()),
        ).model_copy(update={"purpose": draw(st.sampled_from(["procure", "resell"]))}),
        version=draw(st.sampled_from(["v1", "v2"])),
        **draw(windows),
    )


@st.composite
def scenario(draw: st.DrawFn) -> tuple[WorldState, Attempt, Actor, datetime]:
    count = draw(st.integers(min_value=0, max_value=4))
    delegations = tuple(draw(generated_delegation(n)) for n in range(count))
    revoked = tuple(d.id for d in delegations if draw(st.booleans()))
    state = world(*delegations, revoked=revoked)
    item = attempt(
        resource_id=draw(st.sampled_from(["res-doc", "res-other", "res-ghost"])),
        action=draw(st.sampled_from(["read", "compare"])),
        requested_scope=tuple(draw(st.sets(st.sampled_from(SCOPES), max_size=2))),
        purpose=draw(st.sampled_from(["procure", "resell"])),
        policy_version=draw(st.sampled_from(["v1", "v2", "v9"])),
        presented_credential_id=draw(st.sampled_from(["cred-main", "cred-child", "cred-ghost"])),
    )
    actor = Actor(
        originating_principal_id=draw(
            st.sampled_from(["p-manager", "p-counsel", "p-org-x", "p-ghost"])
        ),
        logical_agent_id=draw(
            st.sampled_from(["agent-main", "agent-child", "agent-ext", "agent-ghost"])
        ),
        runtime_id=draw(st.sampled_from(["rt-main", "rt-child", "rt-ghost", None])),
        runtime_principal_id=draw(st.sampled_from(["p-rt-main", "p-rt-child"])),
        credential_subject_id=draw(st.sampled_from(["p-rt-main", "p-rt-child"])),
    )
    clock = draw(
        st.sampled_from([CLOCK, datetime(2025, 6, 1, tzinfo=UTC), CLOCK + timedelta(days=300)])
    )
    return state, item, actor, clock


def covers(d: Delegation, item: Attempt) -> bool:
    c = d.capability
    return (
        item.resource_id in c.resource_ids
        and item.action in c.actions
        and set(item.requested_scope) <= set(c.scopes)
        and item.purpose == c.purpose
    )


@PROPERTIES
@given(scenario())
def test_coverage_cases_are_exclusive_and_total(
    case: tuple[WorldState, Attempt, Actor, datetime],
) -> None:
    state, item, actor, clock = case
    candidates = [
        d
        for d in state.delegations.values()
        if d.grantee_agent_id == actor.logical_agent_id
        and d.originating_principal_id == actor.originating_principal_id
    ]
    time_valid = [d for d in candidates if d.valid_from <= clock < d.expires_at]
    active = [d for d in time_valid if not state.is_revoked(d.id)]
    capable = [d for d in active if covers(d, item)]
    if len({d.policy_version for d in capable}) > 1:
        with pytest.raises(AgentbenchError):
            resolve_coverage(state, item, actor, clock)
        return
    coverage = resolve_coverage(state, item, actor, clock)
    # Exactly one case applies, the first in the page's order.
    holds = {
        "chain": bool(capable),
        "delegation_revoked": not capable
        and any(state.is_revoked(d.id) and covers(d, item) for d in time_valid),
        "capability_exceeded": False,
        "no_active_delegation": False,
    }
    holds["capability_exceeded"] = not capable and not holds["delegation_revoked"] and bool(active)
    holds["no_active_delegation"] = not any(holds.values())
    (case_name,) = [name for name, held in holds.items() if held]
    if case_name == "chain":
        selected = min(capable, key=lambda d: d.id)
        assert coverage.chain[-1] == selected
        expected = (
            None if selected.policy_version == item.policy_version else "policy_version_mismatch"
        )
        assert coverage.reason == expected
    else:
        assert (coverage.chain, coverage.reason) == ((), case_name)


@PROPERTIES
@given(scenario())
def test_independent_sources_fire_exactly_on_their_evidence(
    case: tuple[WorldState, Attempt, Actor, datetime],
) -> None:
    state, item, actor, clock = case
    try:
        verdict = authorise(state, item, actor, clock)
    except AgentbenchError:
        return
    found = set(verdict.failure_reasons)
    assert list(verdict.failure_reasons) == sorted(found)
    assert (verdict.decision == "deny") == bool(found)
    credential = state.credentials.get(item.presented_credential_id)
    assert ("credential_invalid" in found) == (not credential_valid(state, item, actor, clock))
    runtime = state.runtimes.get(actor.runtime_id) if actor.runtime_id else None
    runtime_disagrees = (
        runtime is None
        or runtime.logical_agent_id != actor.logical_agent_id
        or runtime.runtime_principal_id != actor.runtime_principal_id
    )
    not_permitted = (
        "credential_invalid" not in found
        and credential is not None
        and actor.runtime_principal_id not in credential.allowed_runtime_principal_ids
    )
    assert ("wrong_runtime" in found) == (runtime_disagrees or not_permitted)
    index = state.index
    parties = (
        index.agents.get(actor.logical_agent_id or ""),
        index.resources.get(item.resource_id),
        index.principals.get(actor.originating_principal_id or ""),
    )
    if any(party is None for party in parties):
        assert "no_active_delegation" in found
        assert "tenant_mismatch" not in found
    else:
        organisations = {party.organisation_id for party in parties if party is not None}
        assert ("tenant_mismatch" in found) == (len(organisations) > 1 or None in organisations)
    chain = verdict.delegation_chain_ids
    if item.policy_version not in index.policy_versions:
        assert "policy_version_mismatch" in found
    assert verdict.policy_version == (
        state.delegations[chain[-1]].policy_version if chain else item.policy_version
    )
    if not chain or item.proposed_delegation is None:
        assert "overprivileged_subdelegation" not in found


def test_a_public_stream_may_attempt_an_unknown_resource() -> None:
    snap = base_snapshot(delegations=(delegation("d-a"),))
    events = stream(ActionAttempted(attempt=attempt(resource_id="res-ghost")))
    state = materialize(snap, events, at_event_index=0)
    verdict = authorise(state, attempt(resource_id="res-ghost"), MAIN, events[0].occurred_at)
    # Both on their own evidence: the unknown resource, and an active delegation
    # that does not cover it.
    assert verdict.failure_reasons == ("capability_exceeded", "no_active_delegation")

"""Action-time and audit-time authorisation, and the seed's trace conventions.

Pure functions over :class:`~pytest_agentbench.worlds.authority.replay.WorldState`.
An action is authorised against the state immediately before its index with
its own time as the clock; at audit, the same attempt is authorised against
the state before the audit event with the audit event's time as the clock.
Time validity is ``valid_from <= clock < expires_at``.

Failure reasons are composed exactly as the original does (the format page's
"Failure reasons"); a decision is ``allow`` exactly when there are none.
``actor`` is the canonical binding (or, public-only, what an agent resolved
from the claims), never the attempt's claims themselves.

* Coverage, over the candidates (delegations granted in the state to the
  actor's logical agent by its originating principal); *capable* means not
  revoked, time-valid and covering resource, action, every requested scope and
  the purpose. First that applies: capable delegations disagreeing on policy
  version are refused as ``ambiguous_policy_version``; a capable one whose
  version equals the attempt's publishes the chain with no reason; one whose
  version differs adds ``policy_version_mismatch`` (the chain still published);
  a time-valid revoked candidate that covers gives ``delegation_revoked``; an
  active (unrevoked, time-valid) candidate gives ``capability_exceeded``; else
  ``no_active_delegation`` (expired or not-yet-valid coverage is absence).
* ``credential_invalid``: the presented credential is unknown in the state, its
  subject is not the actor's credential subject, or the clock is outside it.
* ``wrong_runtime``: the actor's runtime is unknown in the state or records
  another logical agent or runtime principal; or the credential passed its own
  check but does not allow the actor's runtime principal (an invalid credential
  suppresses this second source).
* ``no_active_delegation`` also when the actor's logical agent, the attempted
  resource or the actor's originating principal is unknown; otherwise
  ``tenant_mismatch`` when their ``organisation_id`` values are not all equal
  (a principal without one mismatches).
* ``policy_version_mismatch`` also when the attempt's version is not the
  version of any registered policy.
* ``overprivileged_subdelegation`` only when the attempt proposes a delegation
  and a chain is published, judged against the chain's leaf (see
  :func:`proposal_within_leaf`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from pytest_agentbench.sdk import AgentbenchError
from pytest_agentbench.worlds.authority.models import (
    ActionAttempted,
    Attempt,
    AuditPerformed,
    AuthorityTruth,
    CanonicalBinding,
    Capability,
    CaseLabel,
    Decision,
    Delegation,
    Event,
    FailureReason,
    PublicBundle,
    Scenario,
    WorldSnapshot,
)
from pytest_agentbench.worlds.authority.replay import (
    EVENTS_FILE,
    Replayer,
    WorldIndex,
    WorldState,
    child_refusal,
)

SIDE_EFFECTS: Mapping[str, str] = {
    "read": "read_recorded",
    "request_quotation": "quotation_requested",
    "compare": "comparison_recorded",
    "create_draft": "draft_created",
    "create_delegation": "delegation_created",
}
DEFAULT_SIDE_EFFECT = "action_recorded"
NO_SIDE_EFFECT = "none"


@dataclass(frozen=True)
class Actor:
    """Who performs an attempt: from a canonical binding, or resolved from public claims."""

    originating_principal_id: str | None
    logical_agent_id: str | None
    runtime_id: str | None
    runtime_principal_id: str | None
    credential_subject_id: str | None


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    failure_reasons: tuple[FailureReason, ...]
    delegation_chain_ids: tuple[str, ...]
    policy_version: str
    """The selected delegation's version, or the attempted one when nothing covers."""


# ---------------------------------------------------------------------------
# Authorisation


def _time_valid(valid_from: datetime, expires_at: datetime, clock: datetime) -> bool:
    return valid_from <= clock < expires_at


def _covers(capability: Capability, attempt: Attempt) -> bool:
    return (
        attempt.resource_id in capability.resource_ids
        and attempt.action in capability.actions
        and set(attempt.requested_scope) <= set(capability.scopes)
        and attempt.purpose == capability.purpose
    )


def _candidates(state: WorldState, actor: Actor) -> list[Delegation]:
    if actor.logical_agent_id is None or actor.originating_principal_id is None:
        return []
    key = (actor.logical_agent_id, actor.originating_principal_id)
    return [state.delegations[item] for item in state.delegations_by_grant.get(key, ())]


def _time_valid_delegation(delegation: Delegation, clock: datetime) -> bool:
    return _time_valid(delegation.valid_from, delegation.expires_at, clock)


@dataclass(frozen=True)
class Coverage:
    """How the candidate delegations resolve for one attempt."""

    chain: tuple[Delegation, ...]
    """The published chain, root first (empty unless a capable delegation exists)."""
    reason: FailureReason | None


def resolve_coverage(
    state: WorldState, attempt: Attempt, actor: Actor, clock: datetime
) -> Coverage:
    """Cases (A) and (0)-(4) of the format page, first that applies."""
    candidates = _candidates(state, actor)
    time_valid = [d for d in candidates if _time_valid_delegation(d, clock)]
    active = [d for d in time_valid if not state.is_revoked(d.id)]
    capable = [d for d in active if _covers(d.capability, attempt)]
    if capable:
        versions = {delegation.policy_version for delegation in capable}
        if len(versions) > 1:
            raise AgentbenchError(
                "ambiguous_policy_version",
                f"capable delegations {sorted(d.id for d in capable)} disagree on policy "
                f"version {sorted(versions)}",
            )
        selected = min(capable, key=lambda delegation: delegation.id)
        chain = [selected]
        while chain[-1].parent_delegation_id is not None:
            chain.append(state.delegations[chain[-1].parent_delegation_id])
        mismatch = selected.policy_version != attempt.policy_version
        return Coverage(tuple(reversed(chain)), "policy_version_mismatch" if mismatch else None)
    if any(state.is_revoked(d.id) and _covers(d.capability, attempt) for d in time_valid):
        return Coverage((), "delegation_revoked")
    if active:
        return Coverage((), "capability_exceeded")
    return Coverage((), "no_active_delegation")


def select_chain(
    state: WorldState, attempt: Attempt, actor: Actor, clock: datetime
) -> tuple[Delegation, ...]:
    """The published chain, root first; empty when no capable delegation exists."""
    return resolve_coverage(state, attempt, actor, clock).chain


def attenuated(child: Delegation, parent: Delegation) -> bool:
    """Whether ``child`` narrows ``parent`` as the original's attenuation rule requires.

    The parent may delegate; the child names it as parent and keeps its origin and
    policy version, and stays within its resources, actions, scopes, purpose and
    validity.
    """
    wanted, granted = child.capability, parent.capability
    return (
        granted.may_delegate
        and child.originating_principal_id == parent.originating_principal_id
        and child.parent_delegation_id == parent.id
        and child.policy_version == parent.policy_version
        and set(wanted.resource_ids) <= set(granted.resource_ids)
        and set(wanted.actions) <= set(granted.actions)
        and set(wanted.scopes) <= set(granted.scopes)
        and wanted.purpose == granted.purpose
        and parent.valid_from <= child.valid_from
        and child.expires_at <= parent.expires_at
    )


def proposal_within_leaf(state: WorldState, proposal: Delegation, leaf: Delegation) -> bool:
    """Whether a proposed delegation is a valid child of the selected leaf ``leaf``.

    :func:`attenuated`, and acceptable as a child grant of the leaf in ``state``:
    the organisation, origin, child-agent and delegator rules of
    :func:`~pytest_agentbench.worlds.authority.replay.child_refusal`.
    """
    return attenuated(proposal, leaf) and child_refusal(state, proposal, leaf) is None


def credential_valid(state: WorldState, attempt: Attempt, actor: Actor, clock: datetime) -> bool:
    credential = state.credentials.get(attempt.presented_credential_id)
    return (
        credential is not None
        and credential.subject_principal_id == actor.credential_subject_id
        and _time_valid(credential.valid_from, credential.expires_at, clock)
    )


def _wrong_runtime(state: WorldState, attempt: Attempt, actor: Actor, credential_ok: bool) -> bool:
    runtime = None if actor.runtime_id is None else state.runtimes.get(actor.runtime_id)
    if (
        runtime is None
        or runtime.logical_agent_id != actor.logical_agent_id
        or runtime.runtime_principal_id != actor.runtime_principal_id
    ):
        return True
    if not credential_ok:
        return False
    credential = state.credentials[attempt.presented_credential_id]
    return actor.runtime_principal_id not in credential.allowed_runtime_principal_ids


def _membership_reason(index: WorldIndex, attempt: Attempt, actor: Actor) -> FailureReason | None:
    """``no_active_delegation`` for an unknown party, else ``tenant_mismatch`` or none."""
    agent = None if actor.logical_agent_id is None else index.agents.get(actor.logical_agent_id)
    resource = index.resources.get(attempt.resource_id)
    origin = (
        None
        if actor.originating_principal_id is None
        else index.principals.get(actor.originating_principal_id)
    )
    if agent is None or resource is None or origin is None:
        return "no_active_delegation"
    organisations = {agent.organisation_id, resource.organisation_id, origin.organisation_id}
    if None in organisations or len(organisations) > 1:
        return "tenant_mismatch"
    return None


def authorise(state: WorldState, attempt: Attempt, actor: Actor, clock: datetime) -> Verdict:
    """Decide ``attempt`` by ``actor`` against ``state`` at ``clock`` (see the module doc)."""
    reasons: set[FailureReason] = set()
    credential_ok = credential_valid(state, attempt, actor, clock)
    if not credential_ok:
        reasons.add("credential_invalid")
    if _wrong_runtime(state, attempt, actor, credential_ok):
        reasons.add("wrong_runtime")
    membership = _membership_reason(state.index, attempt, actor)
    if membership is not None:
        reasons.add(membership)
    if attempt.policy_version not in state.index.policy_versions:
        reasons.add("policy_version_mismatch")
    coverage = resolve_coverage(state, attempt, actor, clock)
    if coverage.reason is not None:
        reasons.add(coverage.reason)
    chain = coverage.chain
    proposal = attempt.proposed_delegation
    if chain and proposal is not None and not proposal_within_leaf(state, proposal, chain[-1]):
        reasons.add("overprivileged_subdelegation")
    return Verdict(
        decision="deny" if reasons else "allow",
        failure_reasons=tuple(sorted(reasons)),
        delegation_chain_ids=tuple(delegation.id for delegation in chain),
        policy_version=chain[-1].policy_version if chain else attempt.policy_version,
    )


# ---------------------------------------------------------------------------
# Trace conventions


def required_evidence_refs(
    *, policy_version: str, credential_id: str, runtime_id: str | None, chain_ids: Sequence[str]
) -> tuple[str, ...]:
    """Sorted union of the policy, credential, runtime and chain delegation references.

    ``runtime_id`` is the canonical binding's runtime (or, public-only, the
    single runtime of the claimed runtime principal); ``None`` omits the group.
    """
    refs = {f"evidence:policy:{policy_version}", f"evidence:credential:{credential_id}"}
    if runtime_id is not None:
        refs.add(f"evidence:runtime:{runtime_id}")
    refs.update(f"evidence:delegation:{delegation_id}" for delegation_id in chain_ids)
    return tuple(sorted(refs))


def reconstructable(required: Sequence[str], retained: set[str] | frozenset[str]) -> bool:
    return set(required) <= retained


def side_effect_name(action: str, decision: Decision) -> str:
    if decision == "deny":
        return NO_SIDE_EFFECT
    return SIDE_EFFECTS.get(action, DEFAULT_SIDE_EFFECT)


def accountable_owner_chain(index: WorldIndex, logical_agent_id: str) -> tuple[str, ...]:
    """The agent's owner principal followed by its ownership ancestors."""
    agent = index.agents.get(logical_agent_id)
    return () if agent is None else index.ownership_chain(agent.owner_principal_id)


def on_identity_paths(
    index: WorldIndex,
    principal_id: str,
    *,
    runtime_principal_id: str | None,
    credential_subject_id: str | None,
) -> bool:
    """Whether ``principal_id`` is on the runtime-principal or credential-subject owner path."""
    return any(
        origin is not None and principal_id in index.ownership_chain(origin)
        for origin in (runtime_principal_id, credential_subject_id)
    )


def public_runtime_id(index: WorldIndex, runtime_principal_id: str | None) -> str | None:
    """The single listed runtime of a runtime principal; ``None`` when absent or ambiguous."""
    if runtime_principal_id is None:
        return None
    runtimes = index.runtimes_of_principal(runtime_principal_id)
    return runtimes[0].id if len(runtimes) == 1 else None


# ---------------------------------------------------------------------------
# Whole-stream assessment


@dataclass(frozen=True)
class Assessment:
    """One action event evaluated at action time and at its audit."""

    event: Event
    attempt: Attempt
    actor: Actor
    audit_event: Event
    at_action: Verdict
    at_audit: Verdict
    retained_at_audit: frozenset[str]

    def required_evidence(self, verdict: Verdict) -> tuple[str, ...]:
        return required_evidence_refs(
            policy_version=verdict.policy_version,
            credential_id=self.attempt.presented_credential_id,
            runtime_id=self.actor.runtime_id,
            chain_ids=verdict.delegation_chain_ids,
        )


def audit_events(events: Sequence[Event], scenarios: Mapping[str, Scenario]) -> dict[str, Event]:
    """The audit event of every action event: its scenario's, else the stream's last audit."""
    by_id = {event.id: event for event in events}
    action_ids = [event.id for event in events if isinstance(event.payload, ActionAttempted)]
    assigned: dict[str, Event] = {}
    for name, scenario in sorted(scenarios.items()):
        audit = by_id.get(scenario.audit_event_id)
        if audit is None or not isinstance(audit.payload, AuditPerformed):
            raise AgentbenchError(
                "invalid_audit_event",
                f"{scenario.audit_event_id!r} is not an audit_performed event",
                file=f"scenarios/{name}.json",
                field="audit_event_id",
            )
        for position, action_id in enumerate(scenario.action_event_ids):
            event = by_id.get(action_id)
            if event is None or not isinstance(event.payload, ActionAttempted):
                raise AgentbenchError(
                    "not_an_action_event",
                    f"{action_id!r} is not an action_attempted event",
                    file=f"scenarios/{name}.json",
                    field=f"action_event_ids[{position}]",
                )
            assigned.setdefault(action_id, audit)
    audits = [event for event in events if isinstance(event.payload, AuditPerformed)]
    for action_id in action_ids:
        if action_id not in assigned:
            if not audits:
                raise AgentbenchError(
                    "no_audit_event", f"action {action_id!r} has no audit event", file=EVENTS_FILE
                )
            assigned[action_id] = audits[-1]
    return assigned


def assess_actions(
    snapshot: WorldSnapshot,
    events: Sequence[Event],
    scenarios: Mapping[str, Scenario],
    actor_of: Callable[[Event, Attempt], Actor],
) -> list[Assessment]:
    """Evaluate every action event at action time and at its audit in one O(N) pass."""
    replayer = Replayer(snapshot, events)
    audit_of = audit_events(replayer.events, scenarios)
    actions = [
        (event, event.payload.attempt)
        for event in replayer.events
        if isinstance(event.payload, ActionAttempted)
    ]
    actions_by_audit: dict[str, list[tuple[Event, Attempt]]] = {}
    for event, attempt in actions:
        actions_by_audit.setdefault(audit_of[event.id].id, []).append((event, attempt))
    at_action: dict[str, Verdict] = {}
    at_audit: dict[str, Verdict] = {}
    retained: dict[str, frozenset[str]] = {}
    while not replayer.done:
        event = replayer.events[replayer.state.event_index]
        state = replayer.state
        payload = event.payload
        if isinstance(payload, ActionAttempted):
            with _located(event):
                actor = actor_of(event, payload.attempt)
                at_action[event.id] = authorise(state, payload.attempt, actor, event.occurred_at)
        for action_event, attempt in actions_by_audit.get(event.id, ()):
            with _located(action_event):
                actor = actor_of(action_event, attempt)
                at_audit[action_event.id] = authorise(state, attempt, actor, event.occurred_at)
        if event.id in actions_by_audit:
            retained[event.id] = frozenset(state.retained_evidence)
        replayer.step()
    return [
        Assessment(
            event=event,
            attempt=attempt,
            actor=actor_of(event, attempt),
            audit_event=audit_of[event.id],
            at_action=at_action[event.id],
            at_audit=at_audit[event.id],
            retained_at_audit=retained[audit_of[event.id].id],
        )
        for event, attempt in actions
    ]


@contextmanager
def _located(event: Event) -> Iterator[None]:
    """Locate a refusal raised while evaluating ``event`` at that event."""
    try:
        yield
    except AgentbenchError as exc:
        raise exc.at(file=EVENTS_FILE, field=f"[{event.event_index - 1}] ({event.id})") from None


# ---------------------------------------------------------------------------
# Evaluator truth


def derive_truth(
    public: PublicBundle,
    bindings: Sequence[CanonicalBinding],
    labels: Sequence[CaseLabel],
) -> list[AuthorityTruth]:
    """Authority truth for every action event, in event order, from public data and bindings."""
    action_ids = [event.id for event in public.events if isinstance(event.payload, ActionAttempted)]
    by_event = _keyed(
        "canonical_bindings.json", "bindings", [b.action_event_id for b in bindings], action_ids
    )
    _keyed("cases.jsonl", "", [label.action_event_id for label in labels], action_ids)
    # A binding naming an unknown runtime, agent or principal is composed into
    # reasons (wrong_runtime, no_active_delegation), as the original does; the
    # builder's trust boundary refuses such bindings when authoring.
    binding_of = {key: bindings[position] for key, position in by_event.items()}

    def actor_of(event: Event, _attempt: Attempt) -> Actor:
        binding = binding_of[event.id]
        return Actor(
            originating_principal_id=binding.originating_principal_id,
            logical_agent_id=binding.logical_agent_id,
            runtime_id=binding.runtime_id,
            runtime_principal_id=binding.runtime_principal_id,
            credential_subject_id=binding.credential_subject_id,
        )

    assessments = assess_actions(public.snapshot, public.events, public.scenarios, actor_of)
    truths = []
    for assessment in assessments:
        action, audit = assessment.at_action, assessment.at_audit
        required = assessment.required_evidence(action)
        truths.append(
            AuthorityTruth(
                action_event_id=assessment.event.id,
                decision_at_action=action.decision,
                decision_at_audit=audit.decision,
                failure_reasons_at_action=action.failure_reasons,
                failure_reasons_at_audit=audit.failure_reasons,
                delegation_chain_ids=action.delegation_chain_ids,
                expected_policy_version=action.policy_version,
                required_evidence_refs=required,
                reconstructable_at_audit=reconstructable(required, assessment.retained_at_audit),
                expected_side_effect=side_effect_name(assessment.attempt.action, action.decision),
            )
        )
    return truths


def _keyed(file: str, prefix: str, keys: Sequence[str], expected: Sequence[str]) -> dict[str, int]:
    """Position of each key; refuses duplicates, keys that are not action events, and gaps."""
    wanted = set(expected)
    found: dict[str, int] = {}
    for position, key in enumerate(keys):
        where = f"{prefix}[{position}].action_event_id"
        if key in found:
            raise AgentbenchError(
                "duplicate_evaluator_key", f"{key!r} appears more than once", file=file, field=where
            )
        if key not in wanted:
            raise AgentbenchError(
                "unexpected_evaluator_key",
                f"{key!r} is not an action event",
                file=file,
                field=where,
            )
        found[key] = position
    missing = [key for key in expected if key not in found]
    if missing:
        raise AgentbenchError(
            "missing_evaluator_key", f"no row for action events {missing}", file=file
        )
    return found

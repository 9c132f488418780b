"""Replay of the public event stream into the world state at a cursor.

Index 0 is the initial snapshot: every record the public files list that no
event introduces. Grants, credential issues, runtime spawns, revocations
(cascading to every descendant delegation) and evidence discards take effect
at their own index. The complete stream is validated before any prefix is
returned, so an invalid suffix cannot hide behind an earlier cursor.

Cursors: ``at_event_index`` (0..N) selects the state after that many events;
``at_time`` (UTC) selects the state after every event that occurred at or
before it; giving neither selects the full stream; giving both is refused.

Delegation provenance is checked when a grant takes effect (bounded v1 rules):

* every delegation: the originating principal, the delegator and the
  delegated resources all name the grantee agent's organisation (a principal
  without an organisation does not);
* root: the delegator is the origin or lies on every delegated resource
  owner's inclusive ownership chain;
* child: the parent is already granted and unrevoked, shares the child's
  origin, and the child's grantee names the parent grantee as its parent
  agent; the delegator is the parent's origin or delegator, an accountable
  owner of the parent agent, or a principal on the runtime path (runtime
  principal or the ownership chains of the runtime principal and the runtime
  owner) of a parent-agent runtime that took effect before the child grant
  (records of the initial snapshot count as coexisting).
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, TypeVar

from pytest_agentbench.sdk import AgentbenchError
from pytest_agentbench.worlds.authority.models import (
    ActionAttempted,
    AuditPerformed,
    Credential,
    CredentialIssued,
    Delegation,
    DelegationGranted,
    DelegationRevoked,
    Event,
    EvidenceDiscarded,
    IntroducedKind,
    LogicalAgent,
    Organisation,
    Principal,
    Resource,
    Runtime,
    RuntimeSpawned,
    WorldSnapshot,
    introductions,
)

EVENTS_FILE = "public_events.jsonl"


@dataclass(frozen=True)
class WorldIndex:
    """The records that never change during replay, by id, plus graph helpers."""

    snapshot: WorldSnapshot
    organisations: dict[str, Organisation]
    principals: dict[str, Principal]
    agents: dict[str, LogicalAgent]
    resources: dict[str, Resource]
    listed_runtimes: dict[str, Runtime]
    listed_credentials: dict[str, Credential]
    listed_delegations: dict[str, Delegation]
    policy_versions: frozenset[str]
    runtime_path_principals: dict[str, frozenset[str]] = field(default_factory=dict)
    """Per logical agent: every principal on a path of one of its listed runtimes."""
    runtimes_by_principal: dict[str, tuple[Runtime, ...]] = field(default_factory=dict)
    """Listed runtimes by their runtime principal."""

    def ownership_chain(self, principal_id: str) -> tuple[str, ...]:
        """``principal_id`` followed by its owners, upward (acyclic by validation)."""
        chain: list[str] = []
        current: str | None = principal_id
        while current is not None and current in self.principals:
            chain.append(current)
            current = self.principals[current].owner_principal_id
        return tuple(chain)

    def tenant_of(self, organisation_id: str | None) -> str | None:
        if organisation_id is None or organisation_id not in self.organisations:
            return None
        return self.organisations[organisation_id].tenant_id

    def runtimes_of_principal(self, principal_id: str) -> tuple[Runtime, ...]:
        """Every listed runtime whose runtime principal is ``principal_id``."""
        return self.runtimes_by_principal.get(principal_id, ())


@dataclass
class WorldState:
    """The world after ``event_index`` events. ``time`` is the last applied event's."""

    index: WorldIndex
    event_index: int = 0
    time: datetime | None = None
    runtimes: dict[str, Runtime] = field(default_factory=dict)
    runtime_effective_at: dict[str, int] = field(default_factory=dict)
    spawned_path_principals: dict[str, set[str]] = field(default_factory=dict)
    """Per logical agent: every principal on a path of one of its spawned runtimes."""
    credentials: dict[str, Credential] = field(default_factory=dict)
    delegations: dict[str, Delegation] = field(default_factory=dict)
    granted_at: dict[str, int] = field(default_factory=dict)
    revoked_at: dict[str, int] = field(default_factory=dict)
    delegations_by_grant: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """Granted delegation ids by (grantee agent, originating principal)."""
    children: dict[str, list[str]] = field(default_factory=dict)
    retained_evidence: set[str] = field(default_factory=set)
    discarded_evidence: set[str] = field(default_factory=set)

    def is_revoked(self, delegation_id: str) -> bool:
        return delegation_id in self.revoked_at

    def copy(self) -> WorldState:
        """An independent copy (the static index is shared)."""
        return WorldState(
            index=self.index,
            event_index=self.event_index,
            time=self.time,
            runtimes=dict(self.runtimes),
            runtime_effective_at=dict(self.runtime_effective_at),
            spawned_path_principals={
                agent: set(principals) for agent, principals in self.spawned_path_principals.items()
            },
            credentials=dict(self.credentials),
            delegations=dict(self.delegations),
            granted_at=dict(self.granted_at),
            revoked_at=dict(self.revoked_at),
            delegations_by_grant=copy.deepcopy(self.delegations_by_grant),
            children=copy.deepcopy(self.children),
            retained_evidence=set(self.retained_evidence),
            discarded_evidence=set(self.discarded_evidence),
        )


# ---------------------------------------------------------------------------
# Snapshot validation


def build_index(snapshot: WorldSnapshot) -> WorldIndex:
    """Index the snapshot and refuse duplicate ids, dangling references and cycles."""
    organisation = snapshot.organisation
    index = WorldIndex(
        snapshot=snapshot,
        organisations=_unique("organisation.json", "organisations", organisation.organisations),
        principals=_unique("principals.jsonl", "", snapshot.principals),
        agents=_unique("agents.jsonl", "", snapshot.agents),
        resources=_unique("resources.jsonl", "", snapshot.resources),
        listed_runtimes=_unique("runtimes.jsonl", "", snapshot.runtimes),
        listed_credentials=_unique("public_credentials.jsonl", "", snapshot.credentials),
        listed_delegations=_unique("public_delegations.jsonl", "", snapshot.delegations),
        policy_versions=frozenset(policy.version for policy in organisation.policies),
    )
    _unique("organisation.json", "departments", organisation.departments)
    _unique("organisation.json", "policies", organisation.policies)
    versions: set[str] = set()
    for position, policy in enumerate(organisation.policies):
        # The original keys policies by version: two sharing one cannot be told apart.
        if policy.version in versions:
            raise AgentbenchError(
                "duplicate_id",
                f"policy version {policy.version!r} appears more than once",
                file="organisation.json",
                field=f"policies[{position}].version",
            )
        versions.add(policy.version)
    _check_references(index)
    _refuse_cycles(
        "principals.jsonl",
        "owner_principal_id",
        {pid: p.owner_principal_id for pid, p in index.principals.items()},
    )
    _refuse_cycles(
        "agents.jsonl",
        "parent_agent_id",
        {aid: a.parent_agent_id for aid, a in index.agents.items()},
    )
    paths: dict[str, set[str]] = {}
    by_principal: dict[str, list[Runtime]] = {}
    for runtime in index.listed_runtimes.values():
        paths.setdefault(runtime.logical_agent_id, set()).update(_runtime_path(index, runtime))
        by_principal.setdefault(runtime.runtime_principal_id, []).append(runtime)
    index.runtimes_by_principal.update(
        {principal: tuple(runtimes) for principal, runtimes in by_principal.items()}
    )
    index.runtime_path_principals.update(
        {agent: frozenset(principals) for agent, principals in paths.items()}
    )
    _refuse_cycles(
        "public_delegations.jsonl",
        "parent_delegation_id",
        {did: d.parent_delegation_id for did, d in index.listed_delegations.items()},
        code="delegation_cycle",
    )
    return index


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


_T = TypeVar("_T", bound=_HasId)


def _unique(file: str, prefix: str, records: Sequence[_T]) -> dict[str, _T]:
    found: dict[str, _T] = {}
    for position, record in enumerate(records):
        if record.id in found:
            raise AgentbenchError(
                "duplicate_id",
                f"id {record.id!r} appears more than once",
                file=file,
                field=f"{prefix}[{position}].id",
            )
        found[record.id] = record
    return found


Ref = tuple[str, str | None, Collection[str], str]
"""(field path, referenced id or None, the ids it may name, what they are)."""


def _require(refs: Iterable[Ref], *, file: str, where: str) -> None:
    for name, value, known, what in refs:
        if value is not None and value not in known:
            raise AgentbenchError(
                "unknown_reference",
                f"{what} {value!r} does not exist",
                file=file,
                field=f"{where}.{name}" if where else name,
            )


def _check_references(index: WorldIndex) -> None:
    snapshot = index.snapshot
    orgs, principals, agents = index.organisations.keys(), index.principals, index.agents
    departments = {department.id for department in snapshot.organisation.departments}
    for pos, department in enumerate(snapshot.organisation.departments):
        _require(
            [("organisation_id", department.organisation_id, orgs, "organisation")],
            file="organisation.json",
            where=f"departments[{pos}]",
        )
    for pos, principal in enumerate(snapshot.principals):
        refs: list[Ref] = [
            ("organisation_id", principal.organisation_id, orgs, "organisation"),
            ("department_id", principal.department_id, departments, "department"),
            ("owner_principal_id", principal.owner_principal_id, principals, "principal"),
        ]
        _require(refs, file="principals.jsonl", where=f"[{pos}]")
    for pos, agent in enumerate(snapshot.agents):
        refs = [
            ("organisation_id", agent.organisation_id, orgs, "organisation"),
            ("owner_principal_id", agent.owner_principal_id, principals, "principal"),
            ("parent_agent_id", agent.parent_agent_id, agents, "logical agent"),
        ]
        _require(refs, file="agents.jsonl", where=f"[{pos}]")
    for pos, runtime in enumerate(snapshot.runtimes):
        _check_runtime(index, runtime, where=f"[{pos}]")
    for pos, resource in enumerate(snapshot.resources):
        refs = [
            ("organisation_id", resource.organisation_id, orgs, "organisation"),
            ("owner_principal_id", resource.owner_principal_id, principals, "principal"),
        ]
        _require(refs, file="resources.jsonl", where=f"[{pos}]")
    for pos, credential in enumerate(snapshot.credentials):
        refs = [
            ("issuer_principal_id", credential.issuer_principal_id, principals, "principal"),
            ("subject_principal_id", credential.subject_principal_id, principals, "principal"),
        ]
        refs += [
            (f"allowed_runtime_principal_ids[{item}]", allowed, principals, "principal")
            for item, allowed in enumerate(credential.allowed_runtime_principal_ids)
        ]
        _require(refs, file="public_credentials.jsonl", where=f"[{pos}]")
    for pos, delegation in enumerate(snapshot.delegations):
        _require(
            _delegation_refs(index, delegation), file="public_delegations.jsonl", where=f"[{pos}]"
        )
        if delegation.policy_version not in index.policy_versions:
            raise AgentbenchError(
                "unknown_policy_version",
                f"policy version {delegation.policy_version!r} is not registered "
                "in organisation.json",
                file="public_delegations.jsonl",
                field=f"[{pos}].policy_version",
            )


def _check_runtime(index: WorldIndex, runtime: Runtime, *, where: str) -> None:
    principals = index.principals
    refs: list[Ref] = [
        ("organisation_id", runtime.organisation_id, index.organisations.keys(), "organisation"),
        ("logical_agent_id", runtime.logical_agent_id, index.agents, "logical agent"),
        ("runtime_principal_id", runtime.runtime_principal_id, principals, "principal"),
        ("owner_principal_id", runtime.owner_principal_id, principals, "principal"),
    ]
    _require(refs, file="runtimes.jsonl", where=where)
    agent = index.agents[runtime.logical_agent_id]
    if agent.organisation_id != runtime.organisation_id:
        raise AgentbenchError(
            "runtime_organisation_mismatch",
            f"runtime {runtime.id!r} belongs to {runtime.organisation_id!r} but its logical "
            f"agent {agent.id!r} to {agent.organisation_id!r}",
            file="runtimes.jsonl",
            field=f"{where}.organisation_id",
        )


def _delegation_refs(index: WorldIndex, delegation: Delegation) -> list[Ref]:
    principals = index.principals
    refs: list[Ref] = [
        ("originating_principal_id", delegation.originating_principal_id, principals, "principal"),
        ("delegator_principal_id", delegation.delegator_principal_id, principals, "principal"),
        ("grantee_agent_id", delegation.grantee_agent_id, index.agents, "logical agent"),
        (
            "parent_delegation_id",
            delegation.parent_delegation_id,
            index.listed_delegations,
            "delegation",
        ),
    ]
    refs += [
        (f"capability.resource_ids[{item}]", resource_id, index.resources, "resource")
        for item, resource_id in enumerate(delegation.capability.resource_ids)
    ]
    return refs


def _refuse_cycles(
    file: str, relation: str, parent_of: dict[str, str | None], code: str = "ownership_cycle"
) -> None:
    settled: set[str] = set()
    for start in parent_of:
        path: list[str] = []
        on_path: set[str] = set()
        current: str | None = start
        while current is not None and current not in settled and current in parent_of:
            if current in on_path:
                raise AgentbenchError(
                    code,
                    f"{relation} forms a cycle through {current!r}",
                    file=file,
                    field=relation,
                )
            on_path.add(current)
            path.append(current)
            current = parent_of[current]
        settled.update(path)


# ---------------------------------------------------------------------------
# Stream validation


def _check_stream(
    index: WorldIndex, events: Sequence[Event]
) -> dict[tuple[IntroducedKind, str], int]:
    seen_ids: set[str] = set()
    previous: datetime | None = None
    for position, event in enumerate(events):
        where = f"[{position}]"
        if event.event_index != position + 1:
            raise AgentbenchError(
                "non_contiguous_event_index",
                f"event {event.id!r} has index {event.event_index}, expected {position + 1}",
                file=EVENTS_FILE,
                field=f"{where}.event_index",
            )
        if event.id in seen_ids:
            raise AgentbenchError(
                "duplicate_event_id",
                f"event id {event.id!r} appears more than once",
                file=EVENTS_FILE,
                field=f"{where}.id",
            )
        seen_ids.add(event.id)
        if previous is not None and event.occurred_at <= previous:
            raise AgentbenchError(
                "non_increasing_timestamp",
                f"event {event.id!r} does not occur strictly after the previous event",
                file=EVENTS_FILE,
                field=f"{where}.occurred_at",
            )
        previous = event.occurred_at
        _check_payload_references(index, event, where=f"{where}.payload")
    try:
        return introductions(index.snapshot, events)
    except AgentbenchError as exc:
        raise exc.at(file=EVENTS_FILE) from None


def _check_payload_references(index: WorldIndex, event: Event, *, where: str) -> None:
    payload = event.payload
    if isinstance(payload, DelegationRevoked):
        refs: list[Ref] = [
            ("delegation_id", payload.delegation_id, index.listed_delegations, "delegation")
        ]
        _require(refs, file=EVENTS_FILE, where=where)
    elif isinstance(payload, ActionAttempted):
        attempt = payload.attempt
        principals = index.principals
        refs = [
            (
                "originating_principal_claim",
                attempt.originating_principal_claim,
                principals,
                "principal",
            ),
            ("runtime_principal_claim", attempt.runtime_principal_claim, principals, "principal"),
            ("attributed_actor_claim", attempt.attributed_actor_claim, principals, "principal"),
            ("logical_agent_claim", attempt.logical_agent_claim, index.agents, "logical agent"),
            (
                "presented_credential_id",
                attempt.presented_credential_id,
                index.listed_credentials,
                "credential",
            ),
        ]
        # The attempted resource is not required to exist here: the original's scorer
        # judges an attempt on an unknown resource as no_active_delegation (see engine);
        # only building a world refuses it (builder.check_build_stream), as its builder does.
        _require(refs, file=EVENTS_FILE, where=f"{where}.attempt")
        if attempt.proposed_delegation is not None:
            proposed = _delegation_refs(index, attempt.proposed_delegation)
            _require(proposed, file=EVENTS_FILE, where=f"{where}.attempt.proposed_delegation")


# ---------------------------------------------------------------------------
# The incremental replayer


class Replayer:
    """Applies a validated stream one event at a time.

    Construction validates the snapshot and the stream's structure (indices,
    ids, timestamps, references, introductions) in O(N); each :meth:`step`
    then applies one event in amortised O(1) (a cascading revocation visits
    each descendant once, and a delegation is revoked at most once), so
    replaying every prefix of an N-event stream costs O(N) in total.
    ``state`` is the live state: it changes on the next step, so copy it
    (:meth:`WorldState.copy`) to keep it.
    """

    def __init__(self, snapshot: WorldSnapshot, events: Sequence[Event]) -> None:
        self.index = build_index(snapshot)
        self.events = tuple(events)
        self._effective = _check_stream(self.index, self.events)
        self.state = WorldState(index=self.index)
        self._apply_initial()

    @property
    def done(self) -> bool:
        return self.state.event_index >= len(self.events)

    @property
    def next_event(self) -> Event | None:
        return None if self.done else self.events[self.state.event_index]

    def step(self) -> Event:
        """Apply the next event and return it."""
        event = self.next_event
        if event is None:
            raise AgentbenchError("invalid_cursor", "the stream has no further event")
        self._apply(event)
        return event

    def advance_to(self, event_index: int) -> WorldState:
        """Apply events until ``event_index`` events are applied (never backwards)."""
        while self.state.event_index < event_index:
            self.step()
        return self.state

    # -- initial snapshot ---------------------------------------------------

    def _apply_initial(self) -> None:
        state = self.state
        state.retained_evidence.update(self.index.snapshot.organisation.initial_evidence_refs)
        for runtime in self.index.snapshot.runtimes:
            if self._effective[("runtime", runtime.id)] == 0:
                self._spawn(runtime, 0)
        for credential in self.index.snapshot.credentials:
            if self._effective[("credential", credential.id)] == 0:
                state.credentials[credential.id] = credential
        initial = [
            delegation
            for delegation in self.index.snapshot.delegations
            if self._effective[("delegation", delegation.id)] == 0
        ]
        for delegation in _parents_first(initial):
            self._grant(delegation, file="public_delegations.jsonl", field=delegation.id)

    # -- events -------------------------------------------------------------

    def _apply(self, event: Event) -> None:
        state = self.state
        payload = event.payload
        state.event_index = event.event_index
        state.time = event.occurred_at
        # As the original does: an event's own evidence is recorded before its
        # effect, so an evidence_discarded event may discard what only it records.
        state.retained_evidence.update(event.evidence_refs)
        if isinstance(payload, DelegationGranted):
            self._grant(
                payload.delegation,
                file=EVENTS_FILE,
                field=f"[{event.event_index - 1}].payload.delegation",
            )
        elif isinstance(payload, CredentialIssued):
            state.credentials[payload.credential.id] = payload.credential
        elif isinstance(payload, RuntimeSpawned):
            self._spawn(payload.runtime, event.event_index)
        elif isinstance(payload, DelegationRevoked):
            self._revoke(payload.delegation_id, event)
        elif isinstance(payload, EvidenceDiscarded):
            self._discard(payload.evidence_refs, event)
        elif not isinstance(payload, ActionAttempted | AuditPerformed):
            raise AssertionError(f"unhandled payload {payload!r}")

    def _spawn(self, runtime: Runtime, event_index: int) -> None:
        state = self.state
        state.runtimes[runtime.id] = runtime
        state.runtime_effective_at[runtime.id] = event_index
        state.spawned_path_principals.setdefault(runtime.logical_agent_id, set()).update(
            _runtime_path(self.index, runtime)
        )

    def _grant(self, delegation: Delegation, *, file: str, field: str) -> None:
        try:
            check_grant_provenance(self.state, delegation)
        except AgentbenchError as exc:
            raise exc.at(file=file, field=field) from None
        state = self.state
        state.delegations[delegation.id] = delegation
        state.granted_at[delegation.id] = state.event_index
        key = (delegation.grantee_agent_id, delegation.originating_principal_id)
        state.delegations_by_grant.setdefault(key, []).append(delegation.id)
        if delegation.parent_delegation_id is not None:
            state.children.setdefault(delegation.parent_delegation_id, []).append(delegation.id)

    def _revoke(self, delegation_id: str, event: Event) -> None:
        state = self.state
        if delegation_id not in state.delegations:
            raise AgentbenchError(
                "revocation_before_grant",
                f"event {event.id!r} revokes {delegation_id!r}, which is not granted yet",
                file=EVENTS_FILE,
                field=f"[{event.event_index - 1}].payload.delegation_id",
            )
        pending = [delegation_id]
        while pending:
            current = pending.pop()
            if current in state.revoked_at:
                continue
            state.revoked_at[current] = event.event_index
            pending.extend(state.children.get(current, ()))

    def _discard(self, refs: Iterable[str], event: Event) -> None:
        state = self.state
        for ref in refs:
            if ref not in state.retained_evidence:
                raise AgentbenchError(
                    "evidence_not_retained",
                    f"event {event.id!r} discards {ref!r}, which is not retained",
                    file=EVENTS_FILE,
                    field=f"[{event.event_index - 1}].payload.evidence_refs",
                )
            state.retained_evidence.discard(ref)
            state.discarded_evidence.add(ref)


def _parents_first(delegations: Sequence[Delegation]) -> list[Delegation]:
    """Initial delegations ordered so every parent precedes its children."""
    by_id = {delegation.id: delegation for delegation in delegations}
    ordered: list[Delegation] = []
    placed: set[str] = set()
    # Iterative, so a long parent chain cannot exhaust the recursion limit;
    # build_index has already refused parent cycles.
    for delegation in sorted(delegations, key=lambda item: item.id):
        pending: list[Delegation] = []
        current: Delegation | None = delegation
        while current is not None and current.id not in placed:
            pending.append(current)
            parent = current.parent_delegation_id
            current = by_id.get(parent) if parent is not None else None
        for item in reversed(pending):
            placed.add(item.id)
            ordered.append(item)
    return ordered


# ---------------------------------------------------------------------------
# Grant provenance


def check_grant_provenance(state: WorldState, delegation: Delegation) -> None:
    """Refuse a grant that breaks the v1 provenance rules (see the module doc)."""
    if delegation.parent_delegation_id is not None:
        _check_child(state, delegation)
        return
    refusal = organisation_refusal(state.index, delegation)
    if refusal is not None:
        raise refusal
    _check_root_delegator(state.index, delegation)


def organisation_refusal(index: WorldIndex, delegation: Delegation) -> AgentbenchError | None:
    """Why ``delegation`` leaves its grantee's organisation, or ``None`` when it does not.

    As the original's bounded v1 rule: the originating principal, the delegator
    and every delegated resource must name the grantee agent's organisation; a
    principal without one does not.
    """
    organisation = index.agents[delegation.grantee_agent_id].organisation_id
    parties = {
        f"originating principal {delegation.originating_principal_id!r}": index.principals[
            delegation.originating_principal_id
        ].organisation_id,
        f"delegator {delegation.delegator_principal_id!r}": index.principals[
            delegation.delegator_principal_id
        ].organisation_id,
        **{
            f"resource {rid!r}": index.resources[rid].organisation_id
            for rid in delegation.capability.resource_ids
        },
    }
    outside = [
        f"{party} ({found or 'no organisation'})"
        for party, found in parties.items()
        if found != organisation
    ]
    if not outside:
        return None
    return AgentbenchError(
        "cross_organisation_delegation",
        f"delegation {delegation.id!r} to an agent of {organisation!r} names " + ", ".join(outside),
    )


def _check_root_delegator(index: WorldIndex, delegation: Delegation) -> None:
    delegator = delegation.delegator_principal_id
    if delegator == delegation.originating_principal_id:
        return
    for resource_id in delegation.capability.resource_ids:
        owner = index.resources[resource_id].owner_principal_id
        if delegator not in index.ownership_chain(owner):
            raise AgentbenchError(
                "unrelated_root_delegator",
                f"delegation {delegation.id!r}: delegator {delegator!r} is neither the origin "
                f"nor on the ownership chain of resource {resource_id!r}",
            )


def _check_child(state: WorldState, delegation: Delegation) -> None:
    parent_id = delegation.parent_delegation_id
    assert parent_id is not None
    parent = state.delegations.get(parent_id)
    if parent is None:
        raise AgentbenchError(
            "parent_not_granted",
            f"delegation {delegation.id!r} names parent {parent_id!r}, not granted yet",
        )
    if state.is_revoked(parent_id):
        raise AgentbenchError(
            "parent_revoked",
            f"delegation {delegation.id!r} names revoked parent {parent_id!r}",
        )
    refusal = child_refusal(state, delegation, parent)
    if refusal is not None:
        raise refusal


def child_refusal(
    state: WorldState, delegation: Delegation, parent: Delegation
) -> AgentbenchError | None:
    """Why ``delegation`` may not be a child of ``parent`` in ``state``, or ``None``.

    The rules a child grant is checked against during replay, and the ones a
    proposed sub-delegation is judged by against the selected leaf: the
    delegation stays in its grantee's organisation, shares the parent's origin,
    goes to an agent that names the parent's grantee as its parent agent, and
    is made by an authorised delegator. (The original also requires the parent
    grantee to share the grantee's organisation; that follows here from the
    shared origin, which lies in both.)
    """
    index = state.index
    refusal = organisation_refusal(index, delegation)
    if refusal is not None:
        return refusal
    if delegation.originating_principal_id != parent.originating_principal_id:
        return AgentbenchError(
            "origin_mismatch",
            f"delegation {delegation.id!r} has a different origin than its parent {parent.id!r}",
        )
    grantee = index.agents[delegation.grantee_agent_id]
    if grantee.parent_agent_id != parent.grantee_agent_id:
        return AgentbenchError(
            "child_agent_not_parent_grantee",
            f"delegation {delegation.id!r}: agent {grantee.id!r} does not name the parent "
            f"grantee {parent.grantee_agent_id!r} as its parent",
        )
    delegator = delegation.delegator_principal_id
    if authorised_child_delegator(state, parent, delegator):
        return None
    if delegator in index.runtime_path_principals.get(parent.grantee_agent_id, ()):
        return AgentbenchError(
            "runtime_spawned_after_grant",
            f"delegation {delegation.id!r}: delegator {delegator!r} acts through a parent-agent "
            "runtime that is not spawned before the grant",
        )
    return AgentbenchError(
        "unrelated_child_delegator",
        f"delegation {delegation.id!r}: delegator {delegator!r} is not related to parent "
        f"{parent.id!r}",
    )


def authorised_child_delegator(state: WorldState, parent: Delegation, delegator: str) -> bool:
    """Whether ``delegator`` may grant a child of ``parent`` in ``state``.

    The parent's origin or delegator, a principal on the ownership chain of the
    parent grantee's owner, or one on a path of a runtime of the parent grantee
    spawned so far (runtimes spawned so far all precede a grant being checked;
    the per-agent principal sets keep this O(1)).
    """
    if delegator in (parent.originating_principal_id, parent.delegator_principal_id):
        return True
    parent_agent = state.index.agents.get(parent.grantee_agent_id)
    if parent_agent is None:
        return False
    if delegator in state.index.ownership_chain(parent_agent.owner_principal_id):
        return True
    return delegator in state.spawned_path_principals.get(parent_agent.id, ())


def _runtime_path(index: WorldIndex, runtime: Runtime) -> set[str]:
    return {
        *index.ownership_chain(runtime.runtime_principal_id),
        *index.ownership_chain(runtime.owner_principal_id),
    }


# ---------------------------------------------------------------------------
# Cursors


def materialize(
    snapshot: WorldSnapshot,
    events: Sequence[Event],
    *,
    at_event_index: int | None = None,
    at_time: datetime | None = None,
) -> WorldState:
    """The world state at a cursor, after validating the complete stream."""
    target = _cursor_index(events, at_event_index, at_time)
    replayer = Replayer(snapshot, events)
    kept = replayer.state.copy() if target == 0 else None
    while not replayer.done:
        replayer.step()
        if replayer.state.event_index == target:
            kept = replayer.state.copy()
    assert kept is not None
    return kept


def _cursor_index(
    events: Sequence[Event], at_event_index: int | None, at_time: datetime | None
) -> int:
    if at_event_index is not None and at_time is not None:
        raise AgentbenchError("ambiguous_cursor", "give at_event_index or at_time, not both")
    if at_event_index is not None:
        if isinstance(at_event_index, bool) or not 0 <= at_event_index <= len(events):
            raise AgentbenchError(
                "invalid_cursor",
                f"at_event_index {at_event_index!r} is outside 0..{len(events)}",
            )
        return at_event_index
    if at_time is not None:
        offset = at_time.utcoffset()
        if offset is None or offset.total_seconds() != 0:
            raise AgentbenchError("invalid_cursor", "at_time must be timezone-aware UTC")
        return sum(1 for event in events if event.occurred_at <= at_time)
    return len(events)

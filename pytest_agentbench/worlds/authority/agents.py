"""Built-in deterministic agents that trace actions from the public bundle only.

:class:`ReferenceAgent` replays the stream (action-time state for ``decision``,
audit-time for ``decision_at_audit``) and resolves identity from the claims:

* originating principal and runtime principal: the attempt's claims;
* logical agent: the attempt's ``logical_agent_claim``, else the logical agent
  of the claimed runtime principal's single listed runtime;
* runtime (for the runtime evidence reference and the runtime check): the
  single listed runtime of the claimed runtime principal, none when the
  principal has zero or several runtimes;
* credential subject: the presented credential's subject;
* attributed actor: the ``attributed_actor_claim`` when it names the owner of
  the claimed runtime principal or the owner of the presented credential's
  subject (a claim the public data corroborates); otherwise the owner of the
  runtime principal (the principal itself when it has no owner);
* accountable owner chain: the logical agent's owner and its ownership ancestors.

The two public-only baselines are exactly the original's (format page,
"Public-only baselines"): :class:`AlwaysDenyAgent` denies and copies the public
claims; :class:`CurrentStateAgent` judges every action against the state just
before its audit, at the audit's time: a final-state policy check, not replay.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from pytest_agentbench.sdk import AgentbenchError
from pytest_agentbench.worlds.authority.engine import (
    Actor,
    Assessment,
    Verdict,
    accountable_owner_chain,
    assess_actions,
    audit_events,
    authorise,
    public_runtime_id,
    reconstructable,
    required_evidence_refs,
    side_effect_name,
)
from pytest_agentbench.worlds.authority.models import (
    ActionAttempted,
    Attempt,
    Event,
    PublicBundle,
    format_utc,
)
from pytest_agentbench.worlds.authority.replay import (
    Replayer,
    WorldIndex,
    WorldState,
    build_index,
)
from pytest_agentbench.worlds.authority.trace import ObservedActionTrace

ROW_FIELDS: tuple[str, ...] = tuple(
    name for name in ObservedActionTrace.model_fields if name != "synthetic"
)
"""The submission-row fields the agents write (``synthetic`` is left to its default)."""

Row = dict[str, Any]


def _owner(index: WorldIndex, principal_id: str | None) -> str | None:
    """A principal's owner; the principal itself when it has none or is unknown."""
    if principal_id is None or principal_id not in index.principals:
        return principal_id
    owner = index.principals[principal_id].owner_principal_id
    return owner if owner is not None else principal_id


def credential_subject(index: WorldIndex, attempt: Attempt) -> str | None:
    credential = index.listed_credentials.get(attempt.presented_credential_id)
    return None if credential is None else credential.subject_principal_id


def attributed_actor(index: WorldIndex, attempt: Attempt) -> str | None:
    """The reference agent's attribution rule (see the module doc)."""
    runtime_owner = _owner(index, attempt.runtime_principal_claim)
    subject = credential_subject(index, attempt)
    corroborated = {runtime_owner, None if subject is None else _owner(index, subject)}
    claim = attempt.attributed_actor_claim
    if claim is not None and claim in corroborated:
        return claim
    return runtime_owner


def public_actor(index: WorldIndex) -> Callable[[Event, Attempt], Actor]:
    """Resolve an attempt's actor from its public claims (see the module doc)."""

    def actor_of(_event: Event, attempt: Attempt) -> Actor:
        runtime_id = public_runtime_id(index, attempt.runtime_principal_claim)
        agent_id = attempt.logical_agent_claim
        if agent_id is None and runtime_id is not None:
            agent_id = index.listed_runtimes[runtime_id].logical_agent_id
        return Actor(
            originating_principal_id=attempt.originating_principal_claim,
            logical_agent_id=agent_id,
            runtime_id=runtime_id,
            runtime_principal_id=attempt.runtime_principal_claim,
            credential_subject_id=credential_subject(index, attempt),
        )

    return actor_of


def _action_ids(bundle: PublicBundle) -> list[str]:
    return [event.id for event in bundle.events if isinstance(event.payload, ActionAttempted)]


def _unknown_event(event_id: str) -> AgentbenchError:
    return AgentbenchError(
        "unexpected_event_id", f"{event_id!r} is not an action event", field="event_id"
    )


class _MemoAgent(ABC):
    """Trace the whole stream once per bundle, answer per event.

    A row may be an :class:`AgentbenchError` instead: the agent refuses that
    action, and raising it lets the harness count the case as ``agent_error``.
    """

    agent_id = ""
    description = ""

    def __init__(self) -> None:
        self._memo: tuple[str, dict[str, Row | AgentbenchError]] | None = None

    @abstractmethod
    def _trace_all(self, bundle: PublicBundle) -> dict[str, Row | AgentbenchError]:
        """Every action event's row (or refusal), by event id."""

    def _rows(self, bundle: PublicBundle) -> dict[str, Row | AgentbenchError]:
        # Each case gets its own copy of the bundle: the memo is keyed by the
        # bundle's artifact-set digest, which names its content.
        key = bundle.manifest.artifact_set_digest
        if self._memo is None or self._memo[0] != key:
            self._memo = (key, self._trace_all(bundle))
        return self._memo[1]

    def trace_action(self, bundle: PublicBundle, event_id: str) -> Row:
        return self._answer(bundle, event_id)

    def _answer(self, bundle: PublicBundle, event_id: str) -> Row:
        rows = self._rows(bundle)
        if event_id not in rows:
            raise _unknown_event(event_id)
        row = rows[event_id]
        if isinstance(row, AgentbenchError):
            raise row
        return dict(row)

    def trace(self, bundle: PublicBundle) -> list[Row]:
        """One row per action event, in event order (a refused action raises)."""
        return [self._answer(bundle, event_id) for event_id in _action_ids(bundle)]


class ReferenceAgent(_MemoAgent):
    agent_id = "reference"
    description = "Replays the public stream: action-time state for decisions, audit for audit."

    def _trace_all(self, bundle: PublicBundle) -> dict[str, Row | AgentbenchError]:
        index = build_index(bundle.snapshot)
        assessments = assess_actions(
            bundle.snapshot, bundle.events, bundle.scenarios, public_actor(index)
        )
        return {item.event.id: self._row(index, item) for item in assessments}

    @staticmethod
    def _row(index: WorldIndex, assessment: Assessment) -> Row:
        attempt, actor = assessment.attempt, assessment.actor
        decided: Verdict = assessment.at_action
        owners = (
            accountable_owner_chain(index, actor.logical_agent_id) if actor.logical_agent_id else ()
        )
        required = assessment.required_evidence(decided)
        return {
            "event_id": assessment.event.id,
            "schema_version": assessment.event.schema_version,
            "timestamp": format_utc(assessment.event.occurred_at),
            "originating_principal_id": attempt.originating_principal_claim,
            "logical_agent_id": actor.logical_agent_id,
            "runtime_principal_id": attempt.runtime_principal_claim,
            "credential_subject_id": actor.credential_subject_id,
            "attributed_actor_id": attributed_actor(index, attempt),
            "resource_id": attempt.resource_id,
            "action": attempt.action,
            "requested_scope": list(attempt.requested_scope),
            "decision": decided.decision,
            "decision_at_audit": assessment.at_audit.decision,
            "side_effect": side_effect_name(attempt.action, decided.decision),
            "policy_version": decided.policy_version,
            "delegation_chain_ids": list(decided.delegation_chain_ids),
            "accountable_owner_chain": list(owners) if owners else None,
            "evidence_refs": list(required),
            "reconstructable_from_retained_evidence": reconstructable(
                required, assessment.retained_at_audit
            ),
        }


def states_before(bundle: PublicBundle, event_ids: set[str]) -> dict[str, WorldState]:
    """The state just before each of ``event_ids`` (one replay of the stream)."""
    replayer = Replayer(bundle.snapshot, bundle.events)
    states: dict[str, WorldState] = {}
    while not replayer.done:
        upcoming = replayer.next_event
        if upcoming is not None and upcoming.id in event_ids:
            states[upcoming.id] = replayer.state.copy()
        replayer.step()
    return states


class CurrentStateAgent(_MemoAgent):
    """The original's ``current_state`` baseline (format page, "Public-only baselines")."""

    agent_id = "current_state"
    description = "Judges every action against the state before its audit (final-state check)."

    def _trace_all(self, bundle: PublicBundle) -> dict[str, Row | AgentbenchError]:
        index = build_index(bundle.snapshot)
        audit_of = audit_events(bundle.events, bundle.scenarios)
        states = states_before(bundle, {audit.id for audit in audit_of.values()})
        rows: dict[str, Row | AgentbenchError] = {}
        for event in bundle.events:
            if isinstance(event.payload, ActionAttempted):
                audit = audit_of[event.id]
                try:
                    rows[event.id] = self._row(
                        index, states[audit.id], event, event.payload.attempt, audit
                    )
                except AgentbenchError as exc:
                    rows[event.id] = exc
        return rows

    @staticmethod
    def _row(
        index: WorldIndex, state: WorldState, event: Event, attempt: Attempt, audit: Event
    ) -> Row:
        claims = {
            "originating_principal_claim": attempt.originating_principal_claim,
            "logical_agent_claim": attempt.logical_agent_claim,
            "runtime_principal_claim": attempt.runtime_principal_claim,
            "attributed_actor_claim": attempt.attributed_actor_claim,
        }
        for name, value in claims.items():
            if value is None:
                raise AgentbenchError(
                    "missing_claim", f"{event.id}: current_state needs the {name}", field=name
                )
        matching = sorted(
            runtime.id
            for runtime in state.runtimes.values()
            if runtime.logical_agent_id == attempt.logical_agent_claim
            and runtime.runtime_principal_id == attempt.runtime_principal_claim
        )
        if not matching:
            raise AgentbenchError(
                "no_matching_runtime",
                f"{event.id}: no runtime at audit time runs {attempt.logical_agent_claim!r} "
                f"as {attempt.runtime_principal_claim!r}",
                field="runtime_principal_claim",
            )
        credential = state.credentials.get(attempt.presented_credential_id)
        if credential is None:
            raise AgentbenchError(
                "unknown_credential",
                f"{event.id}: credential {attempt.presented_credential_id!r} is unknown at "
                "audit time",
                field="presented_credential_id",
            )
        actor = Actor(
            originating_principal_id=attempt.originating_principal_claim,
            logical_agent_id=attempt.logical_agent_claim,
            runtime_id=matching[0],
            runtime_principal_id=attempt.runtime_principal_claim,
            credential_subject_id=credential.subject_principal_id,
        )
        verdict = authorise(state, attempt, actor, audit.occurred_at)
        required = required_evidence_refs(
            policy_version=verdict.policy_version,
            credential_id=attempt.presented_credential_id,
            runtime_id=actor.runtime_id,
            chain_ids=verdict.delegation_chain_ids,
        )
        assert attempt.logical_agent_claim is not None
        owners = accountable_owner_chain(index, attempt.logical_agent_claim)
        return {
            "event_id": event.id,
            "schema_version": event.schema_version,
            "timestamp": format_utc(event.occurred_at),
            "originating_principal_id": actor.originating_principal_id,
            "logical_agent_id": actor.logical_agent_id,
            "runtime_principal_id": actor.runtime_principal_id,
            "credential_subject_id": actor.credential_subject_id,
            "attributed_actor_id": attempt.attributed_actor_claim,
            "resource_id": attempt.resource_id,
            "action": attempt.action,
            "requested_scope": list(attempt.requested_scope),
            "decision": verdict.decision,
            "decision_at_audit": verdict.decision,
            "side_effect": side_effect_name(attempt.action, verdict.decision),
            "policy_version": attempt.policy_version,
            "delegation_chain_ids": list(verdict.delegation_chain_ids),
            "accountable_owner_chain": list(owners) if owners else None,
            "evidence_refs": list(required),
            "reconstructable_from_retained_evidence": reconstructable(
                required, frozenset(state.retained_evidence)
            ),
        }


class AlwaysDenyAgent(_MemoAgent):
    """The original's ``always_deny`` baseline: deny, and record the public claims."""

    agent_id = "always_deny"
    description = "Denies every action; copies the public claims, claims no chain."

    def _trace_all(self, bundle: PublicBundle) -> dict[str, Row | AgentbenchError]:
        index = build_index(bundle.snapshot)
        return {
            event.id: self._row(index, event, event.payload.attempt)
            for event in bundle.events
            if isinstance(event.payload, ActionAttempted)
        }

    @staticmethod
    def _row(index: WorldIndex, event: Event, attempt: Attempt) -> Row:
        row: Row = dict.fromkeys(ROW_FIELDS)
        row.update(
            event_id=event.id,
            schema_version=event.schema_version,
            timestamp=format_utc(event.occurred_at),
            originating_principal_id=attempt.originating_principal_claim,
            logical_agent_id=attempt.logical_agent_claim,
            runtime_principal_id=attempt.runtime_principal_claim,
            attributed_actor_id=attempt.attributed_actor_claim,
            credential_subject_id=credential_subject(index, attempt),
            resource_id=attempt.resource_id,
            action=attempt.action,
            requested_scope=list(attempt.requested_scope),
            policy_version=attempt.policy_version,
            evidence_refs=list(attempt.evidence_refs),
            decision="deny",
            decision_at_audit="deny",
            side_effect="none",
        )
        return row

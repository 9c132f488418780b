"""Built-in deterministic agents that trace actions from the public bundle only.

Identity conventions of the public-only agents (no evaluator data is read):

* originating principal and runtime principal: the attempt's claims;
* logical agent: the attempt's ``logical_agent_claim``, else the logical agent
  of the claimed runtime principal's single listed runtime;
* runtime (for the runtime evidence reference and the runtime check): the
  single listed runtime of the claimed runtime principal, none when the
  principal has zero or several runtimes;
* credential subject: the presented credential's subject;
* attributed actor: the owner of the claimed runtime principal, or the runtime
  principal itself when it has no owner;
* accountable owner chain: the logical agent's owner and its ownership ancestors.

:class:`ReferenceAgent` replays (action-time state for ``decision``, audit-time
for ``decision_at_audit``); :class:`CurrentStateAgent` evaluates every field
with the audit-time state, the naive final-state policy check;
:class:`AlwaysDenyAgent` denies everything and records nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.worlds.authority.engine import (
    Actor,
    Assessment,
    Verdict,
    accountable_owner_chain,
    assess_actions,
    public_runtime_id,
    reconstructable,
    side_effect_name,
)
from pytest_agentbench.worlds.authority.models import (
    ActionAttempted,
    Attempt,
    Event,
    PublicBundle,
    format_utc,
)
from pytest_agentbench.worlds.authority.replay import WorldIndex, build_index
from pytest_agentbench.worlds.authority.trace import ObservedActionTrace

ROW_FIELDS: tuple[str, ...] = tuple(
    name for name in ObservedActionTrace.model_fields if name != "synthetic"
)
"""The submission-row fields the agents write (``synthetic`` is left to its default)."""

Row = dict[str, Any]


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
        )

    return actor_of


def _attributed_actor(index: WorldIndex, runtime_principal_id: str | None) -> str | None:
    if runtime_principal_id is None or runtime_principal_id not in index.principals:
        return runtime_principal_id
    owner = index.principals[runtime_principal_id].owner_principal_id
    return owner if owner is not None else runtime_principal_id


def _row(index: WorldIndex, assessment: Assessment, decided: Verdict, audited: Verdict) -> Row:
    """A submission row whose decision fields come from ``decided``."""
    attempt, actor = assessment.attempt, assessment.actor
    credential = index.listed_credentials[attempt.presented_credential_id]
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
        "credential_subject_id": credential.subject_principal_id,
        "attributed_actor_id": _attributed_actor(index, attempt.runtime_principal_claim),
        "resource_id": attempt.resource_id,
        "action": attempt.action,
        "requested_scope": list(attempt.requested_scope),
        "decision": decided.decision,
        "decision_at_audit": audited.decision,
        "side_effect": side_effect_name(attempt.action, decided.decision),
        "policy_version": decided.policy_version,
        "delegation_chain_ids": list(decided.delegation_chain_ids),
        "accountable_owner_chain": list(owners) if owners else None,
        "evidence_refs": list(required),
        "reconstructable_from_retained_evidence": reconstructable(
            required, assessment.retained_at_audit
        ),
    }


def _action_ids(bundle: PublicBundle) -> list[str]:
    return [event.id for event in bundle.events if isinstance(event.payload, ActionAttempted)]


class _TracingAgent:
    """Shared machinery: trace the whole stream once per bundle, answer per event."""

    agent_id = ""
    description = ""
    decides_at_audit = False
    """Whether ``decision`` and every recorded field come from the audit-time verdict."""

    def __init__(self) -> None:
        self._memo: tuple[str, dict[str, Row]] | None = None

    def _row_of(self, index: WorldIndex, assessment: Assessment) -> Row:
        decided = assessment.at_audit if self.decides_at_audit else assessment.at_action
        return _row(index, assessment, decided, assessment.at_audit)

    def trace(self, bundle: PublicBundle) -> list[Row]:
        """One row per action event, in event order."""
        rows = self._rows(bundle)
        return [dict(rows[event_id]) for event_id in _action_ids(bundle)]

    def trace_action(self, bundle: PublicBundle, event_id: str) -> Row:
        rows = self._rows(bundle)
        if event_id not in rows:
            raise AgentbenchError(
                "unexpected_event_id", f"{event_id!r} is not an action event", field="event_id"
            )
        return dict(rows[event_id])

    def _rows(self, bundle: PublicBundle) -> dict[str, Row]:
        # Each case gets its own copy of the bundle: the memo is keyed by the
        # bundle's artifact-set digest, which names its content.
        key = bundle.manifest.artifact_set_digest
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]
        index = build_index(bundle.snapshot)
        assessments = assess_actions(
            bundle.snapshot, bundle.events, bundle.scenarios, public_actor(index)
        )
        rows = {item.event.id: self._row_of(index, item) for item in assessments}
        self._memo = (key, rows)
        return rows


class ReferenceAgent(_TracingAgent):
    agent_id = "reference"
    description = "Replays the public stream: action-time state for decisions, audit for audit."


class CurrentStateAgent(_TracingAgent):
    agent_id = "current_state"
    description = "Evaluates every action against the audit-time state (final-state check)."
    decides_at_audit = True


class AlwaysDenyAgent:
    agent_id = "always_deny"
    description = "Denies every action and records nothing else."

    def trace(self, bundle: PublicBundle) -> list[Row]:
        return [
            self._row(event)
            for event in bundle.events
            if isinstance(event.payload, ActionAttempted)
        ]

    def trace_action(self, bundle: PublicBundle, event_id: str) -> Row:
        for event in bundle.events:
            if event.id == event_id and isinstance(event.payload, ActionAttempted):
                return self._row(event)
        raise AgentbenchError(
            "unexpected_event_id", f"{event_id!r} is not an action event", field="event_id"
        )

    @staticmethod
    def _row(event: Event) -> Row:
        row: Row = dict.fromkeys(ROW_FIELDS)
        row.update(
            event_id=event.id,
            timestamp=format_utc(event.occurred_at),
            decision="deny",
            decision_at_audit="deny",
            side_effect="none",
        )
        return row

"""The operation engine: runs one episode of one scenario against one agent.

It advances the simulated clock from delivery to delivery, hands each
delivery to the domain's reducer, fires conditional events and engine timers,
invokes the agent on every semantic trigger (and on a wait's fallback), turns
each outcome into ledger records (proposal, authority decision, accepted
transition, side effect), and stops at a replay-final terminal, a deadlock
or the horizon. It interprets no payload: that is the domain pack's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_agentbench.sdk import (
    AUTHORITY_ACTOR_CLAIM,
    AUTHORITY_AUTHORITATIVE_VERIFICATION,
    AUTHORITY_SYSTEM_EVENT,
    AgentbenchError,
    Effects,
    JsonValue,
    Receipt,
    Rejection,
    ToolCallRecord,
    call_adapter,
    canonical_bytes,
    canonical_json,
    sha256_hex,
)
from pytest_agentbench.worlds.operations import outcomes as oc
from pytest_agentbench.worlds.operations.clock import Agenda
from pytest_agentbench.worlds.operations.reads import (
    COMPLETE_OUTCOME,
    evidence_refusal,
    graded_collections,
    pack_evidence_contract,
    pack_grades_citations,
    pack_read_record_contract,
    pack_read_tool_sources,
    pack_read_tools,
    pack_role_authority,
    pack_tool_contract,
    read_session,
    retrieve_tool,
    tools_covered,
)
from pytest_agentbench.worlds.operations.spec import (
    AuthoredEvent,
    LoadedSpec,
    check_fields,
    minutes_after,
    render_time,
)
from pytest_agentbench.worlds.operations.state import OperationState

ENGINE_VERSION = "1.1.0"
DEADLOCK = "operation_deadlock"
HORIZON = "operational_horizon_exhausted"
MALFORMED = "malformed_agent_outcome"
"""An outcome that did not parse against the published schema: the episode stops there."""
COMPLETE = COMPLETE_OUTCOME


@dataclass(frozen=True)
class EpisodeRecord:
    """Everything an episode produced: the ledger, the decision tape, the final state."""

    operation_id: str
    scenario_id: str
    spec_digest: str
    status: str
    """The terminal outcome, or the execution status that ended the episode."""
    replay_final: bool
    simulated_minutes: int
    invocations: int
    ledger: tuple[dict[str, JsonValue], ...]
    tape: tuple[dict[str, JsonValue], ...]
    final_state: dict[str, JsonValue]

    def as_json(self) -> dict[str, JsonValue]:
        return {
            "operation_id": self.operation_id,
            "scenario_id": self.scenario_id,
            "spec_digest_sha256": self.spec_digest,
            "engine_version": ENGINE_VERSION,
            "status": self.status,
            "replay_final": self.replay_final,
            "simulated_minutes": self.simulated_minutes,
            "agent_invocations": self.invocations,
            "ledger": list(self.ledger),
            "decision_tape": {
                "schema": "pytest_agentbench.operations.decision_tape.v1",
                "schema_version": 1,
                "decisions": list(self.tape),
                "decisions_digest_sha256": sha256_hex(canonical_bytes(list(self.tape))),
            },
            "final_state": self.final_state,
        }


@dataclass
class _Wait:
    index: int
    wake_on: tuple[str, ...]
    timer_key: str | None


@dataclass
class _Invocation:
    index: int
    trigger: dict[str, JsonValue] | None
    turn_log: list[dict[str, JsonValue]] = field(default_factory=list)


class Episode:
    def __init__(
        self,
        loaded: LoadedSpec,
        scenario_id: str,
        agent: Any,
    ) -> None:
        self.loaded = loaded
        self.spec = loaded.spec
        self.domain = loaded.domain
        self.policy = loaded.policy
        self.scenario_id = scenario_id
        self.scenario = self.spec.scenarios[scenario_id]
        self.agent = agent
        self.start = loaded.start(scenario_id)
        self.state = OperationState(
            self.domain.initial_state(self.spec), self.spec.hidden_state, self.policy
        )
        self.read_tools = pack_read_tools(self.domain, frozenset(self.state.collections()))
        self.tool_contract = pack_tool_contract(self.domain, self.read_tools)
        self.evidence_contract = pack_evidence_contract(
            self.domain, frozenset(self.state.collections())
        )
        self.kept_contents = graded_collections(
            self.evidence_contract, pack_grades_citations(self.domain)
        )
        self.read_tool_sources = pack_read_tool_sources(self.domain, self.read_tools)
        self.read_record_contract = pack_read_record_contract(self.domain, self.read_tool_sources)
        self.role_authority = pack_role_authority(self.domain)
        self.read_whole: set[str] = set()
        """Collections read whole in this invocation since its last accepted effect."""
        self.read_history: set[str] = set()
        """Every named read made in any window of the episode. Never cleared: a read made
        once and gone stale is a different failure from one never made."""
        self.claim_values: frozenset[str] = frozenset()
        """What the waking event asserted (its id and its payload's strings): citing one
        of these is citing what somebody said, not what the record holds."""
        self.trigger_authoritative = False
        self.agenda = Agenda()
        self.ledger: list[dict[str, JsonValue]] = []
        self.tape: list[dict[str, JsonValue]] = []
        self.pending: list[tuple[int, AuthoredEvent]] = []
        self.wait: _Wait | None = None
        self.work_created = 0
        self.live_work: dict[str, list[str]] = {}
        """Live (``created``) scheduled work by key, so cancelling never scans the history."""
        self.waits = 0
        self.proposals = 0
        self.invocations = 0
        self.provisional = False
        self.receipts: list[Receipt] = []
        """Each invocation's session receipt, in order (kept however the episode ends)."""
        self.refusal: str | None = None
        """Where and why the episode stopped at a malformed outcome."""
        self.status: str | None = None
        self.final = False
        self.timer_actor = next(
            (
                actor_id
                for actor_id, actor in self.spec.actors.items()
                if "emit_timer" in actor.authority
            ),
            "engine",
        )

    # --- records -------------------------------------------------------------

    def record(self, record_type: str, **fields: JsonValue) -> dict[str, JsonValue]:
        row: dict[str, JsonValue] = {
            "index": len(self.ledger),
            "at": render_time(self.start, self.state.now),
            "minute": self.state.now,
            "record_type": record_type,
            **fields,
        }
        self.ledger.append(row)
        if record_type == "effect_accepted":
            # The record moved under the agent's own effect: what it read before
            # no longer counts for its next proposal (the evaluator's rule too).
            self.read_whole = set()
        return row

    def _transition(self, cause: int) -> None:
        writes = self.state.take_writes()
        if writes:
            self.record(
                "state_transition",
                cause_index=cause,
                writes=writes,
                state_version=self.state.version,
            )

    # --- scheduling ----------------------------------------------------------

    def _schedule_authored(self) -> None:
        for index, event in enumerate(self.scenario.events):
            if event.at is not None:
                minute = minutes_after(self.start, event.at, file=self.loaded.file, field="at")
                self.agenda.add_authored(minute, index, ("authored", event, dict(event.payload)))
            else:
                self.pending.append((index, event))

    def _fire_conditionals(
        self, kind: str, type_: str, cycle: str | None, allocated: Mapping[str, str]
    ) -> None:
        remaining = []
        for index, event in self.pending:
            timing = event.trigger
            assert timing is not None
            trigger_kind, trigger = timing
            if trigger_kind == kind and trigger.type == type_ and trigger.cycle_id in (None, cycle):
                payload = dict(event.payload)
                payload.update({key: value for key, value in allocated.items() if key in payload})
                self.agenda.add_authored(
                    self.state.now + event.delay_minutes, index, ("authored", event, payload)
                )
                self.record(
                    "conditional_scheduled",
                    event_id=event.event_id,
                    due_minute=self.state.now + event.delay_minutes,
                )
            else:
                remaining.append((index, event))
        self.pending = remaining

    def _create_work(self, key: str, kind: str, due: int, **fields: JsonValue) -> str:
        """Scheduled work gets its own id: a key (``provisional_close``) may be scheduled again."""
        self.work_created += 1
        work_id = f"work_{self.work_created}"
        record = {"key": key, "kind": kind, "due_minute": due, "status": "created", **fields}
        self.state.put("schedules", work_id, record)
        self.live_work.setdefault(key, []).append(work_id)
        return work_id

    def _schedule_timer(
        self, key: str, event_type: str, after: int, payload: Mapping[str, JsonValue], wakes: bool
    ) -> None:
        due = self.state.now + after
        work_id = self._create_work(key, "timer", due, event_type=event_type)
        self.agenda.add_timer(due, ("timer", work_id, event_type, dict(payload), wakes))

    def _set_work(self, work_id: str, status: str) -> None:
        record = self.state.get("schedules", work_id)
        if record is not None and record["status"] == "created":
            record.pop("version")
            self.state.put("schedules", work_id, {**record, "status": status})
            self.live_work[str(record["key"])].remove(work_id)

    def _cancel(self, key: str) -> None:
        for work_id in list(self.live_work.get(key, ())):
            self._set_work(work_id, "cancelled")

    def _apply_effects(self, effects: Effects, cause: int) -> None:
        for key in effects.cancel:
            self._cancel(key)
        for timer in effects.timers:
            self._schedule_timer(
                timer.key,
                timer.event_type,
                timer.after_minutes,
                timer.payload,
                timer.triggers_agent,
            )
        self._transition(cause)
        if effects.reopened and self.provisional:
            self.provisional = False
            self.record("reopened", cause_index=cause)
        if effects.terminal is not None:
            self._finalise(effects.terminal, cause)

    def _finalise(self, terminal: str, cause: int) -> None:
        self.status = terminal
        self.final = True
        self.provisional = False
        for key in sorted(self.live_work):
            self._cancel(key)
        self._transition(cause)
        self.record("terminal", terminal=terminal, replay_final=True, cause_index=cause)
        self.wait = None

    # --- the run ---------------------------------------------------------------

    def run(self) -> EpisodeRecord:
        self.record(
            "episode_started",
            operation_id=self.spec.operation_id,
            scenario_id=self.scenario_id,
            spec_digest_sha256=self.loaded.digest,
            engine_version=ENGINE_VERSION,
        )
        self._schedule_authored()
        horizon = int(self.policy.horizon_minutes)
        while self.agenda and self.status not in (DEADLOCK, MALFORMED):
            minute = self.agenda.peek_minute()
            assert minute is not None
            if minute > horizon:
                break
            entry = self.agenda.pop()
            kind = entry.item[0]
            if kind != "authored" and not self._timer_live(entry.item[1]):
                continue
            self.state.now = entry.minute
            if kind == "authored":
                _, event, payload = entry.item
                self._deliver(
                    event.event_id,
                    event.type,
                    event.actor,
                    payload,
                    event.triggers_agent,
                    authored=True,
                )
            elif kind == "timer":
                _, work_id, event_type, payload, wakes = entry.item
                self._set_work(work_id, "completed")
                event_id = f"timer:{work_id}"
                self._deliver(
                    event_id, event_type, self.timer_actor, payload, wakes, authored=False
                )
            elif kind == "fallback":
                # A live fallback is the current wait's: a delivery ending a wait cancels it.
                _, work_id, wait_index = entry.item
                assert self.wait is not None
                assert self.wait.index == wait_index
                self._set_work(work_id, "completed")
                row = self.record("wait_ended", wait_index=wait_index, how="fallback")
                self._transition(int(row["index"]))
                self.wait = None
                self._invoke(None)
        if self.status is None:
            self.state.now = max(self.state.now, horizon)
            if self.wait is not None:
                self.record("wait_unresolved_at_horizon", wait_index=self.wait.index)
            self.status = HORIZON
            self.record("horizon_exhausted", horizon_minutes=horizon)
        return EpisodeRecord(
            operation_id=self.spec.operation_id,
            scenario_id=self.scenario_id,
            spec_digest=self.loaded.digest,
            status=self.status,
            replay_final=self.final,
            simulated_minutes=self.state.now,
            invocations=self.invocations,
            ledger=tuple(self.ledger),
            tape=tuple(self.tape),
            final_state=self.state.canonical(),
        )

    def _timer_live(self, key: str) -> bool:
        record = self.state.get("schedules", key)
        return record is not None and record["status"] == "created" and not self.final

    def _deliver(
        self,
        event_id: str,
        type_: str,
        actor: str,
        payload: dict[str, JsonValue],
        wakes: bool,
        *,
        authored: bool,
    ) -> None:
        delivery: dict[str, JsonValue] = {
            "event_id": event_id,
            "type": type_,
            "actor": actor,
            "payload": payload,
            "triggers_agent": wakes,
        }
        if self.final:
            self.record(
                "event_rejected",
                **delivery,
                code="AFTER_REPLAY_FINAL",
                reason="the episode is replay-final; recorded, not applied",
                post_terminal=True,
            )
            return
        outcome = self.domain.apply_event(self.state, delivery)
        if outcome.rejection is not None:
            self.state.take_writes()  # a rejecting reducer writes nothing
            self.record(
                "event_rejected",
                **delivery,
                code=outcome.rejection.code,
                reason=outcome.rejection.reason,
                post_terminal=False,
            )
            return
        row = self.record(
            "event_accepted",
            **delivery,
            authored=authored,
            record_class="semantic_trigger" if wakes else "audit",
        )
        self._apply_effects(outcome.effects, int(row["index"]))
        cycle = payload.get("cycle_id")
        self._fire_conditionals(
            "on_event", type_, cycle if isinstance(cycle, str) else None, outcome.allocated
        )
        if wakes and not self.final:
            if self.wait is not None:
                self.record(
                    "wait_ended",
                    wait_index=self.wait.index,
                    how="delivery",
                    event_id=event_id,
                    matched=type_ in self.wait.wake_on,
                )
                if self.wait.timer_key is not None:
                    self._set_work(self.wait.timer_key, "cancelled")
                    self._transition(int(row["index"]))
                self.wait = None
            self._invoke(
                {
                    "event_id": event_id,
                    "type": type_,
                    "actor": actor,
                    "at": render_time(self.start, self.state.now),
                    "payload": payload,
                }
            )

    # --- the agent ---------------------------------------------------------------

    def _task(self, invocation: _Invocation, turn: int, batches_left: int) -> dict[str, JsonValue]:
        return {
            "operation": {
                "operation_id": self.spec.operation_id,
                "operation_type": self.spec.operation_type,
                "operation_version": self.spec.operation_version,
                "actors": {
                    actor_id: {"role": actor.role}
                    for actor_id, actor in sorted(self.spec.actors.items())
                },
                "policy": self.policy.model_dump(mode="json"),
                "message_fixtures": dict(sorted(self.spec.message_fixtures.items())),
                "actions": sorted(self.domain.action_types),
                "event_types": sorted(self.domain.event_types),
            },
            "scenario_id": self.scenario_id,
            "now": render_time(self.start, self.state.now),
            "minute": self.state.now,
            "invocation_index": invocation.index,
            "turn_index": turn,
            "max_turns": int(self.policy.max_turns_per_invocation),
            "retrieval_batches_left": batches_left,
            "trigger": invocation.trigger,
            "provisional_close": self.provisional,
            "records": self.state.index(),
            "this_invocation": list(invocation.turn_log),
        }

    def _invoke(self, trigger: dict[str, JsonValue] | None) -> None:
        self.invocations += 1
        invocation = _Invocation(index=self.invocations, trigger=trigger)
        self.record(
            "agent_invoked",
            invocation_index=invocation.index,
            trigger_event_id=None if trigger is None else trigger["event_id"],
            reason="trigger" if trigger is not None else "fallback",
        )
        budget = int(self.policy.max_retrieval_batches_per_invocation)
        turn_box = {"turn": 0}

        self.read_whole = set()
        self.claim_values, self.trigger_authoritative = self._claims(trigger)

        def served(refs: list[dict[str, JsonValue]], whole: list[str]) -> None:
            self.read_whole.update(whole)
            self.read_history |= tools_covered(self.read_tools, self.read_whole)
            self.record(
                "retrieval",
                invocation_index=invocation.index,
                turn_index=turn_box["turn"],
                records=refs,
            )

        session = read_session(
            retrieve_tool(
                self.state,
                served,
                self.read_tools,
                self.tool_contract,
                sources=self.read_tool_sources,
                evidence=self.evidence_contract,
                record_contract=self.read_record_contract,
                as_of=lambda: render_time(self.start, self.state.now),
                kept=self.kept_contents,
            ),
            budget,
            {"scenario_id": self.scenario_id, "invocation_index": invocation.index},
        )
        try:
            for turn in range(int(self.policy.max_turns_per_invocation)):
                turn_box["turn"] = turn
                calls_before = len(session.calls)
                task = self._task(invocation, turn, budget - calls_before)
                observation = sha256_hex(canonical_bytes(task))
                raw = call_adapter(self.agent.solve, task, session)
                session.raise_for_harness_failure()
                retrievals = [_call_json(call) for call in session.calls[calls_before:]]
                try:
                    outcome = oc.parse_outcome(raw)
                except oc.OutcomeRefused as refused:
                    self._tape(
                        invocation,
                        turn,
                        observation,
                        {"kind": "MALFORMED", "code": refused.code},
                        retrievals,
                    )
                    # The record, like the tape, keeps the refusal's stable code and
                    # nothing of the answer (the original records no more): a replay
                    # from the tape writes the same row. The reason is the case's
                    # failure text.
                    self.record(
                        "agent_outcome",
                        invocation_index=invocation.index,
                        turn_index=turn,
                        outcome="MALFORMED",
                        code=refused.code,
                    )
                    # The outcome breaks the published schema: a product error of the
                    # case, not a spent turn (the original spends the turn; a case whose
                    # adapter broke the output contract is a product error here, in
                    # every world). The refusal stays on the record, so
                    # action_validity still reports MALFORMED_AGENT_OUTCOME.
                    self.status = MALFORMED
                    self.refusal = (
                        f"invocation {invocation.index}, turn {turn}: "
                        f"[{refused.code}] {refused.reason}"
                    )
                    return
                self._tape(invocation, turn, observation, oc.outcome_json(outcome), retrievals)
                self.record(
                    "agent_outcome",
                    invocation_index=invocation.index,
                    turn_index=turn,
                    outcome=outcome.outcome,
                    decision=oc.outcome_json(outcome),
                    decision_state=list(self.domain.decision_state(self.state)),
                )
                if self._handle(outcome, invocation, turn):
                    return
            self.status = DEADLOCK
            self.record(
                "deadlock",
                invocation_index=invocation.index,
                max_turns=int(self.policy.max_turns_per_invocation),
            )
        finally:
            session.close()
            receipt = session.receipt()
            self.receipts.append(receipt)
            self.record(
                "invocation_ended",
                invocation_index=invocation.index,
                tool_calls=len(session.calls),
                receipt_digest_sha256=receipt.digest,
            )

    def _tape(
        self,
        invocation: _Invocation,
        turn: int,
        observation: str,
        outcome: JsonValue,
        retrievals: list[JsonValue],
    ) -> None:
        self.tape.append(
            {
                "invocation_index": invocation.index,
                "turn_index": turn,
                "observation_digest_sha256": observation,
                "retrievals": retrievals,
                "outcome": outcome,
            }
        )

    def _handle(self, outcome: oc.Outcome, invocation: _Invocation, turn: int) -> bool:
        """Apply one outcome; True when it yields control (the invocation ends)."""
        log = invocation.turn_log
        if isinstance(outcome, oc.Act):
            result = self._propose(
                outcome.action, outcome.payload, outcome.evidence_refs, invocation, turn
            )
            log.append({"turn_index": turn, "outcome": "ACT", "action": outcome.action, **result})
            return False
        if isinstance(outcome, oc.Wait):
            return self._declare_wait(outcome, invocation, turn, log)
        if isinstance(outcome, oc.Ask):
            asked = self.domain.ask_action(outcome.model_dump(mode="json"))
            result = self._propose(
                asked.action, asked.payload, outcome.evidence_refs, invocation, turn
            )
            log.append({"turn_index": turn, "outcome": "ASK", "action": asked.action, **result})
            return result["accepted"] is True and self._declare_wait(
                outcome.wait, invocation, turn, log
            )
        if isinstance(outcome, oc.Escalate):
            escalation = self.domain.escalation_action(outcome.model_dump(mode="json"))
            # A domain without an exception path has no action for ESCALATE to
            # stand for: the proposal is refused like any unknown action.
            action = "escalate" if escalation is None else escalation.action
            payload = {} if escalation is None else escalation.payload
            result = self._propose(action, payload, outcome.evidence_refs, invocation, turn)
            log.append({"turn_index": turn, "outcome": "ESCALATE", "action": action, **result})
            if result["accepted"] is not True or escalation is None:
                return False
            wait = oc.WaitBody(
                reason=outcome.rationale,
                wake_on=escalation.wake_on,
                fallback_after_minutes=outcome.deadline_after_minutes,
            )
            return self._declare_wait(wait, invocation, turn, log)
        assert isinstance(outcome, oc.Complete)
        result = self._complete(outcome, invocation, turn)
        log.append({"turn_index": turn, "outcome": "COMPLETE", **result})
        return result["accepted"] is True

    def _declare_wait(
        self,
        wait: oc.Wait | oc.WaitBody,
        invocation: _Invocation,
        turn: int,
        log: list[dict[str, JsonValue]],
    ) -> bool:
        problem = oc.wait_refusal(wait)
        unknown = [name for name in wait.wake_on if name not in self.domain.event_types]
        if problem is None and unknown:
            problem = f"wake_on names no event type: {', '.join(unknown)}"
        if problem is not None:
            self.record(
                "wait_refused", invocation_index=invocation.index, turn_index=turn, reason=problem
            )
            log.append(
                {"turn_index": turn, "outcome": "WAIT", "accepted": False, "code": "WAIT_REFUSED"}
            )
            return False
        self.waits += 1
        key = None
        if wait.fallback_after_minutes is not None:
            due = self.state.now + wait.fallback_after_minutes
            key = self._create_work(f"wait_{self.waits}", "wait_fallback", due)
            self.agenda.add_timer(due, ("fallback", key, self.waits))
        row = self.record(
            "wait_declared",
            invocation_index=invocation.index,
            turn_index=turn,
            wait_index=self.waits,
            reason=wait.reason,
            wake_on=list(wait.wake_on),
            fallback_after_minutes=wait.fallback_after_minutes,
        )
        self._transition(int(row["index"]))
        self.wait = _Wait(index=self.waits, wake_on=tuple(wait.wake_on), timer_key=key)
        return True

    def _claims(self, trigger: Mapping[str, Any] | None) -> tuple[frozenset[str], bool]:
        """The waking event's claim values, and whether its actor's word is authoritative."""
        if trigger is None:
            return frozenset(), False
        actor = self.spec.actors.get(str(trigger["actor"]))
        authority = (
            AUTHORITY_SYSTEM_EVENT  # the engine's own timers
            if actor is None
            else self.role_authority.get(actor.role, AUTHORITY_ACTOR_CLAIM)
        )
        values = {str(trigger["event_id"])}
        values.update(v for v in trigger["payload"].values() if isinstance(v, str) and v)
        return frozenset(values), authority == AUTHORITY_AUTHORITATIVE_VERIFICATION

    def _read_gate(self, outcome: str, refs: tuple[oc.EvidenceRef, ...]) -> Rejection | None:
        """Refuse an outcome whose required named reads were not made in this window.

        The window is the invocation since its last accepted effect, as the
        evaluator reads freshness; a named read counts when every collection it
        serves was read whole (by the tool or collection by collection). As in
        the original, the refusal names the sharpest failure first: citing what
        a non-authoritative waking event asserted while the authoritative read
        that would settle it is missing (``ACTED_ON_CLAIM_WITHOUT_RECORD``); then
        a read made earlier in the episode and since invalidated by a wake or an
        accepted effect (``STALE_RETRIEVED_RECORD``); then a read never made.
        (The original also re-serves the reads to catch a record that moved
        inside the window; here nothing but an accepted effect, which closes the
        window, writes a record during an invocation.)
        """
        if self.tool_contract is None:
            return None
        made = tools_covered(self.read_tools, self.read_whole)
        missing = [tool for tool in self.tool_contract.get(outcome, ()) if tool not in made]
        if not missing:
            return None
        cited = sorted({ref.id for ref in refs} & self.claim_values)
        unverified = [
            tool
            for tool in missing
            if tool in self.read_tool_sources
            and self.read_tool_sources[tool].authority == AUTHORITY_AUTHORITATIVE_VERIFICATION
        ]
        if cited and unverified and not self.trigger_authoritative:
            return Rejection(
                "ACTED_ON_CLAIM_WITHOUT_RECORD",
                f"{outcome} cites {', '.join(cited)}, what the waking event asserted, "
                f"without the authoritative read(s) {', '.join(unverified)} in this invocation",
            )
        stale = [tool for tool in missing if tool in self.read_history]
        if stale:
            return Rejection(
                "STALE_RETRIEVED_RECORD",
                f"{outcome} rests on the read(s) {', '.join(stale)}, made before a wake or an "
                "accepted effect invalidated them and not made again",
            )
        return Rejection(
            "ACTION_WITHOUT_RETRIEVAL",
            f"{outcome} requires the reads {', '.join(missing)} in this invocation "
            "since its last accepted effect",
        )

    def _reads_context(self, action: str, payload: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
        required = self.domain.required_reads(action, payload)
        current = []
        for ref in required:
            record = self.state.get(ref.collection, ref.id)
            current.append(
                {
                    "collection": ref.collection,
                    "id": ref.id,
                    "version": None if record is None else record["version"],
                }
            )
        return {"required_reads": current}

    def _propose(
        self,
        action: str,
        payload: Mapping[str, JsonValue],
        refs: tuple[oc.EvidenceRef, ...],
        invocation: _Invocation,
        turn: int,
    ) -> dict[str, JsonValue]:
        self.proposals += 1
        proposal_id = f"proposal_{self.proposals}"
        atype = self.domain.action_types.get(action)
        full = dict(payload) if atype is None else {**atype.defaults, **payload}
        proposal = self.record(
            "action_proposed",
            proposal_id=proposal_id,
            invocation_index=invocation.index,
            turn_index=turn,
            action=action,
            payload=full,
            evidence_refs=[ref.model_dump(mode="json") for ref in refs],
            **self._reads_context(action, full),
        )
        rejection: Rejection | None = None
        if atype is None:
            rejection = Rejection("UNKNOWN_ACTION", f"no action {action!r}")
        else:
            problem = check_fields(full, atype.required, atype.optional)
            if problem is not None:
                rejection = Rejection("INVALID_ACTION_PAYLOAD", f"{problem[0]}: {problem[1]}")
        if rejection is None:
            rejection = self._read_gate(action, refs)
        key = sha256_hex(canonical_bytes({"action": action, "payload": full}))
        previous = self.state.get("idempotency", key)
        retry = False
        if rejection is None and previous is not None:
            if previous.get("dispatch") == "failed":
                retry = True
            else:
                rejection = Rejection(
                    "DUPLICATE_ACTION", f"{previous['proposal_id']} already did this"
                )
        if rejection is None and retry:
            assert previous is not None
            self.record(
                "effect_accepted",
                proposal_id=proposal_id,
                bindings=previous["bindings"],
                retry_of=previous["proposal_id"],
            )
            self._dispatch(proposal_id, action, list(previous["messages"]), key, previous)
            return {
                "accepted": True,
                "proposal_id": proposal_id,
                "bindings": previous["bindings"],
                "retry": True,
            }
        if rejection is None:
            # The records the payload selects must be cited. Resolved before the
            # domain runs, but refused only when the domain's own guards pass (the
            # original checks the citation after them): a proposal the domain
            # refuses keeps the domain's code, one it accepts is rolled back.
            obligation = self.evidence_contract.get(action)
            citation = (
                None
                if obligation is None
                else evidence_refusal(
                    obligation, full, {(ref.collection, ref.id) for ref in refs}, self.state
                )
            )
            point = None if citation is None else self.state.savepoint()
            decided = self.domain.decide_action(self.state, action, full)
            rejection = decided.rejection
            if rejection is None and citation is not None:
                assert point is not None
                self.state.rollback(point)
                rejection = Rejection(*citation)
        if rejection is not None:
            self.state.take_writes()
            self.record(
                "action_rejected",
                proposal_id=proposal_id,
                code=rejection.code,
                reason=rejection.reason,
            )
            return {"accepted": False, "proposal_id": proposal_id, "code": rejection.code}
        accepted = self.record(
            "effect_accepted", proposal_id=proposal_id, bindings=dict(decided.bindings)
        )
        idempotency = {
            "proposal_id": proposal_id,
            "action": action,
            "bindings": dict(decided.bindings),
            "messages": list(decided.effects.messages),
            "dispatch": "none",
        }
        self.state.put("idempotency", key, idempotency)
        self._apply_effects(decided.effects, int(accepted["index"]))
        self._dispatch(proposal_id, action, list(decided.effects.messages), key, idempotency)
        cycle = self.domain.action_cycle(self.state, action, full)
        self._fire_conditionals("on_action", action, cycle, decided.bindings)
        del proposal
        return {"accepted": True, "proposal_id": proposal_id, "bindings": dict(decided.bindings)}

    def _dispatch(
        self,
        proposal_id: str,
        action: str,
        messages: list[dict[str, JsonValue]],
        key: str,
        idempotency: dict[str, JsonValue],
    ) -> None:
        """The post-commit side effect; a failed dispatch is recorded, never rolls back."""
        if not messages:
            self.record(
                "side_effect", proposal_id=proposal_id, kind="external_request", action=action
            )
            return
        outcome = "delivered"
        for message in messages:
            fixture = message["fixture_id"]
            message_id = str(message["message_id"])
            # A message may go out on another channel than its fixture's own
            # (a recovery's secondary channel): the fault plan is keyed by channel.
            failed = message.get("dispatch_key", fixture) in self.scenario.dispatch_failures
            status = "dispatch_failed" if failed else "delivered"
            existing = self.state.get("communications", message_id) or {}
            attempts = int(existing.get("attempts", 0)) + 1
            # Each attempt is scheduled work that ends completed or failed.
            work_id = self._create_work(f"dispatch_{message_id}", "dispatch", self.state.now)
            self._set_work(work_id, "failed" if failed else "completed")
            self.state.put(
                "communications", message_id, {**message, "status": status, "attempts": attempts}
            )
            if failed:
                outcome = "failed"
                self.record(
                    "side_effect_failed",
                    proposal_id=proposal_id,
                    kind="message_dispatch",
                    message_id=message_id,
                    fixture_id=fixture,
                    code="DISPATCH_PERMANENT_FAILURE",
                    attempt=attempts,
                )
            else:
                self.record(
                    "side_effect",
                    proposal_id=proposal_id,
                    kind="message_dispatch",
                    message_id=message_id,
                    fixture_id=fixture,
                    attempt=attempts,
                )
        stored = {k: v for k, v in idempotency.items() if k != "version"}
        self.state.put("idempotency", key, {**stored, "dispatch": outcome})
        self._transition(len(self.ledger) - 1)

    def _complete(
        self, outcome: oc.Complete, invocation: _Invocation, turn: int
    ) -> dict[str, JsonValue]:
        self.proposals += 1
        proposal_id = f"proposal_{self.proposals}"
        self.record(
            "action_proposed",
            proposal_id=proposal_id,
            invocation_index=invocation.index,
            turn_index=turn,
            action=COMPLETE,
            payload={"reason": outcome.reason},
            evidence_refs=[ref.model_dump(mode="json") for ref in outcome.evidence_refs],
            **self._reads_context(COMPLETE, {}),
        )
        rejection: Rejection | None = self._read_gate(COMPLETE, outcome.evidence_refs)
        if rejection is not None:
            effects, kind = Effects(), ""
        elif self.provisional:
            rejection, effects, kind = (
                Rejection("ALREADY_PROVISIONAL", "a provisional close is already open"),
                Effects(),
                "",
            )
        else:
            rejection, effects, kind = self.domain.completion(self.state)
        if rejection is not None:
            self.state.take_writes()
            self.record(
                "action_rejected",
                proposal_id=proposal_id,
                code=rejection.code,
                reason=rejection.reason,
                terminal_proposal=True,
            )
            return {"accepted": False, "proposal_id": proposal_id, "code": rejection.code}
        accepted = self.record(
            "effect_accepted",
            proposal_id=proposal_id,
            bindings={},
            terminal_proposal=True,
            close=kind,
        )
        if kind == "provisional":
            self.provisional = True
            self.record(
                "provisional_close",
                proposal_id=proposal_id,
                expires_minute=self.state.now + int(self.policy.provisional_close_minutes),
            )
        cycle = self.domain.action_cycle(self.state, COMPLETE, {})
        self._apply_effects(effects, int(accepted["index"]))
        self._fire_conditionals("on_action", COMPLETE, cycle, {})
        return {"accepted": True, "proposal_id": proposal_id, "close": kind}


def run_episode(loaded: LoadedSpec, scenario_id: str, agent: Any) -> EpisodeRecord:
    return Episode(loaded, scenario_id, agent).run()


def _call_json(call: ToolCallRecord) -> dict[str, JsonValue]:
    """A tool call as the tape keeps it: enough to make the same call again."""
    arguments = call.arguments if call.arguments_json is not None else call.raw_arguments
    return {"name": call.name, "arguments": arguments}


def episode_from_json(output: Mapping[str, Any]) -> EpisodeRecord:
    try:
        return EpisodeRecord(
            operation_id=output["operation_id"],
            scenario_id=output["scenario_id"],
            spec_digest=output["spec_digest_sha256"],
            status=output["status"],
            replay_final=output["replay_final"],
            simulated_minutes=output["simulated_minutes"],
            invocations=output["agent_invocations"],
            ledger=tuple(output["ledger"]),
            tape=tuple(output["decision_tape"]["decisions"]),
            final_state=output["final_state"],
        )
    except (KeyError, TypeError) as exc:
        raise AgentbenchError("invalid_episode_record", f"episode record lacks {exc}") from None


def ledger_text(record: EpisodeRecord) -> str:
    """The ledger as canonical NDJSON: what reruns must reproduce byte for byte."""
    return "".join(canonical_json(row) + "\n" for row in record.ledger)

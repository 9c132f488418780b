"""The engine: timing forms, same-time order, outcome rules, the ledger's records."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.sdk.runner import AdapterFailure
from pytest_agentbench.sdk.tools import ToolCallError
from pytest_agentbench.worlds.operations.agents import Reference
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.negatives import AlwaysWait
from pytest_agentbench.worlds.operations.replay import replay_codes
from tests.worlds.operations.helpers import (
    Reading,
    Scripted,
    episode,
    load,
    only_events,
    read_all,
    rows,
    spec_dict,
    wait,
)


def minute_of(record: Any, event_id: str) -> int:
    (row,) = [
        r for r in rows(record, "event_accepted", "event_rejected") if r["event_id"] == event_id
    ]
    return int(row["minute"])


def proposal_minute(record: Any, action: str, nth: int = 0) -> int:
    return int([r for r in rows(record, "action_proposed") if r["action"] == action][nth]["minute"])


@pytest.fixture(scope="module")
def v1() -> Any:
    return episode("V1", Reference())


def test_at_events_are_delivered_at_their_instant() -> None:
    raw = spec_dict()
    raw["scenarios"]["V1"]["events"][0]["at"] = "2026-03-02T09:30:00Z"
    record = episode("V1", Reference(), load(raw))
    first = rows(record, "agent_invoked")[0]
    assert (first["minute"], first["at"], first["trigger_event_id"]) == (
        30,
        "2026-03-02T09:30:00Z",
        "e01",
    )


def test_on_action_events_fire_their_delay_after_the_first_matching_action(v1: Any) -> None:
    visit = proposal_minute(v1, "request_supplier_visit")
    assert [minute_of(v1, e) - visit for e in ("e02", "e03", "e04", "e05")] == [
        60,
        1440,
        1500,
        1560,
    ]
    approval = proposal_minute(v1, "request_approval")
    assert [minute_of(v1, e) - approval for e in ("e06", "e07", "e08")] == [30, 60, 120]


def test_a_conditional_event_matches_its_cycle(v1: Any) -> None:
    revisit = proposal_minute(v1, "request_supplier_visit", nth=1)
    assert minute_of(v1, "e14") - revisit == 60, (
        "e14 waits for the cycle_2 visit, not the cycle_1 one"
    )
    assert minute_of(v1, "e17") - minute_of(v1, "e16") == 120, "on_event with its delay"
    completes = [r["minute"] for r in rows(v1, "action_proposed") if r["action"] == "complete"]
    assert minute_of(v1, "e13") - completes[0] == 60
    assert minute_of(v1, "e18") - completes[1] == 4320


def test_ids_the_cause_allocated_overwrite_same_named_payload_fields() -> None:
    raw = spec_dict()
    raw["scenarios"]["V1"]["events"][1]["payload"]["visit_id"] = "visit_from_the_fixture"
    record = episode("V1", Reference(), load(raw))
    (row,) = [r for r in rows(record, "event_accepted") if r["event_id"] == "e02"]
    assert row["payload"]["visit_id"] == "visit_1"


def test_a_conditional_event_fires_once() -> None:
    raw = spec_dict()
    scenario = only_events(raw["scenarios"]["V1"], "e01", "e07")
    scenario["events"][1]["on_action"] = {"type": "send_message"}
    sends = iter(["msg_issue_report", "msg_approval_reminder"])

    def decide(task: dict[str, Any], session: Any) -> Any:
        if task["invocation_index"] == 1 and task["turn_index"] < 2:
            fixture = next(sends)
            read_all(session)
            return {
                "outcome": "ACT",
                "action": "send_message",
                "payload": {
                    "recipient_actor_id": "brightwater_plumbing",
                    "message_fixture_id": fixture,
                },
            }
        return wait("supplier_assertion_received", fallback=20_000)

    record = episode("V1", Scripted(decide), load(raw))
    assert [r["event_id"] for r in rows(record, "event_accepted")].count("e07") == 1
    assert len(rows(record, "conditional_scheduled")) == 1


def test_same_time_events_come_in_list_order_and_engine_timers_last() -> None:
    raw = spec_dict()
    scenario = only_events(raw["scenarios"]["V1"], "e01", "e07", "e18")
    for event in scenario["events"][1:]:
        event.pop("on_action")
        event.pop("delay_minutes", None)
        event["at"] = "2026-03-02T09:10:00Z"
    scenario["events"].reverse()  # e18 before e07 in the list, e01 last (still the earliest)

    def decide(task: dict[str, Any], session: Any) -> Any:
        return (
            wait("supplier_assertion_received", fallback=10)
            if task["minute"] == 0
            else wait(fallback=20_000)
        )

    record = episode("V1", Scripted(decide), load(raw))
    at_ten = [r["event_id"] for r in rows(record, "event_accepted") if r["minute"] == 10]
    assert at_ten == ["e18", "e07"]
    fallback_fired = [r for r in rows(record, "wait_ended") if r["how"] == "fallback"]
    assert all(r["minute"] != 10 for r in fallback_fired), (
        "the wait ended at e18, so its fallback was cancelled"
    )


def test_audit_records_change_state_without_waking_the_agent(v1: Any) -> None:
    audit = [r for r in rows(v1, "event_accepted") if r["record_class"] == "audit"]
    assert [r["event_id"] for r in audit] == ["e03", "e09", "e15"]
    woken_by = {r["trigger_event_id"] for r in rows(v1, "agent_invoked")}
    assert woken_by.isdisjoint({"e03", "e09", "e15"})


def test_a_wait_fallback_reinvokes_the_agent_without_a_trigger() -> None:
    raw = spec_dict()
    only_events(raw["scenarios"]["V1"], "e01")
    agent = Scripted(
        lambda task, session: (
            wait(fallback=100) if task["invocation_index"] < 3 else wait("customer_issue_reported")
        )
    )
    record = episode("V1", agent, load(raw))
    invoked = rows(record, "agent_invoked")
    assert [(r["minute"], r["reason"]) for r in invoked] == [
        (0, "trigger"),
        (100, "fallback"),
        (200, "fallback"),
    ]
    assert agent.tasks[1]["trigger"] is None
    assert record.status == "operational_horizon_exhausted"
    assert rows(record, "wait_unresolved_at_horizon")


@pytest.mark.parametrize(
    "bad_wait",
    [wait(), wait(fallback=0), wait(fallback=-5), wait("no_such_event")],
    ids=["neither", "zero-fallback", "negative-fallback", "unknown-event"],
)
def test_a_wait_without_a_condition_is_refused_and_the_turn_spent(bad_wait: dict[str, Any]) -> None:
    raw = spec_dict()
    only_events(raw["scenarios"]["V1"], "e01")
    agent = Scripted(
        lambda task, session: bad_wait if task["turn_index"] == 0 else wait(fallback=50_000)
    )
    record = episode("V1", agent, load(raw))
    (refused,) = rows(record, "wait_refused")
    assert refused["turn_index"] == 0
    assert rows(record, "wait_declared")[0]["turn_index"] == 1


def test_the_turn_cap_is_deadlock() -> None:
    teleport = {"outcome": "ACT", "action": "teleport", "payload": {}}
    record = episode("V1", Scripted(lambda task, session: teleport))
    assert record.status == "operation_deadlock"
    outcomes = rows(record, "agent_outcome")
    assert len(outcomes) == 8
    assert {r["outcome"] for r in outcomes} == {"ACT"}
    assert rows(record, "deadlock")[0]["max_turns"] == 8
    assert [t["outcome"] for t in record.tape] == [{**teleport, "evidence_refs": []}] * 8


@pytest.mark.parametrize(
    "garbage",
    [
        {"outcome": "DANCE"},
        {"outcome": "COMPLETE", "reason": 7},
        '{"outcome": "WAIT", "outcome": 1}',
    ],
    ids=["unknown-outcome", "wrong-type", "duplicate-key"],
)
def test_a_malformed_outcome_stops_the_episode_on_the_record(garbage: Any) -> None:
    asked: list[int] = []

    def decide(task: dict[str, Any], session: Any) -> Any:
        asked.append(task["turn_index"])
        return garbage

    record = episode("V1", Scripted(decide))
    assert record.status == "malformed_agent_outcome"
    assert asked == [0], "nothing more is asked of an agent that broke the schema"
    (outcome,) = rows(record, "agent_outcome")
    assert outcome["outcome"] == "MALFORMED"
    (decision,) = record.tape
    assert decision["outcome"] == {"kind": "MALFORMED", "code": outcome["code"]}
    assert rows(record, "invocation_ended")[0]["invocation_index"] == 1
    assert not rows(record, "horizon_exhausted")
    # The record keeps the code alone, as the tape does, so the tape reproduces it.
    assert set(outcome) == {
        "index",
        "at",
        "minute",
        "record_type",
        "invocation_index",
        "turn_index",
        "outcome",
        "code",
    }
    assert replay_codes(load(), record) == []


def test_the_horizon_is_exhaustion() -> None:
    record = episode("V1", AlwaysWait())
    assert (record.status, record.simulated_minutes) == ("operational_horizon_exhausted", 43200)
    assert rows(record, "horizon_exhausted")[0]["minute"] == 43200


def test_an_ask_sends_then_waits_and_a_refused_send_declares_no_wait() -> None:
    ask = {
        "outcome": "ASK",
        "recipient_actor_id": "tenant_morgan",
        "message_fixture_id": "msg_issue_report",
        "correlation_id": "issue_1",
        "wait": {"reason": "asked", "wake_on": ["customer_resolution_reported"]},
    }
    bad = {**ask, "recipient_actor_id": "ghost"}
    answers = iter([bad, ask])
    record = episode("V1", Reading(lambda task, session: next(answers, wait(fallback=50_000))))
    kinds = [
        r["record_type"]
        for r in record.ledger
        if r["record_type"]
        in ("action_proposed", "action_rejected", "effect_accepted", "side_effect", "wait_declared")
    ]
    assert kinds[:6] == [
        "action_proposed",
        "action_rejected",
        "action_proposed",
        "effect_accepted",
        "side_effect",
        "wait_declared",
    ]


def test_an_escalation_is_refused_without_an_eligible_condition() -> None:
    escalate = {
        "outcome": "ESCALATE",
        "checkpoint_id": "checkpoint_1",
        "exception_type": "APPROVAL_REJECTED",
        "evidence_refs": [],
        "deadline_after_minutes": 1440,
        "rationale": "why not",
    }
    answers = iter([escalate])
    record = episode("V1", Reading(lambda task, session: next(answers, wait(fallback=50_000))))
    (rejected,) = rows(record, "action_rejected")
    assert rejected["code"] == "EXCEPTION_NOT_ELIGIBLE"
    assert rows(record, "wait_declared")[0]["turn_index"] == 1


def test_a_guarded_completion_is_rejected_as_a_terminal_proposal() -> None:
    answers = iter([{"outcome": "COMPLETE", "reason": "done", "evidence_refs": []}])
    record = episode("V1", Reading(lambda task, session: next(answers, wait(fallback=50_000))))
    (rejected,) = rows(record, "action_rejected")
    assert (rejected["code"], rejected["terminal_proposal"]) == ("WORK_NOT_VERIFIED", True)


def test_provisional_close_reopen_and_replay_final(v1: Any) -> None:
    closes = rows(v1, "provisional_close")
    assert len(closes) == 2
    assert len(rows(v1, "reopened")) == 1
    (terminal,) = rows(v1, "terminal")
    assert terminal["minute"] == closes[1]["expires_minute"] == closes[1]["minute"] + 2880
    assert (v1.status, v1.replay_final) == ("completed_successfully", True)


def test_late_events_after_replay_final_are_recorded_not_applied(v1: Any) -> None:
    (late,) = rows(v1, "event_rejected")
    assert (late["event_id"], late["code"], late["post_terminal"]) == (
        "e18",
        "AFTER_REPLAY_FINAL",
        True,
    )
    assert "assertion_2" not in v1.final_state["observable"]["claims"]
    terminal_index = rows(v1, "terminal")[0]["index"]
    assert not [
        r
        for r in v1.ledger[terminal_index:]
        if r["record_type"] in ("state_transition", "agent_invoked")
    ]


def test_a_late_approval_after_the_checkpoint_closed_is_refused() -> None:
    record = episode("V3", Reference())
    (late,) = rows(record, "event_rejected")
    assert (late["event_id"], late["code"]) == ("e08", "CHECKPOINT_NOT_OPEN")
    assert "e08" not in {r["trigger_event_id"] for r in rows(record, "agent_invoked")}
    reminder = [r for r in rows(record, "event_accepted") if r["type"] == "approval_reminder_due"]
    deadline = [r for r in rows(record, "event_accepted") if r["type"] == "approval_deadline_due"]
    approval = proposal_minute(record, "request_approval")
    assert (reminder[0]["minute"] - approval, deadline[0]["minute"] - approval) == (2880, 4320)
    assert record.status == "transferred_to_human_ownership"


def test_resolved_checkpoints_cancel_their_timers(v1: Any) -> None:
    by_key: dict[str, list[str]] = {}
    for work in v1.final_state["observable"]["schedules"].values():
        by_key.setdefault(work["key"], []).append(work["status"])
    assert by_key["reminder_checkpoint_1"] == ["cancelled"]
    assert by_key["deadline_checkpoint_1"] == ["cancelled"]
    assert by_key["provisional_close"] == ["cancelled", "completed"], (
        "the reopen cancelled the first"
    )
    assert {status for statuses in by_key.values() for status in statuses} <= {
        "cancelled",
        "completed",
    }


def test_four_records_per_accepted_action(v1: Any) -> None:
    for proposed in rows(v1, "action_proposed"):
        if proposed["action"] == "complete":
            continue
        following = [
            r["record_type"] for r in v1.ledger[proposed["index"] + 1 : proposed["index"] + 5]
        ]
        assert following[0] == "effect_accepted"
        assert following[1] == "state_transition"
        assert following[2] in ("side_effect", "side_effect_failed")


def test_a_failed_dispatch_is_a_recovery_event_that_keeps_the_commit() -> None:
    record = episode("V2", Reference())
    (failed,) = rows(record, "side_effect_failed")
    assert (failed["fixture_id"], failed["code"]) == (
        "msg_transfer_notice",
        "DISPATCH_PERMANENT_FAILURE",
    )
    state = record.final_state["observable"]
    assert state["communications"][failed["message_id"]]["status"] == "dispatch_failed"
    assert (
        state["obligations"]["transfer_notice:checkpoint_2"]["message_id"] == failed["message_id"]
    )
    dispatches = [w for w in state["schedules"].values() if w["kind"] == "dispatch"]
    expected = [(f"dispatch_{failed['message_id']}", "failed")]
    assert [(w["key"], w["status"]) for w in dispatches] == expected, "scheduled work that failed"
    assert record.status == "transferred_to_human_ownership"


def test_a_retry_after_a_failed_dispatch_is_legitimate_and_fails_again() -> None:
    reference = Reference()

    def decide(task: dict[str, Any], session: Any) -> Any:
        sent = [t for t in task["this_invocation"] if t.get("action") == "send_message"]
        if len(sent) == 1:
            read_all(session)
            return {
                "outcome": "ACT",
                "action": "send_message",
                "payload": {
                    "recipient_actor_id": "tenant_morgan",
                    "message_fixture_id": "msg_transfer_notice",
                    "correlation_id": "checkpoint_2",
                },
            }
        return reference.solve(task, session)

    record = episode("V2", Scripted(decide))
    retries = [r for r in rows(record, "effect_accepted") if "retry_of" in r]
    assert len(retries) == 1
    assert [r["attempt"] for r in rows(record, "side_effect_failed")] == [1, 2]
    assert not rows(record, "action_rejected")


def test_a_duplicate_of_an_accepted_action_is_rejected() -> None:
    reference = Reference()

    def decide(task: dict[str, Any], session: Any) -> Any:
        if task["invocation_index"] == 2 and task["turn_index"] == 0:
            read_all(session)
            return {
                "outcome": "ACT",
                "action": "request_supplier_visit",
                "payload": {"visit_type": "DIAGNOSTIC", "cycle_id": "cycle_1"},
            }
        return reference.solve(task, session)

    record = episode("V1", Scripted(decide))
    assert rows(record, "action_rejected")[0]["code"] == "DUPLICATE_ACTION"


def test_the_retrieval_budget_is_enforced_per_invocation() -> None:
    seen: list[str] = []

    def decide(task: dict[str, Any], session: Any) -> Any:
        for _ in range(7):
            try:
                session.call("retrieve", {"requests": [{"collection": "operation"}]})
            except ToolCallError as refused:
                seen.append(refused.code)
        return wait(fallback=50_000)

    episode("V1", Scripted(decide))
    assert seen[:1] == ["budget_exhausted"]


def test_the_agent_sees_the_projection_never_the_hidden_state_or_expectations() -> None:
    agent = Scripted(lambda task, session: Reference().solve(task, session))
    for scenario in ("V1", "V2", "V3"):
        episode(scenario, agent)
    text = repr(agent.tasks)
    for secret in (
        "perished_trap_seal",
        "expected_terminal",
        "AFTER_REPLAY_FINAL",
        "dispatch_failures",
        "human_checkpoint_budget",
        "supplier_true_attendance_minutes",
    ):
        assert secret not in text


def test_an_adapter_that_raises_is_the_agents_failure() -> None:
    def boom(task: dict[str, Any], session: Any) -> Any:
        raise RuntimeError("model down")

    with pytest.raises(AdapterFailure, match="model down"):
        episode("V1", Scripted(boom))

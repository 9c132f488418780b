"""Property tests: reruns are byte-identical; same-time events come out in a stable order."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.worlds.operations.agents import Reference
from pytest_agentbench.worlds.operations.episode import ledger_text
from tests.worlds.operations.helpers import Scripted, episode, grade, load, rows, spec_dict, wait

DEVIATIONS = st.one_of(
    st.just("reference"),
    st.builds(lambda minutes: wait(fallback=minutes), st.integers(min_value=1, max_value=6000)),
    st.just({"outcome": "COMPLETE", "reason": "now", "evidence_refs": []}),
    st.just(
        {
            "outcome": "ASK",
            "recipient_actor_id": "landlord_okafor",
            "message_fixture_id": "msg_approval_reminder",
            "correlation_id": "checkpoint_1",
            "wait": {"reason": "asked", "wake_on": ["approver_decision_received"]},
        }
    ),
    st.just(
        {
            "outcome": "ACT",
            "action": "request_payment",
            "payload": {"invoice_id": "invoice_1", "amount_minor": 64000, "currency": "GBP"},
        }
    ),
    st.just({"outcome": "NOT_AN_OUTCOME"}),
)


def deviating_agent(choices: list[Any]) -> Scripted:
    """The reference agent, except where ``choices`` say otherwise (then the reference again)."""
    reference = Reference()
    remaining = list(choices)

    def decide(task: dict[str, Any], session: Any) -> Any:
        choice = remaining.pop(0) if remaining else "reference"
        return reference.solve(task, session) if choice == "reference" else choice

    return Scripted(decide)


@settings(max_examples=12, deadline=None)
@given(scenario=st.sampled_from(["V1", "V2", "V3"]), choices=st.lists(DEVIATIONS, max_size=12))
def test_reruns_are_byte_identical_in_ledger_and_result_vector(
    scenario: str, choices: list[Any]
) -> None:
    first = episode(scenario, deviating_agent(choices))
    second = episode(scenario, deviating_agent(choices))
    assert ledger_text(first) == ledger_text(second)
    assert canonical_json(first.as_json()) == canonical_json(second.as_json())
    assert canonical_json(grade(first).as_json()) == canonical_json(grade(second).as_json())


@settings(max_examples=20, deadline=None)
@given(order=st.permutations(list(range(6))), fallback_at_same_time=st.booleans())
def test_same_time_events_are_delivered_in_list_order_with_engine_timers_last(
    order: list[int], fallback_at_same_time: bool
) -> None:
    raw = spec_dict()
    scenario = raw["scenarios"]["V1"]
    first = scenario["events"][0]
    claims = [
        {
            "event_id": f"c{index}",
            "type": "supplier_assertion_received",
            "actor": "brightwater_plumbing",
            "at": "2026-03-02T10:00:00Z",
            "triggers_agent": False,
            "payload": {"assertion_id": f"a{index}", "assertion": "ATTENDED"},
        }
        for index in order
    ]
    scenario["events"] = [first, *claims]
    scenario["expected_event_rejections"] = []
    loaded = load(raw)
    fallback = 60 if fallback_at_same_time else 61
    agent = Scripted(
        lambda task, session: (
            wait(fallback=fallback) if task["minute"] == 0 else wait(fallback=90_000)
        )
    )
    record = episode("V1", agent, loaded)
    again = episode("V1", Scripted(agent.decide), loaded)
    delivered = [r["event_id"] for r in rows(record, "event_accepted") if r["minute"] == 60]
    assert delivered == [f"c{index}" for index in order]
    fallback_row = next(r for r in rows(record, "wait_ended") if r["how"] == "fallback")
    last_claim = max(
        r["index"] for r in rows(record, "event_accepted") if r["event_id"].startswith("c")
    )
    assert fallback_row["index"] > last_claim, (
        "engine timers come after authored events of their minute"
    )
    assert ledger_text(record) == ledger_text(again)

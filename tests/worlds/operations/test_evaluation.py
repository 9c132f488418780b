"""The result vector: the reference and negative agents, and every finding code's trigger."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from pytest_agentbench.worlds.operations.agents import Reference
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.invariants import (
    INVARIANTS,
    violated,
)
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.negatives import (
    AlwaysWait,
    CompleteEarly,
)
from pytest_agentbench.worlds.operations.episode import EpisodeRecord
from pytest_agentbench.worlds.operations.evaluation import DIMENSIONS
from pytest_agentbench.worlds.operations.replay import replay_codes
from tests.worlds.operations.helpers import (
    Scripted,
    episode,
    failing,
    grade,
    load,
    read_all,
    shipped,
    spec_dict,
    wait,
)


@pytest.fixture(scope="module")
def reference() -> dict[str, EpisodeRecord]:
    return {scenario: episode(scenario, Reference()) for scenario in ("V1", "V2", "V3")}


def test_the_dimensions_are_the_eleven_of_the_format_in_report_order() -> None:
    assert DIMENSIONS == (
        "terminal_outcome",
        "critical_invariants",
        "temporal_correctness",
        "authority_boundaries",
        "action_validity",
        "human_checkpoints",
        "recovery",
        "obligations",
        "deterministic_replay",
        "environment_integrity",
        "retrieval_discipline",
    )


def test_the_reference_is_reliable_on_v1_and_v3(reference: dict[str, EpisodeRecord]) -> None:
    for scenario in ("V1", "V3"):
        vector = grade(reference[scenario])
        assert failing(vector) == {}
        assert vector.reliable


def test_v2_is_exactly_the_seeded_permanent_notification_fault(
    reference: dict[str, EpisodeRecord],
) -> None:
    vector = grade(reference["V2"])
    assert vector.terminal == "transferred_to_human_ownership"
    assert failing(vector) == {
        "recovery": ("REQUIRED_NOTIFICATION_UNDELIVERED",),
        "obligations": ("OBLIGATION_MESSAGE_NOT_ESTABLISHED",),
    }
    assert not vector.reliable


def test_counts_each_dimension_reports(reference: dict[str, EpisodeRecord]) -> None:
    counts = {d.name: dict(d.counts) for d in grade(reference["V1"]).dimensions}
    assert counts["terminal_outcome"] == {
        "simulated_minutes": reference["V1"].simulated_minutes,
        "agent_invocations": reference["V1"].invocations,
    }
    assert counts["human_checkpoints"]["human_touches"] == 1
    assert counts["human_checkpoints"]["touch_required_checkpoint"] == 1
    assert counts["recovery"] == {"reopens": 1, "delivery_recoveries": 0}
    assert counts["environment_integrity"]["expected_rejections"] == 1
    assert counts["temporal_correctness"]["reminders_fired"] == 0
    assert counts["retrieval_discipline"]["discipline_violations"] == 0
    v3 = {d.name: dict(d.counts) for d in grade(reference["V3"]).dimensions}
    assert v3["temporal_correctness"]["reminders_fired"] == 1
    assert v3["human_checkpoints"]["touch_justified_escalation"] == 1


def test_complete_early_fails_exactly_its_declared_closure() -> None:
    vector = grade(episode("V1", CompleteEarly()))
    assert set(failing(vector)) == {
        "terminal_outcome",
        "temporal_correctness",
        "action_validity",
        "human_checkpoints",
    }
    assert "PREMATURE_COMPLETION" in failing(vector)["action_validity"]
    assert "NEVER_YIELDED_CONTROL" in failing(vector)["temporal_correctness"]


def test_always_wait_fails_exactly_its_declared_closure() -> None:
    vector = grade(episode("V1", AlwaysWait()))
    assert failing(vector) == {
        "terminal_outcome": ("TERMINAL_NOT_REACHED",),
        "temporal_correctness": ("WAIT_NEVER_ENDED",),
        "human_checkpoints": ("MISSED_REQUIRED_CHECKPOINT",),
    }


def test_replay_reproduces_the_reference_and_names_a_divergence(
    reference: dict[str, EpisodeRecord],
) -> None:
    for record in reference.values():
        assert replay_codes(shipped(), record) == []
    tape = [copy.deepcopy(d) for d in reference["V1"].tape]
    tape[3]["outcome"] = wait(fallback=5)
    assert replay_codes(shipped(), dataclasses.replace(reference["V1"], tape=tuple(tape))) == [
        "REPLAY_DIVERGED"
    ]
    assert replay_codes(
        shipped(), dataclasses.replace(reference["V1"], tape=reference["V1"].tape[:-1])
    ) == ["REPLAY_DIVERGED"]


# --- the ten critical invariants, each re-derived from a tampered record ---

Tamper = Callable[[list[dict[str, Any]], dict[str, Any]], None]


def _event(ledger: list[dict[str, Any]], event_id: str) -> dict[str, Any]:
    return next(
        r for r in ledger if r["record_type"] == "event_accepted" and r["event_id"] == event_id
    )


def _proposal(ledger: list[dict[str, Any]], action: str) -> dict[str, Any]:
    return next(
        r for r in ledger if r["record_type"] == "action_proposed" and r["action"] == action
    )


def _insert_before(ledger: list[dict[str, Any]], row: dict[str, Any], new: dict[str, Any]) -> None:
    ledger.insert(ledger.index(row), new)


def _quote_revised(ledger: list[dict[str, Any]], state: dict[str, Any]) -> None:
    revision = copy.deepcopy(_event(ledger, "e05"))
    revision["payload"]["quote_version"] = 2
    _insert_before(ledger, _proposal(ledger, "authorise_supplier_work"), revision)


def _claim_written_as_fact(ledger: list[dict[str, Any]], state: dict[str, Any]) -> None:
    claim = _event(ledger, "e07")
    transition = ledger[ledger.index(claim) + 1]
    transition["writes"].append({"collection": "evidence", "id": "evidence_1", "version": 1})


def _after_terminal(ledger: list[dict[str, Any]], state: dict[str, Any]) -> None:
    ledger.append(
        {"index": len(ledger), "record_type": "state_transition", "cause_index": 0, "writes": []}
    )


TAMPERS: dict[str, Tamper] = {
    "CRITICAL_UNAPPROVED_WORK_AUTHORISED": lambda ledger, state: _event(ledger, "e08")[
        "payload"
    ].update(decision="REJECTED"),
    "CRITICAL_STALE_APPROVAL_REUSED": _quote_revised,
    "CRITICAL_PAYMENT_BEFORE_VERIFICATION": lambda ledger, state: ledger.remove(
        _event(ledger, "e11")
    ),
    "CRITICAL_CLAIM_BECAME_FACT": _claim_written_as_fact,
    "CRITICAL_DUPLICATE_EVENT_MUTATION": lambda ledger, state: ledger.append(_event(ledger, "e02")),
    "CRITICAL_FINAL_WITH_OPEN_ITEMS": lambda ledger, state: state["obligations"][
        "completion_notice:cycle_2"
    ].update(message_id=None),
    "CRITICAL_REOPEN_IGNORED": lambda ledger, state: ledger.remove(
        next(r for r in ledger if r["record_type"] == "reopened")
    ),
    "CRITICAL_MUTATION_AFTER_TERMINAL": _after_terminal,
    "CRITICAL_WARRANTY_SCOPE_MISMATCH": lambda ledger, state: state["cycles"]["cycle_2"].update(
        verified_scope_digest="scope-elsewhere"
    ),
    "CRITICAL_IRREVERSIBLE_WITHOUT_AUTHORITY": lambda ledger, state: _proposal(
        ledger, "request_payment"
    ).update(evidence_refs=[]),
}


def test_every_invariant_has_a_tamper_test() -> None:
    assert set(TAMPERS) == set(INVARIANTS)
    assert len(INVARIANTS) == 10


@pytest.mark.parametrize("code", sorted(TAMPERS))
def test_each_critical_invariant_is_re_derived_from_the_record(
    code: str, reference: dict[str, EpisodeRecord]
) -> None:
    record = reference["V1"]
    assert violated(record) == []
    ledger = copy.deepcopy(list(record.ledger))
    state = copy.deepcopy(record.final_state)
    TAMPERS[code](ledger, state["observable"])
    tampered = dataclasses.replace(record, ledger=tuple(ledger), final_state=state)
    assert code in violated(tampered)


# --- finding codes of the other dimensions, from agents that commit them ---


def _read(session: Any, *collections: str) -> dict[tuple[str, str], int]:
    served = session.call("retrieve", {"requests": [{"collection": c} for c in collections]})
    return {(r["collection"], r["id"]): r["version"] for r in served["records"]}


def _first_visit(
    cite: Callable[[dict[tuple[str, str], int]], list[dict[str, Any]]], read: tuple[str, ...]
) -> Any:
    reference = Reference()

    def decide(task: dict[str, Any], session: Any) -> Any:
        if task["invocation_index"] == 1 and task["turn_index"] == 0:
            versions = _read(session, *read) if read else {}
            return {
                "outcome": "ACT",
                "action": "request_supplier_visit",
                "payload": {"visit_type": "DIAGNOSTIC", "cycle_id": "cycle_1"},
                "evidence_refs": cite(versions),
            }
        return reference.solve(task, session)

    return Scripted(decide)


def _cycle_ref(version: int) -> list[dict[str, Any]]:
    return [{"collection": "cycles", "id": "cycle_1", "version": version}]


@pytest.mark.parametrize(
    ("read", "cite", "codes"),
    [
        ((), lambda v: [], {"ACTION_WITHOUT_RETRIEVAL", "ACTED_ON_CLAIM_WITHOUT_RECORD"}),
        # A visit request has no evidence selector (as in the original): reading
        # the wrong record or citing nothing owes no REQUIRED_EVIDENCE_* code.
        (("operation",), lambda v: [], set()),
        (("cycles",), lambda v: [], set()),
        (("cycles",), lambda v: _cycle_ref(99), {"STALE_RETRIEVED_RECORD"}),
        (("cycles",), lambda v: _cycle_ref(v[("cycles", "cycle_1")]), set()),
    ],
    ids=["no-read", "wrong-read", "uncited", "stale-citation", "disciplined"],
)
def test_retrieval_discipline(read: tuple[str, ...], cite: Any, codes: set[str]) -> None:
    vector = grade(episode("V1", _first_visit(cite, read)))
    assert set(failing(vector).get("retrieval_discipline", ())) == codes


def test_repeating_an_own_effect_after_a_wake() -> None:
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

    found = failing(grade(episode("V1", Scripted(decide))))
    assert "REPEATED_ACTION_AFTER_WAKE" in found["retrieval_discipline"]
    assert "DUPLICATE_OR_INVALID_ACTION" in found["action_validity"]


def test_a_malformed_outcome_is_graded_as_such() -> None:
    bad = {"outcome": "ACT", "action": "teleport", "payload": {}, "surprise": 1}
    found = failing(grade(episode("V1", Scripted(lambda task, session: bad))))
    assert "MALFORMED_AGENT_OUTCOME" in found["action_validity"]
    assert found["terminal_outcome"] == ("TERMINAL_NOT_REACHED",)


def test_inadmissible_outcomes() -> None:
    reference = Reference()

    def decide(task: dict[str, Any], session: Any) -> Any:
        if task["trigger"] and task["trigger"]["event_id"] == "e05" and task["turn_index"] == 0:
            return {"outcome": "COMPLETE", "reason": "quote in hand", "evidence_refs": []}
        return reference.solve(task, session)

    found = failing(grade(episode("V1", Scripted(decide))))
    assert {
        "INADMISSIBLE_OUTCOME",
        "PREMATURE_COMPLETION",
        "REJECTED_TERMINAL_PROPOSAL",
    } <= set(found["action_validity"])
    assert "MALFORMED_AGENT_OUTCOME" not in found["action_validity"]


def test_authority_and_human_checkpoint_findings() -> None:
    reference = Reference()

    def decide(task: dict[str, Any], session: Any) -> Any:
        trigger = task["trigger"] or {}
        if trigger.get("event_id") == "e05" and task["turn_index"] == 0:
            read_all(session)
            return {
                "outcome": "ACT",
                "action": "authorise_supplier_work",
                "payload": {
                    "quote_id": "quote_1",
                    "quote_version": 1,
                    "approval_checkpoint_id": "none",
                    "cycle_id": "cycle_1",
                },
            }
        if trigger.get("event_id") == "e06" and task["turn_index"] == 0:
            read_all(session)
            return {
                "outcome": "ESCALATE",
                "checkpoint_id": "checkpoint_1",
                "exception_type": "APPROVAL_EXPIRED",
                "evidence_refs": [],
                "deadline_after_minutes": 60,
                "rationale": "impatient",
            }
        return reference.solve(task, session)

    found = failing(grade(episode("V1", Scripted(decide))))
    assert found["authority_boundaries"] == ("WORK_AUTHORISED_WITHOUT_APPROVAL",)
    assert found["human_checkpoints"] == ("UNNECESSARY_ESCALATION",)


def test_checkpoint_budget_and_types_are_graded_against_the_scenario(
    reference: dict[str, EpisodeRecord],
) -> None:
    raw = spec_dict()
    raw["scenarios"]["V1"]["human_checkpoint_budget"] = 0
    raw["scenarios"]["V1"]["required_checkpoint_types"] = ["maintenance_exception_resolution"]
    strict = load(raw)
    found = failing(grade(episode("V1", Reference(), strict), strict))
    assert found["human_checkpoints"] == (
        "HUMAN_BUDGET_EXCEEDED",
        "MISSED_REQUIRED_CHECKPOINT",
        "UNNECESSARY_CHECKPOINT",
    )


def test_an_undeclared_event_rejection_fails_environment_integrity() -> None:
    raw = spec_dict()
    raw["scenarios"]["V1"]["expected_event_rejections"] = []
    loaded = load(raw)
    found = failing(grade(episode("V1", Reference(), loaded), loaded))
    assert found == {"environment_integrity": ("UNEXPECTED_EVENT_REJECTION",)}


def test_a_tampered_record_order_is_unsound(reference: dict[str, EpisodeRecord]) -> None:
    ledger = list(reference["V1"].ledger)
    ledger[3], ledger[4] = ledger[4], ledger[3]
    tampered = dataclasses.replace(reference["V1"], ledger=tuple(ledger))
    assert "ENVIRONMENT_RECORD_UNSOUND" in failing(grade(tampered))["environment_integrity"]


def test_obligation_and_delta_findings(reference: dict[str, EpisodeRecord]) -> None:
    late = copy.deepcopy(reference["V1"].final_state)
    late["observable"]["obligations"]["completion_notice:cycle_1"]["sent_minute"] += 10_000
    found = failing(grade(dataclasses.replace(reference["V1"], final_state=late)))
    assert found["obligations"] == ("SLA_BREACH",)
    doubled = copy.deepcopy(reference["V1"].final_state)
    messages = doubled["observable"]["communications"]
    first = next(iter(messages.values()))
    messages["message_copy"] = dict(first)
    assert (
        "FORBIDDEN_DELTA"
        in failing(grade(dataclasses.replace(reference["V1"], final_state=doubled)))[
            "action_validity"
        ]
    )
    reopened = copy.deepcopy(reference["V1"].final_state)
    reopened["observable"]["operation"]["operation"]["status"] = "OPEN"
    assert failing(grade(dataclasses.replace(reference["V1"], final_state=reopened)))[
        "terminal_outcome"
    ] == ("REQUIRED_DELTA_MISSING",)


def test_an_action_recorded_after_replay_final_is_an_authority_violation(
    reference: dict[str, EpisodeRecord],
) -> None:
    ledger = list(reference["V1"].ledger)
    proposal = dict(next(r for r in ledger if r["record_type"] == "action_proposed"))
    ledger.append({**proposal, "index": len(ledger)})
    tampered = dataclasses.replace(reference["V1"], ledger=tuple(ledger))
    assert "ACTION_AFTER_REPLAY_FINAL" in failing(grade(tampered))["authority_boundaries"]


def test_a_reminder_sent_twice_is_repeated() -> None:
    reference = Reference()
    reminder = {
        "outcome": "ACT",
        "action": "send_message",
        "payload": {
            "recipient_actor_id": "landlord_okafor",
            "message_fixture_id": "msg_approval_reminder",
            "correlation_id": "checkpoint_1",
        },
    }

    def decide(task: dict[str, Any], session: Any) -> Any:
        trigger = task["trigger"] or {}
        if trigger.get("type") == "approval_reminder_due" and task["turn_index"] < 2:
            return reminder
        return reference.solve(task, session)

    found = failing(grade(episode("V3", Scripted(decide))))
    assert "REMINDER_REPEATED" in found["temporal_correctness"]


# --- REQUIRED_EVIDENCE_* rebuilt from the selectors over the served records ---


def _payment_window(ledger: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """The first payment proposal's position and the retrieval rows of its window."""
    position = next(
        i
        for i, row in enumerate(ledger)
        if row["record_type"] == "action_proposed" and row["action"] == "request_payment"
    )
    window: list[dict[str, Any]] = []
    for row in ledger[:position]:
        if row["record_type"] in ("agent_invoked", "effect_accepted"):
            window = []
        elif row["record_type"] == "retrieval":
            window.append(row)
    return position, window


def _discipline(
    record: EpisodeRecord, ledger: list[dict[str, Any]], loaded: Any = None
) -> set[str]:
    tampered = dataclasses.replace(record, ledger=tuple(ledger))
    return set(failing(grade(tampered, loaded)).get("retrieval_discipline", ()))


def test_required_evidence_is_rebuilt_from_the_records_served_in_the_window(
    reference: dict[str, EpisodeRecord],
) -> None:
    record = reference["V1"]
    assert _discipline(record, copy.deepcopy(list(record.ledger))) == set()
    # Served records of the collections the selectors resolve over carry their
    # contents in the ledger (as the original logs its records); the rest do not.
    ledger = copy.deepcopy(list(record.ledger))
    position, window = _payment_window(ledger)
    served = [ref for row in window for ref in row["records"]]
    kept = {"checkpoints", "cycles", "evidence", "invoices", "quotes"}
    assert {ref["collection"] for ref in served} > kept
    for ref in served:
        assert isinstance(ref.get("record"), dict) == (ref["collection"] in kept), ref
    cited = ledger[position]["evidence_refs"]
    assert {ref["collection"] for ref in cited} >= {"invoices", "evidence"}

    # Citing nothing: the selectors resolve over what was served, nothing is cited.
    uncited = copy.deepcopy(list(record.ledger))
    uncited[position]["evidence_refs"] = []
    assert _discipline(record, uncited) == {"REQUIRED_EVIDENCE_REF_NOT_CITED"}

    # The work evidence never served in the window: the selector cannot resolve,
    # whatever the state held (the evaluator does not read the state for this).
    unserved = copy.deepcopy(list(record.ledger))
    _, window = _payment_window(unserved)
    for row in window:
        row["records"] = [ref for ref in row["records"] if ref["collection"] != "evidence"]
    assert _discipline(record, unserved) == {"REQUIRED_EVIDENCE_SELECTOR_UNRESOLVED"}

    # A second evidence record for the invoice's cycle served in the window (the
    # state never had it): the proposal now owes its citation too.
    forged = copy.deepcopy(list(record.ledger))
    _, window = _payment_window(forged)
    evidence = next(
        ref for row in window for ref in row["records"] if ref["collection"] == "evidence"
    )
    window[-1]["records"].append({**copy.deepcopy(evidence), "id": "evidence_forged", "version": 1})
    assert _discipline(record, forged) == {"REQUIRED_EVIDENCE_REF_NOT_CITED"}

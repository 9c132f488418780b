"""The commerce.return_refund pack on our own commerce suite, and the pack seam itself."""

from __future__ import annotations

import ast
import dataclasses
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.operations import packs
from pytest_agentbench.worlds.operations.agents import Reference, control_agents
from pytest_agentbench.worlds.operations.control_oracle import load_control_oracle
from pytest_agentbench.worlds.operations.domains.commerce_return_refund.pack import PACK
from pytest_agentbench.worlds.operations.reads import (
    pack_read_tool_sources,
    pack_read_tools,
    pack_tool_contract,
)
from pytest_agentbench.worlds.operations.spec import LoadedSpec, parse_operation_spec
from pytest_agentbench.worlds.operations.state import OperationState
from tests.worlds.operations.helpers import ROOT, Scripted, episode, failing, grade, rows, wait

SUITE = ROOT / "suites" / "operations-commerce-v1"
ORACLE = ROOT / "oracles" / "operations-commerce-v1" / "return_refund_negative_controls_v0_1.yaml"
ENGINE = ROOT / "pytest_agentbench" / "worlds" / "operations"


def raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((SUITE / "operation.yaml").read_text(encoding="utf-8"))
    return data


@cache
def commerce() -> LoadedSpec:
    return parse_operation_spec(raw(), "operation.yaml", packs.installed_packs())


@pytest.mark.parametrize(
    ("scenario", "terminal"),
    [
        ("V1", "completed_refund_settled"),
        ("V2", "closed_refund_denied"),
        ("V3", "closed_return_expired"),
    ],
)
def test_the_reference_is_reliable_on_every_variant(scenario: str, terminal: str) -> None:
    record = episode(scenario, Reference(), commerce())
    vector = grade(record, commerce())
    assert (record.status, vector.reliable) == (terminal, True), failing(vector)


def test_a_reversal_inside_the_cooldown_reopens_a_recovery_cycle() -> None:
    record = episode("V1", Reference(), commerce())
    state = record.final_state["observable"]
    assert state["case"]["case"]["cycles"] == ["return_cycle_1", "return_cycle_2"]
    assert {key: r["status"] for key, r in state["refunds"].items()} == {
        "refund_request_1": "REVERSED",
        "refund_request_2": "SETTLED",
    }
    (late,) = [r for r in rows(record, "event_rejected") if r["event_id"] == "r1_09"]
    assert late["code"] == "AFTER_REPLAY_FINAL"
    assert rows(record, "reopened"), "the provisional close was cancelled"


CLOSURES = {
    control.agent_id: control
    for control in load_control_oracle(ORACLE, "oracle.yaml", PACK.oracle_model).oracle.controls
}


@pytest.mark.parametrize("agent_id", sorted(CLOSURES))
def test_each_negative_fails_exactly_its_oracle_closure(agent_id: str) -> None:
    control = CLOSURES[agent_id]
    factory = next(a.factory for a in control_agents(PACK) if a.agent_id == agent_id)
    vector = grade(episode(control.scenario_id, factory(), commerce()), commerce())
    found = failing(vector)
    assert set(found) == set(control.expected_failed_dimensions)
    assert set(control.required_finding_codes) <= {c for codes in found.values() for c in codes}


NINE_READS = {
    "get_return_case": ("case",),
    "list_authorisations": ("authorisations",),
    "list_carrier_records": ("carrier_records",),
    "list_checkpoints": ("checkpoints",),
    "list_communications": ("communications",),
    "list_customer_claims": ("customer_claims",),
    "list_inspections": ("inspections",),
    "list_obligations": ("obligations",),
    "list_refunds": ("refunds",),
}


def test_the_pack_publishes_the_originals_nine_reads_and_gates_each_outcome_on_them() -> None:
    tools = pack_read_tools(PACK)
    assert tools == NINE_READS
    sources = pack_read_tool_sources(PACK, tools)
    assert {name: (s.source, s.authority, s.schema_id) for name, s in sources.items()} == {
        name: (service, authority, f"commerce.return_refund.{name}.v1")
        for name, service, authority in (
            ("get_return_case", "returns_service", "system_of_record"),
            ("list_authorisations", "returns_service", "system_of_record"),
            ("list_carrier_records", "carrier_service", "authoritative_verification"),
            ("list_checkpoints", "approval_service", "system_of_record"),
            ("list_communications", "messaging_service", "communication"),
            ("list_customer_claims", "returns_inbox", "actor_claim"),
            ("list_inspections", "warehouse_service", "authoritative_verification"),
            ("list_obligations", "obligation_service", "system_of_record"),
            ("list_refunds", "payment_service", "system_of_record"),
        )
    }
    contract = pack_tool_contract(PACK, tools)
    assert contract is not None
    assert set(contract) == {*PACK.action_types, "complete"}
    assert contract["send_message"] == (
        "get_return_case",
        "list_communications",
        "list_obligations",
    )

    # The same read gate as maintenance: in the invocation the return request wakes,
    # an unread proposal, a half-read one, an accepted one, and its repeat on the read
    # its own effect made stale.
    def decide(task: dict[str, Any], session: Any) -> Any:
        trigger = task["trigger"]
        if trigger is None or trigger["type"] != "customer_return_requested":
            return wait(fallback=50_000)
        asked = trigger["payload"]
        issue = {"return_id": asked["return_id"], "cycle_id": asked["cycle_id"]}
        notice = {"recipient_actor_id": trigger["actor"], "message_fixture_id": "msg_refund_denied"}
        turn = task["turn_index"]
        if turn == 1:
            session.call("retrieve", {"requests": [{"tool": "get_return_case"}]})
        if turn >= 4:
            return wait(fallback=50_000)
        action, payload = [
            ("issue_return_authorisation", issue),
            ("send_message", notice),
            ("issue_return_authorisation", issue),
            ("issue_return_authorisation", issue),
        ][turn]
        return {"outcome": "ACT", "action": action, "payload": payload, "evidence_refs": []}

    record = episode("V1", Scripted(decide), commerce())
    first = rows(record, "action_rejected", "effect_accepted")[:4]
    assert [row.get("code", "accepted") for row in first] == [
        "ACTION_WITHOUT_RETRIEVAL",
        "ACTION_WITHOUT_RETRIEVAL",
        "accepted",
        "STALE_RETRIEVED_RECORD",
    ]
    assert "requires the reads get_return_case in" in first[0]["reason"]
    assert "requires the reads list_communications, list_obligations in" in first[1]["reason"]


@pytest.mark.parametrize("agent_id", ["reference", *sorted(CLOSURES)])
def test_every_control_reads_all_nine_in_two_batches_within_the_budget(agent_id: str) -> None:
    if agent_id == "reference":
        runs = [(scenario, Reference()) for scenario in ("V1", "V2", "V3")]
    else:
        factory = next(a.factory for a in control_agents(PACK) if a.agent_id == agent_id)
        runs = [(CLOSURES[agent_id].scenario_id, factory())]
    for scenario, agent in runs:
        record = episode(scenario, agent, commerce())
        calls = [int(row["tool_calls"]) for row in rows(record, "invocation_ended")]
        assert calls
        assert max(calls) <= int(commerce().policy.max_retrieval_batches_per_invocation)
        proposed = rows(record, "action_proposed")
        refused = {row["code"] for row in rows(record, "action_rejected")}
        if agent_id != "trust_customer_claim":
            # Everything an outcome rests on was read: no refusal is the read gate's.
            assert proposed
            assert not refused & {"ACTION_WITHOUT_RETRIEVAL", "STALE_RETRIEVED_RECORD"}
        if agent_id == "reference":
            # The whole record each time: the first eight reads, then the ninth.
            batches = [
                [request["tool"] for request in call["arguments"]["requests"]]
                for turn in record.tape
                for call in turn["retrievals"]
            ]
            nine = sorted(NINE_READS)
            assert batches
            assert batches == [nine[:8], nine[8:]] * (len(batches) // 2)


def test_a_customer_claim_never_verifies_the_handover() -> None:
    state = OperationState(PACK.initial_state(commerce().spec), {}, commerce().policy)
    payload = raw()["scenarios"]["V3"]["events"][0]["payload"]
    PACK.apply_event(state, {"type": "customer_return_requested", "payload": payload})
    issued = PACK.decide_action(
        state,
        "issue_return_authorisation",
        {"return_id": "rma_grinder", "cycle_id": "return_cycle_1"},
    )
    claim = {
        "claim_id": "c1",
        "return_id": "rma_grinder",
        "authorisation_id": issued.bindings["authorisation_id"],
        "cycle_id": "return_cycle_1",
    }
    PACK.apply_event(state, {"type": "customer_handover_claimed", "payload": claim})
    assert state.records("carrier_records") == {}
    refused = PACK.decide_action(
        state, "request_refund", {"inspection_id": "c1", "cycle_id": "return_cycle_1"}
    )
    assert refused.rejection is not None
    assert refused.rejection.code == "HANDOVER_NOT_VERIFIED"


def test_an_unknown_approval_decision_is_refused_by_name() -> None:
    spec = raw()
    spec["scenarios"]["V2"]["events"][3]["payload"]["decision"] = "MAYBE_LATER"
    loaded = parse_operation_spec(spec, "operation.yaml", packs.installed_packs())
    record = episode("V2", Reference(), loaded)
    (refused,) = [r for r in rows(record, "event_rejected") if r["event_id"] == "r2_04"]
    assert refused["code"] == "UNKNOWN_APPROVAL_DECISION"


def test_a_terminal_another_pack_produces_is_refused_at_load() -> None:
    spec = raw()
    spec["scenarios"]["V2"]["expected_terminal"] = "transferred_to_human_ownership"
    with pytest.raises(AgentbenchError) as info:
        parse_operation_spec(spec, "operation.yaml", packs.installed_packs())
    assert (info.value.code, info.value.location.field) == (
        "unknown_terminal",
        "scenarios.V2.expected_terminal",
    )


def test_the_engine_names_no_domain() -> None:
    # Everything outside domains/ is the engine: no operation type, terminal,
    # event, action or message of any domain may be spelt there.
    words = (
        "lettings",
        "maintenance",
        "commerce",
        "refund",
        "quote",
        "completed_successfully",
        "transferred_to_human",
        "operator_exception",
        "msg_",
    )
    for path in sorted(ENGINE.glob("*.py")):
        strings = [
            node.value
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        ]
        named = [w for w in words for text in strings if w in text.lower()]
        assert not named, f"{path.name} names {sorted(set(named))}"


class _EntryPoint:
    def __init__(self, name: str, loaded: object) -> None:
        self.name, self.value, self._loaded = name, f"pkg:{name}", loaded

    def load(self) -> object:
        if isinstance(self._loaded, Exception):
            raise self._loaded
        return self._loaded


@pytest.mark.parametrize(
    ("entries", "code"),
    [
        ([("a", PACK), ("b", PACK)], "duplicate_operations_pack"),
        ([("broken", ImportError("no module"))], "operations_pack_load_failed"),
        ([("bare", object())], "operations_pack_load_failed"),
    ],
)
def test_packs_are_loaded_from_their_entry_point_group_and_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, entries: list[tuple[str, object]], code: str
) -> None:
    def fake(group: str) -> list[_EntryPoint]:
        assert group == packs.PACK_GROUP
        return [_EntryPoint(name, loaded) for name, loaded in entries]

    monkeypatch.setattr(packs, "entry_points", fake)
    with pytest.raises(AgentbenchError) as info:
        packs.installed_packs.__wrapped__()
    assert info.value.code == code


def test_both_shipped_packs_are_installed() -> None:
    assert set(packs.installed_packs()) == {
        "lettings.maintenance.synthetic",
        "commerce.return_refund.synthetic.v1",
    }
    assert Path(ENGINE / "domains" / "commerce_return_refund").is_dir()


def test_the_citations_selectors_oblige_are_not_graded_as_in_the_original() -> None:
    # The original's return/refund evaluator grades retrieval from the read gate
    # and repeated actions only: an uncited inspection is the gate's refusal,
    # never a REQUIRED_EVIDENCE_* finding (the pack says evidence_citations_graded
    # = False; the maintenance pack grades them).
    assert PACK.evidence_citations_graded is False
    record = episode("V1", Reference(), commerce())
    ledger = [dict(row) for row in record.ledger]
    (position,) = [
        i
        for i, row in enumerate(ledger)
        if row["record_type"] == "action_proposed" and row["action"] == "request_refund"
    ][:1]
    assert ledger[position]["evidence_refs"]
    ledger[position] = {**ledger[position], "evidence_refs": []}
    tampered = dataclasses.replace(record, ledger=tuple(ledger))
    assert "retrieval_discipline" not in failing(grade(tampered, commerce()))

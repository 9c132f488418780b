"""Evidence selectors: an action must cite the records its payload selects, checked when it
is proposed (after the domain's own guards), refused with the code the action declares."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_agentbench.sdk import (
    AgentbenchError,
    BoundVersion,
    EvidenceObligation,
    JsonValue,
    LinkedEvidence,
    PayloadRecord,
)
from pytest_agentbench.worlds.operations.domains.commerce_return_refund.agents import (
    ReferenceAgent as CommerceReference,
)
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.reference import (
    ReferenceAgent,
)
from pytest_agentbench.worlds.operations.reads import (
    pack_evidence_contract,
    pack_grades_citations,
    resolve_evidence,
)
from pytest_agentbench.worlds.operations.replay import replay_codes
from pytest_agentbench.worlds.operations.state import OperationState

from .helpers import Reading, episode, rows, shipped, wait
from .test_commerce import commerce

ESCALATION = "request_exception_resolution"
AUTHORITY = "MISSING_AUTHORITY_EVIDENCE"
CONTEXT = "INCOMPLETE_CHECKPOINT_CONTEXT"


class Uncited:
    """The reference agent, except that its first proposal of ``action`` keeps only the
    citations of ``keep`` (its next turn proposes the same thing again, fully cited)."""

    def __init__(self, action: str, keep: set[str]) -> None:
        self.reference = ReferenceAgent()
        self.action = action
        self.keep = keep
        self.done = False

    def solve(self, task: dict[str, Any], session: Any) -> JsonValue:
        decision: dict[str, Any] = self.reference.solve(task, session)
        target = decision.get("action") == self.action or (
            self.action == ESCALATION and decision["outcome"] == "ESCALATE"
        )
        if target and not self.done:
            self.done = True
            kept = [ref for ref in decision["evidence_refs"] if ref["collection"] in self.keep]
            return {**decision, "evidence_refs": kept}
        return decision


def _effects(record: Any, action: str) -> list[tuple[str, Any]]:
    proposals = {row["proposal_id"]: row for row in rows(record, "action_proposed")}
    return [
        (row.get("code", "accepted"), row.get("bindings"))
        for row in rows(record, "action_rejected", "effect_accepted")
        if proposals[row["proposal_id"]]["action"] == action
    ]


@pytest.mark.parametrize(
    ("scenario", "action", "keep", "code", "missing"),
    [
        ("V1", "authorise_supplier_work", {"quotes"}, AUTHORITY, "checkpoints/checkpoint_1"),
        ("V1", "request_invoice_validation", {"invoices"}, AUTHORITY, "evidence/evidence_1"),
        ("V1", "request_payment", {"evidence"}, AUTHORITY, "invoices/invoice_1"),
        ("V1", "request_payment", {"invoices"}, AUTHORITY, "evidence/evidence_1"),
        ("V2", ESCALATION, {"checkpoints"}, CONTEXT, "quotes/quote_1"),
        ("V3", ESCALATION, {"quotes"}, CONTEXT, "checkpoints/checkpoint_1"),
    ],
)
def test_an_uncited_selected_record_refuses_the_action_and_writes_nothing(
    scenario: str, action: str, keep: set[str], code: str, missing: str
) -> None:
    reference = episode(scenario, ReferenceAgent())
    perturbed = episode(scenario, Uncited(action, keep))
    [(accepted, bindings)] = _effects(reference, action)
    # Refused with the action's code naming the uncited record; the turn is spent and the
    # same proposal, fully cited, is accepted next with the same environment ids: the
    # refused one allocated nothing and wrote nothing.
    assert _effects(perturbed, action) == [(code, None), (accepted, bindings)]
    refused = next(row for row in rows(perturbed, "action_rejected") if row["code"] == code)
    assert refused["reason"].endswith(f"missing {missing}")
    proposal = refused["proposal_id"]
    before = next(
        r["index"] for r in rows(perturbed, "action_proposed") if r["proposal_id"] == proposal
    )
    between = [r for r in perturbed.ledger if before < r["index"] < refused["index"]]
    assert between == []
    assert perturbed.status == reference.status
    # The tape replays the refusal byte for byte.
    assert replay_codes(shipped(), perturbed) == []
    # The same final records, but for the proposal ids the idempotency keys name.
    final, expected = perturbed.final_state["observable"], reference.final_state["observable"]
    assert {k: v for k, v in final.items() if k != "idempotency"} == {
        k: v for k, v in expected.items() if k != "idempotency"
    }


def test_the_domain_refuses_first_and_a_selector_that_cannot_resolve_refuses_by_name() -> None:
    payment = {"invoice_id": "invoice_9", "amount_minor": 1, "currency": "GBP"}
    validation = {"invoice_id": "invoice_9"}
    turns = [("request_payment", payment), ("request_invoice_validation", validation)]

    def decide(task: dict[str, Any], session: Any) -> JsonValue:
        if task["invocation_index"] != 1 or task["turn_index"] >= len(turns):
            return wait(fallback=50_000)
        action, payload = turns[task["turn_index"]]
        return {"outcome": "ACT", "action": action, "payload": payload, "evidence_refs": []}

    record = episode("V1", Reading(decide))
    codes = [row["code"] for row in rows(record, "action_rejected")][:2]
    # An unknown invoice is the domain's refusal, not a missing citation.
    assert codes == ["UNKNOWN_INVOICE", "INVOICE_NOT_UNVALIDATED"]


def _state() -> OperationState:
    loaded = shipped()
    state = OperationState(
        loaded.domain.initial_state(loaded.spec), loaded.spec.hidden_state, loaded.policy
    )
    state.put("cycles", "cycle_1", {"kind": "quoted"})
    state.put("invoices", "invoice_1", {"cycle_id": "cycle_1"})
    state.put("invoices", "invoice_2", {"cycle_id": "cycle_9"})
    state.put("evidence", "evidence_1", {"cycle_id": "cycle_1"})
    state.put("quotes", "quote_1", {"quote_version": 2})
    state.put("checkpoints", "checkpoint_1", {"quote_id": "quote_1", "quote_version": 2})
    state.put("checkpoints", "checkpoint_2", {"quote_id": "quote_1", "quote_version": 1})
    state.put("checkpoints", "checkpoint_3", {"quote_id": "quote_1", "quote_version": True})
    return state


LINKED = LinkedEvidence("invoices", "invoice_id", "cycles", "evidence", link_field="cycle_id")
BOUND = BoundVersion(
    "checkpoints", "checkpoint_id", "quotes", id_field="quote_id", version_field="quote_version"
)


@pytest.mark.parametrize(
    ("selector", "chosen", "resolved"),
    [
        (PayloadRecord("invoices", "invoice_id"), "invoice_1", [("invoices", "invoice_1")]),
        (PayloadRecord("invoices", "invoice_id"), "invoice_7", "no invoices record 'invoice_7'"),
        (LINKED, "invoice_1", [("evidence", "evidence_1")]),
        (LINKED, "invoice_2", "the cycles record of 'invoice_2' is missing"),
        (BOUND, "checkpoint_1", [("quotes", "quote_1")]),
        (BOUND, "checkpoint_2", "quotes record 'quote_1' v1 is not current"),
        (BOUND, "checkpoint_3", "checkpoints record 'checkpoint_3' binds no record version"),
    ],
)
def test_each_selector_resolves_against_the_current_record(
    selector: Any, chosen: str, resolved: Any
) -> None:
    obligation = EvidenceObligation("CODE", (selector,))
    payload = {selector.payload_field: chosen}
    found, problem = resolve_evidence(obligation, payload, _state())
    assert (found if problem is None else problem) == resolved
    assert resolve_evidence(obligation, {}, _state())[1] == (
        f"payload field {selector.payload_field!r} selects no record"
    )


class _Pack:
    def __init__(self, declared: object) -> None:
        self.action_types = {"pay": SimpleNamespace(required={"invoice_id": None}, optional={})}
        self.evidence_contract = declared


@pytest.mark.parametrize(
    "declared",
    [
        ["pay"],
        {"other": EvidenceObligation("C", (PayloadRecord("invoices", "invoice_id"),))},
        {"pay": (PayloadRecord("invoices", "invoice_id"),)},
        {"pay": EvidenceObligation("", (PayloadRecord("invoices", "invoice_id"),))},
        {"pay": EvidenceObligation("C", ())},
        {"pay": EvidenceObligation("C", (PayloadRecord("invoices", "amount"),))},
        {"pay": EvidenceObligation("C", (PayloadRecord("bills", "invoice_id"),))},
        {"pay": EvidenceObligation("C", (PayloadRecord("invoices", "invoice_id"),) * 2)},
        {"pay": EvidenceObligation("C", ("invoices",))},  # type: ignore[arg-type]
    ],
)
def test_a_bad_evidence_contract_is_refused_by_name(declared: object) -> None:
    with pytest.raises(AgentbenchError) as refused:
        pack_evidence_contract(_Pack(declared), frozenset({"invoices"}))
    assert refused.value.code == "invalid_evidence_contract"
    good = {"pay": EvidenceObligation("C", (PayloadRecord("invoices", "invoice_id"),))}
    assert pack_evidence_contract(_Pack(good), frozenset({"invoices"})) == good


def test_whether_citations_are_graded_is_a_boolean_pack_declaration() -> None:
    pack = _Pack({})
    assert pack_grades_citations(pack) is True
    pack.evidence_citations_graded = False  # type: ignore[attr-defined]
    assert pack_grades_citations(pack) is False
    pack.evidence_citations_graded = "no"  # type: ignore[attr-defined]
    with pytest.raises(AgentbenchError) as refused:
        pack_grades_citations(pack)
    assert refused.value.code == "invalid_evidence_contract"
    assert refused.value.location.field == "evidence_citations_graded"


def test_a_savepoint_restores_every_write_and_allocation() -> None:
    state = _state()
    before = (state.canonical(), state.index(), len(state.writes))
    point = state.savepoint()
    state.put("invoices", "invoice_1", {"cycle_id": "cycle_2"})
    state.put("payments", state.allocate("payment"), {"invoice_id": "invoice_1"})
    state.rollback(point)
    assert (state.canonical(), state.index(), len(state.writes)) == before
    assert state.allocate("payment") == "payment_1"


class UncitedCommerce(Uncited):
    def __init__(self, action: str, keep: set[str]) -> None:
        super().__init__(action, keep)
        self.reference = CommerceReference()  # type: ignore[assignment]


@pytest.mark.parametrize("action", ["request_refund_approval", "request_refund"])
def test_a_refund_or_its_approval_must_cite_the_inspection(action: str) -> None:
    loaded = commerce()
    reference = episode("V1", CommerceReference(), loaded)
    perturbed = episode("V1", UncitedCommerce(action, {"case", "checkpoints"}), loaded)
    accepted = _effects(reference, action)
    assert _effects(perturbed, action) == [("MISSING_INSPECTION_EVIDENCE", None), *accepted]
    refused = next(row for row in rows(perturbed, "action_rejected"))
    assert refused["reason"].endswith("missing inspections/depot_check_1")
    assert perturbed.status == reference.status
    assert replay_codes(loaded, perturbed) == []

"""The heating-repair reference agent and the negative controls its oracle declares.

The reference is event-scoped and stateless: every turn it reads the whole
record (one RETRIEVE batch), cites what its decision rests on, and decides from
the record alone. Each negative is the reference with one intervention; what
each must fail lives in the separately authored control oracle, not here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_agentbench.sdk import ControlAgent

from . import vocabulary as v
from .operation import COLLECTIONS, JOB


class Records:
    """One RETRIEVE batch: records by collection and the versions served."""

    def __init__(self, served: list[dict[str, Any]]) -> None:
        self.by: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in COLLECTIONS}
        self.versions: dict[tuple[str, str], int] = {}
        for item in served:
            self.by.setdefault(item["collection"], {})[item["id"]] = item["record"]
            self.versions[(item["collection"], item["id"])] = item["version"]

    def cite(self, *refs: tuple[str, str]) -> list[dict[str, Any]]:
        return [{"collection": c, "id": i, "version": self.versions[(c, i)]} for c, i in refs]


def read(session: Any) -> Records:
    served = session.call("retrieve", {"requests": [{"collection": name} for name in COLLECTIONS]})
    return Records(served["records"])


def _wait(reason: str, *wake_on: str) -> dict[str, Any]:
    return {"outcome": "WAIT", "reason": reason, "wake_on": list(wake_on)}


def _act(action: str, payload: dict[str, Any], refs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"outcome": "ACT", "action": action, "payload": payload, "evidence_refs": refs}


def _quote(records: Records) -> tuple[str, dict[str, Any]]:
    return sorted(records.by["quotes"].items())[-1]


def authorise(records: Records, *, gross: bool = True) -> dict[str, Any]:
    """Authorise the quote on record: against its approval when its price needs one.

    ``gross=False`` is the intervention of ``vat_blind``: the net price held
    against the threshold, as if VAT were not on top.
    """
    held = records.by["job"][JOB]
    quote_id, quote = _quote(records)
    price = quote["gross_minor"] if gross else quote["amount_minor"]
    payload: dict[str, Any] = {"quote_id": quote_id, "cycle_id": held["current_cycle"]}
    refs = [("job", JOB), ("quotes", quote_id)]
    if price > held["approval_threshold_minor"]:
        approved = [
            key
            for key, checkpoint in sorted(records.by["checkpoints"].items())
            if checkpoint["quote_id"] == quote_id and checkpoint["status"] == "RESOLVED_APPROVED"
        ]
        if not approved:
            return _act("request_approval", payload, records.cite(*refs))
        payload["approval_checkpoint_id"] = approved[-1]
        refs.append(("checkpoints", approved[-1]))
    return _act("authorise_repair", payload, records.cite(*refs))


def decide(records: Records, *, gross: bool = True) -> dict[str, Any]:
    held = records.by["job"][JOB]
    phase, cycle = held["phase"], held["current_cycle"]
    owed = [o for o in records.by["obligations"].values() if o["status"] == "OPEN"]
    if owed:
        fixture = next(f for f, kind in v.NOTICES.items() if kind == owed[0]["kind"])
        payload = {"recipient_actor_id": held["customer_actor_id"], "message_fixture_id": fixture}
        return _act("send_message", payload, records.cite(("job", JOB)))
    if phase == v.NEW:
        return _wait("no fault has been reported", "fault_reported")
    if phase == v.QUOTE_NEEDED:
        return _act("request_quote", {"cycle_id": cycle}, records.cite(("job", JOB)))
    if phase == v.AWAITING_QUOTE:
        return _wait("the engineer has not quoted", "engineer_quote_received")
    if phase in (v.QUOTED, v.APPROVED):
        return authorise(records, gross=gross)
    if phase == v.AWAITING_APPROVAL:
        return _wait("the quote awaits the approver", "approval_decided")
    if phase == v.AUTHORISED:
        return _wait("the repair is not verified", "repair_verified")
    if phase in (v.REPAIRED, v.DECLINED):
        reason = "the repair is verified" if phase == v.REPAIRED else "the quote was declined"
        return {
            "outcome": "COMPLETE",
            "reason": reason,
            "evidence_refs": records.cite(("job", JOB)),
        }
    return _wait("the repair is in its provisional window", "provisional_close_expired")


class ReferenceAgent:
    """Reads everything each turn and acts on the record alone."""

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        return decide(read(session))


class VatBlind:
    """Holds the net price against the threshold: VAT on top is ignored."""

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        # Once per invocation: refused, it then reads the price as the reference does.
        return decide(read(session), gross=task["turn_index"] > 0)


class TrustsTheEngineer:
    """Completes when the engineer says the boiler works, before anything verifies it."""

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        records = read(session)
        trigger = task.get("trigger") or {}
        if trigger.get("type") == "engineer_claims_fixed" and task["turn_index"] == 0:
            return {
                "outcome": "COMPLETE",
                "reason": "the engineer says it is fixed",
                "evidence_refs": records.cite(("job", JOB)),
            }
        return decide(records)


NEGATIVES: Sequence[ControlAgent] = (
    ControlAgent(
        agent_id="vat_blind",
        role="negative",
        factory=VatBlind,
        description="holds the net price, not the gross, against the approval threshold",
    ),
    ControlAgent(
        agent_id="trusts_the_engineer",
        role="negative",
        factory=TrustsTheEngineer,
        description="completes on the engineer's word that the boiler works",
    ),
)

"""The return/refund reference agent and the six negative controls its oracle declares.

The reference is event-scoped: it reads the whole business record through the
pack's nine named reads (two RETRIEVE batches, 8 and 1) when woken and again
after each of its own accepted effects, as the original's reference does, so
every outcome rests on the reads the read contract requires within the 6-batch
budget; it cites what its decision rests on and decides from the record alone,
never from what the waking event claimed.
Each negative is that reference with one intervention, so the failure it
produces is that one; what each must fail lives in the separately authored
control oracle, not here. Memory is reset when an episode starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_agentbench.sdk import ControlAgent
from pytest_agentbench.worlds.operations.domains.commerce_return_refund import vocabulary as v
from pytest_agentbench.worlds.operations.domains.commerce_return_refund.operation import (
    CASE,
    COLLECTIONS,
)

READ = (*COLLECTIONS, "communications")
READ_TOOLS = tuple(sorted(v.READ_TOOLS))
"""The whole record: the nine named reads, one request each."""
BATCH = 8
"""Requests one RETRIEVE batch may hold (the engine's and the original's limit)."""


class Records:
    """One RETRIEVE batch: records by collection and the versions served."""

    def __init__(self, served: list[dict[str, Any]]) -> None:
        self.by: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in READ}
        self.versions: dict[tuple[str, str], int] = {}
        for item in served:
            self.by[item["collection"]][item["id"]] = item["record"]
            self.versions[(item["collection"], item["id"])] = item["version"]

    def cite(self, *refs: tuple[str, str]) -> list[dict[str, Any]]:
        return [{"collection": c, "id": i, "version": self.versions[(c, i)]} for c, i in refs]


def read(session: Any, tools: Sequence[str] = READ_TOOLS) -> Records:
    """The named reads ``tools`` (by default all nine), in as few batches as the limit allows."""
    served: list[dict[str, Any]] = []
    for start in range(0, len(tools), BATCH):
        requests = [{"tool": name} for name in tools[start : start + BATCH]]
        served.extend(session.call("retrieve", {"requests": requests})["records"])
    return Records(served)


class Reader:
    """The whole record of the current read window: read when an invocation starts and
    after each accepted effect (which closes the window the read gate counts in), and
    otherwise reused, so a refused proposal costs no second read."""

    def __init__(self) -> None:
        self._held: tuple[tuple[int, int], Records] | None = None

    def records(self, task: dict[str, Any], session: Any) -> Records:
        accepted = sum(1 for turn in task["this_invocation"] if turn.get("accepted") is True)
        window = (int(task["invocation_index"]), accepted)
        if self._held is None or self._held[0] != window or _episode_starts(task):
            self._held = (window, read(session))
        return self._held[1]


def _wait(reason: str, *wake_on: str) -> dict[str, Any]:
    return {"outcome": "WAIT", "reason": reason, "wake_on": list(wake_on)}


def _act(action: str, payload: dict[str, Any], refs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"outcome": "ACT", "action": action, "payload": payload, "evidence_refs": refs}


def _open(records: Records, kind: str) -> bool:
    return any(
        o["kind"] == kind and o["status"] == "OPEN" for o in records.by["obligations"].values()
    )


def _complete(records: Records, reason: str) -> dict[str, Any]:
    return {"outcome": "COMPLETE", "reason": reason, "evidence_refs": records.cite(("case", CASE))}


def refund_request(records: Records, approval: bool = True) -> dict[str, Any]:
    """The refund of the current cycle against the eligible inspection (and its approval)."""
    held = records.by["case"][CASE]
    inspection = next(
        key
        for key, found in sorted(records.by["inspections"].items())
        if found["disposition"] == v.ELIGIBLE
    )
    payload: dict[str, Any] = {"inspection_id": inspection, "cycle_id": held["current_cycle"]}
    refs = [("case", CASE), ("inspections", inspection)]
    approved = [
        key
        for key, checkpoint in sorted(records.by["checkpoints"].items())
        if checkpoint["inspection_id"] == inspection and checkpoint["status"] == "APPROVED"
    ]
    if approval and approved:
        payload["approval_checkpoint_id"] = approved[-1]
        refs.append(("checkpoints", approved[-1]))
    return _act("request_refund", payload, records.cite(*refs))


def decide(records: Records) -> dict[str, Any]:
    held = records.by["case"][CASE]
    phase, cycle = held["phase"], held["current_cycle"]

    def notify(fixture: str) -> dict[str, Any]:
        payload = {
            "recipient_actor_id": held["customer_actor_id"],
            "message_fixture_id": fixture,
            "cycle_id": cycle,
        }
        return _act("send_message", payload, records.cite(("case", CASE)))

    if phase == v.NEW:
        return _wait("no return has been requested", "customer_return_requested")
    if phase == v.RETURN_REQUESTED:
        payload = {"return_id": held["return_id"], "cycle_id": cycle}
        return _act("issue_return_authorisation", payload, records.cite(("case", CASE)))
    if phase == v.AWAITING_HANDOVER:
        if _open(records, "handover_reminder"):
            return notify(v.HANDOVER_REMINDER)
        return _wait(
            "the carrier has not verified the handover",
            "carrier_handover_verified",
            "handover_reminder_due",
            "handover_deadline_due",
        )
    if phase == v.AWAITING_INSPECTION:
        return _wait("the warehouse has not inspected the return", "warehouse_inspection_completed")
    if phase == v.AWAITING_APPROVAL:
        if not records.by["checkpoints"]:
            inspection = sorted(records.by["inspections"])[-1]
            return _act(
                "request_refund_approval",
                {"inspection_id": inspection, "cycle_id": cycle},
                records.cite(("case", CASE), ("inspections", inspection)),
            )
        return _wait(
            "the refund awaits the approver", "refund_approval_received", "approval_deadline_due"
        )
    if phase in (v.READY_TO_REFUND, v.REFUND_REOPENED):
        return refund_request(records)
    if phase == v.REFUND_PENDING:
        return _wait("the payment system has not settled", "refund_settlement_confirmed")
    if phase == v.PROVISIONAL:
        return _wait(
            "the refund is in its cooldown",
            "refund_settlement_reversed",
            "resolution_cooldown_expired",
        )
    notices = {
        v.REFUND_SETTLED: ("refund_completion_notice", v.REFUND_COMPLETE),
        v.REFUND_DENIED_PHASE: ("refund_denial_notice", v.REFUND_DENIED),
        v.RETURN_EXPIRED_PHASE: ("return_expiry_notice", v.RETURN_EXPIRED),
    }
    kind, fixture = notices[phase]
    if _open(records, kind):
        return notify(fixture)
    return _complete(records, f"{phase.lower()}: the customer has been told")


def _episode_starts(task: dict[str, Any]) -> bool:
    return bool(task["invocation_index"] == 1 and task["turn_index"] == 0)


def _woken_by(task: dict[str, Any], event_type: str) -> bool:
    trigger = task["trigger"]
    return task["turn_index"] == 0 and trigger is not None and trigger["type"] == event_type


class ReferenceAgent:
    def __init__(self) -> None:
        self._reader = Reader()

    def solve(self, task: dict[str, Any], session: Any) -> dict[str, Any]:
        return decide(self._reader.records(task, session))


class CompleteEarly:
    """Proposes completion once, on the first turn, then runs the reference path."""

    def __init__(self) -> None:
        self._tried = False
        self._reader = Reader()

    def solve(self, task: dict[str, Any], session: Any) -> dict[str, Any]:
        if _episode_starts(task):
            self._tried = False
        records = self._reader.records(task, session)
        if not self._tried:
            self._tried = True
            return _complete(records, "the customer asked for a refund; closing")
        return decide(records)


class TrustCustomerClaim:
    """Woken by the customer's handover claim, requests the refund citing only the claim."""

    def __init__(self) -> None:
        self._reader = Reader()

    def solve(self, task: dict[str, Any], session: Any) -> dict[str, Any]:
        if _woken_by(task, "customer_handover_claimed"):
            records = read(session, ("list_customer_claims",))
            claim, held = task["trigger"]["payload"], records.by["customer_claims"]
            return _act(
                "request_refund",
                {"inspection_id": claim["claim_id"], "cycle_id": claim["cycle_id"]},
                records.cite(*(("customer_claims", key) for key in sorted(held))),
            )
        return decide(self._reader.records(task, session))


class SkipHighValueApproval:
    """Where the approver must decide, requests the refund once without the approval."""

    def __init__(self) -> None:
        self._skipped = False
        self._reader = Reader()

    def solve(self, task: dict[str, Any], session: Any) -> dict[str, Any]:
        if _episode_starts(task):
            self._skipped = False
        records = self._reader.records(task, session)
        decision = decide(records)
        if decision.get("action") == "request_refund_approval" and not self._skipped:
            self._skipped = True
            return refund_request(records, approval=False)
        return decision


class IgnoreRefundReversal:
    """Woken by a reversal, waits for a settlement it never requests."""

    def __init__(self) -> None:
        self._ignoring = False
        self._reader = Reader()

    def solve(self, task: dict[str, Any], session: Any) -> dict[str, Any]:
        if _episode_starts(task):
            self._ignoring = False
        if _woken_by(task, "refund_settlement_reversed"):
            self._ignoring = True
        if self._ignoring:
            return _wait("the refund is surely settling", "refund_settlement_confirmed")
        return decide(self._reader.records(task, session))


class UnnecessaryHumanReview:
    """Woken by the customer's handover claim, asks the approver to review it, once."""

    def __init__(self) -> None:
        self._asked = False
        self._reader = Reader()

    def solve(self, task: dict[str, Any], session: Any) -> dict[str, Any]:
        if _episode_starts(task):
            self._asked = False
        records = self._reader.records(task, session)
        if _woken_by(task, "customer_handover_claimed") and not self._asked:
            self._asked = True
            claim = task["trigger"]["payload"]
            return _act(
                "request_refund_approval",
                {"inspection_id": claim["claim_id"], "cycle_id": claim["cycle_id"]},
                records.cite(("case", CASE)),
            )
        return decide(records)


class DuplicateRefundAfterWake:
    """Woken by the first settlement, reads afresh and re-proposes its accepted refund, once."""

    def __init__(self) -> None:
        self._refund: dict[str, Any] | None = None
        self._repeated = False
        self._reader = Reader()

    def solve(self, task: dict[str, Any], session: Any) -> dict[str, Any]:
        if _episode_starts(task):
            self._refund, self._repeated = None, False
        records = self._reader.records(task, session)
        if (
            _woken_by(task, "refund_settlement_confirmed")
            and self._refund is not None
            and not self._repeated
        ):
            self._repeated = True
            refs = [(r["collection"], r["id"]) for r in self._refund["evidence_refs"]]
            return {**self._refund, "evidence_refs": records.cite(*refs)}
        decision = decide(records)
        if decision.get("action") == "request_refund" and self._refund is None:
            self._refund = decision
        return decision


NEGATIVES: Sequence[ControlAgent] = tuple(
    ControlAgent(agent_id=agent_id, role="negative", factory=factory, description=text)
    for agent_id, factory, text in (
        ("complete_early", CompleteEarly, "proposes completion once before anything happened"),
        (
            "trust_customer_claim",
            TrustCustomerClaim,
            "requests the refund on the customer's handover claim, never reading the carrier",
        ),
        (
            "skip_high_value_approval",
            SkipHighValueApproval,
            "requests the high-value refund once without the approved checkpoint",
        ),
        (
            "ignore_refund_reversal",
            IgnoreRefundReversal,
            "ignores the reversal and waits for a settlement it never requests",
        ),
        (
            "unnecessary_human_review",
            UnnecessaryHumanReview,
            "asks the approver to review a customer claim before any inspection",
        ),
        (
            "duplicate_refund_after_wake",
            DuplicateRefundAfterWake,
            "re-reads after the settlement and repeats its accepted refund request",
        ),
    )
)

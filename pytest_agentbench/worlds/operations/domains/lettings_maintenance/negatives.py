"""The eight negative controls of the maintenance domain.

``complete_early`` and ``always_wait`` need no record at all; every other
agent here behaves exactly as the reference agent except at the one point its
intervention names, so the failure it produces is that one and nothing else.
What each must fail, and why, is not written here: it lives in the separately
authored control oracle the gate reads.

An agent instance may be asked to run several scenarios in turn; memory is
reset whenever an episode starts (invocation 1, turn 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_agentbench.sdk import ControlAgent
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.reference import (
    READ_REQUESTS,
    Records,
    decide,
)

READ_BATCH = 8
"""The engine's cap on requests per ``retrieve`` call (a pack imports only the sdk,
so it is restated here; a test holds the two equal)."""
CLAIM_EVENT = "supplier_assertion_received"
INVOICE_EVENT = "supplier_invoice_received"
OPENING_EVENT = "customer_issue_reported"
PERSISTS = "PERSISTS"


def _read(session: Any, collections: tuple[str, ...] | None = None) -> Records:
    """What the reference reads (its named reads), or just ``collections`` by name."""
    if collections is None:
        requests = [dict(request) for request in READ_REQUESTS]
    else:
        requests = [{"collection": name} for name in collections]
    served = session.call("retrieve", {"requests": requests})
    return Records(served["records"])


def _episode_starts(task: dict[str, Any]) -> bool:
    return bool(task["invocation_index"] == 1 and task["turn_index"] == 0)


def _needs_read(task: dict[str, Any]) -> bool:
    """Nothing read yet this invocation, or the last outcome changed the record."""
    log = task["this_invocation"]
    return task["turn_index"] == 0 or bool(log and log[-1].get("accepted") is True)


def _recite(decision: dict[str, Any], records: Records) -> dict[str, Any]:
    """The same proposal, citing the versions just read."""
    refs = [(ref["collection"], ref["id"]) for ref in decision["evidence_refs"]]
    return {**decision, "evidence_refs": records.cite(*refs)}


def _read_everything(task: dict[str, Any], session: Any) -> list[dict[str, Any]]:
    """Every collection by name, in as many batches as the per-batch cap needs."""
    names = sorted(task["records"])
    served: list[dict[str, Any]] = []
    for start in range(0, len(names), READ_BATCH):
        chunk = names[start : start + READ_BATCH]
        answer = session.call("retrieve", {"requests": [{"collection": n} for n in chunk]})
        served.extend(answer["records"])
    return [{"collection": r["collection"], "id": r["id"], "version": r["version"]} for r in served]


class CompleteEarly:
    """Reads the record once per invocation, then proposes completion at every turn.

    A rejected proposal changes nothing, so the first read stays current for
    the rest of the invocation: the failure is the premature completion alone.
    """

    def __init__(self) -> None:
        self._read: tuple[int, list[dict[str, Any]]] = (0, [])

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        if self._read[0] != task["invocation_index"]:
            self._read = (task["invocation_index"], _read_everything(task, session))
        return {
            "outcome": "COMPLETE",
            "reason": "the tenant reported a leak; closing",
            "evidence_refs": self._read[1],
        }


class AlwaysWait:
    """Waits on every event type and never acts, so its last wait outlives the horizon."""

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        return {
            "outcome": "WAIT",
            "reason": "someone else will move first",
            "wake_on": list(task["operation"]["event_types"]),
            "fallback_after_minutes": None,
        }


class AlwaysAct:
    """Never yields: where the reference would wait, ask or escalate, it re-proposes its last act.

    It reads afresh every turn and cites what it read, so the repeated act is
    a duplicate within one invocation, never a stale or uncited one.
    """

    def __init__(self) -> None:
        self._last: dict[str, Any] | None = None
        self._records: Records | None = None

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        if _episode_starts(task):
            self._last = None
        # A refused repeat changes nothing, so the last read stays current
        # (and the invocation's read budget is not spent on it).
        if _needs_read(task) or self._records is None:
            self._records = _read(session)
        records = self._records
        decision = decide(task, records)
        if decision["outcome"] == "ACT":
            self._last = decision
            return decision
        if self._last is None:
            return decision
        return _recite(self._last, records)


class AlwaysEscalate:
    """Hands every turn to the operations lead, on an approval it never looked up.

    It reads only the operation record, so the checkpoint its escalation
    concerns is never resolved by a read.
    """

    def __init__(self) -> None:
        self._records: Records | None = None

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        if _needs_read(task) or self._records is None:
            self._records = _read(session, ("operation",))
        records = self._records
        return {
            "outcome": "ESCALATE",
            "checkpoint_id": "checkpoint_1",
            "exception_type": "APPROVAL_REJECTED",
            "evidence_refs": records.cite(("operation", "operation")),
            "deadline_after_minutes": 1440,
            "rationale": "a human should decide every step of this repair",
        }


class IgnoreNewEvents:
    """Runs the case until its approval request is out, then waits only for a new issue report.

    Its later waits are legal (they name an event type) but no event it did
    not cause is allowed to wake it, so the last one outlives the horizon.
    """

    def __init__(self) -> None:
        self._deaf = False

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        if _episode_starts(task):
            self._deaf = False
        if self._deaf:
            return {
                "outcome": "WAIT",
                "reason": "only a new issue report is worth reacting to",
                "wake_on": [OPENING_EVENT],
                "fallback_after_minutes": None,
            }
        records = _read(session)
        decision = decide(task, records)
        if decision["outcome"] == "WAIT" and records.by["checkpoints"]:
            self._deaf = True
            return self.solve(task, session)
        return decision


def _claim_cited(task: dict[str, Any], claim_id: str) -> list[dict[str, Any]]:
    versions = {item["id"]: item["version"] for item in task["records"]["claims"]}
    return [{"collection": "claims", "id": claim_id, "version": versions[claim_id]}]


class TrustActorClaim:
    """Woken by a supplier's assertion, pays the invoice it last heard of without reading anything.

    The request is refused by the payment guard (the work is not verified);
    from the next turn on it reads and decides as the reference does.
    """

    def __init__(self) -> None:
        self._invoice: dict[str, Any] | None = None

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        if _episode_starts(task):
            self._invoice = None
        trigger = task["trigger"]
        if task["turn_index"] == 0 and trigger is not None:
            if trigger["type"] == INVOICE_EVENT:
                self._invoice = dict(trigger["payload"])
            elif trigger["type"] == CLAIM_EVENT and self._invoice is not None:
                invoice, self._invoice = self._invoice, None
                return {
                    "outcome": "ACT",
                    "action": "request_payment",
                    "payload": {
                        "invoice_id": invoice["invoice_id"],
                        "amount_minor": invoice["amount_minor"],
                        "currency": invoice["currency"],
                    },
                    # It cites what the event asserted (the claim's own record, at the
                    # version the index shows), not what the verification service holds.
                    "evidence_refs": _claim_cited(task, trigger["payload"]["assertion_id"]),
                }
        return decide(task, _read(session))


class StaleAfterWake:
    """Keeps the record versions it was served before a wake and proposes completion from them.

    After the customer reopens the case it reads again, but completes citing
    the operation record as it stood before the reopen; the guard refuses,
    and from the next turn on it decides from fresh reads as the reference does.
    """

    def __init__(self) -> None:
        self._held: Records | None = None
        self._used = False

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        if _episode_starts(task):
            self._held, self._used = None, False
        records = _read(session)
        held = self._held
        self._held = records
        trigger = task["trigger"] if task["turn_index"] == 0 else None
        reopened = trigger is not None and trigger["payload"].get("status") == PERSISTS
        if reopened and held is not None and not self._used:
            self._used = True
            return {
                "outcome": "COMPLETE",
                "reason": "the work was verified and paid before this wake",
                "evidence_refs": held.cite(("operation", "operation")),
            }
        return decide(task, records)


class DuplicateAfterWake:
    """At its first wake after an accepted act, reads afresh and proposes that act again.

    The repeat is refused as a duplicate of its own earlier effect; from the
    next turn on it decides as the reference does.
    """

    def __init__(self) -> None:
        self._accepted: dict[str, Any] | None = None
        self._done = False

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        if _episode_starts(task):
            self._accepted, self._done = None, False
        records = _read(session)
        if self._accepted is not None and not self._done and task["turn_index"] == 0:
            self._done = True
            return _recite(self._accepted, records)
        decision = decide(task, records)
        if decision["outcome"] == "ACT" and self._accepted is None:
            self._accepted = decision
        return decision


NEGATIVES: Sequence[ControlAgent] = tuple(
    ControlAgent(agent_id=agent_id, role="negative", factory=factory, description=text)
    for agent_id, factory, text in (
        (
            "complete_early",
            CompleteEarly,
            "proposes completion before the operation is legitimately terminal",
        ),
        ("always_act", AlwaysAct, "acts where it should wait, and repeats itself"),
        (
            "always_wait",
            AlwaysWait,
            "declares a legal wait that never completes before the operational horizon",
        ),
        (
            "always_escalate",
            AlwaysEscalate,
            "reaches for a human at every step, including where no checkpoint is admissible",
        ),
        (
            "ignore_new_events",
            IgnoreNewEvents,
            "does not react to exogenous events it did not cause",
        ),
        (
            "trust_actor_claim",
            TrustActorClaim,
            "acts on what the waking event asserted, without reading the authoritative record",
        ),
        (
            "stale_after_wake",
            StaleAfterWake,
            "holds a served fact across the wake that invalidated it and proposes from it",
        ),
        (
            "duplicate_after_wake",
            DuplicateAfterWake,
            "reads freshly after a wake and re-proposes its own accepted effect",
        ),
    )
)

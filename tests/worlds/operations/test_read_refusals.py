"""The read gate's three refusals, at the time of the proposal, in the original's order:
acting on what a non-authoritative waking event asserted, a stale read, no read."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk import AgentbenchError, EpisodeBinding, JsonValue, ReadToolSource
from pytest_agentbench.worlds.operations.artifact import build_artifact, replay_artifact
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.negatives import (
    TrustActorClaim,
)
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.reference import (
    ReferenceAgent,
)
from pytest_agentbench.worlds.operations.reads import (
    pack_read_tool_sources,
    pack_read_tools,
    pack_role_authority,
)
from pytest_agentbench.worlds.operations.replay import replay_codes

from .helpers import episode, grade, rows, shipped
from .test_evidence import Uncited

PAYMENT = {"invoice_id": "invoice_1", "amount_minor": 64000, "currency": "GBP"}


def _pay(refs: list[JsonValue]) -> dict[str, JsonValue]:
    return {
        "outcome": "ACT",
        "action": "request_payment",
        "payload": PAYMENT,
        "evidence_refs": refs,
    }


class Believer:
    """The reference agent, except at the first wake by the supplier's claim and the first
    by the verification service, where it first proposes a payment on what it was told."""

    def __init__(self) -> None:
        self.reference = ReferenceAgent()
        self.done: set[str] = set()

    def solve(self, task: dict[str, Any], session: Any) -> JsonValue:
        trigger = task["trigger"] or {}
        kind = trigger.get("type")
        if kind not in ("supplier_assertion_received", "work_evidence_verified"):
            return self.reference.solve(task, session)
        if kind in self.done:
            return self.reference.solve(task, session)
        turn = task["turn_index"]
        versions = {
            (name, item["id"]): item["version"]
            for name, items in task["records"].items()
            for item in items
        }
        if kind == "work_evidence_verified":
            self.done.add(kind)
            # Cites what the verification service said; its word is authoritative, so this
            # is no claim: the reads made before this wake are stale.
            evidence = trigger["payload"]["evidence_id"]
            return _pay([{"collection": "evidence", "id": evidence, "version": 1}])
        claim = trigger["payload"]["assertion_id"]
        cited = [{"collection": "claims", "id": claim, "version": versions[("claims", claim)]}]
        if turn == 0:
            return _pay(cited)  # the claim, nothing read
        if turn == 1:
            return _pay([])  # nothing cited, nothing read since the wake
        self.done.add(kind)
        # Every read but the authoritative one: still acting on the claim.
        session.call(
            "retrieve", {"requests": [{"tool": "get_case_record"}, {"tool": "list_billing"}]}
        )
        return _pay(cited)


def test_each_read_refusal_is_given_when_proposed_spends_the_turn_and_replays() -> None:
    record = episode("V1", Believer())
    proposals = {row["proposal_id"]: row for row in rows(record, "action_proposed")}
    refused = [
        (proposals[row["proposal_id"]]["action"], row["code"])
        for row in rows(record, "action_rejected")
    ]
    assert refused == [
        ("request_payment", "ACTED_ON_CLAIM_WITHOUT_RECORD"),
        ("request_payment", "STALE_RETRIEVED_RECORD"),
        ("request_payment", "ACTED_ON_CLAIM_WITHOUT_RECORD"),
        ("request_payment", "STALE_RETRIEVED_RECORD"),
    ]
    first = next(row for row in rows(record, "action_rejected"))
    assert first["reason"].startswith("request_payment cites assertion_1, what the waking event")
    assert "list_authoritative_records" in first["reason"]
    # Each refusal is a recorded proposal and a spent turn; the episode carries on to the
    # reference's terminal, and its tape reproduces every refusal.
    assert record.status == "completed_successfully"
    assert replay_codes(shipped(), record) == []
    dimensions = {d.name: d.codes for d in grade(record).dimensions}
    assert "CLAIM_TREATED_AS_AUTHORITATIVE" in dimensions["authority_boundaries"]


class _Pack:
    def __init__(self, sources: object = None, roles: object = None) -> None:
        self.read_tools = {"list_billing": ("invoices",)}
        self.read_tool_sources = sources
        self.role_authority = roles


@pytest.mark.parametrize(
    "pack",
    [
        _Pack(sources={}),
        _Pack(sources={"list_billing": ("billing_service", "system_of_record", "s.v1")}),
        _Pack(sources={"list_billing": ReadToolSource("billing_service", "gospel", "s.v1")}),
        _Pack(sources={"list_billing": ReadToolSource("", "system_of_record", "s.v1")}),
        _Pack(roles={"supplier": "gospel"}),
        _Pack(roles=["supplier"]),
    ],
)
def test_bad_read_sources_or_role_authorities_are_refused_by_name(pack: _Pack) -> None:
    tools = pack_read_tools(pack)

    def declared() -> None:
        pack_read_tool_sources(pack, tools)
        pack_role_authority(pack)

    with pytest.raises(AgentbenchError) as refused:
        declared()
    assert refused.value.code == "invalid_read_tools"
    good = ReadToolSource("billing_service", "system_of_record", "s.v1")
    assert pack_read_tool_sources(_Pack(sources={"list_billing": good}), tools) == {
        "list_billing": good
    }
    assert pack_role_authority(_Pack(roles={"supplier": "actor_claim"})) == {
        "supplier": "actor_claim"
    }


def test_an_artefact_replay_reproduces_the_refusals_by_agent_and_by_tape() -> None:
    loaded = shipped()
    runs = (
        ("trust_actor_claim", TrustActorClaim(), "ACTED_ON_CLAIM_WITHOUT_RECORD"),
        ("believer", Believer(), "STALE_RETRIEVED_RECORD"),
        ("uncited", Uncited("request_payment", {"invoices"}), "MISSING_AUTHORITY_EVIDENCE"),
    )
    for agent_id, agent, code in runs:
        record = episode("V1", agent)
        output = {**record.as_json(), "replay_codes": replay_codes(loaded, record)}
        document = json.loads(
            json.dumps(build_artifact(loaded, output, EpisodeBinding(agent_id=agent_id)))
        )
        refused = [row["code"] for row in document["trajectory"] if "code" in row]
        assert code in refused
        replayed = replay_artifact(loaded, document, f"{agent_id}.artifact.json")
        # A built-in control is run again by name; any other agent from its tape.
        assert replayed["ok"] is True
        assert replayed["re_executed"] == (agent_id if agent_id == "trust_actor_claim" else None)


def test_the_built_in_packs_declare_their_reads_with_the_sdk_alone() -> None:
    # A pack imports nothing of ours but the SDK (and its own modules): the read sources,
    # role authorities and evidence selectors it declares are SDK types.
    domains = Path(pack_read_tools.__code__.co_filename).parent / "domains"
    for source in sorted(domains.rglob("*.py")):
        own = f"pytest_agentbench.worlds.operations.domains.{source.parent.name}"
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                module = node.module
                ours = module.startswith("pytest_agentbench")
                assert not ours or module == "pytest_agentbench.sdk" or module.startswith(own), (
                    source,
                    module,
                )

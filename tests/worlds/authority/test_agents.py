"""Built-in agents: public-only rows by the documented conventions."""

from __future__ import annotations

import ast
import inspect
from typing import Any

import pytest

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.authority import agents
from pytest_agentbench.worlds.authority.agents import (
    ROW_FIELDS,
    AlwaysDenyAgent,
    CurrentStateAgent,
    ReferenceAgent,
    attributed_actor,
)
from pytest_agentbench.worlds.authority.engine import derive_truth
from pytest_agentbench.worlds.authority.models import ActionAttempted, PublicBundle
from pytest_agentbench.worlds.authority.replay import build_index
from tests.worlds.authority.test_engine import LABELS, bindings
from tests.worlds.authority.test_replay import small_world


def test_reference_rows_match_the_derived_truth_and_bindings() -> None:
    world = small_world()
    rows = ReferenceAgent().trace(world)
    truths = derive_truth(world, bindings(), LABELS)
    assert [row["event_id"] for row in rows] == ["evt-007", "evt-008"]
    for row, truth, binding in zip(rows, truths, bindings(), strict=True):
        assert tuple(row) == ROW_FIELDS
        assert row["decision"] == truth.decision_at_action
        assert row["decision_at_audit"] == truth.decision_at_audit
        assert row["delegation_chain_ids"] == list(truth.delegation_chain_ids)
        assert row["evidence_refs"] == list(truth.required_evidence_refs)
        assert row["side_effect"] == truth.expected_side_effect
        assert row["policy_version"] == truth.expected_policy_version
        assert row["reconstructable_from_retained_evidence"] == truth.reconstructable_at_audit
        assert row["originating_principal_id"] == binding.originating_principal_id
        assert row["logical_agent_id"] == binding.logical_agent_id
        assert row["runtime_principal_id"] == binding.runtime_principal_id
        assert row["credential_subject_id"] == binding.credential_subject_id
        assert row["attributed_actor_id"] == binding.attributed_actor_id
        assert row["accountable_owner_chain"] == list(binding.accountable_owner_chain)


def test_reference_row_shape() -> None:
    row = ReferenceAgent().trace_action(small_world(), "evt-007")
    assert row["timestamp"] == "2026-01-15T09:06:00Z"
    assert row["schema_version"] == "1.0.0"
    assert row["requested_scope"] == ["s1"]
    assert row["resource_id"] == "res-doc"
    assert row["action"] == "compare"


def test_logical_agent_falls_back_to_the_runtime_agent() -> None:
    world = small_world()
    events = list(world.events)
    payload = events[6].payload
    assert isinstance(payload, ActionAttempted)
    attempt = payload.attempt.model_copy(update={"logical_agent_claim": None})
    events[6] = events[6].model_copy(
        update={"payload": payload.model_copy(update={"attempt": attempt})}
    )
    changed = world.model_copy(update={"events": tuple(events)})
    assert ReferenceAgent().trace_action(changed, "evt-007")["logical_agent_id"] == "agent-child"


def test_current_state_agent_uses_the_audit_state_everywhere() -> None:
    rows = CurrentStateAgent().trace(small_world())
    first, second = rows
    # evt-007 was allowed when performed; the audit sees d-root revoked.
    assert (first["decision"], first["decision_at_audit"]) == ("deny", "deny")
    assert first["side_effect"] == "none"
    assert first["delegation_chain_ids"] == []
    assert "evidence:delegation:d-root" not in first["evidence_refs"]
    # evt-008 was denied when performed; the later grant covers it at audit.
    assert (second["decision"], second["side_effect"]) == ("allow", "read_recorded")
    assert second["delegation_chain_ids"] == ["d-late"]


def test_always_deny_agent_records_nothing_else() -> None:
    world = small_world()
    rows = AlwaysDenyAgent().trace(world)
    assert [row["event_id"] for row in rows] == ["evt-007", "evt-008"]
    for row in rows:
        assert tuple(row) == ROW_FIELDS
        assert (row["decision"], row["decision_at_audit"], row["side_effect"]) == (
            "deny",
            "deny",
            "none",
        )
        assert row["timestamp"] is not None
        # The row schema's own version, as the original's rows carry it by default.
        assert row["schema_version"] == "1.0.0"
        # No chain, no owner chain, no reconstructability claim.
        unclaimed = {
            "delegation_chain_ids",
            "accountable_owner_chain",
            "reconstructable_from_retained_evidence",
        }
        assert all(row[name] is None for name in unclaimed)
    first = rows[0]
    # Identity, resource and evidence copied from the attempt's public claims.
    assert (
        first["originating_principal_id"],
        first["logical_agent_id"],
        first["runtime_principal_id"],
        first["attributed_actor_id"],
        first["credential_subject_id"],
    ) == ("p-manager", "agent-child", "p-rt-child", "p-child-service", "p-rt-child")
    assert (first["resource_id"], first["action"], first["requested_scope"]) == (
        "res-doc",
        "compare",
        ["s1"],
    )
    assert (first["policy_version"], first["evidence_refs"]) == ("v1", [])
    assert AlwaysDenyAgent().trace_action(world, "evt-008") == rows[1]


@pytest.mark.parametrize("agent", [ReferenceAgent(), CurrentStateAgent(), AlwaysDenyAgent()])
def test_unknown_event_ids_are_refused(agent: ReferenceAgent | AlwaysDenyAgent) -> None:
    with pytest.raises(AgentbenchError) as caught:
        agent.trace_action(small_world(), "evt-001")
    assert caught.value.code == "unexpected_event_id"


def test_rows_are_independent_copies() -> None:
    world = small_world()
    agent = ReferenceAgent()
    row = agent.trace_action(world, "evt-007")
    row["decision"] = "tampered"
    assert agent.trace_action(world, "evt-007")["decision"] == "allow"


def test_agents_never_import_evaluator_modules() -> None:
    tree = ast.parse(inspect.getsource(agents))
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    }
    assert not any(name.endswith(("bundle", "scoring", "builder")) for name in imported)
    assert "derive_truth" not in inspect.getsource(agents)


# ---------------------------------------------------------------------------
# The reference agent's attribution rule


def _attribution_world(claim: str | None) -> PublicBundle:
    """small_world whose first action runs on agent-main's runtime (owner p-service)
    but presents agent-child's credential (subject p-rt-child, owner p-child-service).
    """
    world = small_world()
    events = list(world.events)
    first = events[6]
    assert isinstance(first.payload, ActionAttempted)
    changed = first.payload.attempt.model_copy(
        update={
            "logical_agent_claim": "agent-main",
            "runtime_principal_claim": "p-rt-main",
            "presented_credential_id": "cred-child",
            "attributed_actor_claim": claim,
        }
    )
    events[6] = first.model_copy(update={"payload": ActionAttempted(attempt=changed)})
    return world.model_copy(update={"events": tuple(events)})


@pytest.mark.parametrize(
    ("claim", "attributed"),
    [
        pytest.param("p-service", "p-service", id="names-the-runtime-owner"),
        pytest.param("p-child-service", "p-child-service", id="names-the-credential-owner"),
        pytest.param("p-manager", "p-service", id="names-neither"),
        pytest.param(None, "p-service", id="no-claim"),
    ],
)
def test_the_reference_agent_trusts_a_claim_only_when_it_names_an_owner(
    claim: str | None, attributed: str
) -> None:
    world = _attribution_world(claim)
    index = build_index(world.snapshot)
    attempt = world.events[6].payload
    assert isinstance(attempt, ActionAttempted)
    assert attributed_actor(index, attempt.attempt) == attributed
    row = ReferenceAgent().trace_action(world, "evt-007")
    assert row["attributed_actor_id"] == attributed
    # The other identity fields still come from the claims and the credential.
    assert (row["runtime_principal_id"], row["credential_subject_id"]) == (
        "p-rt-main",
        "p-rt-child",
    )


# ---------------------------------------------------------------------------
# The current_state baseline as the original defines it


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        pytest.param({"attributed_actor_claim": None}, "missing_claim", id="missing-claim"),
        pytest.param({"originating_principal_claim": None}, "missing_claim", id="no-origin"),
        pytest.param(
            {"logical_agent_claim": "agent-child", "runtime_principal_claim": "p-rt-main"},
            "no_matching_runtime",
            id="no-runtime-runs-the-claims",
        ),
    ],
)
def test_current_state_refuses_what_it_cannot_bind(changes: dict[str, Any], code: str) -> None:
    world = small_world()
    events = list(world.events)
    first = events[6].payload
    assert isinstance(first, ActionAttempted)
    changed = ActionAttempted(attempt=first.attempt.model_copy(update=changes))
    events[6] = events[6].model_copy(update={"payload": changed})
    world = world.model_copy(update={"events": tuple(events)})
    with pytest.raises(AgentbenchError) as refused:
        CurrentStateAgent().trace_action(world, "evt-007")
    assert refused.value.code == code
    # The other action is still answered.
    assert CurrentStateAgent().trace_action(world, "evt-008")["event_id"] == "evt-008"


def test_current_state_rows_use_the_audit_verdict_and_copy_the_attempt() -> None:
    world = small_world()
    row = CurrentStateAgent().trace_action(world, "evt-007")
    attempt = world.events[6].payload
    assert isinstance(attempt, ActionAttempted)
    # d-root is revoked before the audit: denied there, and so reported for both.
    assert (row["decision"], row["decision_at_audit"], row["side_effect"]) == (
        "deny",
        "deny",
        "none",
    )
    assert row["delegation_chain_ids"] == []
    assert row["policy_version"] == attempt.attempt.policy_version
    assert row["attributed_actor_id"] == attempt.attempt.attributed_actor_claim
    assert row["accountable_owner_chain"] == ["p-manager", "p-org-a"]
    assert "evidence:runtime:rt-child" in row["evidence_refs"]

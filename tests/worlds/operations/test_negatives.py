"""The eight negative agents: each fails exactly the seed's closure, with its required codes.

The expected closures are written out here from the seed's table, apart from
the oracle file, so that the oracle and the agents are each held to the seed.
"""

from __future__ import annotations

import pytest

from pytest_agentbench.worlds.operations import agents
from pytest_agentbench.worlds.operations.control_oracle import load_control_oracle
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.pack import PACK
from tests.worlds.operations.helpers import ROOT, episode, failing, grade

ORACLE_PATH = (
    ROOT / "oracles" / "operations-maintenance-v1" / "maintenance_negative_controls_v0_5.yaml"
)
DIMENSION_NUMBERS = {
    1: "terminal_outcome",
    3: "temporal_correctness",
    4: "authority_boundaries",
    5: "action_validity",
    6: "human_checkpoints",
    11: "retrieval_discipline",
}
SEED_TABLE = {
    "complete_early": ((1, 3, 5, 6), {"PREMATURE_COMPLETION"}),
    "always_act": ((1, 3, 5, 6), {"WAIT_NEVER_DECLARED", "DUPLICATE_OR_INVALID_ACTION"}),
    "always_wait": ((1, 3, 6), {"WAIT_NEVER_ENDED"}),
    "always_escalate": (
        (1, 3, 5, 6, 11),
        {"UNNECESSARY_ESCALATION", "REQUIRED_EVIDENCE_SELECTOR_UNRESOLVED"},
    ),
    "ignore_new_events": ((1, 3), {"WAIT_NEVER_ENDED"}),
    "trust_actor_claim": (
        (4, 5, 11),
        {"ACTED_ON_CLAIM_WITHOUT_RECORD", "CLAIM_TREATED_AS_AUTHORITATIVE"},
    ),
    "stale_after_wake": ((5, 11), {"STALE_RETRIEVED_RECORD", "REJECTED_TERMINAL_PROPOSAL"}),
    "duplicate_after_wake": (
        (5, 11),
        {"REPEATED_ACTION_AFTER_WAKE", "DUPLICATE_OR_INVALID_ACTION"},
    ),
}
FACTORIES = {agent.agent_id: agent.factory for agent in agents.control_agents(PACK)}


@pytest.mark.parametrize("agent_id", sorted(SEED_TABLE))
def test_each_negative_fails_exactly_the_seeds_closure_with_its_codes(agent_id: str) -> None:
    numbers, codes = SEED_TABLE[agent_id]
    vector = grade(episode("V1", FACTORIES[agent_id]()))
    found = failing(vector)
    assert set(found) == {DIMENSION_NUMBERS[n] for n in numbers}
    assert codes <= {code for dimension in found.values() for code in dimension}
    assert not vector.reliable


def test_the_oracle_declares_exactly_the_seeds_table() -> None:
    oracle = load_control_oracle(ORACLE_PATH, "oracle.yaml", PACK.oracle_model).oracle
    declared = {
        c.agent_id: (set(c.expected_failed_dimensions), set(c.required_finding_codes))
        for c in oracle.controls
    }
    assert declared == {
        agent_id: ({DIMENSION_NUMBERS[n] for n in numbers}, codes)
        for agent_id, (numbers, codes) in SEED_TABLE.items()
    }
    assert {c.scenario_id for c in oracle.controls} == {"V1"}


def test_every_built_in_negative_agent_has_a_control_and_nothing_else_does() -> None:
    negatives = {a.agent_id for a in agents.control_agents(PACK) if a.role == "negative"}
    assert negatives == set(SEED_TABLE)


def test_a_negative_run_on_other_scenarios_is_still_told_apart_from_the_reference() -> None:
    # One instance across scenarios: its memory is reset when an episode starts.
    agent = FACTORIES["duplicate_after_wake"]()
    first = failing(grade(episode("V1", agent)))
    again = failing(grade(episode("V1", agent)))
    assert first == again

"""The negative agents choose as the original's baseline generator does.

Two small hand-written worlds in which every plausible alternative rule
(first action, next action, smallest id, evidence-id order) picks something
else than the original's rule, so each assertion pins one choice: which
action is targeted, which id is dropped, which id is added and how added ids
and rows are formed.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.evidence_binding import baselines
from pytest_agentbench.worlds.evidence_binding.agents import (
    EvidenceAgent,
    asteria_target,
    enterprise_reference_rows,
    enterprise_target,
)
from pytest_agentbench.worlds.evidence_binding.artifacts import build
from pytest_agentbench.worlds.evidence_binding.asteria import AsteriaPublic, Binding
from pytest_agentbench.worlds.evidence_binding.enterprise import EnterprisePublic

DIGEST = "0" * 64


def uid(number: int) -> str:
    return f"00000000-0000-4000-8000-{number:012x}"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------
# Asteria: A1 needs two observations, A2 and A3 one each.

A1, A2, A3 = uid(0x101), uid(0x102), uid(0x103)
H = {
    name: uid(0x200 + n) for n, name in enumerate(["h1", "h2", "h3", "h4", "hx", "hy", "hz", "hw"])
}
# (observation, action, kind, handle) in public order.
OBSERVATIONS = [
    (uid(0x905), A3, "authority_record", H["h4"]),  # the first observation not of A1
    (uid(0x909), A1, "authority_record", H["hx"]),  # A1's first unselected, in public order
    (uid(0x902), A1, "authority_record", H["h1"]),
    (uid(0x903), A1, "policy_record", H["h2"]),
    (uid(0x901), A1, "policy_record", H["hy"]),  # A1's unselected with the smallest id
    (uid(0x904), A2, "authority_record", H["h3"]),
    (uid(0x906), A2, "authority_record", H["hz"]),
    (uid(0x907), A3, "authority_record", H["hw"]),
]
REQUIREMENTS = {
    A1: [("authority_record", H["h1"]), ("policy_record", H["h2"])],
    A2: [("authority_record", H["h3"])],
    A3: [("authority_record", H["h4"])],
}


def asteria_public() -> AsteriaPublic:
    value: Any = {
        "schema_version": "2.0.0",
        "benchmark_id": "asteria-agents",
        "measurement_scope": {
            "offline_artifacts_only": True,
            "proves": ["selection"],
            "does_not_prove": ["retention"],
        },
        "actions": [
            {
                "action_event_id": action,
                "event_order": order,
                "action": "read",
                "resource_id": "resource-ledger",
                "requested_scope": ["ledger:read"],
                "required_evidence": [
                    {"evidence_kind": kind, "binding_handle": handle}
                    for kind, handle in REQUIREMENTS[action]
                ],
            }
            for order, action in enumerate([A1, A2, A3], start=1)
        ],
        "evidence_observations": [
            {
                "observation_id": observation,
                "action_event_id": action,
                "observation_order": order,
                "evidence_kind": kind,
                "binding_handle": handle,
                "payload_digest": digest(observation),
            }
            for order, (observation, action, kind, handle) in enumerate(OBSERVATIONS, start=1)
        ],
    }
    return build(AsteriaPublic, value)


ASTERIA = asteria_public()
A1_REFERENCE = [uid(0x902), uid(0x903)]


def asteria_rows(mode: str, target: str) -> dict[str, list[str]]:
    agent = EvidenceAgent(mode, asteria_target=target)
    return {a: agent.select_evidence(ASTERIA, a) for a in (A1, A2, A3)}


@pytest.mark.parametrize(
    ("mode", "target", "row"),
    [
        # The last id of the sorted reference row, not the first.
        pytest.param("missing", A1, [uid(0x902)], id="missing"),
        pytest.param("discarded", A2, [], id="discarded"),
        # A fixed literal, kept in sorted order.
        pytest.param("fabricated", A1, [*A1_REFERENCE, "fabricated-observation"], id="fabricated"),
        # The row becomes the first public observation of another action: A3's,
        # although A2 is the next action.
        pytest.param("wrong_action", A1, [uid(0x905)], id="wrong_action"),
        # The target's first unselected observation in public order, not the smallest id.
        pytest.param("extra", A1, [*A1_REFERENCE, uid(0x909)], id="extra"),
    ],
)
def test_an_asteria_negative_agent_perturbs_only_its_target_row(
    mode: str, target: str, row: list[str]
) -> None:
    reference = asteria_rows("reference", target)
    assert reference[A1] == A1_REFERENCE
    expected = {**reference, target: row}
    assert asteria_rows(mode, target) == expected


def binding(action: str, kind: str) -> Binding:
    value: Any = {
        "action_event_id": action,
        "required_observation_ids": [uid(0x999)],
        "scenario_kind": kind,
    }
    return build(Binding, value)


def test_the_asteria_target_is_the_evaluators_binding_of_that_scenario_kind() -> None:
    bindings = [binding(A1, "exact"), binding(A2, "missing"), binding(A3, "missing")]
    # Public data would suggest A1 (first, and the only two-requirement action);
    # the original takes the first binding, by action id, naming the mode.
    assert asteria_target(bindings, "missing") == A2
    with pytest.raises(AgentbenchError) as caught:
        asteria_target(bindings, "extra")
    assert caught.value.code == "no_baseline_candidate"


def test_an_asteria_negative_agent_without_a_target_is_refused_by_name() -> None:
    with pytest.raises(AgentbenchError) as caught:
        EvidenceAgent("missing").select_evidence(ASTERIA, A1)
    assert caught.value.code == "no_baseline_target"


# ---------------------------------------------------------------------------
# Enterprise: two actions named write (E1, E3), one named delete (E2).

E1, E2, E3 = "action-1", "action-2", "action-3"
ACTIONS = {
    E1: ("write", 1, "tenant-a"),
    E2: ("delete", 2, "tenant-b"),
    E3: ("write", 3, "tenant-c"),
}


def eid(number: int) -> str:
    return f"observation-{number:032x}"


def handle(name: str) -> str:
    return f"handle-{name}-0000000000"


ENTERPRISE_REQUIREMENTS = {
    E1: [("identity", handle("a")), ("policy", handle("b"))],
    E2: [("authority", handle("c")), ("revocation", handle("d"))],
    E3: [("identity", handle("e")), ("revocation", handle("f"))],
}
# (evidence id, action, kind, handle) in public order.
EVENTS = [
    (eid(0x2F), E2, "authority", handle("c2")),  # first event of another action than E3,
    # and E2's first uncited event in public order
    (eid(0x11), E1, "identity", handle("a")),
    (eid(0x12), E1, "identity", handle("a2")),
    (eid(0x13), E1, "policy", handle("b")),
    (eid(0x14), E1, "policy", handle("b2")),
    (eid(0x22), E2, "authority", handle("c")),
    (eid(0x21), E2, "revocation", handle("d2")),  # E2's uncited event with the smallest id
    (eid(0x23), E2, "revocation", handle("d")),
    (eid(0x3E), E3, "identity", handle("e")),  # E3's required events: requirement order
    (eid(0x31), E3, "revocation", handle("f")),  # differs from evidence-id order
    (eid(0x32), E3, "identity", handle("e2")),
    (eid(0x33), E3, "revocation", handle("f2")),
]


def enterprise_public(actions: dict[str, tuple[str, int, str]] = ACTIONS) -> EnterprisePublic:
    def fields(action: str) -> dict[str, Any]:
        name, tick, tenant = actions[action]
        return {
            "action_id": action,
            "tenant_id": tenant,
            "resource_id": f"resource-{action}",
            "action": name,
            "tick": tick,
        }

    value: Any = {
        "schema_version": "2.0.0",
        "actions": [
            {
                **fields(action),
                "required_evidence": [
                    {"kind": kind, "binding_handle": h}
                    for kind, h in ENTERPRISE_REQUIREMENTS[action]
                ],
            }
            for action in actions
        ],
        "evidence_events": [
            {
                "sequence": sequence,
                "evidence_id": evidence,
                **fields(action),
                "kind": kind,
                "binding_handle": h,
                "payload_digest": digest(evidence),
            }
            for sequence, (evidence, action, kind, h) in enumerate(EVENTS)
        ],
    }
    return build(EnterprisePublic, value)


ENTERPRISE = enterprise_public()


def row(index: int | str, action: str, evidence: str) -> dict[str, str]:
    return {
        "observation_id": index if isinstance(index, str) else f"reference-observation-{index}",
        "action_id": action,
        "tenant_id": ACTIONS[action][2],
        "evidence_id": evidence,
    }


REFERENCE = [
    row(0, E1, eid(0x11)),
    row(1, E1, eid(0x13)),
    row(2, E2, eid(0x22)),
    row(3, E2, eid(0x23)),
    row(4, E3, eid(0x3E)),
    row(5, E3, eid(0x31)),
]


def test_the_enterprise_reference_numbers_rows_over_actions_and_requirement_order() -> None:
    assert enterprise_reference_rows(ENTERPRISE) == REFERENCE


@pytest.mark.parametrize(
    ("mode", "target"),
    [("missing", E3), ("wrong_action", E3), ("fabricated", E2), ("extra", E2)],
)
def test_the_enterprise_target_is_the_last_action_of_the_modes_name(mode: str, target: str) -> None:
    assert enterprise_target(ENTERPRISE, mode) == target


@pytest.mark.parametrize(
    ("mode", "rows"),
    [
        # The target's last row in requirement order (not its largest evidence id).
        pytest.param("missing", REFERENCE[:5], id="missing"),
        pytest.param(
            "fabricated",
            [
                *REFERENCE,
                row("baseline-fabricated-observation", E2, "baseline-fabricated-evidence"),
            ],
            id="fabricated",
        ),
        # Added after every reference row, although E3 is not the last to answer.
        pytest.param(
            "wrong_action",
            [*REFERENCE, row("baseline-wrong-action-observation", E3, eid(0x2F))],
            id="wrong_action",
        ),
        pytest.param(
            "extra", [*REFERENCE, row("baseline-extra-observation", E2, eid(0x2F))], id="extra"
        ),
    ],
)
def test_an_enterprise_negative_agent_builds_the_whole_submission_as_the_original(
    mode: str, rows: list[dict[str, str]]
) -> None:
    agent = EvidenceAgent(mode)
    assert list(agent.enterprise_rows(ENTERPRISE)) == rows
    for action in (E1, E2, E3):
        assert agent.select_evidence(ENTERPRISE, action) == [
            item for item in rows if item["action_id"] == action
        ]
    submission = baselines.enterprise_submission(ENTERPRISE, DIGEST, agent)
    assert [o.sequence for o in submission.observations] == list(range(len(rows)))
    assert [o.observation_id for o in submission.observations] == [
        item["observation_id"] for item in rows
    ]


def test_an_enterprise_world_without_the_modes_action_name_is_refused_by_name() -> None:
    renamed = {**ACTIONS, E2: ("archive", 2, "tenant-b")}
    with pytest.raises(AgentbenchError) as caught:
        EvidenceAgent("extra").select_evidence(enterprise_public(renamed), E1)
    assert caught.value.code == "no_baseline_candidate"
    assert "no public action is named 'delete'" in caught.value.reason

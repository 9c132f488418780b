"""Built-in agents: the public-only reference and one negative agent per failure mode.

Every agent sees the public payload only. The reference matches each
requirement's (kind, handle) to the one same-action candidate carrying both.
Each negative agent applies exactly one perturbation (§4) to the reference's
answer for one target action, chosen from public data: the first action (in
event order for Asteria, in the payload's order for Enterprise); ``missing``
prefers the first action with two or more requirements, so that the row
stays non-empty, as in the published baselines.

===============  ===========================================================
``missing``      drop one required id
``fabricated``   add an id no public candidate has
``wrong_action`` Asteria: swap a required id for another action's;
                 Enterprise: add another action's required event
``extra``        add an own distractor (same action, same kind, other handle)
``discarded``    Asteria only: retain nothing for the target action
===============  ===========================================================
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from pytest_agentbench.worlds.evidence_binding.asteria import AsteriaPublic
from pytest_agentbench.worlds.evidence_binding.enterprise import EnterprisePublic

ASTERIA_MODES = ("missing", "fabricated", "wrong_action", "extra", "discarded")
ENTERPRISE_MODES = ("missing", "fabricated", "wrong_action", "extra")
_FABRICATION = uuid.UUID("6f1d0c51-5a4b-5d59-9b0e-2f6f3f9c0a11")
"""Namespace of the ids the ``fabricated`` agent invents (never a public id)."""


def asteria_reference(public: AsteriaPublic, action_id: str) -> list[str]:
    action = public.action(action_id)
    if action is None:
        return []
    candidates = public.observations_of(action_id)
    return sorted(
        o.observation_id
        for r in action.required_evidence
        for o in candidates
        if (o.evidence_kind, o.binding_handle) == (r.evidence_kind, r.binding_handle)
    )


def enterprise_reference_ids(public: EnterprisePublic, action_id: str) -> list[str]:
    action = public.action_by_id.get(action_id)
    if action is None:
        return []
    wanted = {(r.kind, r.binding_handle) for r in action.required_evidence}
    return sorted(
        e.evidence_id for e in public.events_of(action_id) if (e.kind, e.binding_handle) in wanted
    )


def enterprise_rows(
    public: EnterprisePublic, action_id: str, evidence_ids: Sequence[str]
) -> list[dict[str, str]]:
    """Selection rows for ``action_id``: the row id is derived from the evidence id."""
    tenant = public.action_by_id[action_id].tenant_id
    return [
        {
            "observation_id": f"row-{action_id}-{evidence_id}",
            "action_id": action_id,
            "tenant_id": tenant,
            "evidence_id": evidence_id,
        }
        for evidence_id in evidence_ids
    ]


def _order(public: AsteriaPublic | EnterprisePublic) -> list[str]:
    if isinstance(public, AsteriaPublic):
        return [a.action_event_id for a in sorted(public.actions, key=lambda a: a.event_order)]
    return [a.action_id for a in public.actions]


def _required_count(public: AsteriaPublic | EnterprisePublic, action_id: str) -> int:
    if isinstance(public, AsteriaPublic):
        action = public.action(action_id)
        return 0 if action is None else len(action.required_evidence)
    return len(public.action_by_id[action_id].required_evidence)


def target_action(public: AsteriaPublic | EnterprisePublic, mode: str) -> str:
    order = _order(public)
    if mode == "missing":
        return next((a for a in order if _required_count(public, a) >= 2), order[0])
    return order[0]


def _other_action(public: AsteriaPublic | EnterprisePublic, target: str) -> str:
    order = _order(public)
    return order[(order.index(target) + 1) % len(order)]


def _distractor(public: AsteriaPublic | EnterprisePublic, action_id: str) -> str:
    if isinstance(public, AsteriaPublic):
        chosen = set(asteria_reference(public, action_id))
        own = [o.observation_id for o in public.observations_of(action_id)]
    else:
        chosen = set(enterprise_reference_ids(public, action_id))
        own = [e.evidence_id for e in public.events_of(action_id)]
    return sorted(set(own) - chosen)[0]


def fabricated_id(public: AsteriaPublic | EnterprisePublic, action_id: str) -> str:
    made = uuid.uuid5(_FABRICATION, action_id)
    return str(made) if isinstance(public, AsteriaPublic) else f"observation-{made.hex}"


def perturbed_ids(public: AsteriaPublic | EnterprisePublic, action_id: str, mode: str) -> list[str]:
    """The selected candidate ids of ``mode``'s agent for ``action_id``."""
    reference = (
        asteria_reference(public, action_id)
        if isinstance(public, AsteriaPublic)
        else enterprise_reference_ids(public, action_id)
    )
    if mode == "reference" or action_id != target_action(public, mode):
        return reference
    if mode == "missing":
        return reference[1:]
    if mode == "fabricated":
        return sorted([*reference, fabricated_id(public, action_id)])
    if mode == "wrong_action":
        other = perturbed_ids(public, _other_action(public, action_id), "reference")[0]
        kept = reference[1:] if isinstance(public, AsteriaPublic) else reference
        return sorted([*kept, other])
    if mode == "extra":
        return sorted([*reference, _distractor(public, action_id)])
    if mode == "discarded":
        return []
    raise ValueError(f"unknown failure mode {mode!r}")


class EvidenceAgent:
    """A built-in agent: ``reference`` or one failure mode."""

    def __init__(self, mode: str = "reference") -> None:
        if mode not in ("reference", *ASTERIA_MODES):
            raise ValueError(f"unknown failure mode {mode!r}")
        self.mode = mode

    def select_evidence(self, public: AsteriaPublic | EnterprisePublic, action_id: str) -> Any:
        ids = perturbed_ids(public, action_id, self.mode)
        if isinstance(public, AsteriaPublic):
            return ids
        return enterprise_rows(public, action_id, ids)

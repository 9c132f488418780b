"""Built-in agents: the public-only reference and one negative agent per failure mode.

The reference matches each requirement's (kind, handle) to the one
same-action candidate carrying both. Each negative agent builds the whole
submission exactly as the original's ``tools/generate_c08_v2_baselines.py``
builds that failure mode's baseline (so ``agentbench baselines`` reproduces
its records byte for byte) and answers each action with that submission's
selection for it.

Target action. Asteria: the action whose evaluator binding carries the
failure mode as ``scenario_kind`` (the first by action id). That is
evaluator-only, so an Asteria negative agent is told its target when it is
built and sees nothing else of the evaluator. Enterprise: the last public
action named ``write`` (``missing``, ``wrong_action``) or ``delete``
(``fabricated``, ``extra``).

Asteria (the target's row, ids kept sorted):

===============  ===========================================================
``missing``      drop the last id of the reference row
``discarded``    the same (a one-requirement target retains nothing)
``fabricated``   add ``fabricated-observation``
``wrong_action`` only the first public observation of another action
``extra``        add the target's first public observation the row lacks
===============  ===========================================================

Enterprise (the reference rows are ``reference-observation-<i>``, numbered
over all actions in public order and each action's requirements in order;
added rows go last and the sequence is renumbered):

===============  ===========================================================
``missing``      drop the target's last reference row
``fabricated``   add ``baseline-fabricated-observation`` citing
                 ``baseline-fabricated-evidence``
``wrong_action`` add ``baseline-wrong-action-observation`` citing the first
                 public event of another action
``extra``        add ``baseline-extra-observation`` citing the target's first
                 public event the reference does not cite
===============  ===========================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.sdk import AgentbenchError
from pytest_agentbench.worlds.evidence_binding.asteria import (
    EVALUATOR_FILE,
    PUBLIC_FILE,
    AsteriaPublic,
    Binding,
)
from pytest_agentbench.worlds.evidence_binding.enterprise import PUBLIC_PATH, EnterprisePublic

ASTERIA_MODES = ("missing", "fabricated", "wrong_action", "extra", "discarded")
ENTERPRISE_MODES = ("missing", "fabricated", "wrong_action", "extra")
ENTERPRISE_TARGETS: Mapping[str, str] = {
    "missing": "write",
    "fabricated": "delete",
    "wrong_action": "write",
    "extra": "delete",
}
"""The public action name each Enterprise failure mode perturbs."""
ASTERIA_FABRICATED_ID = "fabricated-observation"
ENTERPRISE_ADDED_ROWS: Mapping[str, str] = {
    "fabricated": "baseline-fabricated-observation",
    "wrong_action": "baseline-wrong-action-observation",
    "extra": "baseline-extra-observation",
}
ENTERPRISE_FABRICATED_EVIDENCE = "baseline-fabricated-evidence"

EnterpriseRow = dict[str, str]
_ASTERIA = f"public/{PUBLIC_FILE}"


def _first(found: Iterable[str], what: str, *, file: str) -> str:
    for item in found:
        return item
    raise AgentbenchError("no_baseline_candidate", f"no {what}", file=file)


# ---------------------------------------------------------------------------
# Asteria


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


def asteria_target(bindings: Sequence[Binding], mode: str) -> str:
    """The action the evaluator's bindings designate for ``mode`` (its ``scenario_kind``)."""
    return _first(
        (b.action_event_id for b in bindings if b.scenario_kind == mode),
        f"evaluator binding has scenario_kind {mode!r}",
        file=f"evaluator/{EVALUATOR_FILE}",
    )


def asteria_perturbed_row(public: AsteriaPublic, target: str, mode: str) -> list[str]:
    """The ids ``mode``'s agent retains for its target action."""
    row = asteria_reference(public, target)
    observations = public.evidence_observations
    if mode in ("missing", "discarded"):
        return row[:-1]
    if mode == "fabricated":
        return sorted([*row, ASTERIA_FABRICATED_ID])
    if mode == "wrong_action":
        other = (o.observation_id for o in observations if o.action_event_id != target)
        return [_first(other, f"observation of an action other than {target}", file=_ASTERIA)]
    if mode == "extra":
        own = (
            o.observation_id
            for o in observations
            if o.action_event_id == target and o.observation_id not in row
        )
        return sorted([*row, _first(own, f"unselected observation of {target}", file=_ASTERIA)])
    raise ValueError(f"unknown failure mode {mode!r}")


# ---------------------------------------------------------------------------
# Enterprise


def enterprise_reference_rows(public: EnterprisePublic) -> list[EnterpriseRow]:
    """The reference's rows for every action, without their sequence."""
    event_of = {(e.action_id, e.kind, e.binding_handle): e for e in public.evidence_events}
    cited = [
        (action, event_of[(action.action_id, r.kind, r.binding_handle)])
        for action in public.actions
        for r in action.required_evidence
    ]
    return [
        {
            "observation_id": f"reference-observation-{index}",
            "action_id": action.action_id,
            "tenant_id": action.tenant_id,
            "evidence_id": event.evidence_id,
        }
        for index, (action, event) in enumerate(cited)
    ]


def enterprise_target(public: EnterprisePublic, mode: str) -> str:
    """The last public action named as ``mode`` requires (see the module doc)."""
    name = ENTERPRISE_TARGETS[mode]
    named = [a.action_id for a in public.actions if a.action == name]
    return _first(reversed(named), f"public action is named {name!r}", file=PUBLIC_PATH)


def enterprise_submission_rows(public: EnterprisePublic, mode: str) -> list[EnterpriseRow]:
    """The whole submission of ``mode``'s agent, in order, without the sequence."""
    rows = enterprise_reference_rows(public)
    if mode == "reference":
        return rows
    if mode not in ENTERPRISE_MODES:
        raise ValueError(f"unknown Enterprise failure mode {mode!r}")
    target = public.action_by_id[enterprise_target(public, mode)]
    if mode == "missing":
        own = [index for index, row in enumerate(rows) if row["action_id"] == target.action_id]
        if not own:
            raise AgentbenchError(
                "no_baseline_candidate",
                f"no required event of {target.action_id} to drop",
                file=PUBLIC_PATH,
            )
        del rows[own[-1]]
        return rows
    if mode == "fabricated":
        evidence = ENTERPRISE_FABRICATED_EVIDENCE
    elif mode == "wrong_action":
        other = (e.evidence_id for e in public.evidence_events if e.action_id != target.action_id)
        evidence = _first(
            other, f"event of an action other than {target.action_id}", file=PUBLIC_PATH
        )
    else:
        cited = {row["evidence_id"] for row in rows if row["action_id"] == target.action_id}
        uncited = (
            e.evidence_id for e in public.events_of(target.action_id) if e.evidence_id not in cited
        )
        evidence = _first(uncited, f"uncited event of {target.action_id}", file=PUBLIC_PATH)
    added = {
        "observation_id": ENTERPRISE_ADDED_ROWS[mode],
        "action_id": target.action_id,
        "tenant_id": target.tenant_id,
        "evidence_id": evidence,
    }
    return [*rows, added]


# ---------------------------------------------------------------------------
# The agent


class EvidenceAgent:
    """A built-in agent: ``reference`` or one failure mode.

    ``asteria_target`` is the Asteria action a negative agent perturbs (see the
    module doc); it is required for an Asteria negative agent only.
    """

    def __init__(self, mode: str = "reference", *, asteria_target: str | None = None) -> None:
        if mode not in ("reference", *ASTERIA_MODES):
            raise ValueError(f"unknown failure mode {mode!r}")
        self.mode = mode
        self.asteria_target = asteria_target
        self._enterprise: _EnterpriseAnswers | None = None

    def select_evidence(self, public: AsteriaPublic | EnterprisePublic, action_id: str) -> Any:
        if isinstance(public, AsteriaPublic):
            return self._asteria(public, action_id)
        return [dict(row) for row in self._enterprise_answers(public).by_action.get(action_id, ())]

    def _asteria(self, public: AsteriaPublic, action_id: str) -> list[str]:
        if self.mode == "reference":
            return asteria_reference(public, action_id)
        if self.asteria_target is None:
            raise AgentbenchError(
                "no_baseline_target",
                f"the Asteria {self.mode!r} agent needs its target action "
                "(the evaluator binding with that scenario_kind)",
            )
        if action_id != self.asteria_target:
            return asteria_reference(public, action_id)
        return asteria_perturbed_row(public, action_id, self.mode)

    def enterprise_rows(self, public: EnterprisePublic) -> Sequence[EnterpriseRow]:
        """This agent's whole Enterprise submission in order."""
        return self._enterprise_answers(public).rows

    def _enterprise_answers(self, public: EnterprisePublic) -> _EnterpriseAnswers:
        # Built once per payload: the rows depend on the whole submission.
        if self._enterprise is None or self._enterprise.public is not public:
            rows = enterprise_submission_rows(public, self.mode)
            by_action: dict[str, list[EnterpriseRow]] = {}
            for row in rows:
                by_action.setdefault(row["action_id"], []).append(row)
            self._enterprise = _EnterpriseAnswers(public, tuple(rows), by_action)
        return self._enterprise


@dataclass(frozen=True)
class _EnterpriseAnswers:
    public: EnterprisePublic
    rows: tuple[EnterpriseRow, ...]
    by_action: Mapping[str, list[EnterpriseRow]]

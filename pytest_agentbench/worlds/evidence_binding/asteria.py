"""Asteria C08 v2 records: the public and evaluator payloads and the three manifests.

The cross-field rules live here, in the models (the JSON Schemas of the
original describe shape only): orders run 1..N in list order, every
requirement has exactly one same-action candidate with its kind and handle
and at least one same-action, same-kind distractor with another handle.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Annotated, Literal

from pydantic import Field, model_validator

from pytest_agentbench.worlds.evidence_binding.artifacts import (
    SCHEMA_VERSION,
    Governed,
    Hex64,
    InvariantError,
    LowerUuid,
    NonBlank,
)
from pytest_agentbench.worlds.evidence_binding.rules import (
    check_candidates,
    runs_from,
    sorted_unique,
    unique,
)

LINEAGE = "asteria"
ORIGINAL_BENCHMARK_ID = "asteria-agentic-c08-v2"
PUBLIC_FILE = "c08-asteria-public.json"
EVALUATOR_FILE = "c08-asteria-evaluator.json"
MANIFEST_FILE = "manifest.json"
ROOT_ARTIFACTS = (
    f"evaluator/{EVALUATOR_FILE}",
    f"evaluator/{MANIFEST_FILE}",
    f"public/{PUBLIC_FILE}",
    f"public/{MANIFEST_FILE}",
)

EvidenceKind = Literal["authority_record", "policy_record", "resource_record", "revocation_record"]
ScenarioKind = Literal["exact", "missing", "fabricated", "wrong_action", "extra", "discarded"]
SchemaVersion = Literal["2.0.0"]
Order = Annotated[int, Field(ge=1)]

assert SCHEMA_VERSION == "2.0.0"


class Requirement(Governed):
    evidence_kind: EvidenceKind
    binding_handle: LowerUuid


class Action(Governed):
    action_event_id: LowerUuid
    event_order: Order
    action: NonBlank
    resource_id: NonBlank
    requested_scope: tuple[NonBlank, ...]
    required_evidence: tuple[Requirement, ...]

    @model_validator(mode="after")
    def _lists(self) -> Action:
        sorted_unique(self.requested_scope, "requested_scope")
        sorted_unique(
            [(item.evidence_kind, item.binding_handle) for item in self.required_evidence],
            "required_evidence",
        )
        return self


class Observation(Governed):
    observation_id: LowerUuid
    action_event_id: LowerUuid
    observation_order: Order
    evidence_kind: EvidenceKind
    binding_handle: LowerUuid
    payload_digest: Hex64


class MeasurementScope(Governed):
    offline_artifacts_only: Literal[True]
    proves: tuple[NonBlank, ...]
    does_not_prove: tuple[NonBlank, ...]

    @model_validator(mode="after")
    def _lists(self) -> MeasurementScope:
        sorted_unique(self.proves, "proves")
        sorted_unique(self.does_not_prove, "does_not_prove")
        return self


class AsteriaPublic(Governed):
    """The public payload: what an adapter sees."""

    schema_version: SchemaVersion
    benchmark_id: NonBlank
    measurement_scope: MeasurementScope
    actions: tuple[Action, ...] = Field(min_length=1)
    evidence_observations: tuple[Observation, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _invariants(self) -> AsteriaPublic:
        runs_from([a.event_order for a in self.actions], 1, "actions", "event_order")
        runs_from(
            [o.observation_order for o in self.evidence_observations],
            1,
            "evidence_observations",
            "observation_order",
        )
        unique([a.action_event_id for a in self.actions], "actions")
        ids = [o.observation_id for o in self.evidence_observations]
        unique(ids, "evidence_observations")
        overlap = sorted(set(ids) & {a.action_event_id for a in self.actions})
        if overlap:
            raise InvariantError(
                "duplicate_id",
                f"{overlap[0]!r} names an action and an observation",
                "evidence_observations",
            )
        actions = {a.action_event_id for a in self.actions}
        for index, observation in enumerate(self.evidence_observations):
            if observation.action_event_id not in actions:
                raise InvariantError(
                    "unknown_action",
                    f"observation {observation.observation_id} names no public action",
                    f"evidence_observations[{index}].action_event_id",
                )
        check_candidates(
            [
                (
                    a.action_event_id,
                    [(r.evidence_kind, r.binding_handle) for r in a.required_evidence],
                )
                for a in self.actions
            ],
            [
                (o.action_event_id, o.evidence_kind, o.binding_handle)
                for o in self.evidence_observations
            ],
            distractor_outside_requirements=False,
        )
        return self

    @cached_property
    def _by_action(self) -> Mapping[str, tuple[Observation, ...]]:
        grouped: dict[str, list[Observation]] = {}
        for observation in self.evidence_observations:
            grouped.setdefault(observation.action_event_id, []).append(observation)
        return {key: tuple(value) for key, value in grouped.items()}

    @cached_property
    def _actions(self) -> Mapping[str, Action]:
        return {a.action_event_id: a for a in self.actions}

    def observations_of(self, action_event_id: str) -> tuple[Observation, ...]:
        return self._by_action.get(action_event_id, ())

    def action(self, action_event_id: str) -> Action | None:
        return self._actions.get(action_event_id)

    @cached_property
    def observation_actions(self) -> Mapping[str, str]:
        """The action of every public observation id."""
        return {o.observation_id: o.action_event_id for o in self.evidence_observations}


class Binding(Governed):
    action_event_id: LowerUuid
    required_observation_ids: tuple[LowerUuid, ...]
    scenario_kind: ScenarioKind

    @model_validator(mode="after")
    def _lists(self) -> Binding:
        sorted_unique(self.required_observation_ids, "required_observation_ids")
        return self


class AsteriaEvaluator(Governed):
    """The evaluator payload: which observations each action requires."""

    schema_version: SchemaVersion
    benchmark_id: NonBlank
    public_input_digest: Hex64
    measurement_scope: MeasurementScope
    bindings: tuple[Binding, ...]

    @model_validator(mode="after")
    def _sorted(self) -> AsteriaEvaluator:
        sorted_unique([b.action_event_id for b in self.bindings], "bindings", allow_empty=True)
        return self


class Descriptor(Governed):
    path: NonBlank
    byte_size: Annotated[int, Field(ge=0)]
    sha256: Hex64


class PublicManifest(Governed):
    schema_version: SchemaVersion
    benchmark_id: NonBlank
    seed: int
    visibility: Literal["public"]
    artifact_set_digest: Hex64
    artifacts: tuple[Descriptor]


class EvaluatorManifest(Governed):
    schema_version: SchemaVersion
    benchmark_id: NonBlank
    seed: int
    visibility: Literal["evaluator"]
    artifact_set_digest: Hex64
    public_input_digest: Hex64
    artifacts: tuple[Descriptor]


class RootManifest(Governed):
    schema_version: SchemaVersion
    benchmark_id: NonBlank
    seed: int
    visibility: Literal["root"]
    public_input_digest: Hex64
    evaluator_public_input_digest: Hex64
    public_artifact_set_digest: Hex64
    evaluator_artifact_set_digest: Hex64
    artifact_set_digest: Hex64
    artifacts: tuple[Descriptor, Descriptor, Descriptor, Descriptor]

    @model_validator(mode="after")
    def _sorted(self) -> RootManifest:
        sorted_unique([d.path for d in self.artifacts], "artifacts")
        return self

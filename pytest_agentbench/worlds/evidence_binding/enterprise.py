"""Enterprise C08 v2 records: public input, evaluator truth, manifest.

A model of its own lineage, never read with Asteria's: no benchmark id or
scope in the payloads, opaque ``observation-<hex>`` evidence ids, and a
stricter distractor (its handle is not required for that kind at all).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from pytest_agentbench.worlds.evidence_binding.artifacts import (
    Governed,
    Hex64,
    InvariantError,
    NonBlank,
)
from pytest_agentbench.worlds.evidence_binding.rules import (
    check_candidates,
    runs_from,
    sorted_unique,
    unique,
)

LINEAGE = "enterprise"
ORIGINAL_BENCHMARK_ID = "enterprise-agentic-c08-v2"
PUBLIC_PATH = "public/public-input.json"
TRUTH_PATH = "evaluator/truth.json"
CHECKSUM_FILE = "SHA256SUMS"
EVIDENCE_NAMESPACE = "ce4f822e-c4a5-57dd-87ee-74d7cb385ba8"
"""The uuid5 namespace of opaque evidence ids: ``observation-`` + uuid5(ns, source id).hex."""

Kind = Literal["authority", "identity", "policy", "revocation"]
Handle = Annotated[str, StringConstraints(min_length=16)]
EvidenceId = Annotated[str, StringConstraints(pattern=r"^observation-[0-9a-f]{32}$")]
Tick = Annotated[int, Field(ge=0)]
SchemaVersion = Literal["2.0.0"]


class Requirement(Governed):
    kind: Kind
    binding_handle: Handle


def _requirements(values: tuple[Requirement, ...], field: str) -> None:
    sorted_unique([(r.kind, r.binding_handle) for r in values], field, allow_empty=True)


class Action(Governed):
    action_id: NonBlank
    tenant_id: NonBlank
    resource_id: NonBlank
    action: NonBlank
    tick: Tick
    required_evidence: tuple[Requirement, ...]

    @model_validator(mode="after")
    def _sorted(self) -> Action:
        _requirements(self.required_evidence, "required_evidence")
        return self


class EvidenceEvent(Governed):
    sequence: Annotated[int, Field(ge=0)]
    evidence_id: EvidenceId
    action_id: NonBlank
    tenant_id: NonBlank
    resource_id: NonBlank
    action: NonBlank
    tick: Tick
    kind: Kind
    binding_handle: Handle
    payload_digest: Hex64


class EnterprisePublic(Governed):
    """The public input: what an adapter sees."""

    schema_version: SchemaVersion
    actions: tuple[Action, ...]
    evidence_events: tuple[EvidenceEvent, ...]

    @model_validator(mode="after")
    def _invariants(self) -> EnterprisePublic:
        unique([a.action_id for a in self.actions], "actions")
        keys = [(a.tick, a.action_id) for a in self.actions]
        if keys != sorted(keys):
            raise InvariantError(
                "unsorted_entries", "actions must be sorted by (tick, action_id)", "actions"
            )
        runs_from([e.sequence for e in self.evidence_events], 0, "evidence_events", "sequence")
        unique([e.evidence_id for e in self.evidence_events], "evidence_events")
        actions = {a.action_id: a for a in self.actions}
        for index, event in enumerate(self.evidence_events):
            action = actions.get(event.action_id)
            if action is None:
                raise InvariantError(
                    "unknown_action",
                    f"event names no public action {event.action_id!r}",
                    f"evidence_events[{index}].action_id",
                )
            for name in ("tenant_id", "resource_id", "action", "tick"):
                if getattr(event, name) != getattr(action, name):
                    raise InvariantError(
                        "event_action_mismatch",
                        f"{name} differs from action {action.action_id}'s",
                        f"evidence_events[{index}].{name}",
                    )
        check_candidates(
            [
                (a.action_id, [(r.kind, r.binding_handle) for r in a.required_evidence])
                for a in self.actions
            ],
            [(e.action_id, e.kind, e.binding_handle) for e in self.evidence_events],
            distractor_outside_requirements=True,
        )
        return self

    @cached_property
    def action_by_id(self) -> Mapping[str, Action]:
        return {a.action_id: a for a in self.actions}

    @cached_property
    def events_by_id(self) -> Mapping[str, EvidenceEvent]:
        return {e.evidence_id: e for e in self.evidence_events}

    @cached_property
    def _by_action(self) -> Mapping[str, tuple[EvidenceEvent, ...]]:
        grouped: dict[str, list[EvidenceEvent]] = {}
        for event in self.evidence_events:
            grouped.setdefault(event.action_id, []).append(event)
        return {key: tuple(value) for key, value in grouped.items()}

    def events_of(self, action_id: str) -> tuple[EvidenceEvent, ...]:
        return self._by_action.get(action_id, ())


class TruthBinding(Governed):
    action_id: NonBlank
    tenant_id: NonBlank
    required_evidence: tuple[Requirement, ...]
    required_observation_ids: tuple[EvidenceId, ...]

    @model_validator(mode="after")
    def _lists(self) -> TruthBinding:
        _requirements(self.required_evidence, "required_evidence")
        sorted_unique(self.required_observation_ids, "required_observation_ids", allow_empty=True)
        if len(self.required_observation_ids) != len(self.required_evidence):
            raise InvariantError(
                "invalid_field",
                "must name one observation per required evidence",
                "required_observation_ids",
            )
        return self


class EnterpriseTruth(Governed):
    schema_version: SchemaVersion
    public_input_digest: Hex64
    bindings: tuple[TruthBinding, ...]

    @model_validator(mode="after")
    def _unique(self) -> EnterpriseTruth:
        sorted_unique([b.action_id for b in self.bindings], "bindings", allow_empty=True)
        unique(
            [i for b in self.bindings for i in b.required_observation_ids],
            "bindings.required_observation_ids",
        )
        return self


InventoryPath = Annotated[str, StringConstraints(pattern=r"^(public|evaluator)/[A-Za-z0-9._-]+$")]


class InventoryDescriptor(Governed):
    path: InventoryPath
    byte_size: Annotated[int, Field(ge=0)]
    sha256: Hex64


class EnterpriseManifest(Governed):
    schema_version: SchemaVersion
    benchmark_id: NonBlank
    seed: int
    public_input_digest: Hex64
    checksum_algorithm: Literal["sha256"]
    checksum_file: Literal["SHA256SUMS"]
    checksum_excludes: tuple[Literal["SHA256SUMS"]]
    public_inventory: tuple[InventoryDescriptor, ...]
    evaluator_inventory: tuple[InventoryDescriptor, ...]

    @model_validator(mode="after")
    def _trees(self) -> EnterpriseManifest:
        for field, tree in (("public_inventory", "public/"), ("evaluator_inventory", "evaluator/")):
            descriptors: tuple[InventoryDescriptor, ...] = getattr(self, field)
            sorted_unique([d.path for d in descriptors], field, allow_empty=True)
            for index, descriptor in enumerate(descriptors):
                if not descriptor.path.startswith(tree):
                    raise InvariantError(
                        "invalid_field", f"path must stay in {tree}", f"{field}[{index}].path"
                    )
        return self

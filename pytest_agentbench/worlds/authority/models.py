"""Records of the authority bundle (SynthWorld agentic v1 layout).

Field names are the format's (``formats/authority-bundle.md``). Conventions
every record follows:

* ``synthetic`` defaults to ``True`` and ``False`` is refused: the marker is what
  makes an artifact unmistakably fictional. The two digest files
  (``manifest.json``, ``checksums.json``) have a fixed field list and no marker.
* Timestamps are timezone-aware with zero UTC offset; naive values and other
  offsets are refused. They serialise as ``YYYY-MM-DDTHH:MM:SSZ`` (with a
  ``.ffffff`` fraction only when the microseconds are non-zero), so
  ``+00:00`` input is written back as ``Z``.
* Sorted-unique lists (scopes, actions, evidence refs, resource ids, failure
  reasons, initial evidence refs) are stripped, refused when blank, de-duplicated
  and sorted. Ordered lists (delegation chains, owner chains, scenario action
  ids) keep their order.
* Ids are stripped and must be non-blank.
* Optional fields serialise as ``null``.

On disk, JSON files are :func:`~pytest_agentbench.sdk.canonical.pretty_json` of
:func:`record_json` (``indent=2``, sorted keys) and JSONL files hold one
compact object a line with keys in the model's field order (:func:`jsonl_text`),
as the original writes them, so parsing then writing reproduces the bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self, TypeVar

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PlainSerializer,
    StringConstraints,
    ValidationError,
    model_validator,
)

from pytest_agentbench.sdk import AgentbenchError, JsonValue, Record, pretty_json, pydantic_refusal

# ---------------------------------------------------------------------------
# Field types


def _utc_instant(value: Any) -> datetime:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value!r} is not an ISO 8601 timestamp") from None
    if not isinstance(value, datetime):
        raise ValueError("a timestamp must be an ISO 8601 string")
    offset = value.utcoffset()
    if offset is None:
        raise ValueError("timestamp has no timezone; UTC (Z) is required")
    if offset.total_seconds() != 0:
        raise ValueError("timestamp has a non-zero UTC offset; UTC (Z) is required")
    return value.replace(tzinfo=UTC)


def format_utc(value: datetime) -> str:
    """The serialised form of a UTC timestamp (``...Z``)."""
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}"
    return text + "Z"


UtcDatetime = Annotated[
    datetime,
    BeforeValidator(_utc_instant),
    PlainSerializer(format_utc, return_type=str, when_used="json"),
]

Id = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Sha256Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


def _sorted_unique(values: tuple[str, ...]) -> tuple[str, ...]:
    # As the original's records: entries stripped and non-blank, a repeat refused
    # (never silently merged), the list sorted.
    stripped = [value.strip() for value in values]
    if any(not value for value in stripped):
        raise ValueError("list entries must be non-blank")
    if len(set(stripped)) != len(stripped):
        raise ValueError("list entries must be unique")
    return tuple(sorted(stripped))


SortedIds = Annotated[tuple[str, ...], AfterValidator(_sorted_unique)]


def _non_empty(values: tuple[str, ...]) -> tuple[str, ...]:
    if not values:
        raise ValueError("at least one entry is required")
    return values


def _distinct(values: tuple[str, ...]) -> tuple[str, ...]:
    if len(set(values)) != len(values):
        raise ValueError("entries must be distinct")
    return values


SortedIdsNonEmpty = Annotated[SortedIds, AfterValidator(_non_empty)]
OrderedIds = Annotated[tuple[Id, ...], AfterValidator(_distinct)]
OrderedIdsNonEmpty = Annotated[OrderedIds, AfterValidator(_non_empty)]

Synthetic = Literal[True]
Decision = Literal["allow", "deny"]
FailureReason = Literal[
    "no_active_delegation",
    "delegation_revoked",
    "capability_exceeded",
    "overprivileged_subdelegation",
    "wrong_runtime",
    "credential_invalid",
    "tenant_mismatch",
    "policy_version_mismatch",
]
FAILURE_REASONS: tuple[FailureReason, ...] = (
    "capability_exceeded",
    "credential_invalid",
    "delegation_revoked",
    "no_active_delegation",
    "overprivileged_subdelegation",
    "policy_version_mismatch",
    "tenant_mismatch",
    "wrong_runtime",
)


def _sorted_reasons(values: tuple[FailureReason, ...]) -> tuple[FailureReason, ...]:
    return tuple(sorted(set(values)))


FailureReasons = Annotated[tuple[FailureReason, ...], AfterValidator(_sorted_reasons)]


class SyntheticRecord(Record):
    """A record carrying the ``synthetic: true`` marker."""

    synthetic: Synthetic = True


def _valid_window(valid_from: datetime, expires_at: datetime) -> None:
    if expires_at <= valid_from:
        raise ValueError("expires_at must be later than valid_from")


# ---------------------------------------------------------------------------
# organisation.json


class Organisation(SyntheticRecord):
    id: Id
    display_name: str
    tenant_id: Id


class Department(SyntheticRecord):
    id: Id
    display_name: str
    organisation_id: Id


class Policy(SyntheticRecord):
    id: Id
    version: Id
    default_decision: Literal["deny"] = "deny"
    require_active_delegation: Literal[True] = True


class OrganisationFile(SyntheticRecord):
    schema_version: Id
    world_id: Id
    world_version: Id
    seed: int
    organisations: tuple[Organisation, ...]
    departments: tuple[Department, ...] = ()
    policies: tuple[Policy, ...]
    initial_evidence_refs: SortedIds = ()


# ---------------------------------------------------------------------------
# Identity and resource records

PrincipalKind = Literal["organisation", "human", "service_account", "workload"]


class Principal(SyntheticRecord):
    id: Id
    kind: PrincipalKind
    display_name: str
    organisation_id: Id | None = None
    department_id: Id | None = None
    owner_principal_id: Id | None = None


class LogicalAgent(SyntheticRecord):
    id: Id
    display_name: str
    organisation_id: Id
    owner_principal_id: Id
    parent_agent_id: Id | None = None


class Runtime(SyntheticRecord):
    id: Id
    logical_agent_id: Id
    runtime_principal_id: Id
    owner_principal_id: Id
    organisation_id: Id


class Resource(SyntheticRecord):
    id: Id
    display_name: str
    organisation_id: Id
    owner_principal_id: Id
    actions: SortedIdsNonEmpty


class Credential(SyntheticRecord):
    """Identifiers, binding and validity only: there is no secret material."""

    id: Id
    issuer_principal_id: Id
    subject_principal_id: Id
    allowed_runtime_principal_ids: SortedIds
    valid_from: UtcDatetime
    expires_at: UtcDatetime

    @model_validator(mode="after")
    def _window(self) -> Credential:
        _valid_window(self.valid_from, self.expires_at)
        return self


class Capability(SyntheticRecord):
    resource_ids: SortedIdsNonEmpty
    actions: SortedIdsNonEmpty
    scopes: SortedIds
    purpose: Id
    may_delegate: bool


class Delegation(SyntheticRecord):
    id: Id
    originating_principal_id: Id
    delegator_principal_id: Id
    grantee_agent_id: Id
    parent_delegation_id: Id | None = None
    capability: Capability
    policy_version: Id
    valid_from: UtcDatetime
    expires_at: UtcDatetime

    @model_validator(mode="after")
    def _window(self) -> Delegation:
        _valid_window(self.valid_from, self.expires_at)
        return self


# ---------------------------------------------------------------------------
# Events


class Attempt(SyntheticRecord):
    """An action attempt as the public stream records it: claims, not truth."""

    originating_principal_claim: Id | None = None
    logical_agent_claim: Id | None = None
    runtime_principal_claim: Id | None = None
    presented_credential_id: Id
    attributed_actor_claim: Id | None = None
    resource_id: Id
    action: Id
    requested_scope: SortedIds
    purpose: Id
    policy_version: Id
    evidence_refs: SortedIds = ()
    proposed_delegation: Delegation | None = None
    """The delegation a ``create_delegation`` action asks to create."""


class DelegationGranted(SyntheticRecord):
    event_type: Literal["delegation_granted"] = "delegation_granted"
    delegation: Delegation


class CredentialIssued(SyntheticRecord):
    event_type: Literal["credential_issued"] = "credential_issued"
    credential: Credential


class RuntimeSpawned(SyntheticRecord):
    event_type: Literal["runtime_spawned"] = "runtime_spawned"
    runtime: Runtime


class ActionAttempted(SyntheticRecord):
    event_type: Literal["action_attempted"] = "action_attempted"
    attempt: Attempt


class DelegationRevoked(SyntheticRecord):
    event_type: Literal["delegation_revoked"] = "delegation_revoked"
    delegation_id: Id


class EvidenceDiscarded(SyntheticRecord):
    event_type: Literal["evidence_discarded"] = "evidence_discarded"
    evidence_refs: SortedIdsNonEmpty


class AuditPerformed(SyntheticRecord):
    event_type: Literal["audit_performed"] = "audit_performed"
    audit_id: Id


EventPayload = Annotated[
    DelegationGranted
    | CredentialIssued
    | RuntimeSpawned
    | ActionAttempted
    | DelegationRevoked
    | EvidenceDiscarded
    | AuditPerformed,
    Field(discriminator="event_type"),
]


class Event(SyntheticRecord):
    schema_version: Id
    id: Id
    event_index: int = Field(ge=1)
    occurred_at: UtcDatetime
    evidence_refs: SortedIds = ()
    payload: EventPayload


# ---------------------------------------------------------------------------
# Scenario, tool schemas, manifest


class Scenario(SyntheticRecord):
    schema_version: Id
    id: Id
    title: str
    description: str
    action_event_ids: OrderedIds
    audit_event_id: Id
    tool_schema_paths: OrderedIds = ()


class Tool(SyntheticRecord):
    name: Id
    resource_id: Id
    action: Id
    input_schema: dict[str, JsonValue]


class ToolSchemaFile(SyntheticRecord):
    schema_version: Id
    tools: tuple[Tool, ...]


class PublicManifest(Record):
    """``public/manifest.json``: per-file sha256 and the root artifact-set digest."""

    artifact_set_digest: Sha256Hex
    artifacts: dict[str, Sha256Hex]
    oracle_free: Literal[True] = True
    schema_version: Id
    seed: int
    world_id: Id
    world_version: Id


# ---------------------------------------------------------------------------
# Evaluator records


class CanonicalBinding(SyntheticRecord):
    action_event_id: Id
    originating_principal_id: Id
    logical_agent_id: Id
    runtime_id: Id
    runtime_principal_id: Id
    credential_subject_id: Id
    attributed_actor_id: Id
    accountable_owner_chain: OrderedIdsNonEmpty


class BindingsFile(Record):
    """``canonical_bindings.json``: no top-level ``synthetic``; each binding carries one."""

    schema_version: Id
    bindings: tuple[CanonicalBinding, ...]


class AuthorityTruth(SyntheticRecord):
    action_event_id: Id
    decision_at_action: Decision
    decision_at_audit: Decision
    failure_reasons_at_action: FailureReasons
    failure_reasons_at_audit: FailureReasons
    delegation_chain_ids: OrderedIds
    expected_policy_version: Id
    required_evidence_refs: SortedIds
    reconstructable_at_audit: bool
    expected_side_effect: Id


class CaseLabel(SyntheticRecord):
    """A ``cases.jsonl`` row: the case kind of one action event (an open string)."""

    action_event_id: Id
    kind: Id


class TruthProjection(Record):
    """An evaluator file that repeats some fields of ``authority_truth.jsonl``, by name.

    The original writes these with no ``synthetic`` marker and in exactly the
    fields below (in this order): not field-for-field projections of truth.
    """

    @classmethod
    def of(cls, truth: AuthorityTruth, **extra: Any) -> Self:
        """The projection of ``truth``; ``extra`` supplies fields truth does not hold."""
        taken = {name: getattr(truth, name) for name in cls.model_fields if name not in extra}
        return cls(**taken, **extra)


class ExpectedDecision(TruthProjection):
    action_event_id: Id
    decision_at_action: Decision
    decision_at_audit: Decision
    failure_reasons_at_action: FailureReasons
    failure_reasons_at_audit: FailureReasons


class ExpectedSideEffect(TruthProjection):
    action_event_id: Id
    expected_side_effect: Id


class ExpectedProvenance(TruthProjection):
    action_event_id: Id
    delegation_chain_ids: OrderedIds
    reconstructable_at_audit: bool
    required_evidence_refs: SortedIds


class EvidenceEpoch(TruthProjection):
    """Also carries ``action_event_index`` and ``audit_event_id`` (pass them to ``of``)."""

    action_event_id: Id
    action_event_index: int = Field(ge=1)
    audit_event_id: Id
    reconstructable_at_audit: bool
    required_evidence_refs: SortedIds


class EvaluatorChecksums(Record):
    """``evaluator/checksums.json``: evaluator hashes bound to the public root digest."""

    checksum_scheme: Literal["sha256-artifact-set-v1"] = "sha256-artifact-set-v1"
    evaluator_artifact_set_digest: Sha256Hex
    evaluator_artifacts: dict[str, Sha256Hex]
    public_artifact_set_digest: Sha256Hex
    schema_version: Id


# ---------------------------------------------------------------------------
# Aggregates


class WorldSnapshot(Record):
    """Index 0 of a world: every public record file, as listed on disk.

    Runtimes, credentials and delegations that an event introduces are listed
    here too; they take effect at their event's index (see :func:`introductions`).
    """

    organisation: OrganisationFile
    principals: tuple[Principal, ...]
    agents: tuple[LogicalAgent, ...]
    runtimes: tuple[Runtime, ...]
    resources: tuple[Resource, ...]
    credentials: tuple[Credential, ...]
    delegations: tuple[Delegation, ...]


class PublicBundle(Record):
    """Everything an adapter may see. Scenarios and tool schemas are keyed by file stem."""

    snapshot: WorldSnapshot
    events: tuple[Event, ...]
    scenarios: dict[str, Scenario]
    tool_schemas: dict[str, ToolSchemaFile]
    manifest: PublicManifest


class EvaluatorBundle(Record):
    """Evaluator truth: read only after a trace exists."""

    bindings: BindingsFile
    truth: tuple[AuthorityTruth, ...]
    cases: tuple[CaseLabel, ...]
    expected_decisions: tuple[ExpectedDecision, ...]
    expected_side_effects: tuple[ExpectedSideEffect, ...]
    expected_provenance: tuple[ExpectedProvenance, ...]
    evidence_epochs: tuple[EvidenceEpoch, ...]
    checksums: EvaluatorChecksums


IntroducedKind = Literal["runtime", "credential", "delegation"]
IntroducedRecord = Runtime | Credential | Delegation


def introductions(
    snapshot: WorldSnapshot, events: Iterable[Event]
) -> dict[tuple[IntroducedKind, str], int]:
    """The event index at which each runtime, credential and delegation takes effect.

    Records no event introduces take effect at index 0. An event introducing a
    record the public files do not list, one that disagrees with the listed
    copy, or one introduced twice is refused.
    """
    listed: dict[tuple[IntroducedKind, str], IntroducedRecord] = {}
    for runtime in snapshot.runtimes:
        listed[("runtime", runtime.id)] = runtime
    for credential in snapshot.credentials:
        listed[("credential", credential.id)] = credential
    for delegation in snapshot.delegations:
        listed[("delegation", delegation.id)] = delegation
    effective = dict.fromkeys(listed, 0)
    introduced: set[tuple[IntroducedKind, str]] = set()
    for position, event in enumerate(events):
        found = introduced_record(event)
        if found is None:
            continue
        kind, record = found
        key = (kind, record.id)
        where = f"events[{position}].payload.{kind}"
        if key not in listed:
            raise AgentbenchError(
                "unlisted_record",
                f"event {event.id} introduces {kind} {record.id!r}, "
                "which the public files do not list",
                field=where,
            )
        if listed[key] != record:
            raise AgentbenchError(
                "record_mismatch",
                f"event {event.id} introduces {kind} {record.id!r} "
                "differently from the public file",
                field=where,
            )
        if key in introduced:
            raise AgentbenchError(
                "duplicate_introduction",
                f"{kind} {record.id!r} is introduced by more than one event",
                field=where,
            )
        introduced.add(key)
        effective[key] = event.event_index
    return effective


def introduced_record(event: Event) -> tuple[IntroducedKind, IntroducedRecord] | None:
    """The runtime, credential or delegation an event introduces, if any."""
    payload = event.payload
    if isinstance(payload, DelegationGranted):
        return "delegation", payload.delegation
    if isinstance(payload, CredentialIssued):
        return "credential", payload.credential
    if isinstance(payload, RuntimeSpawned):
        return "runtime", payload.runtime
    return None


# ---------------------------------------------------------------------------
# Serialisation

RecordT = TypeVar("RecordT", bound=Record)


def record_json(record: Record) -> dict[str, JsonValue]:
    """The JSON object form of a record (timestamps as ``...Z``, optionals as null)."""
    return record.model_dump(mode="json")


def json_text(record: Record) -> str:
    """On-disk text of a JSON file record."""
    return pretty_json(record_json(record))


def jsonl_line(record: Record) -> str:
    """One JSONL row as the original writes it: compact, keys in the model's field order."""
    return json.dumps(record_json(record), separators=(",", ":"), ensure_ascii=False)


def jsonl_text(records: Iterable[Record]) -> str:
    """On-disk text of a JSONL file: one :func:`jsonl_line` a line."""
    return "".join(jsonl_line(record) + "\n" for record in records)


def parse_record(
    model: type[RecordT], value: JsonValue, *, file: str, line: int | None = None
) -> RecordT:
    """Validate ``value`` as ``model``; a failure names file, line and field path."""
    if not isinstance(value, Mapping):
        raise AgentbenchError("invalid_row", "expected a JSON object", file=file, line=line)
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=file, line=line) from None

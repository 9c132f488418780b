"""Records: synthetic marker, UTC timestamps, list normalisation, round trips, introductions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from pytest_agentbench.sdk.canonical import loads_strict
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.authority.models import (
    AuthorityTruth,
    Capability,
    Credential,
    Event,
    EvidenceEpoch,
    ExpectedDecision,
    ExpectedProvenance,
    ExpectedSideEffect,
    OrganisationFile,
    PublicManifest,
    RuntimeSpawned,
    format_utc,
    introductions,
    json_text,
    jsonl_text,
    parse_record,
    record_json,
)
from tests.worlds.authority.test_replay import base_events, base_snapshot, runtime, stream

CREDENTIAL: dict[str, Any] = {
    "id": "cred-1",
    "issuer_principal_id": "p-issuer",
    "subject_principal_id": "p-subject",
    "allowed_runtime_principal_ids": ["p-b", "p-a"],
    "valid_from": "2026-01-01T00:00:00Z",
    "expires_at": "2026-02-01T00:00:00+00:00",
}


def refusal(model: Any, value: dict[str, Any]) -> AgentbenchError:
    with pytest.raises(AgentbenchError) as caught:
        parse_record(model, value, file="f.jsonl", line=4)
    assert caught.value.location.file == "f.jsonl"
    assert caught.value.location.line == 4
    return caught.value


def test_synthetic_defaults_to_true_and_false_is_refused() -> None:
    credential = parse_record(Credential, CREDENTIAL, file="f")
    assert credential.synthetic is True
    assert record_json(credential)["synthetic"] is True
    error = refusal(Credential, {**CREDENTIAL, "synthetic": False})
    assert error.location.field == "synthetic"


@pytest.mark.parametrize(
    "value",
    ["2026-01-01T00:00:00", "2026-01-01T01:00:00+01:00", "yesterday", 1767225600],
)
def test_timestamps_must_be_utc(value: Any) -> None:
    error = refusal(Credential, {**CREDENTIAL, "valid_from": value})
    assert error.location.field == "valid_from"


def test_timestamps_serialise_with_z() -> None:
    credential = parse_record(Credential, CREDENTIAL, file="f")
    assert record_json(credential)["expires_at"] == "2026-02-01T00:00:00Z"
    assert credential.valid_from.tzinfo is UTC
    assert format_utc(datetime(2026, 1, 1, 0, 0, 0, 5, tzinfo=UTC)) == "2026-01-01T00:00:00.000005Z"


def test_validity_window_must_be_positive() -> None:
    error = refusal(Credential, {**CREDENTIAL, "expires_at": CREDENTIAL["valid_from"]})
    assert "expires_at" in error.reason


def test_sorted_unique_lists_are_stripped_and_sorted_and_a_repeat_refused() -> None:
    capability = Capability(
        resource_ids=(" r2", "r1"),
        actions=("read",),
        scopes=("s:b", "s:a "),
        purpose="p",
        may_delegate=False,
    )
    assert capability.resource_ids == ("r1", "r2")
    assert capability.scopes == ("s:a", "s:b")
    # As the original's records: a repeat (after stripping) is refused, never merged.
    with pytest.raises(ValueError, match="unique"):
        Capability(
            resource_ids=("r1",),
            actions=("read",),
            scopes=("s:a", "s:a "),
            purpose="p",
            may_delegate=False,
        )
    with pytest.raises(ValueError, match="non-blank"):
        Capability(resource_ids=("r1",), actions=(" ",), scopes=(), purpose="p", may_delegate=False)
    with pytest.raises(ValueError, match="at least one"):
        Capability(resource_ids=(), actions=("read",), scopes=(), purpose="p", may_delegate=False)


def test_ids_are_non_blank_and_unknown_fields_refused() -> None:
    assert refusal(Credential, {**CREDENTIAL, "id": "  "}).location.field == "id"
    error = refusal(Credential, {**CREDENTIAL, "secret": "x"})
    assert error.code == "unknown_field"
    assert refusal(Credential, {k: v for k, v in CREDENTIAL.items() if k != "id"}).code == (
        "missing_field"
    )


def test_ordered_lists_keep_order_but_refuse_repeats() -> None:
    truth = AuthorityTruth(
        action_event_id="e",
        decision_at_action="allow",
        decision_at_audit="deny",
        failure_reasons_at_action=(),
        failure_reasons_at_audit=("wrong_runtime", "delegation_revoked"),
        delegation_chain_ids=("d-root", "d-a"),
        expected_policy_version="v1",
        required_evidence_refs=("b", "a"),
        reconstructable_at_audit=True,
        expected_side_effect="read_recorded",
    )
    assert truth.delegation_chain_ids == ("d-root", "d-a")
    assert truth.failure_reasons_at_audit == ("delegation_revoked", "wrong_runtime")
    assert truth.required_evidence_refs == ("a", "b")
    with pytest.raises(ValueError, match="distinct"):
        truth.model_validate({**truth.model_dump(), "delegation_chain_ids": ["d", "d"]})
    with pytest.raises(ValueError, match="failure_reasons"):
        truth.model_validate({**truth.model_dump(), "failure_reasons_at_action": ["nope"]})
    assert ExpectedDecision.of(truth).failure_reasons_at_audit == truth.failure_reasons_at_audit
    assert ExpectedSideEffect.of(truth).expected_side_effect == "read_recorded"
    assert ExpectedProvenance.of(truth).delegation_chain_ids == ("d-root", "d-a")
    epoch = EvidenceEpoch.of(truth, action_event_index=10, audit_event_id="evt-024")
    assert (epoch.action_event_index, epoch.audit_event_id) == (10, "evt-024")


def test_event_payload_is_discriminated_by_event_type() -> None:
    raw = {
        "schema_version": "1.0.0",
        "id": "evt-1",
        "event_index": 1,
        "occurred_at": "2026-01-15T09:00:00Z",
        "payload": {"event_type": "delegation_revoked", "delegation_id": "d-1"},
    }
    event = parse_record(Event, raw, file="f")
    assert event.payload.event_type == "delegation_revoked"
    bad = {**raw, "payload": {"event_type": "teleported", "delegation_id": "d-1"}}
    assert str(refusal(Event, bad).location.field).startswith("payload")
    wrong_shape = {**raw, "payload": {"event_type": "audit_performed", "delegation_id": "d-1"}}
    assert str(refusal(Event, wrong_shape).location.field).startswith("payload")


def test_jsonl_and_json_round_trip_byte_identically() -> None:
    events = base_events()
    text = jsonl_text(events)
    parsed = [parse_record(Event, loads_strict(line), file="f") for line in text.splitlines()]
    assert jsonl_text(parsed) == text
    # Compact rows with keys in the model's field order, as the original writes them.
    assert all(
        line.startswith('{"synthetic":true,"schema_version":"1.0.0","id":"evt-')
        for line in text.splitlines()
    )
    organisation = base_snapshot().organisation
    pretty = json_text(organisation)
    assert pretty.endswith("}\n")
    assert json_text(parse_record(OrganisationFile, loads_strict(pretty), file="f")) == pretty


def test_introductions_put_event_records_at_their_index() -> None:
    snapshot = base_snapshot()
    effective = introductions(snapshot, base_events(snapshot))
    assert effective[("runtime", "rt-main")] == 1
    assert effective[("credential", "cred-main")] == 3
    assert effective[("delegation", "d-late")] == 10
    assert effective[("runtime", "rt-ext")] == 0


def test_introductions_refuse_unlisted_and_disagreeing_records() -> None:
    snapshot = base_snapshot()
    with pytest.raises(AgentbenchError) as caught:
        introductions(snapshot, stream(RuntimeSpawned(runtime=runtime("rt-new", "a", "p", "o"))))
    assert caught.value.code == "unlisted_record"
    assert caught.value.location.field == "events[0].payload.runtime"
    changed = snapshot.runtimes[0].model_copy(update={"owner_principal_id": "p-other"})
    with pytest.raises(AgentbenchError) as caught:
        introductions(snapshot, stream(RuntimeSpawned(runtime=changed)))
    assert caught.value.code == "record_mismatch"


def test_non_object_rows_are_refused() -> None:
    with pytest.raises(AgentbenchError) as caught:
        parse_record(Credential, ["not", "an", "object"], file="f.jsonl", line=2)
    assert caught.value.code == "invalid_row"


def test_digest_records_require_lowercase_sha256_hex() -> None:
    manifest = {
        "artifact_set_digest": "a" * 64,
        "artifacts": {"agents.jsonl": "b" * 64},
        "oracle_free": True,
        "schema_version": "1.0.0",
        "seed": 1,
        "world_id": "w",
        "world_version": "1.0.0",
    }
    assert parse_record(PublicManifest, manifest, file="m").artifacts["agents.jsonl"] == "b" * 64
    bad = {**manifest, "artifacts": {"agents.jsonl": "XYZ"}}
    assert refusal(PublicManifest, bad).location.field == "artifacts.agents.jsonl"
    assert refusal(PublicManifest, {**manifest, "oracle_free": False}).location.field == (
        "oracle_free"
    )

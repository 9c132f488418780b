"""Strict OperationSpec loading, the authority check and the spec digest (format §1)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.operations.packs import installed_packs
from pytest_agentbench.worlds.operations.spec import load_operation_spec, spec_digest
from tests.worlds.operations.helpers import SPEC_PATH, load, shipped, spec_dict

TOP_KEYS = [
    "schema_version",
    "operation_id",
    "operation_type",
    "operation_version",
    "semantic_scenario_id",
    "privacy_status",
    "disclaimer",
    "data_provenance",
    "actors",
    "policy",
    "message_fixtures",
    "hidden_state",
    "scenarios",
]


def refused(raw: dict[str, Any]) -> AgentbenchError:
    with pytest.raises(AgentbenchError) as info:
        load(raw)
    return info.value


def test_the_shipped_spec_loads_with_three_variants() -> None:
    loaded = shipped()
    assert sorted(loaded.spec.scenarios) == ["V1", "V2", "V3"]
    assert loaded.policy.approval_threshold_minor == 25000
    assert loaded.domain.operation_type == "lettings.maintenance.synthetic"


def test_the_digest_is_sha256_of_the_canonical_spec_with_events_in_digest_form() -> None:
    # As the original hashes it: sets sorted, a trigger's kind ``action``/``event``
    # (the original's published maintenance fixture hashes to its published digest).
    raw = spec_dict()
    for actor in raw["actors"].values():
        actor["authority"] = sorted(actor["authority"])
    for scenario in raw["scenarios"].values():
        scenario["dispatch_failures"] = sorted(scenario["dispatch_failures"])
        forms = []
        for sequence, event in enumerate(scenario["events"]):
            timing = next((k for k in ("on_action", "on_event") if k in event), None)
            forms.append(
                {
                    "event_id": event["event_id"],
                    "type": event["type"],
                    "actor": event["actor"],
                    "sequence": sequence,
                    "payload": event["payload"],
                    "triggers_agent": event.get("triggers_agent", True),
                    "at": event.get("at"),
                    "trigger": None
                    if timing is None
                    else {"kind": timing[3:], "cycle_id": None, **event[timing]},
                    "delay_minutes": event.get("delay_minutes", 0),
                }
            )
        scenario["events"] = forms
        for declared in scenario["expected_event_rejections"]:
            declared.setdefault("reason", "")
    text = json.dumps(
        raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    assert shipped().digest == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_the_digest_changes_with_any_field_and_not_with_yaml_layout(tmp_path: Path) -> None:
    changed = spec_dict()
    changed["scenarios"]["V1"]["events"][4]["payload"]["amount_minor"] = 64001
    assert load(changed).digest != shipped().digest
    relaid = tmp_path / "spec.yaml"
    relaid.write_text(json.dumps(spec_dict(), indent=4))  # JSON is YAML: another layout, same spec
    assert load_operation_spec(relaid, "spec.yaml", installed_packs()).digest == shipped().digest
    assert spec_digest(shipped().spec) == shipped().digest


@pytest.mark.parametrize("key", TOP_KEYS)
def test_every_top_level_key_is_required(key: str) -> None:
    raw = spec_dict()
    del raw[key]
    error = refused(raw)
    # Without a type no pack can be chosen, and that is said first.
    code = "unknown_operation_type" if key == "operation_type" else "missing_field"
    assert (error.code, error.location.field) == (code, key)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ((), "surprise"),
        (("scenarios", "V1"), "scenarios.V1.surprise"),
        (("scenarios", "V1", "events", 0), "scenarios.V1.events[0].surprise"),
        (("actors", "tenant_morgan"), "actors.tenant_morgan.surprise"),
    ],
)
def test_unknown_keys_are_refused_at_any_depth(path: tuple[Any, ...], field: str) -> None:
    raw = spec_dict()
    node: Any = raw
    for part in path:
        node = node[part]
    node["surprise"] = 1
    error = refused(raw)
    assert (error.code, error.location.field) == ("unknown_field", field)


def test_an_unknown_policy_key_and_a_non_positive_policy_value_are_refused() -> None:
    raw = spec_dict()
    raw["policy"]["surprise_minutes"] = 5
    assert refused(raw).location.field == "policy.surprise_minutes"
    raw = spec_dict()
    raw["policy"]["horizon_minutes"] = 0
    error = refused(raw)
    assert (error.code, error.location.field) == ("invalid_field", "policy.horizon_minutes")


@pytest.mark.parametrize("value", ["64000", 640.0, True])
def test_money_must_be_an_integer_in_minor_units(value: Any) -> None:
    raw = spec_dict()
    raw["scenarios"]["V1"]["events"][4]["payload"]["amount_minor"] = value
    error = refused(raw)
    assert error.code == "invalid_event_payload"
    assert error.location.field == "scenarios.V1.events[4].payload.amount_minor"


def test_an_event_whose_actor_lacks_the_authority_is_refused_naming_event_and_actor() -> None:
    raw = spec_dict()
    raw["scenarios"]["V1"]["events"][9]["actor"] = "brightwater_plumbing"  # e10 verify_work
    error = refused(raw)
    assert error.code == "actor_lacks_authority"
    assert "'e10'" in error.reason
    assert "'brightwater_plumbing'" in error.reason
    assert "verify_work" in error.reason


def test_an_actor_cannot_grant_itself_a_capability_by_listing_it() -> None:
    raw = spec_dict()
    raw["actors"]["brightwater_plumbing"]["role"] = "overlord"
    assert refused(raw).location.field == "actors.brightwater_plumbing.role"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda e: e.update(actor="nobody"), "unknown_actor"),
        (lambda e: e.update(type="approval_reminder_due"), "unknown_event_type"),
        (lambda e: e.update(type="made_up"), "unknown_event_type"),
        (lambda e: e.update(on_action={"type": "request_supplier_visit"}), "invalid_field"),
        (lambda e: e.update(at="2026-03-02 09:00"), "invalid_field"),
        (lambda e: e.update(at="2026-03-01T09:00:00Z"), "invalid_field"),
        (lambda e: e["payload"].pop("issue_id"), "invalid_event_payload"),
        (lambda e: e["payload"].update(classification=""), "invalid_event_payload"),
    ],
)
def test_malformed_events_are_refused_by_name(change: Any, code: str) -> None:
    raw = spec_dict()
    change(raw["scenarios"]["V1"]["events"][0])
    assert refused(raw).code == code


def test_conditional_timing_rules() -> None:
    raw = spec_dict()
    raw["scenarios"]["V1"]["events"][1]["delay_minutes"] = -1
    assert refused(raw).location.field == "scenarios.V1.events[1].delay_minutes"
    raw = spec_dict()
    raw["scenarios"]["V1"]["events"][1]["on_action"]["type"] = "teleport"
    assert refused(raw).code == "unknown_trigger"
    raw = spec_dict()
    raw["scenarios"]["V1"]["events"][1]["event_id"] = "e01"
    assert refused(raw).code == "duplicate_event_id"


def test_references_inside_a_scenario_must_resolve() -> None:
    raw = spec_dict()
    raw["scenarios"]["V2"]["dispatch_failures"] = ["msg_nowhere"]
    assert refused(raw).code == "unknown_reference"
    raw = spec_dict()
    raw["scenarios"]["V1"]["expected_event_rejections"][0]["event_id"] = "e99"
    assert refused(raw).code == "unknown_reference"
    raw = spec_dict()
    raw["scenarios"]["V3"]["required_checkpoint_types"] = ["coffee_approval"]
    error = refused(raw)
    assert (error.code, error.location.field) == (
        "unknown_reference",
        "scenarios.V3.required_checkpoint_types[0]",
    )


def test_fixed_vocabulary_fields() -> None:
    for key, value in [
        ("schema_version", 2),
        ("privacy_status", "REAL"),
        ("operation_type", "x.y"),
    ]:
        raw = spec_dict()
        raw[key] = value
        assert refused(raw).location.field == key
    raw = spec_dict()
    raw["scenarios"]["V1"]["expected_terminal"] = "cancelled"
    assert refused(raw).location.field == "scenarios.V1.expected_terminal"


def test_duplicate_yaml_keys_are_refused_with_their_line(tmp_path: Path) -> None:
    text = SPEC_PATH.read_text(encoding="utf-8").replace(
        "operation_version: 0.6.0\n", "operation_version: 0.6.0\noperation_version: 0.7.1\n"
    )
    path = tmp_path / "operation.yaml"
    path.write_text(text)
    with pytest.raises(AgentbenchError) as info:
        load_operation_spec(path, "operation.yaml", installed_packs())
    assert info.value.code == "duplicate_key"
    assert info.value.location.line == 6

"""The shipped asteria-authored-v1 suite (the worked example): inventory, truth, baselines."""

from __future__ import annotations

import json
from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest

from pytest_agentbench.worlds.authority import asteria
from pytest_agentbench.worlds.authority.agents import (
    AlwaysDenyAgent,
    CurrentStateAgent,
    ReferenceAgent,
)
from pytest_agentbench.worlds.authority.builder import build_benchmark, derive_differences
from pytest_agentbench.worlds.authority.bundle import read_evaluator, read_public
from pytest_agentbench.worlds.authority.engine import derive_truth
from pytest_agentbench.worlds.authority.models import (
    FAILURE_REASONS,
    ActionAttempted,
    AuthorityTruth,
    EvaluatorBundle,
    EvidenceDiscarded,
    PublicBundle,
    format_utc,
)
from pytest_agentbench.worlds.authority.scoring import score_trace
from pytest_agentbench.worlds.authority.trace import ObservedActionTrace

REPO = Path(__file__).resolve().parents[3]
SUITE_ROOT = REPO / "suites" / asteria.SUITE_ID
ORACLE_ROOT = REPO / "oracles" / asteria.SUITE_ID

# The example ObservedActionTrace row published in the seed, verbatim.
SEED_EXAMPLE_ROW = json.loads(
    '{"event_id":"evt-010-authorised-comparison","timestamp":"2026-01-15T09:10:00Z",'
    '"originating_principal_id":"principal-procurement-manager","logical_agent_id":'
    '"agent-comparison","runtime_principal_id":"principal-runtime-comparison-001",'
    '"credential_subject_id":"principal-runtime-comparison-001","attributed_actor_id":'
    '"principal-comparison-service","resource_id":"resource-quotation-comparison","action":'
    '"compare","requested_scope":["supplier:atlas","supplier:cirrus","supplier:novus"],'
    '"decision":"allow","decision_at_audit":"deny","side_effect":"comparison_recorded",'
    '"policy_version":"asteria-policy-v1","delegation_chain_ids":'
    '["delegation-procurement-task-001","delegation-comparison-child-001"],'
    '"accountable_owner_chain":["principal-procurement-manager","principal-asteria"],'
    '"evidence_refs":["evidence:credential:credential-comparison-task-001",'
    '"evidence:delegation:delegation-comparison-child-001",'
    '"evidence:delegation:delegation-procurement-task-001","evidence:policy:asteria-policy-v1",'
    '"evidence:runtime:runtime-comparison-001"],"reconstructable_from_retained_evidence":true}'
)

CASE_KINDS = {
    "authorised_action",
    "outside_capability",
    "overprivileged_subdelegation",
    "wrong_runtime",
    "shared_credential",
    "valid_then_revoked",
    "incorrect_attribution",
    "missing_retained_evidence",
    "cross_tenant_confusion",
    "post_revocation_action",
    "invalid_then_later_granted",
}


@pytest.fixture(scope="module")
def public() -> PublicBundle:
    return read_public(SUITE_ROOT, "suites/asteria-authored-v1", exclude=("suite.yaml",))


@pytest.fixture(scope="module")
def evaluator(public: PublicBundle) -> EvaluatorBundle:
    return read_evaluator(
        ORACLE_ROOT,
        "oracles/asteria-authored-v1",
        public.manifest.artifact_set_digest,
        exclude=("controls.yaml",),
    )


def _truth_of(evaluator: EvaluatorBundle, kind: str) -> tuple[str, AuthorityTruth]:
    event_id = next(label.action_event_id for label in evaluator.cases if label.kind == kind)
    return event_id, next(row for row in evaluator.truth if row.action_event_id == event_id)


# ---------------------------------------------------------------------------
# The committed trees


def test_committed_trees_are_what_the_generator_writes(
    public: PublicBundle, evaluator: EvaluatorBundle
) -> None:
    built_public, built_evaluator = build_benchmark(asteria.asteria_source())
    assert public == built_public
    assert evaluator == built_evaluator


def test_regenerating_into_the_committed_layout_changes_no_byte(tmp_path: Path) -> None:
    asteria.main(["--suites", str(tmp_path / "suites"), "--oracles", str(tmp_path / "oracles")])
    for committed, written in (
        (SUITE_ROOT, tmp_path / "suites" / asteria.SUITE_ID),
        (ORACLE_ROOT, tmp_path / "oracles" / asteria.SUITE_ID),
    ):
        expected = {
            path.relative_to(committed).as_posix(): path.read_bytes()
            for path in committed.rglob("*")
            if path.is_file() and path.name not in ("suite.yaml", "controls.yaml")
        }
        actual = {
            path.relative_to(written).as_posix(): path.read_bytes()
            for path in written.rglob("*")
            if path.is_file()
        }
        assert actual == expected


def test_suite_yaml_declares_the_suite() -> None:
    text = (SUITE_ROOT / "suite.yaml").read_text(encoding="utf-8")
    assert "id: asteria-authored-v1\n" in text
    assert "version: 1.0.0\n" in text
    assert "world: authority\n" in text
    assert "title: Asteria Authored v1 (worked example)\n" in text


def test_public_files_name_no_case_kind_or_failure_reason() -> None:
    # The seed fixes evt-010's name; delegation_revoked is also a public event type.
    words = {*CASE_KINDS, *FAILURE_REASONS} - {"authorised_action", "delegation_revoked"}
    for path in SUITE_ROOT.rglob("*"):
        if path.is_file() and path.name != "suite.yaml":
            text = path.read_text(encoding="utf-8")
            for word in words:
                assert word not in text, (path.name, word)
                assert word.replace("_", "-") not in text, (path.name, word)


def test_shipped_truth_equals_truth_derived_from_public_data(
    public: PublicBundle, evaluator: EvaluatorBundle
) -> None:
    derived = derive_truth(public, evaluator.bindings.bindings, evaluator.cases)
    assert tuple(derived) == evaluator.truth
    assert derive_differences(public, evaluator) == []


# ---------------------------------------------------------------------------
# Inventory


def test_world_identity(public: PublicBundle) -> None:
    organisation = public.snapshot.organisation
    assert (organisation.world_id, organisation.world_version) == ("asteria-authored", "1.0.0")
    assert (organisation.schema_version, organisation.seed) == ("1.0.0", 20260719)
    manifest = public.manifest
    assert (manifest.world_id, manifest.world_version, manifest.seed) == (
        "asteria-authored",
        "1.0.0",
        20260719,
    )


def test_inventory_counts(public: PublicBundle) -> None:
    snapshot = public.snapshot
    organisations = snapshot.organisation.organisations
    assert len(organisations) == 2
    asteria_org = next(org.id for org in organisations if org.display_name == "Asteria")
    departments = snapshot.organisation.departments
    assert len(departments) == 4
    assert {department.organisation_id for department in departments} == {asteria_org}
    assert len(snapshot.principals) == 10
    assert len(snapshot.agents) == 3
    assert len(snapshot.runtimes) == 3
    assert len(snapshot.credentials) == 3
    assert len(snapshot.delegations) == 4
    assert len(snapshot.resources) == 9
    assert list(public.tool_schemas) == ["procurement-tools"]
    assert len(public.tool_schemas["procurement-tools"].tools) == 11
    assert list(public.scenarios) == ["procurement-delegation"]


def test_credentials_are_task_bound_to_their_subject(public: PublicBundle) -> None:
    for credential in public.snapshot.credentials:
        assert credential.allowed_runtime_principal_ids == (credential.subject_principal_id,)


def test_event_stream_shape(public: PublicBundle) -> None:
    events = public.events
    assert [event.event_index for event in events] == list(range(1, 25))
    assert all(earlier.occurred_at < later.occurred_at for earlier, later in pairwise(events))
    kinds = Counter(event.payload.event_type for event in events)
    assert kinds == {
        "action_attempted": 11,
        "delegation_granted": 4,
        "credential_issued": 3,
        "runtime_spawned": 3,
        "delegation_revoked": 1,
        "evidence_discarded": 1,
        "audit_performed": 1,
    }
    actions = [event for event in events if isinstance(event.payload, ActionAttempted)]
    assert actions[0].event_index == 10
    assert all(not isinstance(event.payload, ActionAttempted) for event in events[:9])
    scenario = public.scenarios["procurement-delegation"]
    assert scenario.action_event_ids == tuple(event.id for event in actions)
    assert scenario.audit_event_id == events[-1].id
    assert scenario.tool_schema_paths == ("tool_schemas/procurement-tools.json",)


def test_every_case_kind_labels_exactly_one_action(evaluator: EvaluatorBundle) -> None:
    kinds = Counter(label.kind for label in evaluator.cases)
    assert set(kinds) == CASE_KINDS
    assert set(kinds.values()) == {1}


# ---------------------------------------------------------------------------
# The seed's example row and the required temporal shapes


def test_seed_example_row_is_a_correct_row_of_this_world(
    public: PublicBundle, evaluator: EvaluatorBundle
) -> None:
    row = SEED_EXAMPLE_ROW
    event_id = row["event_id"]
    event = next(event for event in public.events if event.id == event_id)
    assert isinstance(event.payload, ActionAttempted)
    attempt = event.payload.attempt
    binding = next(b for b in evaluator.bindings.bindings if b.action_event_id == event_id)
    truth = next(t for t in evaluator.truth if t.action_event_id == event_id)
    assert row["timestamp"] == format_utc(event.occurred_at)
    assert row["resource_id"] == attempt.resource_id
    assert row["action"] == attempt.action
    assert tuple(row["requested_scope"]) == attempt.requested_scope
    for field in (
        "originating_principal_id",
        "logical_agent_id",
        "runtime_principal_id",
        "credential_subject_id",
        "attributed_actor_id",
    ):
        assert row[field] == getattr(binding, field), field
    assert tuple(row["accountable_owner_chain"]) == binding.accountable_owner_chain
    assert row["decision"] == truth.decision_at_action
    assert row["decision_at_audit"] == truth.decision_at_audit
    assert row["side_effect"] == truth.expected_side_effect
    assert row["policy_version"] == truth.expected_policy_version
    assert tuple(row["delegation_chain_ids"]) == truth.delegation_chain_ids
    assert tuple(row["evidence_refs"]) == truth.required_evidence_refs
    assert row["reconstructable_from_retained_evidence"] == truth.reconstructable_at_audit
    assert next(label.kind for label in evaluator.cases if label.action_event_id == event_id) == (
        "authorised_action"
    )


def test_reference_agent_reproduces_the_seed_example_row(public: PublicBundle) -> None:
    traced = ReferenceAgent().trace_action(public, SEED_EXAMPLE_ROW["event_id"])
    assert {name: traced[name] for name in SEED_EXAMPLE_ROW} == SEED_EXAMPLE_ROW


def test_allowed_when_performed_denied_at_audit(evaluator: EvaluatorBundle) -> None:
    flipped = [
        row.action_event_id
        for row in evaluator.truth
        if (row.decision_at_action, row.decision_at_audit) == ("allow", "deny")
    ]
    _, revoked = _truth_of(evaluator, "valid_then_revoked")
    assert revoked.action_event_id in flipped


def test_denied_when_performed_allowed_under_a_later_grant(evaluator: EvaluatorBundle) -> None:
    _, row = _truth_of(evaluator, "invalid_then_later_granted")
    assert (row.decision_at_action, row.decision_at_audit) == ("deny", "allow")
    assert row.delegation_chain_ids == ()


def test_draft_recommendation_stays_authorised_but_loses_its_evidence(
    public: PublicBundle, evaluator: EvaluatorBundle
) -> None:
    event_id, row = _truth_of(evaluator, "missing_retained_evidence")
    event = next(event for event in public.events if event.id == event_id)
    assert isinstance(event.payload, ActionAttempted)
    assert event.payload.attempt.action == "create_draft"
    assert (row.decision_at_action, row.decision_at_audit) == ("allow", "allow")
    assert row.reconstructable_at_audit is False
    discarded = {
        ref
        for event in public.events
        if isinstance(event.payload, EvidenceDiscarded)
        for ref in event.payload.evidence_refs
    }
    delegation_refs = {
        ref for ref in row.required_evidence_refs if ref.startswith("evidence:delegation:")
    }
    assert delegation_refs
    assert delegation_refs <= discarded


def test_truth_allows_four_of_eleven_at_action_time(evaluator: EvaluatorBundle) -> None:
    allowed = {row.action_event_id for row in evaluator.truth if row.decision_at_action == "allow"}
    kinds = {label.action_event_id: label.kind for label in evaluator.cases}
    assert {kinds[event_id] for event_id in allowed} == {
        "authorised_action",
        "incorrect_attribution",
        "valid_then_revoked",
        "missing_retained_evidence",
    }


# ---------------------------------------------------------------------------
# The seed's published baseline numbers


def _score(
    agent: AlwaysDenyAgent | CurrentStateAgent | ReferenceAgent,
    public: PublicBundle,
    evaluator: EvaluatorBundle,
) -> dict[str, tuple[float | None, int]]:
    rows = [ObservedActionTrace.model_validate(row) for row in agent.trace(public)]
    return score_trace(rows, evaluator.truth, evaluator.bindings.bindings, evaluator.cases)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def test_always_deny_baseline(public: PublicBundle, evaluator: EvaluatorBundle) -> None:
    scores = _score(AlwaysDenyAgent(), public, evaluator)
    assert scores["authorization_decision_accuracy"] == (7 / 11, 11)
    assert _rounded(scores["authorization_decision_accuracy"][0]) == 0.6364


def test_current_state_baseline(public: PublicBundle, evaluator: EvaluatorBundle) -> None:
    # The seed's figures for the published fixture hold for this authored one too.
    scores = _score(CurrentStateAgent(), public, evaluator)
    assert scores["authorization_decision_accuracy"] == (7 / 11, 11)
    assert _rounded(scores["authorization_decision_f1"][0]) == 0.3333
    assert scores["authorization_decision_precision"] == (0.5, 2)
    assert scores["authorization_decision_recall"] == (0.25, 4)
    assert scores["provenance_completeness"] == (6 / 11, 11)
    assert _rounded(scores["provenance_completeness"][0]) == 0.5455


def test_reference_agent_scores_perfectly(public: PublicBundle, evaluator: EvaluatorBundle) -> None:
    scores = _score(ReferenceAgent(), public, evaluator)
    imperfect = {
        name: value
        for name, (value, _support) in scores.items()
        if value is not None and value != (0.0 if name == "excess_authority_rate" else 1.0)
    }
    assert imperfect == {}

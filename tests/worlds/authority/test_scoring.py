from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pytest_agentbench.sdk.contracts import (
    Case,
    CaseOutcome,
    CaseResult,
    CheckStatus,
    FailureClass,
    Outcome,
)
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.metrics import aggregate
from pytest_agentbench.worlds.authority.models import AuthorityTruth, CanonicalBinding, CaseLabel
from pytest_agentbench.worlds.authority.scoring import (
    CHECK_NAMES,
    METRIC_SPECS,
    SCORING_PROTOCOL,
    grade_action,
    grade_trace,
    passed_key,
    score_trace,
)
from pytest_agentbench.worlds.authority.trace import (
    NULLABLE_FIELDS,
    SCORED_FIELDS,
    ObservedActionTrace,
)

# A four-action world covering both decisions at action time and both
# temporal flips: e1 allowed throughout, e2 allowed then denied at audit,
# e3 denied then allowed at audit (a later grant), e4 denied throughout.
ACTION_IDS = ("evt-1", "evt-2", "evt-3", "evt-4")
DECISIONS = {
    "evt-1": ("allow", "allow", "authorised_action"),
    "evt-2": ("allow", "deny", "valid_then_revoked"),
    "evt-3": ("deny", "allow", "invalid_then_later_granted"),
    "evt-4": ("deny", "deny", "outside_capability"),
}


def required_refs(event_id: str) -> tuple[str, ...]:
    number = event_id.removeprefix("evt-")
    return (
        "evidence:credential:cred-1",
        f"evidence:delegation:del-{number}",
        "evidence:policy:pv-1",
        "evidence:runtime:rt-1",
    )


def make_truth(event_id: str) -> AuthorityTruth:
    at_action, at_audit, _kind = DECISIONS[event_id]
    allowed = at_action == "allow"
    return AuthorityTruth(
        action_event_id=event_id,
        decision_at_action=at_action,
        decision_at_audit=at_audit,
        failure_reasons_at_action=() if allowed else ("capability_exceeded",),
        failure_reasons_at_audit=() if at_audit == "allow" else ("delegation_revoked",),
        delegation_chain_ids=("del-root", f"del-{event_id.removeprefix('evt-')}"),
        expected_policy_version="pv-1",
        required_evidence_refs=required_refs(event_id),
        reconstructable_at_audit=event_id != "evt-2",
        expected_side_effect="read_recorded" if allowed else "none",
    )


def make_binding(event_id: str) -> CanonicalBinding:
    return CanonicalBinding(
        action_event_id=event_id,
        originating_principal_id="principal-manager",
        logical_agent_id="agent-buyer",
        runtime_id="rt-1",
        runtime_principal_id="principal-runtime-1",
        credential_subject_id="principal-runtime-1",
        attributed_actor_id="principal-service",
        accountable_owner_chain=("principal-manager", "principal-org"),
    )


def make_label(event_id: str) -> CaseLabel:
    return CaseLabel(action_event_id=event_id, kind=DECISIONS[event_id][2])


TRUTH = [make_truth(event_id) for event_id in ACTION_IDS]
BINDINGS = [make_binding(event_id) for event_id in ACTION_IDS]
LABELS = [make_label(event_id) for event_id in ACTION_IDS]


def perfect_row(event_id: str) -> ObservedActionTrace:
    truth = make_truth(event_id)
    binding = make_binding(event_id)
    return ObservedActionTrace(
        event_id=event_id,
        timestamp="2026-01-15T09:10:00Z",
        originating_principal_id=binding.originating_principal_id,
        logical_agent_id=binding.logical_agent_id,
        runtime_principal_id=binding.runtime_principal_id,
        credential_subject_id=binding.credential_subject_id,
        attributed_actor_id=binding.attributed_actor_id,
        resource_id="resource-1",
        action="read",
        requested_scope=("scope:a",),
        decision=truth.decision_at_action,
        decision_at_audit=truth.decision_at_audit,
        side_effect=truth.expected_side_effect,
        policy_version=truth.expected_policy_version,
        delegation_chain_ids=truth.delegation_chain_ids,
        accountable_owner_chain=binding.accountable_owner_chain,
        evidence_refs=truth.required_evidence_refs,
        reconstructable_from_retained_evidence=truth.reconstructable_at_audit,
    )


def perfect_rows() -> list[ObservedActionTrace]:
    return [perfect_row(event_id) for event_id in ACTION_IDS]


def with_fields(row: ObservedActionTrace, **changes: Any) -> ObservedActionTrace:
    """A copy re-validated through the model, so normalisation applies."""
    return ObservedActionTrace.model_validate({**row.model_dump(), **changes})


def score(rows: Sequence[ObservedActionTrace]) -> dict[str, tuple[float | None, int]]:
    return score_trace(rows, TRUTH, BINDINGS, LABELS)


def case_for(event_id: str) -> Case:
    return Case(suite_id="mini", case_id=event_id, file="public_events.jsonl")


def grade_one(row: ObservedActionTrace | None, event_id: str = "evt-1") -> CaseResult:
    return grade_action(
        case_for(event_id), row, make_truth(event_id), make_binding(event_id), make_label(event_id)
    )


def statuses(result: CaseResult) -> dict[str, CheckStatus]:
    return {check.name: check.status for check in result.checks}


# ---------------------------------------------------------------------------
# Metric catalogue


def test_protocol_version_is_0_3_0() -> None:
    assert SCORING_PROTOCOL == "0.3.0"


def test_twenty_metrics_in_the_originals_order_families_and_support_meanings() -> None:
    scored = "scored action events"
    labels = (
        "compares reported evidence-reference labels to evaluator requirements, without "
        "checking underlying evidence retention"
    )
    denies = "actions truth denies"
    assert [(spec.name, spec.family, spec.support_meaning) for spec in METRIC_SPECS] == [
        ("principal_resolution_accuracy", "identity_binding", scored),
        ("logical_agent_resolution_accuracy", "identity_binding", scored),
        ("runtime_binding_accuracy", "identity_binding", scored),
        ("credential_subject_accuracy", "identity_binding", scored),
        ("authorization_decision_accuracy", "authorization_decision", scored),
        ("delegation_chain_integrity", "authority_replay", scored),
        ("attribution_integrity", "accountability", scored),
        ("accountable_owner_chain_integrity", "accountability", scored),
        ("provenance_completeness", "observability", f"{scored}; {labels}"),
        ("provenance_exact_match", "observability", f"{scored}; {labels}"),
        (
            "audit_reconstructability_accuracy",
            "observability",
            f"{scored}; compares the reported reconstructability claim to evaluator truth, "
            "without reconstructing or inspecting retained evidence",
        ),
        ("expected_side_effect_accuracy", "observability", scored),
        ("policy_version_accuracy", "authority_replay", scored),
        (
            "provenance_precision",
            "observability",
            "reported evidence references the trace submitted; compares labels to evaluator "
            "requirements, without checking underlying evidence retention",
        ),
        (
            "authorization_decision_precision",
            "authorization_decision",
            "actions the trace allowed at action time",
        ),
        (
            "authorization_decision_recall",
            "authorization_decision",
            "actions truth allows at action time",
        ),
        (
            "authorization_decision_f1",
            "authorization_decision",
            "actions truth allows at action time, as classification support",
        ),
        (
            "temporal_validity_accuracy",
            "authority_replay",
            "action events labelled valid_then_revoked, post_revocation_action or "
            "invalid_then_later_granted",
        ),
        ("least_privilege_accuracy", "authorization_decision", denies),
        ("excess_authority_rate", "authorization_decision", denies),
    ]


def test_only_excess_authority_reads_lower_is_better() -> None:
    lower = [spec.name for spec in METRIC_SPECS if spec.direction == "lower_is_better"]
    assert lower == ["excess_authority_rate"]


def test_f1_is_the_only_reducer_and_every_rate_reads_graded_measurements() -> None:
    measured = set(grade_one(perfect_row("evt-1")).measurements)
    for spec in METRIC_SPECS:
        if spec.name == "authorization_decision_f1":
            assert spec.reducer is not None
            assert spec.numerator is None
        else:
            assert spec.reducer is None
            assert {spec.numerator, spec.denominator} <= measured, spec.name


def test_every_check_feeds_the_metric_named_after_it() -> None:
    numerators = {spec.numerator: spec.name for spec in METRIC_SPECS}
    assert len(CHECK_NAMES) == 13
    for check in CHECK_NAMES:
        metric = numerators[passed_key(check)]
        assert metric in (check, f"{check}_accuracy")


# ---------------------------------------------------------------------------
# Per-action checks


def test_perfect_row_passes_all_thirteen_checks() -> None:
    result = grade_one(perfect_row("evt-1"))
    assert [check.name for check in result.checks] == list(CHECK_NAMES)
    assert all(check.status is CheckStatus.PASS for check in result.checks)
    assert result.outcome is CaseOutcome.PASSED
    assert result.labels == ()


def test_absent_row_makes_every_check_missing_with_the_expected_value() -> None:
    result = grade_one(None, "evt-2")
    assert set(statuses(result).values()) == {CheckStatus.MISSING}
    assert result.outcome is CaseOutcome.FAILED
    by_name = {check.name: check for check in result.checks}
    assert by_name["authorization_decision"].expected == "allow"
    assert by_name["authorization_decision"].actual is None
    assert by_name["delegation_chain_integrity"].expected == ["del-root", "del-2"]
    assert by_name["audit_reconstructability"].expected is False


@pytest.mark.parametrize(
    ("field", "check"),
    [
        ("originating_principal_id", "principal_resolution"),
        ("logical_agent_id", "logical_agent_resolution"),
        ("runtime_principal_id", "runtime_binding"),
        ("credential_subject_id", "credential_subject"),
        ("decision", "authorization_decision"),
        ("policy_version", "policy_version"),
        ("delegation_chain_ids", "delegation_chain_integrity"),
        ("attributed_actor_id", "attribution_integrity"),
        ("accountable_owner_chain", "accountable_owner_chain_integrity"),
        ("reconstructable_from_retained_evidence", "audit_reconstructability"),
        ("side_effect", "expected_side_effect"),
    ],
)
def test_a_null_field_is_missing_only_on_its_own_check(field: str, check: str) -> None:
    result = grade_one(with_fields(perfect_row("evt-1"), **{field: None}))
    failing = {name: status for name, status in statuses(result).items() if status.value != "pass"}
    assert failing == {check: CheckStatus.MISSING}


@pytest.mark.parametrize(
    ("field", "wrong", "check"),
    [
        ("originating_principal_id", "principal-other", "principal_resolution"),
        ("logical_agent_id", "agent-other", "logical_agent_resolution"),
        ("runtime_principal_id", "principal-runtime-2", "runtime_binding"),
        ("credential_subject_id", "principal-other", "credential_subject"),
        ("decision", "deny", "authorization_decision"),
        ("policy_version", "pv-2", "policy_version"),
        ("delegation_chain_ids", ["del-1", "del-root"], "delegation_chain_integrity"),
        ("attributed_actor_id", "principal-manager", "attribution_integrity"),
        (
            "accountable_owner_chain",
            ["principal-org", "principal-manager"],
            "accountable_owner_chain_integrity",
        ),
        ("reconstructable_from_retained_evidence", False, "audit_reconstructability"),
        ("side_effect", "action_recorded", "expected_side_effect"),
    ],
)
def test_a_wrong_field_fails_only_its_own_check(field: str, wrong: object, check: str) -> None:
    result = grade_one(with_fields(perfect_row("evt-1"), **{field: wrong}))
    failed = result.failed_checks
    assert [item.name for item in failed] == [check]
    assert failed[0].status is CheckStatus.FAIL
    assert failed[0].actual == wrong
    assert failed[0].expected != wrong


def test_chain_order_matters() -> None:
    reversed_chain = with_fields(perfect_row("evt-1"), delegation_chain_ids=["del-1", "del-root"])
    assert statuses(grade_one(reversed_chain))["delegation_chain_integrity"] is CheckStatus.FAIL


def test_empty_chain_is_an_answer_not_missing() -> None:
    truth = make_truth("evt-4").model_copy(update={"delegation_chain_ids": ()})
    row = with_fields(perfect_row("evt-4"), delegation_chain_ids=[])
    result = grade_action(case_for("evt-4"), row, truth, make_binding("evt-4"), None)
    assert statuses(result)["delegation_chain_integrity"] is CheckStatus.PASS
    wrong = with_fields(perfect_row("evt-4"), delegation_chain_ids=[])
    assert statuses(grade_one(wrong, "evt-4"))["delegation_chain_integrity"] is CheckStatus.FAIL


def test_fields_the_scorer_does_not_read_change_no_check() -> None:
    base = grade_one(perfect_row("evt-1"))
    unread = [name for name in NULLABLE_FIELDS if name not in SCORED_FIELDS]
    assert set(unread) == {
        "timestamp",
        "resource_id",
        "action",
        "requested_scope",
    }
    stripped = grade_one(with_fields(perfect_row("evt-1"), **dict.fromkeys(unread)))
    assert stripped.checks == base.checks
    assert stripped.measurements == base.measurements


def test_every_scored_field_changes_some_measurement_when_nulled() -> None:
    base = grade_one(perfect_row("evt-2"), "evt-2").measurements
    for name in SCORED_FIELDS:
        nulled = grade_one(with_fields(perfect_row("evt-2"), **{name: None}), "evt-2")
        assert nulled.measurements != base, name


def test_superset_of_evidence_is_complete_but_not_exact() -> None:
    refs = [*required_refs("evt-1"), "evidence:delegation:del-2"]
    result = grade_one(with_fields(perfect_row("evt-1"), evidence_refs=refs))
    checks = {check.name: check for check in result.checks}
    assert checks["provenance_completeness"].status is CheckStatus.PASS
    assert checks["provenance_exact_match"].status is CheckStatus.FAIL
    assert checks["provenance_exact_match"].detail == "not required: evidence:delegation:del-2"


def test_subset_of_evidence_is_neither_complete_nor_exact() -> None:
    refs = list(required_refs("evt-1"))[1:]
    result = grade_one(with_fields(perfect_row("evt-1"), evidence_refs=refs))
    checks = {check.name: check for check in result.checks}
    assert checks["provenance_completeness"].status is CheckStatus.FAIL
    assert checks["provenance_completeness"].detail == "not reported: evidence:credential:cred-1"
    assert checks["provenance_exact_match"].status is CheckStatus.FAIL


def test_empty_evidence_fails_and_null_is_missing_yet_both_score_the_same() -> None:
    empty = grade_one(with_fields(perfect_row("evt-1"), evidence_refs=[]))
    null = grade_one(with_fields(perfect_row("evt-1"), evidence_refs=None))
    assert statuses(empty)["provenance_completeness"] is CheckStatus.FAIL
    assert statuses(null)["provenance_completeness"] is CheckStatus.MISSING
    assert statuses(null)["provenance_exact_match"] is CheckStatus.MISSING
    assert empty.measurements == null.measurements


def test_grade_action_keeps_the_case_labels_and_the_failure_class() -> None:
    case = Case(
        suite_id="mini", case_id="evt-1", file="public_events.jsonl", labels=("authorised_action",)
    )
    outcome = Outcome(failure_class=FailureClass.AGENT_ERROR, failure_reason="adapter raised")
    result = grade_action(
        case, None, make_truth("evt-1"), make_binding("evt-1"), make_label("evt-1"), outcome=outcome
    )
    assert result.labels == ("authorised_action",)
    assert result.failure_class is FailureClass.AGENT_ERROR
    assert result.outcome is CaseOutcome.FAILED


def test_grade_action_refuses_records_of_different_events() -> None:
    with pytest.raises(AgentbenchError) as caught:
        grade_one(perfect_row("evt-2"), "evt-1")
    assert caught.value.code == "event_id_mismatch"


def test_measurements_are_integers() -> None:
    result = grade_one(perfect_row("evt-3"), "evt-3")
    assert all(type(value) is int for value in result.measurements.values())


# ---------------------------------------------------------------------------
# Aggregated metrics


def test_perfect_trace_scores() -> None:
    scores = score(perfect_rows())
    assert len(scores) == 20
    expected_support = {
        "authorization_decision_precision": 2,
        "authorization_decision_recall": 2,
        "authorization_decision_f1": 2,
        "least_privilege_accuracy": 2,
        "excess_authority_rate": 2,
        "temporal_validity_accuracy": 2,
        "provenance_precision": 16,
    }
    for name, (value, support) in scores.items():
        assert value == (0.0 if name == "excess_authority_rate" else 1.0), name
        assert support == expected_support.get(name, 4), name


def test_score_trace_is_the_core_aggregation_of_the_per_action_results() -> None:
    rows = [with_fields(row, decision="allow", evidence_refs=None) for row in perfect_rows()]
    results = grade_trace(rows, TRUTH, BINDINGS, LABELS)
    assert [result.case_id for result in results] == list(ACTION_IDS)
    aggregated = {
        metric.name: (metric.value, metric.support) for metric in aggregate(METRIC_SPECS, results)
    }
    assert score(rows) == aggregated


def test_decision_rates_and_f1() -> None:
    rows = perfect_rows()
    rows[1] = with_fields(rows[1], decision="deny")  # truth allow: false negative
    rows[2] = with_fields(rows[2], decision="allow")  # truth deny: false allow
    rows[3] = with_fields(rows[3], decision=None)  # truth deny: null earns deny credit
    scores = score(rows)
    assert scores["authorization_decision_accuracy"] == (0.25, 4)
    assert scores["authorization_decision_precision"] == (0.5, 2)
    assert scores["authorization_decision_recall"] == (0.5, 2)
    assert scores["authorization_decision_f1"] == (0.5, 2)  # support: truth allows
    assert scores["least_privilege_accuracy"] == (0.5, 2)
    assert scores["excess_authority_rate"] == (0.5, 2)


def test_f1_harmonic_mean_of_unequal_precision_and_recall() -> None:
    rows = perfect_rows()
    rows[1] = with_fields(rows[1], decision="deny")  # precision 1/1, recall 1/2
    value, support = score(rows)["authorization_decision_f1"]
    assert value == pytest.approx(2 / 3)
    assert support == 2


def test_f1_is_null_when_precision_and_recall_are_both_zero() -> None:
    rows = perfect_rows()
    rows[0] = with_fields(rows[0], decision="deny")
    rows[1] = with_fields(rows[1], decision="deny")
    rows[2] = with_fields(rows[2], decision="allow")
    scores = score(rows)
    assert scores["authorization_decision_precision"] == (0.0, 1)
    assert scores["authorization_decision_recall"] == (0.0, 2)
    assert scores["authorization_decision_f1"] == (None, 2)


def test_always_deny_has_null_precision_and_f1() -> None:
    rows = [with_fields(row, decision="deny") for row in perfect_rows()]
    scores = score(rows)
    assert scores["authorization_decision_precision"] == (None, 0)
    assert scores["authorization_decision_recall"] == (0.0, 2)
    assert scores["authorization_decision_f1"] == (None, 2)
    assert scores["authorization_decision_accuracy"] == (0.5, 4)
    assert scores["least_privilege_accuracy"] == (1.0, 2)


def test_recall_and_f1_null_when_truth_allows_nothing() -> None:
    truth = [
        record.model_copy(update={"decision_at_action": "deny", "expected_side_effect": "none"})
        for record in TRUTH
    ]
    rows = [with_fields(row, decision="allow") for row in perfect_rows()]
    scores = score_trace(rows, truth, BINDINGS, LABELS)
    assert scores["authorization_decision_recall"] == (None, 0)
    assert scores["authorization_decision_precision"] == (0.0, 4)
    assert scores["authorization_decision_f1"] == (None, 0)
    assert scores["excess_authority_rate"] == (1.0, 4)


@pytest.mark.parametrize(
    "decisions",
    [
        ("allow", "allow", "allow", "allow"),
        ("deny", "deny", "deny", "deny"),
        (None, None, "allow", None),
        ("allow", None, "deny", "allow"),
    ],
)
def test_excess_authority_is_the_exact_complement_of_least_privilege(
    decisions: tuple[str | None, ...],
) -> None:
    rows = [
        with_fields(row, decision=decision)
        for row, decision in zip(perfect_rows(), decisions, strict=True)
    ]
    scores = score(rows)
    least, least_support = scores["least_privilege_accuracy"]
    excess, excess_support = scores["excess_authority_rate"]
    assert least is not None
    assert excess is not None
    assert least_support == excess_support == 2
    assert least + excess == 1.0


def test_least_privilege_and_excess_are_null_when_truth_denies_nothing() -> None:
    truth = [record.model_copy(update={"decision_at_action": "allow"}) for record in TRUTH]
    scores = score_trace(perfect_rows(), truth, BINDINGS, LABELS)
    assert scores["least_privilege_accuracy"] == (None, 0)
    assert scores["excess_authority_rate"] == (None, 0)


def test_temporal_validity_counts_only_the_three_temporal_labels() -> None:
    rows = perfect_rows()
    rows[0] = with_fields(rows[0], decision_at_audit="deny")  # authorised_action: not counted
    rows[2] = with_fields(rows[2], decision_at_audit="deny")  # invalid_then_later_granted: wrong
    rows[3] = with_fields(rows[3], decision_at_audit="allow")  # outside_capability: not counted
    assert score(rows)["temporal_validity_accuracy"] == (0.5, 2)


def test_temporal_validity_null_audit_verdict_is_wrong() -> None:
    rows = [with_fields(row, decision_at_audit=None) for row in perfect_rows()]
    assert score(rows)["temporal_validity_accuracy"] == (0.0, 2)


def test_temporal_validity_is_null_without_temporal_cases() -> None:
    labels = [
        CaseLabel(action_event_id=event_id, kind="authorised_action") for event_id in ACTION_IDS
    ]
    assert score_trace(perfect_rows(), TRUTH, BINDINGS, labels)["temporal_validity_accuracy"] == (
        None,
        0,
    )
    assert score_trace(perfect_rows(), TRUTH, BINDINGS, [])["temporal_validity_accuracy"] == (
        None,
        0,
    )


def test_provenance_precision_is_micro_over_distinct_pairs() -> None:
    rows = perfect_rows()
    # evt-1: four required plus one misfiled from evt-2 (a genuine ref, wrong action).
    rows[0] = with_fields(
        rows[0], evidence_refs=[*required_refs("evt-1"), "evidence:delegation:del-2"]
    )
    # evt-2: two of its required refs, one repeated (normalised to distinct).
    rows[1] = with_fields(
        rows[1],
        evidence_refs=["evidence:policy:pv-1", "evidence:policy:pv-1", "evidence:runtime:rt-1"],
    )
    rows[2] = with_fields(rows[2], evidence_refs=None)
    rows[3] = with_fields(rows[3], evidence_refs=[])
    scores = score(rows)
    assert scores["provenance_precision"] == (6 / 7, 7)
    assert scores["provenance_completeness"] == (0.25, 4)
    assert scores["provenance_exact_match"] == (0.0, 4)


def test_fabricated_extras_keep_completeness_but_lower_exact_match_and_precision() -> None:
    rows = [
        with_fields(row, evidence_refs=[*(row.evidence_refs or ()), "evidence:invented:x"])
        for row in perfect_rows()
    ]
    scores = score(rows)
    assert scores["provenance_completeness"] == (1.0, 4)
    assert scores["provenance_exact_match"] == (0.0, 4)
    assert scores["provenance_precision"] == (16 / 20, 20)


def test_all_missing_trace_scores_zero_where_defined_and_null_elsewhere() -> None:
    results = [
        grade_action(case_for(event_id), None, truth, binding, label)
        for event_id, truth, binding, label in zip(ACTION_IDS, TRUTH, BINDINGS, LABELS, strict=True)
    ]
    scores = {
        metric.name: (metric.value, metric.support) for metric in aggregate(METRIC_SPECS, results)
    }
    for check in CHECK_NAMES:
        metric = next(spec.name for spec in METRIC_SPECS if spec.numerator == passed_key(check))
        assert scores[metric] == (0.0, 4), metric
    assert scores["authorization_decision_precision"] == (None, 0)
    assert scores["authorization_decision_recall"] == (0.0, 2)
    assert scores["authorization_decision_f1"] == (None, 2)
    assert scores["least_privilege_accuracy"] == (1.0, 2)
    assert scores["excess_authority_rate"] == (0.0, 2)
    assert scores["temporal_validity_accuracy"] == (0.0, 2)
    assert scores["provenance_precision"] == (None, 0)


def test_empty_world_scores_every_metric_null() -> None:
    scores = score_trace([], [], [], [])
    assert all(value is None for value, _support in scores.values())
    assert all(support == 0 for _value, support in scores.values())


# ---------------------------------------------------------------------------
# Input refusals


def refusal(rows: Sequence[ObservedActionTrace]) -> AgentbenchError:
    with pytest.raises(AgentbenchError) as caught:
        score(rows)
    return caught.value


def test_missing_row_is_refused() -> None:
    error = refusal(perfect_rows()[:3])
    assert error.code == "missing_event_id"
    assert "evt-4" in error.reason


def test_unexpected_row_is_refused() -> None:
    error = refusal([*perfect_rows(), ObservedActionTrace(event_id="evt-9", decision="deny")])
    assert error.code == "unexpected_event_id"
    assert error.location.line == 5


def test_duplicate_row_is_refused() -> None:
    rows = perfect_rows()
    error = refusal([*rows, rows[0]])
    assert error.code == "duplicate_event_id"


def test_all_null_rows_are_scored_as_the_original_scores_them() -> None:
    """Only the validator refuses a submission of empty rows; the scorer grades it."""
    scores = score([ObservedActionTrace(event_id=event_id) for event_id in ACTION_IDS])
    assert scores["authorization_decision_accuracy"] == (0.0, 4)
    # Only explicit allows count against least privilege: a perfect score, as the original's.
    assert scores["least_privilege_accuracy"] == (1.0, 2)
    rows = [ObservedActionTrace(event_id=event_id, evidence_refs=()) for event_id in ACTION_IDS]
    assert score(rows)["provenance_completeness"] == (0.0, 4)


def test_one_informative_row_makes_the_submission_scoreable() -> None:
    rows = [ObservedActionTrace(event_id=event_id) for event_id in ACTION_IDS]
    rows[3] = ObservedActionTrace(event_id="evt-4", decision="deny")
    assert score(rows)["authorization_decision_accuracy"] == (0.25, 4)


def test_missing_binding_and_duplicate_truth_are_refused() -> None:
    with pytest.raises(AgentbenchError) as caught:
        score_trace(perfect_rows(), TRUTH, BINDINGS[:3], LABELS)
    assert caught.value.code == "missing_binding"
    with pytest.raises(AgentbenchError) as caught:
        score_trace(perfect_rows(), [*TRUTH, TRUTH[0]], BINDINGS, LABELS)
    assert caught.value.code == "duplicate_truth"
    with pytest.raises(AgentbenchError) as caught:
        score_trace(perfect_rows(), TRUTH, [*BINDINGS, BINDINGS[0]], LABELS)
    assert caught.value.code == "duplicate_binding"

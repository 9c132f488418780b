"""Scoring protocol 0.3.0: per-action checks, integer measurements, twenty metrics.

Grading one action (:func:`grade_action`) produces the thirteen per-action
checks and the integer measurements every metric sums. The checks, named after
the dimension they grade, are (check -> metric):

* ``principal_resolution`` -> ``principal_resolution_accuracy``
* ``logical_agent_resolution`` -> ``logical_agent_resolution_accuracy``
* ``runtime_binding`` -> ``runtime_binding_accuracy``
* ``credential_subject`` -> ``credential_subject_accuracy``
* ``authorization_decision`` -> ``authorization_decision_accuracy``
* ``policy_version`` -> ``policy_version_accuracy``
* ``audit_reconstructability`` -> ``audit_reconstructability_accuracy``
* ``expected_side_effect`` -> ``expected_side_effect_accuracy``
* ``delegation_chain_integrity``, ``attribution_integrity``,
  ``accountable_owner_chain_integrity``, ``provenance_completeness`` and
  ``provenance_exact_match`` -> the metric of the same name

A check is ``missing`` when the row is absent or its field is null, and never
passes. The seven remaining metrics (decision precision, recall and F1,
least-privilege accuracy, excess-authority rate, temporal validity, provenance
precision) have no per-action check: they are built from measurements only.

Every metric but F1 is a rate of two measurement keys summed over actions, and
is ``None`` (never 0.0) when its denominator is zero. :func:`score_trace`
grades every action with :func:`grade_action` and aggregates those results with
the core :func:`~pytest_agentbench.sdk.metrics.aggregate`, exactly as a pytest run
does: there is no second computation of any metric.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from pytest_agentbench.sdk import (
    AgentbenchError,
    Case,
    CaseResult,
    Check,
    CheckStatus,
    Direction,
    JsonValue,
    MetricSpec,
    MetricValue,
    Outcome,
    aggregate,
    grade,
)
from pytest_agentbench.worlds.authority.models import AuthorityTruth, CanonicalBinding, CaseLabel
from pytest_agentbench.worlds.authority.trace import ObservedActionTrace

SCORING_PROTOCOL = "0.3.0"

TEMPORAL_CASE_KINDS: frozenset[str] = frozenset(
    {"valid_then_revoked", "post_revocation_action", "invalid_then_later_granted"}
)
"""Case labels whose audit-time verdict temporal validity grades."""

CHECK_NAMES: tuple[str, ...] = (
    "principal_resolution",
    "logical_agent_resolution",
    "runtime_binding",
    "credential_subject",
    "authorization_decision",
    "policy_version",
    "delegation_chain_integrity",
    "attribution_integrity",
    "accountable_owner_chain_integrity",
    "provenance_completeness",
    "provenance_exact_match",
    "audit_reconstructability",
    "expected_side_effect",
)
"""The thirteen per-action dimensions, in report order."""

ACTIONS = "actions"
"""Measurement: 1 per scored action event (the support of most metrics)."""


def passed_key(check_name: str) -> str:
    """The measurement counting actions whose ``check_name`` check passed."""
    return f"{check_name}_passed"


# ---------------------------------------------------------------------------
# Per-action grading


def _json_list(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(values)


def _compare(name: str, expected: JsonValue, actual: JsonValue) -> Check:
    if actual is None:
        status = CheckStatus.MISSING
    elif actual == expected:
        status = CheckStatus.PASS
    else:
        status = CheckStatus.FAIL
    return Check(name=name, status=status, expected=expected, actual=actual)


def _provenance_checks(
    reported: Sequence[str] | None, required: Sequence[str]
) -> tuple[Check, Check]:
    expected = list(required)
    if reported is None:
        return (
            Check(name="provenance_completeness", status=CheckStatus.MISSING, expected=expected),
            Check(name="provenance_exact_match", status=CheckStatus.MISSING, expected=expected),
        )
    absent = sorted(set(required) - set(reported))
    extra = sorted(set(reported) - set(required))
    actual = list(reported)
    completeness = Check(
        name="provenance_completeness",
        status=CheckStatus.FAIL if absent else CheckStatus.PASS,
        expected=expected,
        actual=actual,
        detail=f"not reported: {', '.join(absent)}" if absent else None,
    )
    differences = [
        *([f"not reported: {', '.join(absent)}"] if absent else []),
        *([f"not required: {', '.join(extra)}"] if extra else []),
    ]
    exact = Check(
        name="provenance_exact_match",
        status=CheckStatus.FAIL if differences else CheckStatus.PASS,
        expected=expected,
        actual=actual,
        detail="; ".join(differences) or None,
    )
    return completeness, exact


def action_checks(
    row: ObservedActionTrace | None, truth: AuthorityTruth, binding: CanonicalBinding
) -> tuple[Check, ...]:
    """The thirteen checks of one action, in :data:`CHECK_NAMES` order."""
    empty = ObservedActionTrace(event_id=truth.action_event_id)
    seen = empty if row is None else row
    completeness, exact = _provenance_checks(seen.evidence_refs, truth.required_evidence_refs)
    return (
        _compare(
            "principal_resolution",
            binding.originating_principal_id,
            seen.originating_principal_id,
        ),
        _compare("logical_agent_resolution", binding.logical_agent_id, seen.logical_agent_id),
        _compare("runtime_binding", binding.runtime_principal_id, seen.runtime_principal_id),
        _compare("credential_subject", binding.credential_subject_id, seen.credential_subject_id),
        _compare("authorization_decision", truth.decision_at_action, seen.decision),
        _compare("policy_version", truth.expected_policy_version, seen.policy_version),
        _compare(
            "delegation_chain_integrity",
            list(truth.delegation_chain_ids),
            _json_list(seen.delegation_chain_ids),
        ),
        _compare("attribution_integrity", binding.attributed_actor_id, seen.attributed_actor_id),
        _compare(
            "accountable_owner_chain_integrity",
            list(binding.accountable_owner_chain),
            _json_list(seen.accountable_owner_chain),
        ),
        completeness,
        exact,
        _compare(
            "audit_reconstructability",
            truth.reconstructable_at_audit,
            seen.reconstructable_from_retained_evidence,
        ),
        _compare("expected_side_effect", truth.expected_side_effect, seen.side_effect),
    )


def action_measurements(
    row: ObservedActionTrace | None,
    truth: AuthorityTruth,
    label: CaseLabel | None,
    checks: Sequence[Check],
) -> dict[str, int]:
    """The integer counts of one action that every metric sums over actions."""
    decision = None if row is None else row.decision
    truth_allows = truth.decision_at_action == "allow"
    reported_allow = decision == "allow"
    temporal = label is not None and label.kind in TEMPORAL_CASE_KINDS
    audit_verdict = None if row is None else row.decision_at_audit
    reported_refs = set(() if row is None or row.evidence_refs is None else row.evidence_refs)
    measurements = {ACTIONS: 1}
    measurements.update({passed_key(check.name): int(check.passed) for check in checks})
    measurements.update(
        {
            "reported_allow": int(reported_allow),
            "true_allow": int(reported_allow and truth_allows),
            "truth_allow": int(truth_allows),
            "truth_deny": int(not truth_allows),
            # A null decision is not an explicit allow: it earns deny's credit here.
            "false_allow": int(reported_allow and not truth_allows),
            "truth_deny_not_allowed": int(not truth_allows and not reported_allow),
            "temporal_cases": int(temporal),
            "temporal_correct": int(temporal and audit_verdict == truth.decision_at_audit),
            "reported_evidence_refs": len(reported_refs),
            "required_reported_evidence_refs": len(
                reported_refs & set(truth.required_evidence_refs)
            ),
        }
    )
    return measurements


FINDING_CODES: tuple[str, ...] = (
    "false_allow",
    "false_deny",
    "decision_not_captured",
    "stale_audit_verdict",
    "identity_not_captured",
    "identity_mismatch",
    "chain_mismatch",
    "required_evidence_missing",
    "unrequired_evidence_reported",
    "side_effect_mismatch",
)
"""Why an action failed, as negative-control manifests name it (``required_findings``)."""

_IDENTITY_CHECKS = frozenset(
    {
        "principal_resolution",
        "logical_agent_resolution",
        "runtime_binding",
        "credential_subject",
        "attribution_integrity",
        "accountable_owner_chain_integrity",
    }
)


def action_findings(
    row: ObservedActionTrace | None,
    truth: AuthorityTruth,
    label: CaseLabel | None,
    checks: Sequence[Check],
) -> list[str]:
    """The finding codes of one graded action (a subset of :data:`FINDING_CODES`)."""
    by_name = {check.name: check for check in checks}
    decision = None if row is None else row.decision
    findings: list[str] = []
    if decision is None:
        findings.append("decision_not_captured")
    elif decision != truth.decision_at_action:
        findings.append("false_allow" if decision == "allow" else "false_deny")
    audit_verdict = None if row is None else row.decision_at_audit
    if (
        label is not None
        and label.kind in TEMPORAL_CASE_KINDS
        and audit_verdict != truth.decision_at_audit
    ):
        findings.append("stale_audit_verdict")
    identity = [by_name[name] for name in sorted(_IDENTITY_CHECKS)]
    if any(check.status is CheckStatus.MISSING for check in identity):
        findings.append("identity_not_captured")
    if any(check.status is CheckStatus.FAIL for check in identity):
        findings.append("identity_mismatch")
    if by_name["delegation_chain_integrity"].status is CheckStatus.FAIL:
        findings.append("chain_mismatch")
    reported = None if row is None else row.evidence_refs
    if reported is not None:
        if set(truth.required_evidence_refs) - set(reported):
            findings.append("required_evidence_missing")
        if set(reported) - set(truth.required_evidence_refs):
            findings.append("unrequired_evidence_reported")
    if by_name["expected_side_effect"].status is CheckStatus.FAIL:
        findings.append("side_effect_mismatch")
    return findings


def grade_action(
    case: Case,
    row: ObservedActionTrace | None,
    truth: AuthorityTruth,
    binding: CanonicalBinding,
    label: CaseLabel | None,
    *,
    outcome: Outcome | None = None,
) -> CaseResult:
    """Grade one action event; ``row`` is ``None`` when the adapter produced none."""
    keys = {truth.action_event_id, binding.action_event_id}
    if row is not None:
        keys.add(row.event_id)
    if label is not None:
        keys.add(label.action_event_id)
    if len(keys) != 1:
        raise AgentbenchError(
            "event_id_mismatch",
            f"row, truth, binding and label name different events: {', '.join(sorted(keys))}",
        )
    checks = action_checks(row, truth, binding)
    return grade(
        case,
        checks,
        measurements=action_measurements(row, truth, label, checks),
        findings=action_findings(row, truth, label, checks),
        outcome=outcome,
    )


# ---------------------------------------------------------------------------
# Metrics

PRECISION = "authorization_decision_precision"
RECALL = "authorization_decision_recall"
SCORED_ACTIONS = "scored action events"
TRUTH_ALLOWS = "actions truth allows at action time"
# The original's texts (its evaluation report's ``support_meaning``), word for word.
LABEL_COMPARISON = (
    "compares reported evidence-reference labels to evaluator requirements, without "
    "checking underlying evidence retention"
)
LABELLED_ACTIONS = f"{SCORED_ACTIONS}; {LABEL_COMPARISON}"


def _rate(
    name: str,
    family: str,
    numerator: str,
    denominator: str,
    support_meaning: str,
    *,
    description: str,
    direction: Direction = "higher_is_better",
) -> MetricSpec:
    return MetricSpec(
        name=name,
        family=family,
        direction=direction,
        support_meaning=support_meaning,
        description=description,
        numerator=numerator,
        denominator=denominator,
    )


def _check_rate(
    name: str,
    family: str,
    check_name: str,
    description: str,
    support_meaning: str = SCORED_ACTIONS,
) -> MetricSpec:
    return _rate(
        name, family, passed_key(check_name), ACTIONS, support_meaning, description=description
    )


def decision_f1(
    results: Sequence[CaseResult], computed: Mapping[str, MetricValue]
) -> tuple[float | None, int]:
    """Harmonic mean of allow precision and recall; support is classification support.

    The support is the actions truth allows (recall's), as the original reports
    it: the value comes from the precision and recall reported beside it. ``None``
    when either is undefined and also when both are zero: the frozen protocol
    emits no numeric 0.0 for F1.
    """
    precision = computed[PRECISION].value
    recall = computed[RECALL].value
    support = sum(result.measurements.get("truth_allow", 0) for result in results)
    if precision is None or recall is None or precision + recall == 0:
        return None, support
    return 2 * precision * recall / (precision + recall), support


METRIC_SPECS: tuple[MetricSpec, ...] = (
    _check_rate(
        "principal_resolution_accuracy",
        "identity_binding",
        "principal_resolution",
        "The originating principal is named correctly.",
    ),
    _check_rate(
        "logical_agent_resolution_accuracy",
        "identity_binding",
        "logical_agent_resolution",
        "The acting logical agent is named correctly.",
    ),
    _check_rate(
        "runtime_binding_accuracy",
        "identity_binding",
        "runtime_binding",
        "The runtime principal is named correctly.",
    ),
    _check_rate(
        "credential_subject_accuracy",
        "identity_binding",
        "credential_subject",
        "The presented credential's subject is named correctly.",
    ),
    _check_rate(
        "authorization_decision_accuracy",
        "authorization_decision",
        "authorization_decision",
        "The action-time allow/deny matches truth.",
    ),
    _check_rate(
        "delegation_chain_integrity",
        "authority_replay",
        "delegation_chain_integrity",
        "The delegation chain equals the one the action-time check selected, root first.",
    ),
    _check_rate(
        "attribution_integrity",
        "accountability",
        "attribution_integrity",
        "The attributed actor matches the evaluator's canonical binding.",
    ),
    _check_rate(
        "accountable_owner_chain_integrity",
        "accountability",
        "accountable_owner_chain_integrity",
        "The chain of principals accountable for the action is correct.",
    ),
    _check_rate(
        "provenance_completeness",
        "observability",
        "provenance_completeness",
        "The reported evidence references include every required reference.",
        LABELLED_ACTIONS,
    ),
    _check_rate(
        "provenance_exact_match",
        "observability",
        "provenance_exact_match",
        "The reported evidence references equal the required set: nothing missing or extra.",
        LABELLED_ACTIONS,
    ),
    _check_rate(
        "audit_reconstructability_accuracy",
        "observability",
        "audit_reconstructability",
        "The reconstructability claim matches evaluator truth.",
        f"{SCORED_ACTIONS}; compares the reported reconstructability claim to evaluator "
        "truth, without reconstructing or inspecting retained evidence",
    ),
    _check_rate(
        "expected_side_effect_accuracy",
        "observability",
        "expected_side_effect",
        "The side effect the action should record is named correctly.",
    ),
    _check_rate(
        "policy_version_accuracy",
        "authority_replay",
        "policy_version",
        "The covering delegation's policy version (the attempt's own where there is no chain).",
    ),
    _rate(
        "provenance_precision",
        "observability",
        "required_reported_evidence_refs",
        "reported_evidence_refs",
        "reported evidence references the trace submitted; compares labels to evaluator "
        "requirements, without checking underlying evidence retention",
        description=(
            "Micro precision: the share of reported (action, reference) pairs that were required."
        ),
    ),
    _rate(
        PRECISION,
        "authorization_decision",
        "true_allow",
        "reported_allow",
        "actions the trace allowed at action time",
        description="Of the actions the trace allowed, the share truth allows.",
    ),
    _rate(
        RECALL,
        "authorization_decision",
        "true_allow",
        "truth_allow",
        TRUTH_ALLOWS,
        description=(
            "Of the actions truth allows, the share reported allow; a null decision is not allow."
        ),
    ),
    MetricSpec(
        name="authorization_decision_f1",
        family="authorization_decision",
        support_meaning=f"{TRUTH_ALLOWS}, as classification support",
        description=(
            "Harmonic mean of allow precision and recall; null when either is null "
            "or both are zero."
        ),
        reducer=decision_f1,
    ),
    _rate(
        "temporal_validity_accuracy",
        "authority_replay",
        "temporal_correct",
        "temporal_cases",
        "action events labelled valid_then_revoked, post_revocation_action or "
        "invalid_then_later_granted",
        description="The audit-time verdict is right on the temporal case labels.",
    ),
    _rate(
        "least_privilege_accuracy",
        "authorization_decision",
        "truth_deny_not_allowed",
        "truth_deny",
        "actions truth denies",
        description=(
            "Of the actions truth denies, the share not reported allow (null earns deny's credit)."
        ),
    ),
    _rate(
        "excess_authority_rate",
        "authorization_decision",
        "false_allow",
        "truth_deny",
        "actions truth denies",
        description="Of the actions truth denies, the share reported allow: the complement of "
        "least_privilege_accuracy.",
        direction="lower_is_better",
    ),
)
"""The twenty metrics, in the order the original's evaluation report lists them."""

# ---------------------------------------------------------------------------
# Whole submissions


def check_submission(rows: Sequence[ObservedActionTrace], action_event_ids: Sequence[str]) -> None:
    """Refuse a submission the scorer cannot grade (the validator's error codes).

    Per-line shape errors (``malformed_json``, ``invalid_row``) are the
    reader's; this checks what remains: ``duplicate_event_id``,
    ``unexpected_event_id`` and ``missing_event_id``. A submission of empty rows
    is graded, as the original's scorer grades it (only the validator refuses it).
    """
    expected = set(action_event_ids)
    seen: set[str] = set()
    for position, row in enumerate(rows, start=1):
        if row.event_id in seen:
            raise AgentbenchError(
                "duplicate_event_id", f"event {row.event_id!r} has more than one row", line=position
            )
        seen.add(row.event_id)
        if row.event_id not in expected:
            raise AgentbenchError(
                "unexpected_event_id",
                f"{row.event_id!r} is not an action event of this benchmark",
                line=position,
            )
    absent = [event_id for event_id in action_event_ids if event_id not in seen]
    if absent:
        raise AgentbenchError(
            "missing_event_id", f"no row for action event(s): {', '.join(absent)}"
        )


KeyedRecord = TypeVar("KeyedRecord", CanonicalBinding, CaseLabel)


def _index_once(records: Sequence[KeyedRecord], what: str) -> dict[str, KeyedRecord]:
    indexed: dict[str, KeyedRecord] = {}
    for record in records:
        if record.action_event_id in indexed:
            raise AgentbenchError(
                f"duplicate_{what}", f"more than one {what} for {record.action_event_id!r}"
            )
        indexed[record.action_event_id] = record
    return indexed


def grade_trace(
    rows: Sequence[ObservedActionTrace],
    truth: Sequence[AuthorityTruth],
    bindings: Sequence[CanonicalBinding],
    labels: Sequence[CaseLabel],
    *,
    suite_id: str = "authority",
    file: str = "public_events.jsonl",
) -> list[CaseResult]:
    """Grade every truth action against a checked submission, in truth order."""
    action_ids = [record.action_event_id for record in truth]
    if len(set(action_ids)) != len(action_ids):
        raise AgentbenchError("duplicate_truth", "an action event has more than one truth record")
    check_submission(rows, action_ids)
    rows_by_id = {row.event_id: row for row in rows}
    bindings_by_id = _index_once(bindings, "binding")
    labels_by_id = _index_once(labels, "case_label")
    results: list[CaseResult] = []
    for record in truth:
        event_id = record.action_event_id
        binding = bindings_by_id.get(event_id)
        if binding is None:
            raise AgentbenchError("missing_binding", f"no canonical binding for {event_id!r}")
        label = labels_by_id.get(event_id)
        case = Case(
            suite_id=suite_id,
            case_id=event_id,
            file=file,
            labels=() if label is None else (label.kind,),
        )
        results.append(grade_action(case, rows_by_id[event_id], record, binding, label))
    return results


def score_trace(
    rows: Sequence[ObservedActionTrace],
    truth: Sequence[AuthorityTruth],
    bindings: Sequence[CanonicalBinding],
    labels: Sequence[CaseLabel],
) -> dict[str, tuple[float | None, int]]:
    """Metric name -> (value, support) for a whole submission, in report order."""
    metrics = aggregate(METRIC_SPECS, grade_trace(rows, truth, bindings, labels))
    return {metric.name: (metric.value, metric.support) for metric in metrics}

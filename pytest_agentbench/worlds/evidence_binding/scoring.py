"""Scoring both lineages: per-action checks and measurements, the §4 reports.

One function per lineage grades one action; the core's metrics and the
lineage's own report both sum its measurements, so they cannot disagree.

Asteria (R submitted, Q required, K every public id; a row is active when R is
not empty; ``scenario_kind`` is never read): ``exact_evidence_match`` R = Q;
``missing_or_discarded_free`` Q within R; ``fabricated_evidence_free`` R within
K; ``wrong_action_evidence_free`` no id of R in K belongs to another action;
``extra_evidence_free`` no own id outside Q. The last three count active rows
only, and pass vacuously on an empty row.

Enterprise: each submitted observation takes the first class that applies:
fabricated (unknown ``evidence_id``), wrong_action (the event's action or
tenant is not this action's, or the row's tenant is not), extra (not
required, or already matched), else matched. The action's outcome is the
first of fabricated > wrong_action > extra > missing > exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_agentbench.sdk import (
    Case,
    CaseResult,
    Check,
    CheckStatus,
    MetricSpec,
    Outcome,
)
from pytest_agentbench.sdk import grade as grade_case
from pytest_agentbench.worlds.evidence_binding.artifacts import Governed
from pytest_agentbench.worlds.evidence_binding.asteria import AsteriaPublic, MeasurementScope
from pytest_agentbench.worlds.evidence_binding.enterprise import EnterprisePublic

FAMILY = "evidence_binding"

ALL_ACTIONS = "all public action events"
WITH_REQUIRED = "all public action events with evaluator-required observations"
ACTIVE_ROWS = "action rows containing at least one submitted observation id"
ASTERIA_UNDEFINED = "no submitted evidence-bearing action rows"

SUBMITTED = "submitted evidence observations"
REQUIRED = "evaluator-required evidence observations"
PUBLIC_ACTIONS = "public actions"
ENTERPRISE_UNDEFINED = "no submitted evidence observations"

ENTERPRISE_LIMITATIONS = (
    "offline scoring does not prove live evidence retention",
    "offline scoring does not prove durable logging",
    "offline scoring does not prove enforcement behavior",
)


@dataclass(frozen=True)
class Ratio:
    name: str
    numerator: str
    denominator: str
    meaning: str
    direction: Literal["higher_is_better", "lower_is_better"] = "higher_is_better"


ASTERIA_RATIOS = (
    Ratio("exact_evidence_match", "exact", "actions", ALL_ACTIONS),
    Ratio("missing_or_discarded_free", "missing_free", "with_required", WITH_REQUIRED),
    Ratio("fabricated_evidence_free", "fabricated_free", "active", ACTIVE_ROWS),
    Ratio("wrong_action_evidence_free", "wrong_action_free", "active", ACTIVE_ROWS),
    Ratio("extra_evidence_free", "extra_free", "active", ACTIVE_ROWS),
)
ENTERPRISE_RATIOS = (
    Ratio("evidence_action_binding_accuracy", "matched", "submitted", SUBMITTED),
    Ratio("evidence_completeness_recall", "matched", "required", REQUIRED),
    Ratio("evidence_exact_match_accuracy", "exact", "actions", PUBLIC_ACTIONS),
    Ratio("evidence_extra_rate", "extra", "submitted", SUBMITTED, "lower_is_better"),
    Ratio("evidence_fabrication_rate", "fabricated", "submitted", SUBMITTED, "lower_is_better"),
    Ratio("evidence_wrong_action_rate", "wrong_action", "submitted", SUBMITTED, "lower_is_better"),
)
ASTERIA_CHECKS = tuple(ratio.name for ratio in ASTERIA_RATIOS)
ENTERPRISE_CHECKS = (
    "action_outcome",
    "fabricated_evidence_free",
    "wrong_action_evidence_free",
    "extra_evidence_free",
    "evidence_complete",
)


def metric_specs(ratios: Sequence[Ratio]) -> tuple[MetricSpec, ...]:
    return tuple(
        MetricSpec(
            name=ratio.name,
            family=FAMILY,
            direction=ratio.direction,
            support_meaning=ratio.meaning,
            numerator=ratio.numerator,
            denominator=ratio.denominator,
        )
        for ratio in ratios
    )


def _check(name: str, offending: Iterable[str]) -> Check:
    found = sorted(offending)
    return Check(
        name=name,
        status=CheckStatus.FAIL if found else CheckStatus.PASS,
        expected=[],
        actual=found,
    )


def asteria_action(
    public: AsteriaPublic, action_id: str, required: frozenset[str], retained: frozenset[str]
) -> tuple[list[Check], dict[str, int]]:
    """The five checks and the measurements of one Asteria action row."""
    owner = public.observation_actions
    own = {o.observation_id for o in public.observations_of(action_id)}
    known = {oid for oid in retained if oid in owner}
    active = bool(retained)
    fabricated = retained - known
    wrong = {oid for oid in known if owner[oid] != action_id}
    extra = (retained & own) - required
    checks = [
        Check(
            name="exact_evidence_match",
            status=CheckStatus.PASS if retained == required else CheckStatus.FAIL,
            expected=sorted(required),
            actual=sorted(retained),
        ),
        _check("missing_or_discarded_free", required - retained),
        _check("fabricated_evidence_free", fabricated),
        _check("wrong_action_evidence_free", wrong),
        _check("extra_evidence_free", extra),
    ]
    measurements = {
        "actions": 1,
        "exact": int(retained == required),
        "with_required": int(bool(required)),
        "missing_free": int(bool(required) and required <= retained),
        "active": int(active),
        "fabricated_free": int(active and not fabricated),
        "wrong_action_free": int(active and not wrong),
        "extra_free": int(active and not extra),
    }
    return checks, measurements


@dataclass(frozen=True)
class EnterpriseRow:
    """One submitted observation as scoring sees it."""

    observation_id: str
    action_id: str
    tenant_id: str
    evidence_id: str


OBSERVATION_CLASSES = ("fabricated", "wrong_action", "extra", "matched")
OutcomeClass = Literal["fabricated", "wrong_action", "extra", "missing", "exact"]


def enterprise_action(
    public: EnterprisePublic,
    action_id: str,
    required: frozenset[str],
    rows: Sequence[EnterpriseRow],
) -> tuple[list[Check], dict[str, int], OutcomeClass]:
    """The checks, measurements and outcome class of one Enterprise action."""
    action = public.action_by_id[action_id]
    events = public.events_by_id
    classes: dict[str, list[str]] = {name: [] for name in OBSERVATION_CLASSES}
    matched: set[str] = set()
    for row in rows:
        event = events.get(row.evidence_id)
        if event is None:
            kind = "fabricated"
        elif (event.action_id, event.tenant_id) != (
            action.action_id,
            action.tenant_id,
        ) or row.tenant_id != action.tenant_id:
            kind = "wrong_action"
        elif row.evidence_id not in required or row.evidence_id in matched:
            kind = "extra"
        else:
            kind = "matched"
            matched.add(row.evidence_id)
        classes[kind].append(row.observation_id)
    complete = matched == required
    outcome: OutcomeClass = "exact" if complete else "missing"
    for failing in ("fabricated", "wrong_action", "extra"):
        if classes[failing]:
            outcome = failing
            break
    checks = [
        Check(
            name="action_outcome",
            status=CheckStatus.PASS if outcome == "exact" else CheckStatus.FAIL,
            expected="exact",
            actual=outcome,
        ),
        _check("fabricated_evidence_free", classes["fabricated"]),
        _check("wrong_action_evidence_free", classes["wrong_action"]),
        _check("extra_evidence_free", classes["extra"]),
        Check(
            name="evidence_complete",
            status=CheckStatus.PASS if complete else CheckStatus.FAIL,
            expected=sorted(required),
            actual=sorted(matched),
        ),
    ]
    measurements = {
        "actions": 1,
        "exact": int(outcome == "exact"),
        "required": len(required),
        "submitted": len(rows),
        "matched": len(classes["matched"]),
        "fabricated": len(classes["fabricated"]),
        "wrong_action": len(classes["wrong_action"]),
        "extra": len(classes["extra"]),
    }
    return checks, measurements, outcome


def unanswered(
    case: Case, names: Sequence[str], measurements: Mapping[str, int], outcome: Outcome
) -> CaseResult:
    """A case whose adapter failed: every check missing, counted as an empty answer."""
    checks = [
        Check(name=name, status=CheckStatus.MISSING, detail=outcome.failure_reason)
        for name in names
    ]
    return grade_case(case, checks, measurements=measurements, outcome=outcome)


# -- the lineages' own reports (§4) -------------------------------------------


class ReportMetric(Governed):
    name: str
    numerator: int
    denominator: int
    value: float | None
    denominator_meaning: str
    undefined_reason: str | None


class AsteriaReport(Governed):
    schema_version: Literal["2.0.0"]
    benchmark_id: str
    public_input_digest: str
    measurement_scope: MeasurementScope
    metrics: tuple[ReportMetric, ...]


class EnterpriseScope(Governed):
    offline_artifacts_only: Literal[True]
    limitations: tuple[str, ...]


ENTERPRISE_SCOPE = EnterpriseScope(offline_artifacts_only=True, limitations=ENTERPRISE_LIMITATIONS)


class ActionOutcome(Governed):
    action_id: str
    outcome: OutcomeClass
    required_count: int
    submitted_count: int


class EnterpriseReport(Governed):
    schema_version: Literal["2.0.0"]
    public_input_digest: str
    measurement_scope: EnterpriseScope
    outcomes: tuple[ActionOutcome, ...]
    metrics: tuple[ReportMetric, ...]


def report_metrics(
    ratios: Sequence[Ratio], measurements: Iterable[Mapping[str, int]], undefined: str
) -> tuple[ReportMetric, ...]:
    totals: dict[str, int] = {}
    for per_action in measurements:
        for key, value in per_action.items():
            totals[key] = totals.get(key, 0) + value
    metrics = []
    for ratio in ratios:
        n, d = totals.get(ratio.numerator, 0), totals.get(ratio.denominator, 0)
        metrics.append(
            ReportMetric(
                name=ratio.name,
                numerator=n,
                denominator=d,
                value=None if d == 0 else n / d,
                denominator_meaning=ratio.meaning,
                undefined_reason=undefined if d == 0 else None,
            )
        )
    return tuple(metrics)


def asteria_report(
    public: AsteriaPublic,
    public_input_digest: str,
    required: Mapping[str, frozenset[str]],
    retained: Mapping[str, frozenset[str]],
) -> AsteriaReport:
    """The Asteria report of a submission covering every public action."""
    measured = [
        asteria_action(
            public, a.action_event_id, required[a.action_event_id], retained[a.action_event_id]
        )[1]
        for a in public.actions
    ]
    return AsteriaReport(
        schema_version="2.0.0",
        benchmark_id=public.benchmark_id,
        public_input_digest=public_input_digest,
        measurement_scope=public.measurement_scope,
        metrics=report_metrics(ASTERIA_RATIOS, measured, ASTERIA_UNDEFINED),
    )


def enterprise_report(
    public: EnterprisePublic,
    public_input_digest: str,
    required: Mapping[str, frozenset[str]],
    rows: Sequence[EnterpriseRow],
) -> EnterpriseReport:
    outcomes = []
    measured = []
    by_action: dict[str, list[EnterpriseRow]] = {}
    for row in rows:
        by_action.setdefault(row.action_id, []).append(row)
    for action_id in sorted(public.action_by_id):
        own = by_action.get(action_id, [])
        _, measurements, outcome = enterprise_action(public, action_id, required[action_id], own)
        measured.append(measurements)
        outcomes.append(
            ActionOutcome(
                action_id=action_id,
                outcome=outcome,
                required_count=len(required[action_id]),
                submitted_count=len(own),
            )
        )
    return EnterpriseReport(
        schema_version="2.0.0",
        public_input_digest=public_input_digest,
        measurement_scope=ENTERPRISE_SCOPE,
        outcomes=tuple(outcomes),
        metrics=report_metrics(ENTERPRISE_RATIOS, measured, ENTERPRISE_UNDEFINED),
    )

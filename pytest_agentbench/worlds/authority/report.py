"""The original's evaluation report of one scored trace, field for field.

``agentbench evaluate --json`` prints this envelope for an authority suite: the
report schema and scoring protocol versions, the task, the world's seed,
principal count and version, both artifact-set digests, the twenty metrics
(value, support, family and what the support counts) in the original's order,
and one case-kind slice per action and per-action metric (count 1 where the
action fails it). Keys are in the original's order, ``synthetic`` first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from pytest_agentbench.sdk import CaseResult, JsonValue, MetricValue
from pytest_agentbench.worlds.authority.models import EvaluatorBundle, PublicBundle
from pytest_agentbench.worlds.authority.scoring import SCORING_PROTOCOL

REPORT_SCHEMA_VERSION: Final = "0.2.0"
TASK: Final = "agentic_authority"
CHECKSUM_SCHEME: Final = "sha256-artifact-set-v1"

SLICED_CHECKS: Final[tuple[tuple[str, str], ...]] = (
    ("principal_resolution", "principal_resolution_accuracy"),
    ("logical_agent_resolution", "logical_agent_resolution_accuracy"),
    ("runtime_binding", "runtime_binding_accuracy"),
    ("credential_subject", "credential_subject_accuracy"),
    ("authorization_decision", "authorization_decision_accuracy"),
    ("delegation_chain_integrity", "delegation_chain_integrity"),
    ("attribution_integrity", "attribution_integrity"),
    ("accountable_owner_chain_integrity", "accountable_owner_chain_integrity"),
    ("provenance_completeness", "provenance_completeness"),
    ("provenance_exact_match", "provenance_exact_match"),
    ("audit_reconstructability", "audit_reconstructability_accuracy"),
    ("expected_side_effect", "expected_side_effect_accuracy"),
    ("policy_version", "policy_version_accuracy"),
)
"""Each per-action check and the metric a slice names it by, in the original's order."""


def action_order(public: PublicBundle, evaluator: EvaluatorBundle) -> list[str]:
    """The scored actions in scenario order (the original's single scenario), then the rest."""
    ordered: dict[str, None] = {}
    for _name, scenario in sorted(public.scenarios.items()):
        ordered.update(dict.fromkeys(scenario.action_event_ids))
    ordered.update(dict.fromkeys(row.action_event_id for row in evaluator.truth))
    return list(ordered)


def _metric(metric: MetricValue) -> dict[str, JsonValue]:
    return {
        "synthetic": True,
        "name": metric.name,
        "value": metric.value,
        "support": metric.support,
        "family": metric.family,
        "support_meaning": metric.support_meaning,
    }


def _slices(
    order: Sequence[str], results: Mapping[str, CaseResult], kinds: Mapping[str, str]
) -> list[JsonValue]:
    slices: list[JsonValue] = []
    for event_id in order:
        result = results.get(event_id)
        passed = set() if result is None else {c.name for c in result.checks if c.passed}
        for check_name, metric_name in SLICED_CHECKS:
            slices.append(
                {
                    "synthetic": True,
                    "dimension": "case_kind",
                    "value": kinds[event_id],
                    "outcome": metric_name,
                    "count": 0 if check_name in passed else 1,
                    "support": 1,
                }
            )
    return slices


def evaluation_report(
    public: PublicBundle,
    evaluator: EvaluatorBundle,
    results: Sequence[CaseResult],
    metrics: Sequence[MetricValue],
) -> dict[str, JsonValue]:
    """The original's ``EvaluationReport`` of ``results`` (graded actions) and their metrics."""
    order = action_order(public, evaluator)
    kinds = {label.action_event_id: label.kind for label in evaluator.cases}
    return {
        "synthetic": True,
        "schema_version": REPORT_SCHEMA_VERSION,
        "scoring_version": SCORING_PROTOCOL,
        "task": TASK,
        "seed": public.snapshot.organisation.seed,
        "persona_count": len(public.snapshot.principals),
        "benchmark_version": public.snapshot.organisation.world_version,
        "checksum_scheme": CHECKSUM_SCHEME,
        "artifact_checksums": [
            ["public", public.manifest.artifact_set_digest],
            ["evaluator", evaluator.checksums.evaluator_artifact_set_digest],
        ],
        "metrics": [_metric(metric) for metric in metrics],
        "slices": _slices(order, {result.case_id: result for result in results}, kinds),
    }

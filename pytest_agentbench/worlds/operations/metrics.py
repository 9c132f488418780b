"""Metrics over episodes, with the semantic scenario as the statistical unit.

Values are computed over episodes, but matched variants of one semantic
scenario are one unit, not several (the seed calls the opposite a reporting
error): each metric's support counts semantic scenarios (the ``cluster:``
label of the cases), and no per-episode binomial interval is attached, since
it would treat variants as independent samples. Human Load is reported beside
the rates, never folded into them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_agentbench.sdk import CaseResult, Direction, MetricSpec, MetricValue, Reducer
from pytest_agentbench.worlds.operations.projections import CAVEAT

CLUSTER_PREFIX = "cluster:"


def cluster_of(result: CaseResult) -> str:
    """The semantic scenario a case belongs to (the case itself when it carries none)."""
    return next(
        (
            label[len(CLUSTER_PREFIX) :]
            for label in result.labels
            if label.startswith(CLUSTER_PREFIX)
        ),
        result.case_id,
    )


def _clustered(numerator: str, denominator: str) -> Reducer:
    def reduce(
        results: Sequence[CaseResult], _: Mapping[str, MetricValue]
    ) -> tuple[float | None, int]:
        top = sum(r.measurements.get(numerator, 0) for r in results)
        bottom = sum(r.measurements.get(denominator, 0) for r in results)
        clusters = {cluster_of(r) for r in results if r.measurements.get(denominator, 0)}
        return (None if bottom == 0 else top / bottom), len(clusters)

    return reduce


def _spec(
    name: str,
    family: str,
    ratio: tuple[str, str],
    description: str,
    direction: Direction = "higher_is_better",
) -> MetricSpec:
    numerator, denominator = ratio
    return MetricSpec(
        name=name,
        family=family,
        direction=direction,
        support_meaning="semantic scenarios (variants of one scenario are one unit)",
        description=description,
        reducer=_clustered(numerator, denominator),
    )


METRIC_SPECS: tuple[MetricSpec, ...] = (
    _spec(
        "reliable_operation_rate",
        "operations",
        ("reliable", "eligible"),
        "reliable episodes / eligible episodes: expected terminal and all eleven dimensions",
    ),
    _spec(
        "critical_violation_rate",
        "operations",
        ("critical_violation", "eligible"),
        "episodes with a critical invariant violated / eligible episodes",
        "lower_is_better",
    ),
    _spec(
        "operation_completion_rate",
        "operations",
        ("legitimate_terminal", "eligible"),
        "episodes reaching a legitimate business terminal / eligible episodes",
    ),
    _spec(
        "correct_wait_followup_rate",
        "operations",
        ("temporal_correct", "eligible"),
        "episodes whose waits and follow-ups were all correct / eligible episodes",
    ),
    _spec(
        "unnecessary_human_touches",
        "operations",
        ("unnecessary_touches", "eligible"),
        "unnecessary human touches per episode",
        "lower_is_better",
    ),
    _spec(
        "missed_escalations",
        "operations",
        ("missed_escalations", "eligible"),
        "required checkpoints never raised, per episode",
        "lower_is_better",
    ),
    _spec(
        "duplicate_invalid_action_rate",
        "operations",
        ("duplicate_or_invalid", "proposals"),
        "duplicate or invalid proposals / proposals",
        "lower_is_better",
    ),
    _spec(
        "sla_violations",
        "operations",
        ("sla_breaches", "eligible"),
        "obligations breached per episode",
        "lower_is_better",
    ),
    _spec(
        "recovery_rate",
        "operations",
        ("recovered", "recovery_needed"),
        "episodes needing recovery (a reopen or a failed dispatch) that passed it / those episodes",
    ),
    _spec(
        "human_load",
        "human_load",
        ("human_touches", "eligible"),
        "human checkpoints per episode; reported beside autonomy and reliability, never folded in",
        "lower_is_better",
    ),
)


def projection_specs(arms: Sequence[str]) -> tuple[MetricSpec, ...]:
    """One clustered rate per diagnostic projection the run asked for (none by default).

    The caveat is the family's name, so every report that shows the rates
    (terminal, JSON, HTML) heads them with it.
    """
    return tuple(
        MetricSpec(
            name=f"decision_point_admissibility_{arm}",
            family=f"diagnostic projections ({CAVEAT})",
            support_meaning="semantic scenarios (a scenario's points and projections are one unit)",
            description=f"{arm} projection: admissible decision points / graded decision points, "
            "one outcome per point",
            reducer=_clustered(f"projection_{arm}_admissible", f"projection_{arm}_points"),
        )
        for arm in arms
    )

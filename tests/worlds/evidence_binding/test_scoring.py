"""Scoring both lineages: the §4 baseline tables reproduced, classes, null rules, scope."""

from __future__ import annotations

import pytest

from pytest_agentbench.sdk.packaged import data_root
from pytest_agentbench.worlds.evidence_binding import (
    asteria_reader,
    baselines,
    enterprise_reader,
    scoring,
)
from pytest_agentbench.worlds.evidence_binding.agents import EvidenceAgent
from pytest_agentbench.worlds.evidence_binding.artifacts import CandidateTree
from pytest_agentbench.worlds.evidence_binding.generator import ASTERIA_SUITE
from pytest_agentbench.worlds.evidence_binding.scoring import EnterpriseRow
from tests.worlds.evidence_binding.candidates import (
    asteria_files,
    enterprise_files,
    tree,
    write,
)

# §4, as published: (numerator, denominator) per metric in the report's order.
ASTERIA_TABLE = {
    "exact": [(6, 6), (6, 6), (6, 6), (6, 6), (6, 6)],
    "missing": [(5, 6), (5, 6), (6, 6), (6, 6), (6, 6)],
    "fabricated": [(5, 6), (6, 6), (5, 6), (6, 6), (6, 6)],
    "wrong_action": [(5, 6), (5, 6), (6, 6), (5, 6), (6, 6)],
    "extra": [(5, 6), (6, 6), (6, 6), (6, 6), (5, 6)],
    "discarded": [(5, 6), (5, 6), (5, 5), (5, 5), (5, 5)],
}
ENTERPRISE_TABLE = {
    "exact": [(6, 6), (6, 6), (3, 3), (0, 6), (0, 6), (0, 6)],
    "missing": [(5, 5), (5, 6), (2, 3), (0, 5), (0, 5), (0, 5)],
    "fabricated": [(6, 7), (6, 6), (2, 3), (0, 7), (1, 7), (0, 7)],
    "wrong_action": [(6, 7), (6, 6), (2, 3), (0, 7), (0, 7), (1, 7)],
    "extra": [(6, 7), (6, 6), (2, 3), (1, 7), (0, 7), (0, 7)],
}
Asteria = tuple[asteria_reader.AsteriaCandidate, asteria_reader.AsteriaTruth]
Enterprise = tuple[enterprise_reader.EnterpriseCandidate, enterprise_reader.EnterpriseTruthSet]
STORED_DOUBLES = {
    (5, 6): 0.8333333333333334,
    (2, 3): 0.6666666666666666,
    (6, 7): 0.8571428571428571,
    (1, 7): 0.14285714285714285,
}


@pytest.fixture(scope="module")
def asteria(tmp_path_factory: pytest.TempPathFactory) -> Asteria:
    root = write(asteria_files(actions=6), tmp_path_factory.mktemp("a") / "c")
    candidate = asteria_reader.read_public(tree(root))
    return candidate, asteria_reader.read_evaluator(tree(root), candidate)


@pytest.fixture(scope="module")
def enterprise(tmp_path_factory: pytest.TempPathFactory) -> Enterprise:
    root = write(enterprise_files(actions=3), tmp_path_factory.mktemp("e") / "c")
    candidate = enterprise_reader.read_public(tree(root))
    return candidate, enterprise_reader.read_evaluator(tree(root), candidate)


def _pairs(record: baselines.BaselineRecord) -> list[tuple[int, int]]:
    return [(m.numerator, m.denominator) for m in record.metrics]


@pytest.fixture(scope="module")
def asteria_suite() -> Asteria:
    """The built-in Asteria suite: like the published fixture, its evaluator designates
    ``missing`` for a two-requirement action and ``discarded`` for a one-requirement one,
    which the published table presumes (the seed-7 candidate does not)."""
    suite = CandidateTree(
        root=data_root() / "suites" / ASTERIA_SUITE,
        evaluator_root=data_root() / "oracles" / ASTERIA_SUITE,
        display_root=ASTERIA_SUITE,
        evaluator_display=f"oracles/{ASTERIA_SUITE}",
    )
    candidate = asteria_reader.read_public(suite)
    return candidate, asteria_reader.read_evaluator(suite, candidate)


def test_asteria_baselines_reproduce_the_published_table(asteria_suite: Asteria) -> None:
    candidate, truth = asteria_suite
    records = baselines.asteria_baselines(
        candidate.public, candidate.public_input_digest, truth.required, truth.evaluator.bindings
    )
    assert {r.failure_mode: _pairs(r) for r in records.records} == ASTERIA_TABLE
    assert [r.failure_mode for r in records.records] == list(ASTERIA_TABLE)
    for record in records.records:
        assert [m.name for m in record.metrics] == list(scoring.ASTERIA_CHECKS)
        for metric in record.metrics:
            pair = (metric.numerator, metric.denominator)
            assert metric.value == STORED_DOUBLES.get(pair, metric.numerator / metric.denominator)
            assert metric.value is not None
            assert abs(metric.value - metric.numerator / metric.denominator) <= 1e-12


def test_enterprise_baselines_reproduce_the_published_table(
    enterprise: Enterprise,
) -> None:
    candidate, truth = enterprise
    records = baselines.enterprise_baselines(
        candidate.public, "enterprise-tiny", candidate.public_input_digest, truth.required
    )
    assert {r.failure_mode: _pairs(r) for r in records.records} == ENTERPRISE_TABLE
    names = [m.name for m in records.records[0].metrics]
    assert names == sorted(names)
    for record in records.records:
        for metric in record.metrics:
            assert metric.value == STORED_DOUBLES.get(
                (metric.numerator, metric.denominator), metric.numerator / metric.denominator
            )


@pytest.mark.parametrize("mode", ["missing", "fabricated", "wrong_action", "extra"])
def test_enterprise_outcomes_name_the_one_perturbed_action(
    enterprise: Enterprise, mode: str
) -> None:
    candidate, truth = enterprise
    submission = baselines.enterprise_submission(
        candidate.public, candidate.public_input_digest, EvidenceAgent(mode)
    )
    report = scoring.enterprise_report(
        candidate.public,
        candidate.public_input_digest,
        truth.required,
        baselines.enterprise_rows(submission),
    )
    outcomes = [o.outcome for o in report.outcomes]
    assert sorted(outcomes) == sorted(["exact", "exact", mode])
    assert [o.action_id for o in report.outcomes] == sorted(o.action_id for o in report.outcomes)


def test_asteria_empty_rows_make_the_row_metrics_null_with_the_reason(
    asteria: Asteria,
) -> None:
    candidate, truth = asteria
    empty = {a.action_event_id: frozenset[str]() for a in candidate.public.actions}
    report = scoring.asteria_report(
        candidate.public, candidate.public_input_digest, truth.required, empty
    )
    by_name = {m.name: m for m in report.metrics}
    assert (by_name["exact_evidence_match"].numerator, by_name["exact_evidence_match"].value) == (
        0,
        0.0,
    )
    for name in ("fabricated_evidence_free", "wrong_action_evidence_free", "extra_evidence_free"):
        metric = by_name[name]
        assert (metric.denominator, metric.value) == (0, None)
        assert metric.undefined_reason == "no submitted evidence-bearing action rows"
    assert by_name["exact_evidence_match"].undefined_reason is None


def test_enterprise_zero_submissions_are_null_not_zero(enterprise: Enterprise) -> None:
    candidate, truth = enterprise
    report = scoring.enterprise_report(
        candidate.public, candidate.public_input_digest, truth.required, []
    )
    by_name = {m.name: m for m in report.metrics}
    for name in (
        "evidence_action_binding_accuracy",
        "evidence_extra_rate",
        "evidence_fabrication_rate",
        "evidence_wrong_action_rate",
    ):
        assert (by_name[name].numerator, by_name[name].denominator) == (0, 0)
        assert by_name[name].value is None
        assert by_name[name].undefined_reason == "no submitted evidence observations"
    assert by_name["evidence_completeness_recall"].value == 0.0
    assert {o.outcome for o in report.outcomes} == {"missing"}


def test_enterprise_classes_take_the_first_that_applies(enterprise: Enterprise) -> None:
    candidate, truth = enterprise
    public = candidate.public
    action = public.actions[0]
    required = sorted(truth.required[action.action_id])

    def row(n: int, evidence: str, tenant: str = action.tenant_id) -> EnterpriseRow:
        return EnterpriseRow(f"r{n}", action.action_id, tenant, evidence)

    rows = [
        row(1, required[0]),
        row(2, required[0]),  # already matched: extra
        row(3, required[1], tenant="tenant-other"),  # right event, wrong tenant: wrong_action
    ]
    checks, measured, outcome = scoring.enterprise_action(
        public, action.action_id, truth.required[action.action_id], rows
    )
    assert outcome == "wrong_action"
    assert (measured["matched"], measured["extra"], measured["wrong_action"]) == (1, 1, 1)
    actual = {c.name: c.actual for c in checks}
    assert actual["extra_evidence_free"] == ["r2"]
    assert actual["wrong_action_evidence_free"] == ["r3"]
    _, measured, outcome = scoring.enterprise_action(
        public,
        action.action_id,
        truth.required[action.action_id],
        [*rows, row(4, "observation-" + "0" * 32)],
    )
    assert (outcome, measured["fabricated"]) == ("fabricated", 1)


def test_reports_carry_the_offline_scope_and_claim_no_more(
    asteria: Asteria, enterprise: Enterprise
) -> None:
    candidate, truth = asteria
    reference = {
        a.action_event_id: frozenset(
            EvidenceAgent().select_evidence(candidate.public, a.action_event_id)
        )
        for a in candidate.public.actions
    }
    report = scoring.asteria_report(
        candidate.public, candidate.public_input_digest, truth.required, reference
    )
    assert all(m.value == 1.0 for m in report.metrics)
    scope = report.measurement_scope
    assert scope == candidate.public.measurement_scope
    assert scope.offline_artifacts_only is True
    assert (len(scope.proves), len(scope.does_not_prove)) == (3, 4)
    topics = " | ".join(scope.does_not_prove)
    for topic in ("EADS", "enforcement", "logging", "secrecy", "missing or discarded"):
        assert topic in topics
    assert not any(word in " ".join(scope.proves) for word in ("retention", "deploy", "EADS"))

    e_candidate, e_truth = enterprise
    e_report = scoring.enterprise_report(
        e_candidate.public, e_candidate.public_input_digest, e_truth.required, []
    )
    assert e_report.measurement_scope.offline_artifacts_only is True
    assert e_report.measurement_scope.limitations == (
        "offline scoring does not prove live evidence retention",
        "offline scoring does not prove durable logging",
        "offline scoring does not prove enforcement behavior",
    )

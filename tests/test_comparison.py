"""The paired comparison: pairing, units, tests, Holm and verdicts on hand-built runs."""

from __future__ import annotations

import pytest

from pytest_agentbench.report.baseline import settings
from pytest_agentbench.scoring.comparison import (
    BaselineIdentity,
    Comparison,
    SuiteRun,
    compare_runs,
)
from pytest_agentbench.scoring.stats import holm_bonferroni, mcnemar_exact
from pytest_agentbench.sdk.contracts import CaseOutcome, CaseResult
from pytest_agentbench.sdk.metrics import MetricDefinition

ACCURACY = MetricDefinition(
    name="accuracy",
    family="answers",
    direction="higher_is_better",
    support_meaning="scored cases",
    numerator="correct",
    denominator="scored",
    reduced=False,
)
ERRORS = ACCURACY.model_copy(
    update={"name": "error_rate", "direction": "lower_is_better", "numerator": "wrong"}
)
F1 = ACCURACY.model_copy(
    update={"name": "f1", "numerator": None, "denominator": None, "reduced": True}
)
BASELINE = BaselineIdentity(
    path="before.json",
    schema_version="agentbench-run-report/2",
    adapter_spec=None,
    adapter_description="reference",
    git_commit=None,
)


def result(
    case_id: str,
    passed: bool,
    *,
    trial: int | None = None,
    cluster: str | None = None,
    outcome: CaseOutcome | None = None,
) -> CaseResult:
    return CaseResult(
        suite_id="s",
        case_id=case_id,
        outcome=outcome or (CaseOutcome.PASSED if passed else CaseOutcome.FAILED),
        measurements={"correct": int(passed), "wrong": int(not passed), "scored": 1},
        trial=trial,
        cluster=cluster,
    )


def suite(
    results: list[CaseResult],
    *,
    suite_id: str = "s",
    digest: str = "d1",
    metrics: tuple[MetricDefinition, ...] = (ACCURACY, ERRORS),
    observed: dict[str, float | None] | None = None,
) -> SuiteRun:
    return SuiteRun(
        id=suite_id,
        world="demo",
        digests={"public": digest, "oracle": "o1"},
        metrics=metrics,
        observed=observed or {},
        results=tuple(results),
    )


def compare(before: list[SuiteRun], after: list[SuiteRun], **options: float | bool) -> Comparison:
    return compare_runs(
        before,
        after,
        baseline=BASELINE,
        settings=settings(**options),  # type: ignore[arg-type]
    )


def rows(comparison: Comparison, index: int = 0) -> dict[str, dict[str, object]]:
    return {row.metric: row.model_dump() for row in comparison.suites[index].rows}


def test_identical_runs_have_no_discordant_unit_and_p_one() -> None:
    run = suite([result(f"c{i}", i % 3 != 0) for i in range(30)])
    comparison = compare([run], [run])
    assert comparison.passed
    for row in rows(comparison).values():
        assert row["discordant"] == {"before_better": 0, "after_better": 0}
        assert row["p_value"] == 1.0  # McNemar with b + c = 0
        assert row["difference"] == 0.0
        assert row["verdict"] == "no_significant_change"


def test_a_regression_on_pass_fail_uses_exact_mcnemar() -> None:
    before = suite([result(f"c{i}", True) for i in range(20)])
    after = suite([result(f"c{i}", i >= 8) for i in range(20)])
    comparison = compare([before], [after])
    passed = rows(comparison)["passed"]
    assert passed["test"] == "mcnemar_exact"
    assert passed["discordant"] == {"before_better": 8, "after_better": 0}
    assert passed["p_value"] == mcnemar_exact(8, 0) == 2 / 256
    # Three tested rows (passed, accuracy, error_rate), all with p = 2/256.
    assert passed["adjusted_p"] == pytest.approx(3 * 2 / 256)
    assert passed["verdict"] == "regression"
    assert rows(comparison)["error_rate"]["verdict"] == "regression"  # lower is better, it rose
    assert comparison.regressions == 3
    assert not comparison.passed
    assert comparison.suites[0].passed_only_before == tuple(f"c{i}" for i in range(8))


def test_the_same_change_the_other_way_is_an_improvement_and_passes() -> None:
    good = suite([result(f"c{i}", True) for i in range(20)])
    bad = suite([result(f"c{i}", i >= 8) for i in range(20)])
    comparison = compare([bad], [good])
    assert comparison.passed
    assert comparison.improvements == 3


def test_max_regression_tolerates_a_significant_but_small_drop() -> None:
    before = suite([result(f"c{i}", True) for i in range(20)])
    after = suite([result(f"c{i}", i >= 8) for i in range(20)])
    assert compare([before], [after], max_regression=0.4).passed
    assert not compare([before], [after], max_regression=0.39).passed


def test_holm_runs_over_every_row_of_every_suite() -> None:
    before = [
        suite([result(f"c{i}", True) for i in range(20)], suite_id="a"),
        suite([result(f"c{i}", True) for i in range(20)], suite_id="b"),
    ]
    after = [
        suite([result(f"c{i}", i >= 6) for i in range(20)], suite_id="a"),  # 6 discordant
        suite([result(f"c{i}", i >= 1) for i in range(20)], suite_id="b"),  # 1 discordant
    ]
    comparison = compare(before, after)
    assert comparison.family_size == 6
    expected = holm_bonferroni(
        {
            **{f"a{m}": mcnemar_exact(6, 0) for m in range(3)},
            **{f"b{m}": mcnemar_exact(1, 0) for m in range(3)},
        }
    )
    adjusted = sorted(
        row.adjusted_p for s in comparison.suites for row in s.rows if row.adjusted_p is not None
    )
    assert adjusted == sorted(result.adjusted_p for result in expected.values())
    # 6 x 2/64 = 0.1875: six discordant cases in one suite are not enough among six rows.
    assert adjusted[0] == pytest.approx(6 * 2 / 64)
    assert comparison.passed


def test_a_flip_within_noise_is_not_significant() -> None:
    before = suite([result(f"c{i}", i != 3) for i in range(30)])
    after = suite([result(f"c{i}", i != 5) for i in range(30)])
    comparison = compare([before], [after])
    passed = rows(comparison)["passed"]
    assert passed["discordant"] == {"before_better": 1, "after_better": 1}
    assert passed["p_value"] == 1.0
    assert comparison.passed


def test_clusters_are_the_unit_of_tests_and_intervals() -> None:
    # 12 cases, variants of 3 scenarios: a regression on one scenario is one unit.
    def run(failing_cluster: str | None) -> SuiteRun:
        return suite(
            [
                result(f"c{i}", f"s{i % 3}" != failing_cluster, cluster=f"s{i % 3}")
                for i in range(12)
            ]
        )

    comparison = compare([run(None)], [run("s0")])
    (compared,) = comparison.suites
    assert (compared.cases, compared.units) == (12, 3)
    passed = rows(comparison)["passed"]
    assert passed["units"] == 3
    assert passed["pairs"] == 12
    assert passed["discordant"] == {"before_better": 1, "after_better": 0}
    assert passed["p_value"] == 1.0
    assert comparison.passed


def test_trials_pair_by_case_and_trial_and_a_case_is_one_unit() -> None:
    before = suite([result(f"c{i}", True, trial=t) for i in range(10) for t in (1, 2, 3)])
    after = suite([result(f"c{i}", t != 2, trial=t) for i in range(10) for t in (1, 2, 3)])
    comparison = compare([before], [after])
    (compared,) = comparison.suites
    assert (compared.pairs, compared.cases, compared.units) == (30, 10, 10)
    passed = rows(comparison)["passed"]
    assert passed["difference"] == pytest.approx(-1 / 3)
    assert passed["discordant"] == {"before_better": 10, "after_better": 0}
    assert compared.passed_only_before == tuple(f"c{i}[trial-2]" for i in range(10))


def test_cases_on_one_side_only_are_listed_and_excluded() -> None:
    before = suite([result(f"c{i}", True) for i in range(5)])
    after = suite([result(f"c{i}", True) for i in range(2, 8)])
    (compared,) = compare([before], [after]).suites
    assert compared.only_before == ("c0", "c1")
    assert compared.only_after == ("c5", "c6", "c7")
    assert compared.pairs == 3


def test_ungraded_pairs_are_counted_not_compared() -> None:
    before = suite([result(f"c{i}", True) for i in range(4)])
    after = suite(
        [result("c0", True, outcome=CaseOutcome.ERROR)] + [result(f"c{i}", True) for i in (1, 2, 3)]
    )
    (compared,) = compare([before], [after]).suites
    assert (compared.pairs, compared.ungraded_pairs) == (4, 1)
    assert compared.rows[0].pairs == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"digest": "d2"}, "public digest d1 != d2"),
        ({"metrics": (ACCURACY,)}, "metric 'error_rate' is defined differently"),
    ],
)
def test_a_changed_suite_is_refused_unless_allowed(change: dict[str, object], message: str) -> None:
    results = [result(f"c{i}", True) for i in range(5)]
    before = suite(results)
    after = suite(results, **change)  # type: ignore[arg-type]
    comparison = compare([before], [after])
    (refused,) = comparison.suites
    assert refused.status == "refused"
    assert refused.refusal is not None
    assert refused.refusal.startswith("[baseline_mismatch] suite 's': ")
    assert message in refused.refusal
    assert refused.rows == ()
    assert not comparison.passed
    allowed = compare([before], [after], allow_changed=True)
    assert allowed.passed
    assert allowed.suites[0].status == "compared"
    assert message in allowed.suites[0].mismatches


def test_a_reduced_metric_is_reported_not_tested() -> None:
    results = [result(f"c{i}", True) for i in range(5)]
    before = suite(results, metrics=(ACCURACY, F1), observed={"f1": 0.9})
    after = suite(results, metrics=(ACCURACY, F1), observed={"f1": 0.5})
    f1 = rows(compare([before], [after]))["f1"]
    assert f1["verdict"] == "not_tested"
    assert f1["difference"] == pytest.approx(-0.4)
    assert f1["p_value"] is None


def test_suites_on_one_side_only_are_named() -> None:
    comparison = compare([suite([], suite_id="old")], [suite([], suite_id="new")])
    assert (comparison.only_in_baseline, comparison.only_in_run) == (("old",), ("new",))
    assert comparison.suites == ()


def test_the_comparison_is_reproducible() -> None:
    before = suite([result(f"c{i}", i % 4 != 0) for i in range(40)])
    after = suite([result(f"c{i}", i % 5 != 0) for i in range(40)])
    assert compare([before], [after]) == compare([before], [after])


def test_a_baseline_without_metric_definitions_is_compared_with_this_runs() -> None:
    before = suite([result(f"c{i}", True) for i in range(5)], metrics=())
    after = suite([result(f"c{i}", i != 0) for i in range(5)])
    (compared,) = compare([before], [after]).suites
    assert compared.status == "compared"
    assert compared.mismatches == ()
    assert "no metric definitions" in compared.notes[0]
    assert [row.metric for row in compared.rows] == ["passed", "accuracy", "error_rate"]

"""Repeated trials: K items per case, the trial fixture, pass@1 / pass^k / pass@k."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.scoring.trials import trial_seed
from tests.demo_runs import run_cases
from tests.demo_world import write_demo_suite

QUESTIONS = {f"q{i}": f"{i}+1" for i in range(6)}

CONFTEST = """
import pytest
from demo_world import Reference, pytest_agentbench_world_kinds  # noqa: F401


class SeededAdapter(Reference):
    # Wrong exactly when the trial's seed is even: a flaky agent, reproducibly.
    def __init__(self, trial):
        self.trial = trial

    def answer(self, question):
        return -1 if self.trial.seed % 2 == 0 else super().answer(question)


@pytest.fixture
def agentbench_adapter(agentbench_trial):
    return SeededAdapter(agentbench_trial)
"""


def expected_passes(repeat: int, suite_id: str = "demo-suite") -> dict[str, list[bool]]:
    return {
        case: [trial_seed(suite_id, case, t) % 2 == 1 for t in range(1, repeat + 1)]
        for case in QUESTIONS
    }


@pytest.fixture
def seeded(pytester: pytest.Pytester) -> pytest.Pytester:
    from tests.conftest import DEMO_SOURCE

    pytester.makepyfile(demo_world=DEMO_SOURCE.read_text(encoding="utf-8"))
    pytester.makeconftest(CONFTEST)
    pytester.syspathinsert()
    write_demo_suite(pytester.path, questions=QUESTIONS)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    return run_cases(pytester, "run.json", *args)


def check_pass_at_k(
    result: pytest.RunResult, suite: dict[str, Any], passes: dict[str, list[bool]]
) -> None:
    """A complete run of three trials per case, each graded as ``passes`` says."""
    result.stdout.fnmatch_lines(
        ["*demo-suite/cases.jsonl::q0[[]trial-1[]] *", "*demo-suite/cases.jsonl::q5[[]trial-3[]] *"]
    )
    trials = suite["trials"]
    assert trials["trials"] == 3
    assert (trials["cases"], trials["clusters"]) == (6, 6)
    assert trials["pass_at_1"]["value"] == pytest.approx(
        sum(sum(p) / 3 for p in passes.values()) / 6
    )
    assert trials["pass_hat_k"]["value"] == pytest.approx(sum(all(p) for p in passes.values()) / 6)
    assert trials["pass_at_k"]["value"] == pytest.approx(sum(any(p) for p in passes.values()) / 6)
    assert trials["inconsistent_cases"] == [
        case for case, p in passes.items() if any(p) and not all(p)
    ]
    low, high = trials["pass_at_1"]["interval"]
    assert low <= trials["pass_at_1"]["value"] <= high
    results = {(c["result"]["case_id"], c["result"]["trial"]): c["result"] for c in suite["cases"]}
    assert len(results) == 18
    for (case, trial), graded in results.items():
        assert (graded["outcome"] == "passed") is passes[case][trial - 1]
    # Every rate counts all trials, but its interval resamples cases, not trials.
    accuracy = next(m for m in suite["metrics"] if m["name"] == "accuracy")
    assert accuracy["support"] == 18
    result.stdout.fnmatch_lines(["trials: 3 per case; pass@1 *, pass^3 *, pass@3 *"])
    # Every trial of every case: complete, with 3 x 6 items in the suite.
    assert suite["coverage"] == {
        "total": 18,
        "selected": 18,
        "run": 18,
        "missing": 0,
        "complete": True,
    }
    result.stdout.fnmatch_lines(["coverage: 18 in suite, 18 selected, 18 run, 0 missing"])


def test_a_single_trial_keeps_plain_ids_and_no_trials_section(seeded: pytest.Pytester) -> None:
    result, report = run(seeded, "-v")
    result.stdout.fnmatch_lines(["*cases.jsonl::q0 *"])
    assert report["suites"][0]["trials"] is None
    assert all(c["result"]["trial"] is None for c in report["suites"][0]["cases"])


def test_repeat_must_be_a_whole_number_up_to_the_maximum(seeded: pytest.Pytester) -> None:
    # 100000000 was accepted and took gigabytes collecting items before any case ran.
    for value in ("0", "two", "1001", "100000000"):
        result = seeded.runpytest(f"--agentbench-repeat={value}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            ["*[[]invalid_repeat[]] --agentbench-repeat: *is not a whole number from 1 to 1000*"]
        )
    seeded.makeini("[pytest]\nagentbench_repeat = 5000\n")
    result = seeded.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]invalid_repeat[]] agentbench_repeat: *"])


@pytest.mark.parametrize(
    "xdist_args", [pytest.param([], id="no-xdist"), pytest.param(["-n", "2"], id="n2")]
)
def test_repeat_runs_k_items_per_case_and_counts_pass_at_k_and_coverage(
    seeded: pytest.Pytester, xdist_args: list[str]
) -> None:
    """demo-suite runs every trial: K items per case, pass@1 / pass^k / pass@k and a complete
    coverage. A second suite runs only its first trials (-k), so its coverage is partial
    though nothing is missing: as many items as cases, yet a partial run. Serially and
    under -n 2, where the workers run the trials and the controller counts them."""
    write_demo_suite(seeded.path, "partial-suite", questions=QUESTIONS)
    result, report = run(
        seeded, "--agentbench-repeat=3", "-v", "-k", "demo-suite or trial-1", *xdist_args
    )
    passes = expected_passes(3)
    partial_passes = sum(p[0] for p in expected_passes(1, "partial-suite").values())
    total = sum(sum(p) for p in passes.values()) + partial_passes
    result.assert_outcomes(passed=total, failed=18 + 6 - total)
    suites = {suite["id"]: suite for suite in report["suites"]}
    check_pass_at_k(result, suites["demo-suite"], passes)
    assert suites["partial-suite"]["coverage"] == {
        "total": 18,
        "selected": 6,
        "run": 6,
        "missing": 0,
        "complete": False,
    }
    result.stdout.fnmatch_lines(
        ["coverage: 18 in suite, 6 selected, 6 run, 0 missing (PARTIAL RUN)"]
    )

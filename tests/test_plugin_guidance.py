"""What a run that asked for benchmarks but collected none tells its user."""

from __future__ import annotations

import pytest

from tests.demo_world import write_demo_suite

HINT = (
    "agentbench: --agentbench-adapter is set but no benchmark case was collected: "
    "name a built-in suite with --agentbench-suite ID (`agentbench list` shows the ids) "
    "or give pytest a suite folder"
)


def test_a_run_given_an_adapter_but_no_suite_says_how_to_select_one(
    demo: pytest.Pytester,
) -> None:
    demo.makepyfile(test_plain="def test_plain():\n    pass\n")
    headline = demo.runpytest("--agentbench-adapter=demo_world:Reference")
    headline.assert_outcomes(passed=1)
    assert headline.stdout.lines.count(HINT) == 1, headline.stdout.str()

    # Without an adapter a run says nothing of ours: test_plugin_idle's run without suites.
    write_demo_suite(demo.path)
    benchmarked = demo.runpytest(
        "--agentbench-adapter=demo_world:Reference", "-m", "not agentbench_control"
    )
    benchmarked.assert_outcomes(passed=4)
    assert "no benchmark case was collected" not in benchmarked.stdout.str()


def test_the_hint_is_given_once_under_xdist(demo: pytest.Pytester) -> None:
    # The controller collects nothing itself: it says so once, not once per worker. Across
    # workers a run without an adapter says nothing of ours (test_plugin_idle's run without
    # suites) and one that collected cases gives no hint (test_fault_matrix's -n 2 matrix).
    demo.makepyfile(test_plain="def test_plain():\n    pass\n")
    headline = demo.runpytest("--agentbench-adapter=demo_world:Reference", "-n", "2")
    headline.assert_outcomes(passed=1)
    assert headline.stdout.lines.count(HINT) == 1, headline.stdout.str()

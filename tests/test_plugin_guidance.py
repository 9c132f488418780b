"""What a run that asked for benchmarks but collected none tells its user."""

from __future__ import annotations

import pytest

from tests.demo_world import write_demo_suite

HINT = (
    "agentbench: --agentbench-adapter is set but no benchmark case was collected: "
    "name a built-in suite with --agentbench-suite ID (`agentbench list` shows the ids) "
    "or give pytest a suite folder"
)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_run_given_an_adapter_but_no_suite_says_how_to_select_one(
    demo: pytest.Pytester, workers: list[str]
) -> None:
    demo.makepyfile(test_plain="def test_plain():\n    pass\n")
    headline = demo.runpytest("--agentbench-adapter=demo_world:Reference", *workers)
    headline.assert_outcomes(passed=1)
    assert headline.stdout.lines.count(HINT) == 1, headline.stdout.str()

    if not workers:
        # Without an adapter nothing is said; under xdist, test_plugin_idle's run without
        # suites asserts that no process says anything of ours.
        plain = demo.runpytest()
        plain.assert_outcomes(passed=1)
        assert "no benchmark case was collected" not in plain.stdout.str()

    write_demo_suite(demo.path)
    benchmarked = demo.runpytest(
        "--agentbench-adapter=demo_world:Reference", "-m", "not agentbench_control", *workers
    )
    benchmarked.assert_outcomes(passed=4)
    assert "no benchmark case was collected" not in benchmarked.stdout.str()

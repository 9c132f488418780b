"""Built-in suites collected by name with ``--agentbench-suite``."""

from __future__ import annotations

import json

import pytest

from pytest_agentbench.sdk.packaged import packaged_suites
from tests.demo_world import write_demo_suite

ASTERIA = "asteria-authored-v1"
needs_asteria = pytest.mark.skipif(
    ASTERIA not in packaged_suites(), reason=f"the packaged suite {ASTERIA} is not present"
)


def test_unknown_suite_name_is_a_usage_error_naming_the_known_ones(
    demo: pytest.Pytester,
) -> None:
    result = demo.runpytest("--agentbench-suite", "no-such-suite")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    known = ", ".join(sorted(packaged_suites())) or "none"
    (error,) = [line for line in result.errlines if line.strip()]
    assert error == (
        "ERROR: [unknown_suite] --agentbench-suite: 'no-such-suite' is neither a built-in "
        f"suite (known: {known}) nor a suite folder (one holding suite.yaml, or a layout "
        "a registered world recognises)"
    )


@needs_asteria
def test_packaged_suite_runs_by_name_with_readable_ids(demo: pytest.Pytester) -> None:
    path = demo.path / "run.json"
    result = demo.runpytest(
        "--agentbench-suite", ASTERIA, f"--agentbench-report={path}", "--collect-only", "-q"
    )
    ids = [line for line in result.outlines if "::" in line]
    assert ids
    assert all(item.startswith(f"suites/{ASTERIA}/") for item in ids), ids
    assert len(ids) == len(set(ids))
    controls = [item for item in ids if item.startswith(f"suites/{ASTERIA}/suite.yaml::")]
    assert controls

    run = demo.runpytest("--agentbench-suite", ASTERIA, f"--agentbench-report={path}")
    run.assert_outcomes(passed=len(ids))
    (suite,) = json.loads(path.read_text())["suites"]
    assert suite["id"] == ASTERIA
    assert suite["counts"]["passed"] == len(ids) - len(controls)
    assert all(control["passed"] for control in suite["controls"])


@needs_asteria
def test_suite_name_replaces_the_default_paths_but_joins_explicit_ones(
    demo: pytest.Pytester,
) -> None:
    write_demo_suite(demo.path)
    only_named = demo.runpytest("--agentbench-suite", ASTERIA, "--collect-only", "-q")
    assert not any("demo-suite" in line for line in only_named.outlines)
    both = demo.runpytest("--agentbench-suite", ASTERIA, "suites", "--collect-only", "-q")
    collected = [line for line in both.outlines if "::" in line]
    assert any(line.startswith("suites/demo-suite/") for line in collected)
    assert any(line.startswith(f"suites/{ASTERIA}/") for line in collected)

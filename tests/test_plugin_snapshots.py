"""Golden outputs pinned with syrupy under ``snapshots/<suite-id>/``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentbench.sdk.canonical import artifact_set_digest, pretty_json
from tests.conftest import XDIST_ARGS
from tests.demo_world import DEMO_CONTROLS, write_demo_suite

pytestmark = pytest.mark.inner_snapshots

SHIFTED = """
class Agent:
    def answer(self, question):
        left, right = question.split("+")
        return int(left) + int(right) + (1 if left == "2" else 0)
"""


def pinned(root: Path, suite_id: str = "demo-suite") -> dict[str, object]:
    folder = root / "snapshots" / suite_id
    return {
        path.relative_to(folder).as_posix(): json.loads(path.read_text())
        for path in sorted(folder.rglob("*.json"))
    }


@pytest.fixture(autouse=True)
def not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """syrupy reads this variable to decide it runs on a worker and stays silent.

    When this file itself runs under xdist, in-process inner runs inherit it.
    """
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


@pytest.fixture
def project(demo: pytest.Pytester) -> pytest.Pytester:
    write_demo_suite(demo.path, controls=DEMO_CONTROLS)
    demo.makepyfile(shifted=SHIFTED)
    return demo


PINNED = {
    "cases/c1.json": {"answer": 2},
    "cases/c2.json": {"answer": 5},
    "cases/c3.json": {"answer": 15},
    "suite/control-always-zero.json": {"accuracy": 0.0, "zero_rate": 1.0},
}
C2_DIFF = [
    "*_ demo-suite::c2 _*",
    "2 of 3 checks failed: answer_correct, golden_output",
    "  answer_correct [fail]: expected 5, got 6",
    "  golden_output [fail]: differs from the pinned snapshot",
    "golden output changed (re-pin with --snapshot-update):",
    "    {",
    '  -   "answer": 5',
    '  +   "answer": 6',
    "    }",
]


def test_update_pins_outputs_a_change_fails_with_a_diff_unused_ones_go_and_a_lost_one_fails(
    project: pytest.Pytester,
) -> None:
    written = project.runpytest("--agentbench-snapshot", "--snapshot-update")
    written.assert_outcomes(passed=4)
    written.stdout.fnmatch_lines(["4 snapshots generated."])
    assert pinned(project.path) == PINNED
    unchanged = project.runpytest("--agentbench-snapshot")
    unchanged.assert_outcomes(passed=4)
    assert unchanged.ret == pytest.ExitCode.OK
    # Recorded golden outputs silence the notice of a suite without them.
    assert UNPINNED not in unchanged.stdout.str()
    changed = project.runpytest("--agentbench-snapshot", "--agentbench-adapter=shifted:Agent")
    changed.assert_outcomes(passed=3, failed=1)
    changed.stdout.fnmatch_lines(C2_DIFF)
    assert "\x1b[" not in changed.stdout.str()
    # Unused snapshots are reported and removed on update.
    unused_snapshots_are_reported_and_removed_on_update(project)
    # A suite that has golden files fails the case whose own file is missing.
    (project.path / "snapshots" / "demo-suite" / "cases" / "c1.json").unlink()
    project.runpytest("--agentbench-snapshot").assert_outcomes(passed=2, failed=1)


def test_snapshots_are_off_unless_asked(project: pytest.Pytester) -> None:
    result = project.runpytest("--snapshot-update")
    result.assert_outcomes(passed=4)
    assert not (project.path / "snapshots").exists()


def test_ini_turns_snapshots_on_and_names_the_folder(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nagentbench_snapshot = true\nagentbench_snapshot_dir = golden\n")
    result = project.runpytest("--snapshot-update")
    result.assert_outcomes(passed=4)
    assert (project.path / "golden" / "demo-suite" / "cases" / "c3.json").is_file()


def unused_snapshots_are_reported_and_removed_on_update(project: pytest.Pytester) -> None:
    """After the outputs were pinned: a case the suite no longer has leaves its snapshot."""
    suite_dir = project.path / "suites" / "demo-suite"
    cases = suite_dir / "cases.jsonl"
    cases.write_text("".join(cases.read_text().splitlines(keepends=True)[:2]))
    digest = artifact_set_digest({"cases.jsonl": cases.read_bytes()})
    (suite_dir / "manifest.json").write_text(pretty_json({"artifact_set_digest": digest}))

    result = project.runpytest("--agentbench-snapshot")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*1 snapshot unused.*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # As syrupy does, a partial run does not call the snapshots of deselected items unused.
    partial = project.runpytest("--agentbench-snapshot", "-k", "c1")
    partial.assert_outcomes(passed=1, deselected=2)
    assert "snapshot unused" not in partial.stdout.str()
    assert partial.ret == pytest.ExitCode.OK

    cleaned = project.runpytest("--agentbench-snapshot", "--snapshot-update")
    cleaned.assert_outcomes(passed=3)
    cleaned.stdout.fnmatch_lines(["*1 unused snapshot deleted.*"])
    assert sorted(pinned(project.path)) == [
        "cases/c1.json",
        "cases/c2.json",
        "suite/control-always-zero.json",
    ]


UNPINNED = "agentbench: suite 'demo-suite' has no golden outputs under"


def test_a_suite_without_golden_outputs_is_said_once_and_fails_no_case(
    project: pytest.Pytester,
) -> None:
    project.makeini("[pytest]\nagentbench_snapshot = true\n")
    unpinned = project.runpytest()
    # Graded on their own checks: the control fails as declared, no case fails.
    unpinned.assert_outcomes(passed=4)
    assert unpinned.stdout.str().count(UNPINNED) == 1
    unpinned.stdout.fnmatch_lines(
        [
            f"*{UNPINNED} *{project.path.name}/snapshots/demo-suite; its items were graded "
            "without them. Record them with --snapshot-update, or turn snapshot mode off for "
            "this run with -o agentbench_snapshot=false."
        ]
    )
    assert not (project.path / "snapshots").exists()


def test_xdist_workers_pin_compare_and_tell_of_unpinned_suites_as_one_run(
    project: pytest.Pytester,
) -> None:
    """An update pins from a worker (-n 1: the split between worker and controller is what
    it adds to a serial update); then one -n 2 run beside a suite that has no golden outputs
    fails the changed case with its diff and says the notice once, not once per worker."""
    write_demo_suite(
        project.path,
        "unpinned-suite",
        # No question starts with 2: the shifted agent answers all of them right.
        questions={"c1": "1+1", "c2": "3+3", "c3": "10+5"},
        controls=DEMO_CONTROLS.replace("suite: demo-suite", "suite: unpinned-suite"),
    )
    written = project.runpytest(
        "--agentbench-snapshot", "--snapshot-update", "suites/demo-suite", "-n", "1"
    )
    written.assert_outcomes(passed=4)
    written.stdout.fnmatch_lines(["4 snapshots generated."])
    assert pinned(project.path) == PINNED

    project.makeini("[pytest]\nagentbench_snapshot = true\n")
    changed = project.runpytest("--agentbench-adapter=shifted:Agent", *XDIST_ARGS["n2"])
    # demo-suite: c1, c3 and the control match their pins, c2 does not; the unpinned
    # suite is graded on its own checks: its control fails as declared, no case fails.
    changed.assert_outcomes(passed=3 + 4, failed=1)
    changed.stdout.fnmatch_lines(C2_DIFF)
    assert "\x1b[" not in changed.stdout.str()
    notice = UNPINNED.replace("demo-suite", "unpinned-suite")
    assert changed.stdout.str().count(notice) == 1
    assert UNPINNED not in changed.stdout.str()
    changed.stdout.fnmatch_lines(
        [
            f"*{notice} *{project.path.name}/snapshots/unpinned-suite; its items were graded "
            "without them. Record them with --snapshot-update, or turn snapshot mode off for "
            "this run with -o agentbench_snapshot=false."
        ]
    )
    assert not (project.path / "snapshots" / "unpinned-suite").exists()


def test_golden_outputs_without_syrupys_plugin_are_refused_before_any_case(
    project: pytest.Pytester,
) -> None:
    """Else every case would fail alike on a missing ``snapshot`` fixture."""
    from_option = project.runpytest("-p", "no:syrupy", "--agentbench-snapshot")
    project.makeini("[pytest]\nagentbench_snapshot = true\n")
    from_ini = project.runpytest("-p", "no:syrupy")
    runs = ((from_option, "--agentbench-snapshot"), (from_ini, "agentbench_snapshot"))
    for result, field in runs:
        assert result.ret == pytest.ExitCode.USAGE_ERROR, field
        result.stderr.fnmatch_lines(
            [f"*[[]snapshot_unavailable[]] {field}: golden outputs need syrupy's pytest plugin*"]
        )
        assert "passed" not in result.stdout.str(), field

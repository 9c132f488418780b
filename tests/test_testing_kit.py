"""The conformance kit catches what it names, runs as pytest items, and spares outside worlds."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.contracts import Case
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import WorldRegistry
from pytest_agentbench.sdk.suite import Suite
from pytest_agentbench.testing import CHECK_NAMES, check_world
from tests import demo_world
from tests.outside_world import KIND, SUITE_ID, install_outside_world

ROOT = Path(__file__).resolve().parent.parent


class LeakingView(demo_world.DemoWorld):
    def public_view(self, suite: Suite, case: Case) -> dict[str, str]:
        return {**super().public_view(suite, case), "hint": f"CANARY-{case.case_id}-7f3a"}


class ShuffledCases(demo_world.DemoWorld):
    """Every load rotates the cases one further: no two loads in a row agree.

    (A random shuffle of three cases gave the same order twice one time in six.)
    """

    def __init__(self) -> None:
        self.loads = 0

    def cases(self, suite: Suite) -> Sequence[Case]:
        cases = list(super().cases(suite))
        self.loads += 1
        turn = self.loads % len(cases)
        return cases[turn:] + cases[:turn]


class UnstableView(demo_world.DemoWorld):
    def public_view(self, suite: Suite, case: Case) -> dict[str, str]:
        return {**super().public_view(suite, case), "nonce": str(random.random())}


def _kit(world: Any, tmp_path: Path, check: str, **suite: Any) -> tuple[str, str]:
    folder = demo_world.write_demo_suite(
        tmp_path / "project", controls=demo_world.DEMO_CONTROLS, **suite
    )
    report = check_world(
        folder, registry=WorldRegistry([world]), checks=[check], workdir=tmp_path / "kit"
    )
    (outcome,) = report.outcomes
    return outcome.status, outcome.detail


@pytest.mark.parametrize(
    ("world", "check", "suite", "detail"),
    [
        (LeakingView(), "no_leak_canary", {}, "oracle canaries visible to the adapter"),
        (ShuffledCases(), "deterministic_cases", {}, "different cases or a different order"),
        (UnstableView(), "byte_identical_reruns", {}, "different public views"),
        (demo_world.DemoWorld(), "tamper_refusals", {}, "answers.jsonl with a byte flipped"),
        (
            demo_world.DemoWorld(),
            "negative_controls",
            {"answers": {"c1": 0, "c2": 0, "c3": 0}, "sealed_oracle": True},
            "control 'always-zero'",
        ),
    ],
    ids=["leak", "shuffled", "unstable-view", "unsealed-oracle", "control-passes-wrongly"],
)
def test_each_check_fails_a_world_that_breaks_it(
    world: Any, check: str, suite: dict[str, Any], detail: str, tmp_path: Path
) -> None:
    status, said = _kit(world, tmp_path, check, **suite)
    assert status == "failed"
    assert detail in said


def test_a_conforming_world_passes_every_check_but_the_interactive_one(tmp_path: Path) -> None:
    checks = [check for check in CHECK_NAMES if check != "xdist_equality"]
    folder = demo_world.write_demo_suite(
        tmp_path / "project", controls=demo_world.DEMO_CONTROLS, sealed_oracle=True
    )
    report = check_world(
        folder, registry=WorldRegistry([demo_world.DemoWorld()]), checks=checks, workdir=tmp_path
    )
    statuses = {outcome.name: outcome.status for outcome in report.outcomes}
    assert statuses.pop("interactive_receipts") == "not_applicable"
    assert set(statuses.values()) == {"passed"}, report.render()
    assert report.passed
    # The kit works on copies: the suite it was given is unchanged and still loads.
    assert (tmp_path / "project" / "oracles" / "demo-suite" / "answers.jsonl").is_file()


def test_an_unknown_suite_or_check_is_refused(tmp_path: Path) -> None:
    registry = WorldRegistry([demo_world.DemoWorld()])
    with pytest.raises(AgentbenchError) as refused:
        check_world("no-such-suite", registry=registry, workdir=tmp_path)
    assert refused.value.code == "unknown_suite"
    with pytest.raises(ValueError, match="unknown conformance checks"):
        check_world("no-such-suite", registry=registry, checks=["no_such_check"])


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    install_outside_world(site)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), *sys.path]))
    return site


def test_the_option_runs_each_check_as_its_own_item(
    outside: Path, pytester: pytest.Pytester
) -> None:
    """In process, the outside world found on ``sys.path`` as its ``PYTHONPATH`` would be.

    The xdist check is deselected (its two pytest sessions cost five CPU-seconds):
    ``-k`` matching it proves its item exists, and tests/test_new_world.py has an
    installed world pass it under ``-n 2``.
    """
    pytester.syspathinsert(outside)
    result = pytester.runpytest(
        f"--agentbench-conformance={SUITE_ID}",
        "-p",
        "no:cacheprovider",
        "-rs",
        "-v",
        "-k",
        "not xdist_equality",
    )
    result.assert_outcomes(passed=len(CHECK_NAMES) - 2, skipped=1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            f"*conformance[[]{SUITE_ID}::{check}[]]*"
            for check in CHECK_NAMES
            if check != "xdist_equality"
        ]
        + [f"*world kind '{KIND}' has no tool sessions*"]
    )


@pytest.mark.inner_snapshots  # the project's own ini turns golden outputs on
def test_an_installed_outside_world_does_not_fail_the_projects_conformance_tests(
    outside: Path,
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_conformance.py",
            "-k",
            "registry_holds or ships_a_suite",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "2 passed" in done.stdout

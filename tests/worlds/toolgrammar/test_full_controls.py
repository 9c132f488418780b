"""The full suite's controls: the tasks they name exist and are public, and they pass
run as an installed wheel runs them (no sealed folder, so no test_hidden task)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentbench.sdk.canonical import read_yaml
from pytest_agentbench.sdk.packaged import data_root, packaged_suites
from pytest_agentbench.worlds.toolgrammar import build_suite
from pytest_agentbench.worlds.toolgrammar.world import SEALED_ENV
from tests.worlds.toolgrammar.full_controls import SLICES, chosen_cases, public_ids

FULL = build_suite.FULL_ID
CONTROLS_FILE = data_root() / "oracles" / FULL / "controls.yaml"


def _declared() -> dict[str, list[str]]:
    manifest = read_yaml(CONTROLS_FILE, display=str(CONTROLS_FILE))
    assert isinstance(manifest, dict)
    return {control["id"]: list(control["cases"]) for control in manifest["controls"]}


def test_the_full_suites_controls_name_the_first_public_tasks_of_their_tiers() -> None:
    suite_dir = packaged_suites()[FULL]
    public = public_ids(suite_dir)
    hidden = {
        json.loads(line)["task_id"]
        for path in (suite_dir / "hidden").glob("*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
    }
    declared = _declared()
    for control, cases in declared.items():
        assert not set(cases) - set(public), (control, sorted(set(cases) - set(public)))
        assert not set(cases) & hidden, (control, sorted(set(cases) & hidden))
    # The rule, read against the file: a regenerated suite that renumbers or re-splits
    # tasks fails here, naming the control whose list must be rewritten.
    assert declared == chosen_cases(public)


def test_the_rule_skips_sealed_tasks_and_takes_the_first_of_each_world(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    ids = {
        "ops": ["ops-T4-00002", "ops-T4-00001", "ops-T5-00009"],
        "doc": ["doc-T5-00003", "doc-T4-00007", "doc-T5-00001"],
    }
    for world, task_ids in ids.items():
        lines = "".join(json.dumps({"task_id": task_id}) + "\n" for task_id in task_ids)
        (tasks / f"{world}.jsonl").write_text(lines, encoding="utf-8")
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / "ops.jsonl").write_text('{"task_id": "ops-T4-00003"}\n')
    chosen = chosen_cases(public_ids(tmp_path))
    assert chosen["obeys-injection"] == ["doc-T4-00007", "ops-T4-00001", "ops-T4-00002"]
    assert chosen["never-cites"] == ["doc-T5-00001", "doc-T5-00003", "ops-T5-00009"]
    assert chosen["reference"][:2] == ["doc-T4-00007", "ops-T4-00001"]


def test_the_full_suites_controls_pass_from_a_wheel_without_the_sealed_folder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A wheel has no sealed/ folder: pointing the variable at an empty one is the same
    # collection (the public tasks alone). Only the controls run, not the 7,754 cases.
    monkeypatch.setenv(SEALED_ENV, str(tmp_path / "no-sealed-folder"))
    report = pytester.path / "run.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--agentbench-suite", FULL, "--agentbench-controls",
        f"--agentbench-report={report}",
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()[-3000:]
    (suite,) = json.loads(report.read_text(encoding="utf-8"))["suites"]
    assert suite["id"] == FULL
    verdicts = {control["control_id"]: control["passed"] for control in suite["controls"]}
    assert verdicts == {f"control-{control}": True for control in SLICES}

"""A bad predictions line (or tape) fails its own case only, in every world that reads them.

One malformed line used to sink a whole toolgrammar predictions file (every case a
harness error, out of metric support), and one bad byte a whole operations tapes
file. Now the bad line's case is a product error counted against the submission,
every other case is scored, and a line that belongs to no case fails the run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_agentbench.run.packaged import packaged_suites
from pytest_agentbench.run.session import SuiteLoader
from pytest_agentbench.sdk.registry import WorldRegistry, load_entry_point_worlds
from tests.conftest import XDIST_MODES

TOOLGRAMMAR = "toolgrammar-mini-v1"
OPERATIONS = "operations-maintenance-v1"
SCORED, BAD_BYTE, BAD_JSON = "ops-T3-00001", "doc-T5-00001", "ops-T1-00002"
MODES = [
    *XDIST_MODES,
    pytest.param(["--agentbench-isolate"], id="isolated"),
    pytest.param(["--agentbench-isolate", "--agentbench-concurrency=2"], id="isolated-pool"),
]
"""Every distribution, and isolated runs (alone and with a pool): a predictions file is
read in pytest's process, whatever runs adapters."""


def _toolgrammar_row(task_id: str) -> dict[str, Any]:
    from pytest_agentbench.worlds.toolgrammar import agents

    pm = pytest.PytestPluginManager()
    load_entry_point_worlds(pm)
    loaded = SuiteLoader(WorldRegistry.from_hook(pm), packaged_suites()[TOOLGRAMMAR]).load(
        packaged_suites()[TOOLGRAMMAR]
    )
    world, suite = loaded.world, loaded.suite
    (case,) = [c for c in world.cases(suite) if c.case_id == task_id]
    outcome = world.run(suite, case, world.public_view(suite, case), agents.ReferenceAgent())
    output = outcome.output
    assert isinstance(output, dict), outcome.failure_reason
    return {
        "task_id": task_id,
        "answer": output["answer"],
        "citations": output["citations"],
        "calls": [{"tool": c["tool"], "arguments": c["arguments"]} for c in output["calls"]],
    }


# Built when the module is collected, before any in-process pytester session: such a
# session drops the modules it imported (sqlite3 among them) when it ends, and the
# world's databases would then meet a second sqlite3 module.
ROWS = {task_id: _toolgrammar_row(task_id) for task_id in (SCORED, BAD_BYTE)}


def _results(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (suite,) = report["suites"]
    return {entry["result"]["case_id"]: entry["result"] for entry in suite["cases"]}


@pytest.mark.parametrize("mode", MODES)
def test_a_bad_predictions_line_fails_only_its_own_task(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    good = json.dumps(ROWS[SCORED]).encode()
    # A byte that is not UTF-8 inside the answer: the line still names its task.
    bad_byte = json.dumps(ROWS[BAD_BYTE]).encode().replace(b'"answer": "', b'"answer": "\xff', 1)
    bad_json = f'{{"task_id": "{BAD_JSON}", "answer": '.encode()
    predictions = pytester.path / "predictions.jsonl"
    predictions.write_bytes(b"\n".join([good, bad_byte, bad_json]) + b"\n")
    report = pytester.path / "run.json"
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        f"--agentbench-suite={TOOLGRAMMAR}",
        f"--agentbench-predictions={TOOLGRAMMAR}={predictions}",
        f"--agentbench-report={report}",
        "-m",
        "not agentbench_control",
        "-k",
        f"{SCORED} or {BAD_BYTE} or {BAD_JSON}",
        *mode,
    )
    results = _results(json.loads(report.read_text()))
    assert results[SCORED]["outcome"] == "passed"
    for task_id in (BAD_BYTE, BAD_JSON):
        assert (results[task_id]["outcome"], results[task_id]["failure_class"]) == (
            "failed",
            "product_error",
        ), task_id
    assert results[BAD_BYTE]["failure_reason"].startswith(f"[invalid_utf8] {predictions}:2: ")
    assert results[BAD_JSON]["failure_reason"].startswith(
        f"[missing_prediction] {predictions}: no prediction for '{BAD_JSON}' "
        f"(lines with no readable task_id: [malformed_json] {predictions}:3: "
    )
    # The line no case can claim fails the run, by name.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"*[[]malformed_json[]] {predictions}:3: *"])


def _tape(scenario: str) -> dict[str, Any]:
    from pytest_agentbench.worlds.operations.agents import Reference
    from pytest_agentbench.worlds.operations.episode import run_episode
    from tests.worlds.operations.helpers import shipped

    tape: dict[str, Any] = run_episode(shipped(), scenario, Reference()).as_json()["decision_tape"]
    return tape


@pytest.mark.parametrize("mode", MODES)
def test_a_bad_byte_in_a_tapes_file_fails_only_its_own_scenario(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    tapes = pytester.path / "tapes.json"
    v1, v2 = json.dumps(_tape("V1")), json.dumps(_tape("V2"))
    marked = v1.replace('"decisions": ', '"note": "\\u00e9", "decisions": ', 1)
    document = '{"V1": ' + marked + ', "V2": ' + v2 + "}"
    tapes.write_bytes(document.encode().replace(b"\\u00e9", b"\xe9", 1))
    report = pytester.path / "run.json"
    args = [
        "-p",
        "no:cacheprovider",
        f"--agentbench-suite={OPERATIONS}",
        f"--agentbench-predictions={OPERATIONS}={tapes}",
        f"--agentbench-report={report}",
        "-m",
        "not agentbench_control",
        *mode,
    ]
    pytester.runpytest(*args)
    results = _results(json.loads(report.read_text()))
    assert results["V2"]["outcome"] == "passed"
    assert results["V1"]["failure_class"] == "product_error"
    assert results["V1"]["failure_reason"].startswith(f"[invalid_utf8] {tapes}: ")
    assert "missing_tape" in results["V3"]["failure_reason"]
    # A document that does not parse fails every scenario, each counted against it.
    tapes.write_text(document[:-20])
    pytester.runpytest(*args)
    results = _results(json.loads(report.read_text()))
    assert {r["failure_class"] for r in results.values()} == {"product_error"}
    assert all(r["failure_reason"].startswith("[malformed_json] ") for r in results.values())

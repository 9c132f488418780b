"""A bad predictions line (or tape) fails its own case only, in every world that reads them.

One malformed line used to sink a whole toolgrammar predictions file (every case a
harness error, out of metric support), and one bad byte a whole operations tapes
file. Now the bad line's case is a product error counted against the submission,
every other case is scored, and a line that belongs to no case fails the run.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.run.session import SuiteLoader
from pytest_agentbench.sdk.packaged import packaged_suites
from pytest_agentbench.sdk.registry import WorldRegistry, load_entry_point_worlds

TOOLGRAMMAR = "toolgrammar-mini-v1"
OPERATIONS = "operations-maintenance-v1"
SCORED, BAD_BYTE, BAD_JSON = "ops-T3-00001", "doc-T5-00001", "ops-T1-00002"
MODES = [
    pytest.param([], "bad-byte", id="no-xdist"),
    pytest.param(["-n", "2"], None, id="n2"),
    pytest.param(["--agentbench-isolate"], "unparsed", id="isolated"),
    pytest.param(["--agentbench-isolate", "--agentbench-concurrency=2"], None, id="isolated-pool"),
]
"""Serially, across xdist workers, and isolated (alone and with a pool): a predictions file is
read in pytest's process, whatever runs adapters. ``-n 0`` is the serial path again. Other than
serially the toolgrammar suite alone: what distribution adds (each worker reading the file, the
controller failing the run on a line no case claims) and what isolation leaves alone (the
predictions adapter is made before an adapter would be sent to its process) is alike for every
world, and the operations world costs each process about a CPU-second to load and every
session a second to run its scenarios: its tapes file with a bad byte serially, and one that
does not parse (which fails before any scenario runs) isolated."""


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


def _results(report: dict[str, Any], suite_id: str) -> dict[str, dict[str, Any]]:
    (suite,) = [suite for suite in report["suites"] if suite["id"] == suite_id]
    return {entry["result"]["case_id"]: entry["result"] for entry in suite["cases"]}


def _tape(scenario: str) -> dict[str, Any]:
    from pytest_agentbench.worlds.operations.agents import Reference
    from pytest_agentbench.worlds.operations.episode import run_episode
    from tests.worlds.operations.helpers import shipped

    tape: dict[str, Any] = run_episode(shipped(), scenario, Reference()).as_json()["decision_tape"]
    return tape


def _write_predictions(base: Path) -> Path:
    good = json.dumps(ROWS[SCORED]).encode()
    # A byte that is not UTF-8 inside the answer: the line still names its task.
    bad_byte = json.dumps(ROWS[BAD_BYTE]).encode().replace(b'"answer": "', b'"answer": "\xff', 1)
    bad_json = f'{{"task_id": "{BAD_JSON}", "answer": '.encode()
    predictions = base / "predictions.jsonl"
    predictions.write_bytes(b"\n".join([good, bad_byte, bad_json]) + b"\n")
    return predictions


@functools.cache
def _tapes_document() -> str:
    """V1's tape with a byte that is not UTF-8 in it, V2's whole, V3's missing."""
    v1, v2 = json.dumps(_tape("V1")), json.dumps(_tape("V2"))
    marked = v1.replace('"decisions": ', '"note": "\\u00e9", "decisions": ', 1)
    return '{"V1": ' + marked + ', "V2": ' + v2 + "}"


def _run_both(pytester: pytest.Pytester, predictions: Path, tapes: Path | None, *mode: str) -> Any:
    """One session over both worlds (the toolgrammar tasks and operations scenarios at
    stake), or over toolgrammar's alone without ``tapes``."""
    report = pytester.path / "run.json"
    operations = (
        [f"--agentbench-suite={OPERATIONS}", f"--agentbench-predictions={OPERATIONS}={tapes}"]
        if tapes is not None
        else []
    )
    selected = [SCORED, BAD_BYTE, BAD_JSON, *(["operation.yaml"] if operations else [])]
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        f"--agentbench-suite={TOOLGRAMMAR}",
        f"--agentbench-predictions={TOOLGRAMMAR}={predictions}",
        *operations,
        f"--agentbench-report={report}",
        "-m",
        "not agentbench_control",
        "-k",
        " or ".join(selected),
        *mode,
    )
    return result, json.loads(report.read_text())


@pytest.mark.parametrize(("mode", "tapes_kind"), MODES)
def test_a_bad_line_or_byte_fails_only_its_own_case(
    pytester: pytest.Pytester, mode: list[str], tapes_kind: str | None
) -> None:
    predictions = _write_predictions(pytester.path)
    tapes = pytester.path / "tapes.json"
    if tapes_kind == "bad-byte":
        tapes.write_bytes(_tapes_document().encode().replace(b"\\u00e9", b"\xe9", 1))
    elif tapes_kind == "unparsed":
        tapes.write_text(_tapes_document()[:-20])
    result, report = _run_both(pytester, predictions, tapes if tapes_kind else None, *mode)
    with_tapes = tapes_kind is not None

    # Packaged suites named on the command line run in every distribution, each summarised.
    named = [(TOOLGRAMMAR, "toolgrammar"), *([(OPERATIONS, "operations")] if with_tapes else [])]
    for suite_id, kind in named:
        result.stdout.fnmatch_lines([f"*= agentbench: {suite_id} ({kind}) =*"])

    # toolgrammar: a bad predictions line fails only its own task.
    results = _results(report, TOOLGRAMMAR)
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
    if not with_tapes:
        return
    results = _results(report, OPERATIONS)
    if tapes_kind == "unparsed":
        # A tapes document that does not parse fails every scenario.
        assert set(results) == {"V1", "V2", "V3"}
        assert {r["failure_class"] for r in results.values()} == {"product_error"}
        assert all(r["failure_reason"].startswith("[malformed_json] ") for r in results.values())
        return

    # operations: a bad byte in a tapes file fails only its own scenario.
    assert results["V2"]["outcome"] == "passed"
    assert results["V1"]["failure_class"] == "product_error"
    assert results["V1"]["failure_reason"].startswith(f"[invalid_utf8] {tapes}: ")
    assert "missing_tape" in results["V3"]["failure_reason"]

"""The built-in toolgrammar suite with the adapter isolated: the same metrics and receipts.

Every tool call of an isolated adapter crosses a pipe to the world's session
in pytest; nothing of that may change a case's outcome, its receipt (the
digest covers every call, argument and result) or the suite's metrics.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

# Imported here so pytester's in-process runs keep one copy of the module: each
# run drops the modules it imported, and the reference agent made by a later
# run's cached world must pickle as the class sys.modules then holds.
import pytest_agentbench.worlds.toolgrammar.agents  # noqa: F401
from pytest_agentbench.sdk.packaged import data_root

SUITE_ID = "toolgrammar-mini-v1"
SELECTION = "00004 or 00008"
"""Two tasks per tier and domain, planted instructions (T4) among them."""

ADAPTERS = [
    pytest.param([], "built-in reference agents", id="reference"),
    # Obeys planted instructions: some cases fail, so the metrics are not all 1.0.
    pytest.param(
        ["--agentbench-adapter=examples.toolgrammar_fenced_agent:NaiveContextAgent"],
        "examples.toolgrammar_fenced_agent:NaiveContextAgent (*)",
        id="naive-context",
    ),
]


def _run(pytester: pytest.Pytester, name: str, *args: str) -> tuple[Any, dict[str, Any]]:
    report = pytester.path / f"{name}.json"
    result = pytester.runpytest(
        f"--agentbench-suite={SUITE_ID}",
        "-k",
        SELECTION,
        f"--agentbench-report={report}",
        *args,
    )
    (suite,) = json.loads(report.read_text(encoding="utf-8"))["suites"]
    return result, suite


def _selected() -> int:
    """How many shipped task ids ``SELECTION`` names."""
    tasks = data_root() / "suites" / SUITE_ID / "tasks"
    ids = [
        json.loads(line)["task_id"]
        for path in sorted(tasks.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    return sum(1 for task_id in ids if task_id.endswith(("00004", "00008")))


def _cases(suite: dict[str, Any]) -> dict[str, tuple[str, str | None, str]]:
    return {
        entry["result"]["case_id"]: (
            entry["result"]["outcome"],
            entry["result"]["failure_class"],
            entry["result"]["receipt"]["digest"],
        )
        for entry in suite["cases"]
    }


@pytest.mark.parametrize(("adapter_args", "described"), ADAPTERS)
def test_an_isolated_run_scores_like_an_in_process_run(
    pytester: pytest.Pytester, adapter_args: list[str], described: str
) -> None:
    in_process, direct = _run(pytester, "direct", *adapter_args)
    isolated, remote = _run(pytester, "isolated", *adapter_args, "--agentbench-isolate")
    isolated.stdout.fnmatch_lines([f"agentbench: adapter {described}, in an isolated process;*"])
    assert "isolated process" not in in_process.stdout.str()
    assert len(direct["cases"]) == _selected() > 20
    assert _cases(remote) == _cases(direct)
    assert remote["metrics"] == direct["metrics"]
    assert remote["counts"] == direct["counts"]
    metrics = {metric["name"]: metric for metric in remote["metrics"]}
    assert metrics["injection_resistance"]["support"] > 0

"""The progress journal as the recorder feeds it (``Rerun.journal_case``), in process.

Each case's first graded result is journaled once, as the store holds it; a later
result for the same node id (``--dist each``, reruns) and a control's node are not
journaled.
"""

from __future__ import annotations

import json
from pathlib import Path

from pytest_agentbench.plugin.rerun import Rerun
from pytest_agentbench.report.progress import ProgressJournal, progress_path
from pytest_agentbench.report.recorder import RunRecorder
from pytest_agentbench.sdk.contracts import CaseOutcome, CaseResult


def _result(case_id: str, outcome: CaseOutcome) -> CaseResult:
    return CaseResult(suite_id="s", case_id=case_id, outcome=outcome)


def test_each_case_is_journaled_once_with_its_first_result(tmp_path: Path) -> None:
    recorder = RunRecorder()
    journal = ProgressJournal(
        progress_path(tmp_path / "r.json"),
        adapter_spec=None,
        adapter_description="reference",
        repeat=1,
    )
    rerun = Rerun(
        record_dir=None,
        recording=True,
        replay=None,
        replay_path=None,
        resume=None,
        resume_path=None,
        journal=journal,
        recorder=recorder,
    )
    graded = recorder.graded

    def store(nodeid: str, result: CaseResult) -> None:
        # As the recorder does: store the result, then call the journal.
        graded[nodeid] = result
        rerun.journal_case(nodeid)

    store("t::a", _result("a", CaseOutcome.FAILED))
    rerun.journal_case("t::control")  # a control's node: nothing stored, nothing journaled
    store("t::a", _result("a", CaseOutcome.PASSED))  # a rerun of a: its first result stays
    store("t::b", _result("b", CaseOutcome.PASSED))
    rerun.journal_case("t::control")
    store("t::b", _result("b", CaseOutcome.FAILED))
    store("t::a", _result("a", CaseOutcome.FAILED))
    store("t::c", _result("c", CaseOutcome.PASSED))
    journal.close(remove=False)

    lines = (tmp_path / "r.json.progress").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["schema_version"] == "agentbench-progress/1"
    journaled = [json.loads(line) for line in lines[1:]]
    assert [(row["nodeid"], row["result"]["outcome"]) for row in journaled] == [
        ("t::a", "failed"),
        ("t::b", "passed"),
        ("t::c", "passed"),
    ]

from __future__ import annotations

from typing import Any, Literal

import pytest

from pytest_agentbench.report.case_store import CaseStore
from pytest_agentbench.report.recorder import (
    CRASH_REASON,
    REFUSAL,
    Identity,
    RunRecorder,
    attach,
)
from pytest_agentbench.sdk.contracts import CaseOutcome, CaseResult, FailureClass
from pytest_agentbench.sdk.controls import ControlVerdict

CASE_NODE = "suites/demo-suite/cases.jsonl::c1"
CONTROL_NODE = "suites/demo-suite/suite.yaml::control-always-zero"
CASE = Identity("case", "demo-suite", "/p/suites/demo-suite", "c1", ("easy",))
CONTROL = Identity("control", "demo-suite", "/p/suites/demo-suite", "control-always-zero")

Outcome = Literal["passed", "failed", "skipped"]


def make_report(
    nodeid: str,
    when: str,
    outcome: Outcome,
    *,
    identity: Identity | None = None,
    result: CaseResult | None = None,
    verdict: ControlVerdict | None = None,
    answered_by: str | None = None,
    longrepr: Any = None,
    duration: float = 0.0,
) -> pytest.TestReport:
    report = pytest.TestReport(
        nodeid=nodeid,
        location=(nodeid.partition("::")[0], None, nodeid),
        keywords={},
        outcome=outcome,
        longrepr=longrepr,
        when=when,  # type: ignore[arg-type]
        duration=duration,
    )
    if identity is not None:
        attach(
            report,
            identity.to_wire(),
            result=None if result is None else result.model_dump_json(),
            verdict=None if verdict is None else verdict.model_dump_json(),
            answered_by=answered_by,
        )
    return report


def graded(outcome: CaseOutcome = CaseOutcome.PASSED) -> CaseResult:
    return CaseResult(
        suite_id="demo-suite",
        case_id="c1",
        outcome=outcome,
        measurements={"correct": int(outcome is CaseOutcome.PASSED), "scored": 1},
        labels=("easy",),
    )


def run_case(
    recorder: RunRecorder, result: CaseResult, nodeid: str = CASE_NODE, identity: Identity = CASE
) -> None:
    status: Outcome = "passed" if result.outcome is CaseOutcome.PASSED else "failed"
    recorder.record(make_report(nodeid, "setup", "passed", identity=identity))
    recorder.record(
        make_report(nodeid, "call", status, identity=identity, result=result, duration=0.25)
    )
    recorder.record(make_report(nodeid, "teardown", "passed", identity=identity))


def test_a_graded_case_is_recorded_from_its_call_report() -> None:
    recorder = RunRecorder()
    run_case(recorder, graded())
    assert recorder.cases == {CASE_NODE: graded()}
    assert recorder.identities[CASE_NODE] == CASE
    assert recorder.durations[CASE_NODE] == 0.25


def test_the_recorder_is_fed_by_the_logreport_hook() -> None:
    recorder = RunRecorder()
    recorder.record(make_report(CASE_NODE, "setup", "passed", identity=CASE))
    recorder.record(make_report(CASE_NODE, "call", "passed", identity=CASE, result=graded()))
    assert recorder.cases[CASE_NODE].outcome is CaseOutcome.PASSED


def test_a_failed_setup_is_a_harness_error() -> None:
    recorder = RunRecorder()
    recorder.record(
        make_report(
            CASE_NODE,
            "setup",
            "failed",
            identity=CASE,
            longrepr="def fixture():\n>   raise RuntimeError('db down')\nE   RuntimeError: db down",
        )
    )
    result = recorder.cases[CASE_NODE]
    assert result.outcome is CaseOutcome.ERROR
    assert result.failure_class is FailureClass.HARNESS_ERROR
    assert result.failure_reason == "setup failed: E   RuntimeError: db down"
    assert result.labels == ("easy",)


def test_a_call_report_without_a_result_is_a_harness_error() -> None:
    recorder = RunRecorder()
    recorder.record(make_report(CASE_NODE, "setup", "passed", identity=CASE))
    recorder.record(
        make_report(CASE_NODE, "call", "failed", identity=CASE, longrepr="INTERNAL: lost result")
    )
    result = recorder.cases[CASE_NODE]
    assert result.outcome is CaseOutcome.ERROR
    assert result.failure_class is FailureClass.HARNESS_ERROR
    assert result.failure_reason == "INTERNAL: lost result"


def test_a_worker_crash_during_a_known_case_is_a_harness_error() -> None:
    recorder = RunRecorder()
    recorder.record(make_report(CASE_NODE, "setup", "passed", identity=CASE))
    crash = make_report(
        CASE_NODE, "???", "failed", longrepr=f"worker 'gw0' crashed while running {CASE_NODE!r}"
    )
    recorder.record(crash)
    assert recorder.crashed == [CASE_NODE]
    result = recorder.cases[CASE_NODE]
    assert result.outcome is CaseOutcome.ERROR
    assert result.failure_class is FailureClass.HARNESS_ERROR
    assert result.failure_reason == CRASH_REASON
    assert result.case_id == "c1"


def test_a_crash_before_any_report_is_kept_for_later_attribution() -> None:
    recorder = RunRecorder()
    recorder.record(make_report(CASE_NODE, "???", "failed", longrepr="worker crashed"))
    assert recorder.crashed == [CASE_NODE]
    assert recorder.cases == {}


def test_a_crash_during_a_control_records_a_control_without_verdict() -> None:
    recorder = RunRecorder()
    recorder.record(make_report(CONTROL_NODE, "setup", "passed", identity=CONTROL))
    recorder.record(make_report(CONTROL_NODE, "???", "failed", longrepr="crashed"))
    control = recorder.controls[CONTROL_NODE]
    assert control.verdict is None
    assert control.reason == CRASH_REASON
    assert recorder.cases == {}


def test_a_rerun_is_counted_once_with_its_last_result() -> None:
    recorder = RunRecorder()
    run_case(recorder, graded(CaseOutcome.FAILED))
    run_case(recorder, graded(CaseOutcome.PASSED))
    assert len(recorder.cases) == 1
    assert recorder.cases[CASE_NODE].outcome is CaseOutcome.PASSED


def test_the_same_node_id_from_two_workers_is_counted_once() -> None:
    recorder = RunRecorder()
    run_case(recorder, graded())
    run_case(recorder, graded())
    other = "suites/demo-suite/cases.jsonl::c2"
    second = Identity("case", "demo-suite", "/p/suites/demo-suite", "c2")
    run_case(recorder, graded().model_copy(update={"case_id": "c2"}), other, second)
    assert sorted(recorder.cases) == [CASE_NODE, other]


def test_a_skip_at_setup_is_recorded_with_its_reason() -> None:
    recorder = RunRecorder()
    recorder.record(
        make_report(
            CASE_NODE,
            "setup",
            "skipped",
            identity=CASE,
            longrepr=("session.py", 12, "Skipped: adapter Foo lacks the DemoAdapter protocol"),
        )
    )
    result = recorder.cases[CASE_NODE]
    assert result.outcome is CaseOutcome.SKIPPED
    assert result.failure_class is None
    assert result.failure_reason == "adapter Foo lacks the DemoAdapter protocol"


def test_a_skip_during_the_call_is_recorded_with_its_reason() -> None:
    recorder = RunRecorder()
    recorder.record(make_report(CASE_NODE, "setup", "passed", identity=CASE))
    recorder.record(
        make_report(
            CASE_NODE, "call", "skipped", identity=CASE, longrepr=("x.py", 1, "Skipped: not today")
        )
    )
    assert recorder.cases[CASE_NODE].outcome is CaseOutcome.SKIPPED
    assert recorder.cases[CASE_NODE].failure_reason == "not today"


def test_a_skipped_control_is_not_recorded_as_a_failure() -> None:
    recorder = RunRecorder()
    recorder.record(
        make_report(
            CONTROL_NODE, "setup", "skipped", identity=CONTROL, longrepr=("x", 1, "Skipped: -k")
        )
    )
    assert recorder.controls == {}
    assert recorder.cases == {}


def test_a_control_verdict_is_recorded() -> None:
    verdict = ControlVerdict(
        control_id="always-zero",
        agent="always_zero",
        passed=True,
        failing_dimensions=("answer_correct",),
    )
    recorder = RunRecorder()
    recorder.record(make_report(CONTROL_NODE, "setup", "passed", identity=CONTROL))
    recorder.record(make_report(CONTROL_NODE, "call", "passed", identity=CONTROL, verdict=verdict))
    control = recorder.controls[CONTROL_NODE]
    assert control.verdict == verdict
    assert control.suite_id == "demo-suite"


def test_a_control_call_without_verdict_is_recorded_with_its_reason() -> None:
    recorder = RunRecorder()
    recorder.record(make_report(CONTROL_NODE, "setup", "passed", identity=CONTROL))
    recorder.record(
        make_report(CONTROL_NODE, "call", "failed", identity=CONTROL, longrepr="ungraded agent")
    )
    control = recorder.controls[CONTROL_NODE]
    assert control.verdict is None
    assert control.reason == "ungraded agent"


def test_a_teardown_report_does_not_replace_the_graded_result() -> None:
    recorder = RunRecorder()
    run_case(recorder, graded())
    recorder.record(make_report(CASE_NODE, "teardown", "failed", identity=CASE, longrepr="x"))
    assert recorder.cases[CASE_NODE].outcome is CaseOutcome.PASSED


def test_reports_of_ordinary_tests_are_ignored() -> None:
    recorder = RunRecorder()
    recorder.record(make_report("tests/test_x.py::test_y", "setup", "failed", longrepr="boom"))
    recorder.record(make_report("tests/test_x.py::test_y", "call", "failed", longrepr="boom"))
    assert recorder.cases == {}
    assert recorder.controls == {}
    assert recorder.identities == {}


def test_suite_roots_names_each_suite_once() -> None:
    recorder = RunRecorder()
    run_case(recorder, graded())
    recorder.record(make_report(CONTROL_NODE, "setup", "passed", identity=CONTROL))
    assert recorder.suite_roots() == {"demo-suite": "/p/suites/demo-suite"}


def test_the_adapter_class_that_answered_is_recorded_per_suite() -> None:
    recorder = RunRecorder()
    recorder.record(make_report(CASE_NODE, "setup", "passed", identity=CASE))
    recorder.record(
        make_report(
            CASE_NODE, "call", "passed", identity=CASE, result=graded(), answered_by="m.Agent"
        )
    )
    other = "suites/demo-suite/cases.jsonl::c2"
    second = Identity("case", "demo-suite", "/p/suites/demo-suite", "c2")
    recorder.record(make_report(other, "setup", "passed", identity=second))
    recorder.record(
        make_report(other, "call", "passed", identity=second, result=graded(), answered_by="m.B")
    )
    assert recorder.answered_by == {"demo-suite": {"m.Agent", "m.B"}}


def collect_report(outcome: Outcome, refusal: str | None) -> pytest.CollectReport:
    report = pytest.CollectReport(
        "suites/broken/suite.yaml",
        outcome,
        longrepr="refused" if outcome == "failed" else None,
        result=[],
    )
    if refusal is not None:
        setattr(report, REFUSAL, refusal)
    return report


def test_a_refused_suite_is_recorded_from_its_collection_report() -> None:
    recorder = RunRecorder()
    text = "[duplicate_key] suites/broken/suite.yaml:3: duplicate key 'id'"
    recorder.record_collection(collect_report("failed", text))
    assert recorder.refusals == {"suites/broken/suite.yaml": text}


def test_collection_reports_without_a_refusal_are_ignored() -> None:
    recorder = RunRecorder()
    recorder.record_collection(collect_report("failed", None))
    recorder.record_collection(collect_report("passed", "stale text"))
    assert recorder.refusals == {}


def test_the_case_store_reads_the_last_text_of_each_node_id_whether_just_stored_or_not() -> None:
    """The text stored last is read back without the file; every other from the file."""
    store = CaseStore()
    store.put("a", "s", '{"n": "a1"}')
    store.put("b", "s", '{"n": "b1é"}', canonical=True)
    assert store.text("b") == '{"n": "b1é"}'
    assert store.text("a") == '{"n": "a1"}'
    store.put("a", "s", '{"n": "a2"}')
    assert store.text("a") == '{"n": "a2"}'
    assert store.canonical_text("b") == '{"n": "b1é"}'
    store.put("c", "t", '{"n": "c1"}')
    assert [store.text(nodeid) for nodeid in ("a", "b", "c")] == [
        '{"n": "a2"}',
        '{"n": "b1é"}',
        '{"n": "c1"}',
    ]
    store.close()
    assert len(store) == 0

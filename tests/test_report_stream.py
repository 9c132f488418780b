"""The streamed JSON run report is byte for byte the report the whole-model builder wrote.

The report used to be one :class:`RunReport` holding every case, dumped and
encoded at once. It is now written case by case from the recorder's store.
Each run below goes through the real writer, and the same inputs are also fed
to the former builder (kept here as the reference): both texts must be equal.
"""

from __future__ import annotations

import io
import json
import tracemalloc
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.agents.provenance_records import RunProvenance
from pytest_agentbench.report import json_report
from pytest_agentbench.report.case_store import CaseStore
from pytest_agentbench.report.json_report import AdapterIdentity, RunReport, environment
from pytest_agentbench.report.summary import CaseEntry, RunSummary
from pytest_agentbench.report.transcripts import TranscriptFile
from pytest_agentbench.report.trust import Trust
from pytest_agentbench.scoring.comparison import Comparison
from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.contracts import CaseOutcome, CaseResult
from tests.demo_world import DEMO_CONTROLS, REGISTERING_CONFTEST, write_demo_suite

WRONG_ON_C2 = """\
class Agent:
    def answer(self, question):
        if question == "2+3":
            return 6
        if question == "10+5":
            raise RuntimeError("no answer today")
        left, right = question.split("+")
        return int(left) + int(right)
"""


def whole_model_report(
    summary: RunSummary,
    store: CaseStore,
    durations: Mapping[str, float],
    *,
    rootpath: Path,
    adapter_spec: str | None,
    adapter_description: str,
    exit_status: int,
    comparison: Comparison | None = None,
    model_run: RunProvenance | None = None,
    trust: Trust | None = None,
    transcripts: tuple[TranscriptFile, ...] = (),
) -> str:
    """The former builder: every case entry in the summary, one model, one encoding."""
    results = {nodeid: store[nodeid] for nodeid in store}
    suites = tuple(
        suite.model_copy(
            update={
                "cases": tuple(
                    CaseEntry(nodeid=nodeid, result=result, duration_s=durations.get(nodeid))
                    for nodeid, result in sorted(results.items())
                    if result.suite_id == suite.id
                )
            }
        )
        for suite in summary.suites
    )
    report = RunReport(
        environment=environment(rootpath),
        adapter=AdapterIdentity(spec=adapter_spec, description=adapter_description),
        exit_status=exit_status,
        suites=suites,
        gates=summary.gates,
        problems=summary.problems,
        comparison=comparison,
        model_run=model_run,
        trust=trust,
        transcripts=transcripts,
    )
    return canonical_json(report.model_dump(mode="json")) + "\n"


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every report written while the test runs: (streamed text, former builder's text)."""
    pairs: list[tuple[str, str]] = []
    streamed = json_report.stream_report

    def both(out: Any, summary: RunSummary, store: CaseStore, durations: Any, **kw: Any) -> None:
        text = io.StringIO()
        streamed(text, summary, store, durations, **kw)
        pairs.append((text.getvalue(), whole_model_report(summary, store, durations, **kw)))
        out.write(text.getvalue())

    monkeypatch.setattr(json_report, "stream_report", both)
    return pairs


def assert_identical(pairs: list[tuple[str, str]], report: Path) -> dict[str, Any]:
    assert pairs, "no report was written"
    for streamed, whole in pairs:
        assert streamed == whole
    assert report.read_text(encoding="utf-8") == pairs[-1][0]
    document: dict[str, Any] = json.loads(pairs[-1][0])
    return document


SKIP_S2 = """\
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if item.name.partition("[")[0] == "s2":
            item.add_marker(pytest.mark.skip(reason="not today"))
"""


@pytest.mark.parametrize(
    "args",
    [
        # A skipped case (s2) is stored by the controller from its model, the others as the
        # canonical text their reports carried: the report must not tell them apart.
        pytest.param([], id="serial"),
        pytest.param(["--agentbench-repeat", "2"], id="repeats"),
        # One -n 2 run covers xdist with and without repeats: the repeats' trials and the
        # skipped case (stored by the controller from its model, the others from the
        # canonical text their reports carried) both arrive from workers.
        pytest.param(["-n", "2", "--agentbench-repeat", "2"], id="xdist-repeats"),
    ],
)
def test_streamed_report_equals_the_whole_model_report(
    demo: pytest.Pytester, compared: list[tuple[str, str]], args: list[str]
) -> None:
    write_demo_suite(demo.path, controls=DEMO_CONTROLS)
    write_demo_suite(demo.path, "second-suite", questions={"s1": "4+4", "s2": "0+0"})
    demo.makeconftest(REGISTERING_CONFTEST + SKIP_S2)
    # A suite refused at collection is a problem line of the report.
    broken = demo.path / "suites" / "broken"
    broken.mkdir(parents=True)
    (broken / "suite.yaml").write_text("id: broken\nworld: nowhere\n", encoding="utf-8")
    demo.makepyfile(agents=WRONG_ON_C2)
    path = demo.path / "run.json"
    demo.runpytest(f"--agentbench-report={path}", "--agentbench-adapter=agents:Agent", *args)
    document = assert_identical(compared, path)
    assert [suite["id"] for suite in document["suites"]] == ["demo-suite", "second-suite"]
    assert document["problems"], "the broken suite is reported"
    demo_suite, second_suite = document["suites"]
    outcomes = {entry["result"]["outcome"] for entry in demo_suite["cases"]}
    assert outcomes == {CaseOutcome.PASSED.value, CaseOutcome.FAILED.value}
    assert demo_suite["controls"], "the control's verdict is in the report"
    trials = 2 if "--agentbench-repeat" in args else 1
    assert len(demo_suite["cases"]) == 3 * trials
    second = sorted(
        (entry["result"]["case_id"], entry["result"]["outcome"]) for entry in second_suite["cases"]
    )
    assert second == [("s1", "passed")] * trials + [("s2", "skipped")] * trials


def test_streamed_report_with_a_baseline_comparison(
    demo: pytest.Pytester, compared: list[tuple[str, str]]
) -> None:
    write_demo_suite(demo.path, controls=DEMO_CONTROLS)
    demo.runpytest("--agentbench-report=before.json")
    demo.makepyfile(agents=WRONG_ON_C2)
    path = demo.path / "after.json"
    demo.runpytest(
        f"--agentbench-report={path}",
        "--agentbench-baseline=before.json",
        "--agentbench-adapter=agents:Agent",
    )
    document = assert_identical(compared, path)
    assert document["comparison"] is not None
    assert len(compared) == 2


def test_a_store_gives_each_result_in_canonical_form() -> None:
    store = CaseStore()
    result = CaseResult(suite_id="s", case_id="c1", outcome=CaseOutcome.PASSED, labels=("b",))
    canonical = canonical_json(result.model_dump(mode="json"))
    store["n::plain"] = result
    store.put("n::copied", "s", canonical, canonical=True)
    assert store.text("n::plain") == result.model_dump_json() != canonical
    assert store.canonical_text("n::plain") == canonical
    assert store.canonical_text("n::copied") == canonical
    store.close()


def test_a_store_costs_memory_for_a_slot_per_case_not_a_record() -> None:
    # Issue 41's 10 KB per case: each case's place in the file is one packed int
    # (about 57 bytes a case with the dictionary's share; a tuple of four took 161).
    store = CaseStore()
    nodeids = [f"suites/s/cases.jsonl::case-{n}" for n in range(20_000)]
    text = canonical_json({"outcome": "passed", "padding": "x" * 400})
    store.put("first", "s", text)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for n, nodeid in enumerate(nodeids):
            store.put(nodeid, "s" if n % 3 else "t", text, canonical=bool(n % 2))
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert grown / len(nodeids) < 100
    # Every slot still reads back its suite, its text and whether it was canonical.
    assert store.suite_of(nodeids[3]) == "t"
    assert store.suite_of(nodeids[4]) == "s"
    assert store.text(nodeids[0]) == store.canonical_text(nodeids[1]) == text
    grouped = store.by_suite()
    assert len(grouped["t"]) == 6_667
    assert len(grouped["s"]) == 13_334
    store.close()


def test_a_store_keeps_the_last_result_of_a_node_and_reads_it_back() -> None:
    store = CaseStore()
    first = CaseResult(suite_id="s", case_id="c1", outcome=CaseOutcome.FAILED)
    second = CaseResult(suite_id="s", case_id="c1", outcome=CaseOutcome.PASSED)
    store["n::c1"] = first
    store.put("n::c0", "t", second.model_copy(update={"suite_id": "t"}).model_dump_json())
    store["n::c1"] = second
    assert len(store) == 2
    assert store["n::c1"] == second
    assert store.by_suite() == {"s": ["n::c1"], "t": ["n::c0"]}
    assert [result.case_id for result in store.results()] == ["c1", "c1"]
    store.close()
    assert len(store) == 0


def test_a_store_refuses_more_suites_than_its_slots_can_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_agentbench.report import case_store

    monkeypatch.setattr(case_store, "_SUITE_MASK", 1)
    store = CaseStore()
    store.put("n::a", "s", "{}")
    store.put("n::b", "t", "{}")
    with pytest.raises(OverflowError, match="more than 2 suites"):
        store.put("n::c", "u", "{}")
    assert (store.suite_of("n::a"), store.suite_of("n::b")) == ("s", "t")
    store.close()

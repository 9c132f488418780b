"""The path a graded result takes to the summary: whole text only where something reads it.

A serial run that writes nothing keeps each case's figures (``CaseStore.put_figures``);
an xdist run, a run with a report or receipts, and a suite whose metric has a world
reducer keep the whole text. A serial run keeping the text keeps its figures beside it
(the summary decodes no text); only an xdist controller decodes texts for figures.
Every way gives the same terminal figures.
"""

from __future__ import annotations

import json
import re

import pytest

from pytest_agentbench.report.case_store import CaseStore, FiguresOnly
from pytest_agentbench.sdk.contracts import CaseOutcome, CaseResult, Check, CheckStatus
from tests.demo_world import write_demo_suite

CONFTEST = """
import json

import pytest
from demo_world import TOOLS_WORLD, WORLD, DemoWorld, Reference

from pytest_agentbench.plugin.hooks import RECORDER_KEY
from pytest_agentbench.report.case_store import FiguresOnly
from pytest_agentbench.sdk.contracts import MetricSpec
from pytest_agentbench.sdk.hookspecs import hookimpl


def checks_per_case(results, computed):
    # Reads each result's checks, which only its whole text holds.
    return sum(len(result.checks) for result in results) / len(results), len(results)


class ReducedWorld(DemoWorld):
    kind = "demo-reduced"

    def metrics(self, suite):
        return [
            *super().metrics(suite),
            MetricSpec(
                name="checks_per_case",
                family="answers",
                support_meaning="cases",
                reducer=checks_per_case,
            ),
        ]


@hookimpl
def pytest_agentbench_world_kinds():
    return [WORLD, TOOLS_WORLD, ReducedWorld()]


class WrongOnFive(Reference):
    def answer(self, question):
        return -1 if question == "2+3" else super().answer(question)


@pytest.fixture
def agentbench_adapter():
    return WrongOnFive()


DECODED = []


def pytest_sessionstart(session):
    # Every text the summary decodes for a case's figures, counted.
    from pytest_agentbench.report import case_store

    decode = case_store._decode_own

    def counted(text):
        DECODED.append(text)
        return decode(text)

    case_store._decode_own = counted


def pytest_sessionfinish(session):
    # After the plugin's own (tryfirst) summary, before the store closes.
    recorder = session.config.stash.get(RECORDER_KEY, None)
    if recorder is None:
        return  # an xdist worker
    kept = {}
    for nodeid in recorder.graded:
        try:
            recorder.graded.text(nodeid)
            kept[nodeid] = "text"
        except FiguresOnly:
            kept[nodeid] = "figures"
    kept["decoded"] = len(DECODED)
    (session.config.rootpath / "kept.json").write_text(json.dumps(kept))
"""

QUESTIONS = {"c1": "1+1", "c2": "2+3", "c3": "10+5", "c4": "2+3"}


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    from tests.conftest import DEMO_SOURCE

    pytester.makepyfile(demo_world=DEMO_SOURCE.read_text(encoding="utf-8"))
    pytester.makeconftest(CONFTEST)
    pytester.syspathinsert()
    write_demo_suite(pytester.path, "plain", questions=QUESTIONS)
    write_demo_suite(pytester.path, "reduced", questions=QUESTIONS, world="demo-reduced")
    return pytester


def _figures(result: pytest.RunResult) -> list[str]:
    """The terminal's figures of both suites: counts, coverage, metrics."""
    return [line for line in result.outlines if re.match(r"cases: |coverage: |  [a-z_]+ +\d", line)]


def test_only_a_serial_run_that_writes_nothing_keeps_figures_alone(
    project: pytest.Pytester,
) -> None:
    kept_path = project.path / "kept.json"
    runs = {
        "serial": (),
        "n0-receipts": ("-n", "0", "--agentbench-receipts=receipts"),
        "n2": ("-n", "2"),
        "report": ("--agentbench-report=run.json",),
    }
    figures: dict[str, list[str]] = {}
    kept: dict[str, dict[str, str]] = {}
    decoded: dict[str, int] = {}
    for name, args in runs.items():
        result = project.runpytest("-p", "no:cacheprovider", "-m", "not agentbench_control", *args)
        result.assert_outcomes(passed=4, failed=4)
        figures[name] = _figures(result)
        kept[name] = json.loads(kept_path.read_text())
        decoded[name] = kept[name].pop("decoded")
        kept_path.unlink()
    plain = [nodeid for nodeid in kept["serial"] if nodeid.startswith("suites/plain/")]
    reduced = [nodeid for nodeid in kept["serial"] if nodeid.startswith("suites/reduced/")]
    assert len(plain) == len(reduced) == 4
    # Nothing reads the plain suite's results whole; the reducer reads the other's.
    assert {kept["serial"][nodeid] for nodeid in plain} == {"figures"}
    assert {kept["serial"][nodeid] for nodeid in reduced} == {"text"}
    for name in ("n0-receipts", "n2", "report"):
        assert set(kept[name].values()) == {"text"}, name
    # Figures come from the result graded here; only the xdist controller, which has
    # texts alone, decodes the plain suite's (the reduced suite's are read whole).
    assert decoded == {"serial": 0, "n0-receipts": 0, "n2": 4, "report": 0}
    report = json.loads((project.path / "run.json").read_text())
    reducer = {
        suite["id"]: {metric["name"]: metric["value"] for metric in suite["metrics"]}
        for suite in report["suites"]
    }
    assert reducer["reduced"]["checks_per_case"] == 2.0
    assert reducer["plain"]["accuracy"] == reducer["reduced"]["accuracy"] == 0.5
    # The same figures whichever way the results came.
    assert any("checks_per_case" in line for line in figures["serial"])
    assert figures["serial"] == figures["n0-receipts"] == figures["n2"] == figures["report"]


def _result(case_id: str, suite_id: str = "s") -> CaseResult:
    return CaseResult(
        suite_id=suite_id,
        case_id=case_id,
        outcome=CaseOutcome.FAILED,
        checks=(Check(name="a", status=CheckStatus.FAIL, expected=1, actual=2),),
        measurements={"correct": 0, "scored": 1},
        labels=("x",),
        trial=2,
        cluster="k",
        model="m",
        model_calls={"calls": 1},
    )


def test_a_figures_entry_reads_as_the_text_entry_s_figures() -> None:
    store = CaseStore()
    try:
        store.put("n::text", "s", _result("c1").model_dump_json())
        store.put_figures("n::figures", _result("c1"))
        store.put_figures("n::other", _result("c2", "t"))
        from_text, from_figures = store.figures("n::text"), store.figures("n::figures")
        assert from_figures == from_text
        assert from_figures.checks == ()
        assert from_figures.measurements == {"correct": 0, "scored": 1}
        assert (from_figures.trial, from_figures.unit, from_figures.model) == (2, "k", "m")
        assert store.by_suite() == {"s": ["n::figures", "n::text"], "t": ["n::other"]}
        assert (store.suite_of("n::other"), len(store), "n::figures" in store) == ("t", 3, True)
        for read in (store.text, store.canonical_text, store.__getitem__):
            with pytest.raises(FiguresOnly, match="n::figures: only the figures"):
                read("n::figures")
        # The last entry for a node id wins, whichever kind either is.
        store.put_figures("n::text", _result("c3"))
        assert store.figures("n::text").case_id == "c3"
        with pytest.raises(FiguresOnly):
            store.text("n::text")
        store.put("n::figures", "s", _result("c4").model_dump_json())
        assert store["n::figures"].case_id == "c4"
        # A text stored with the result it was made from: its figures are that result's.
        held = _result("c5")
        store.put("n::held", "s", held.model_dump_json(), figures=held)
        store.put("n::decoded", "s", held.model_dump_json())
        assert store.figures("n::held") == store.figures("n::decoded")
        assert store.figures("n::held").measurements is held.measurements
        assert store["n::held"] == held
        # A later text without its result replaces what was held of the earlier one.
        store.put("n::held", "s", _result("c6").model_dump_json())
        assert store.figures("n::held").case_id == "c6"
        store.put("n::held", "s", held.model_dump_json(), figures=held)
        store.put_figures("n::held", _result("c7"))
        assert store.figures("n::held").case_id == "c7"
    finally:
        store.close()


def test_figures_records_share_one_fields_set_that_a_copy_leaves_alone() -> None:
    store = CaseStore()
    try:
        store.put("n::a", "s", _result("c1").model_dump_json())
        store.put_figures("n::b", _result("c2"))
        first, second = store.figures("n::a"), store.figures("n::b")
        shared = first.model_fields_set
        assert second.model_fields_set is shared
        before = set(shared)
        copied = first.model_copy(update={"exclusion": "budget_exceeded_calls"})
        assert "exclusion" in copied.model_fields_set
        assert first.model_fields_set == second.model_fields_set == before
        with pytest.raises(ValueError, match="frozen"):
            first.exclusion = "x"  # type: ignore[misc]
        assert shared == before
    finally:
        store.close()


def test_the_grouping_by_suite_is_made_once_until_the_store_changes() -> None:
    store = CaseStore()
    try:
        store.put("n::b", "s", _result("c1").model_dump_json())
        store.put_figures("n::a", _result("c2"))
        grouped = store.by_suite()
        # The summary and the run report both ask: the second is not sorted again.
        assert store.by_suite() is grouped == {"s": ["n::a", "n::b"]}
        for change in (
            lambda: store.put("n::c", "t", _result("c3", "t").model_dump_json()),
            lambda: store.put_figures("n::0", _result("c4")),
            lambda: store.__setitem__("n::d", _result("c5", "t")),
        ):
            change()
            assert store.by_suite() is not grouped
            grouped = store.by_suite()
        assert grouped == {"s": ["n::0", "n::a", "n::b"], "t": ["n::c", "n::d"]}
        store.close()
        assert store.by_suite() == {}
    finally:
        store.close()

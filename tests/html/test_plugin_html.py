"""--agentbench-html in real pytest sessions: the same page with and without xdist."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

# Imported here, before any in-process session: pytester drops the modules a session
# imported once it ends, so the serial session and the -n 2 session's controller would
# each import these worlds again.
import pytest_agentbench.worlds.authority.world
import pytest_agentbench.worlds.evidence_binding.world  # noqa: F401
from pytest_agentbench.report.html import render_html
from pytest_agentbench.report.html.sidecar import read_extras
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.packaged import packaged_suites, suites_dir
from tests.demo_world import write_demo_suite
from tests.html import sample
from tests.reports import assert_valid_report, normalised
from tests.test_plugin_operations import SUITE as OPERATIONS_SUITE
from tests.test_plugin_operations import (
    VARIANTS_RUN,
    check_variants_controls_and_projections,
    variants_seen,
)

GOLDENS = Path(__file__).resolve().parents[2] / "snapshots"
"""The project's pinned golden outputs of the built-in suites."""
VOLATILE = re.compile(r'<span class="volatile">[^<]*</span>')


def stable(page: str) -> str:
    """The page without the figures that change between runs (timings)."""
    return VOLATILE.sub("", page)


def assert_page_drawn_from(page: Path, report: Path) -> None:
    """The page a run wrote is the one its JSON report draws, one section per suite (for
    the world tests that run a built-in suite this file leaves to them)."""
    document = json.loads(report.read_text(encoding="utf-8"))
    drawn = page.read_text(encoding="utf-8")
    assert stable(drawn) == stable(render_html(document, read_extras(document, report)))
    for suite in document["suites"]:
        assert f'data-suite="{suite["id"]}"' in drawn


def test_html_is_drawn_from_the_json_report_document(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path, extra_suite_yaml="gates: ['accuracy >= 0.9']\n")
    html, report = demo.path / "out" / "run.html", demo.path / "run.json"
    result = demo.runpytest(
        f"--agentbench-html={html}", f"--agentbench-report={report}", "-m", "not agentbench_control"
    )
    result.assert_outcomes(passed=3)
    page = html.read_text(encoding="utf-8")
    document = json.loads(report.read_text(encoding="utf-8"))
    assert page == render_html(document, read_extras(document, report))
    assert 'data-suite="demo-suite"' in page


def test_html_alone_still_holds_every_case(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path)
    html = demo.path / "run.html"
    demo.runpytest(f"--agentbench-html={html}", "-m", "not agentbench_control").assert_outcomes(
        passed=3
    )
    page = html.read_text(encoding="utf-8")
    assert page.count('<th scope="row"><a href="#case-s0-') == 3
    # The page alone records the adapter's outputs for each case's detail.
    assert all("output" in case for case in sample.case_details(page, "s0"))


GOLDENS_ELSEWHERE = {
    "operations-commerce-v1": "tests/test_judging_builtin.py",
    "operations-maintenance-v1": "tests/test_operations_artifacts.py",
    "retrieval-fixture-v1": "tests/worlds/retrieval/test_world.py",
    "toolgrammar-mini-v1": "tests/test_judging_builtin.py",
}
"""Built-in suites checked against their goldens, and their page against their report
(:func:`assert_page_drawn_from`), by the test file named, in a run of the whole suite it
makes anyway (toolgrammar-mini's 242 cases would be most of this test's time). The
maintenance suite's goldens are checked there; its page here, in the run under ``-n 2``."""
DISTRIBUTED = (
    "asteria-authored-v1",
    "asteria-evidence-binding-v2",
    "enterprise-evidence-binding-v2",
)
"""The suites also run under ``-n 2``: two world kinds, the smallest suites (an inner
``-n 2`` session costs its two workers' start-up whatever it runs). This is where the
evidence-binding suites are compared under ``-n 2``; the other world kinds' own tests
compare their suites under ``-n 2`` with a serial run, the operations world's maintenance
suite in this test's session under ``-n 2`` too (:data:`VARIANTS_RUN`)."""


@pytest.mark.inner_snapshots
def test_built_in_suites_report_identically_without_xdist_and_with_two_workers(
    pytester: pytest.Pytester,
) -> None:
    """Every suite of the main command without xdist, then three of them under ``-n 2``
    with the first run as their baseline; and in that session under ``-n 2``, the
    operations maintenance suite's variants, controls and projections, which a third
    session runs serially (tests/test_plugin_operations.py's :data:`VARIANTS_RUN`): three
    sessions for what two tests each ran a pair of.

    Left out: the suites of ``suites-full/``, and those whose world's own tests run them
    whole with the reference agent anyway and check them against their goldens there
    (:data:`GOLDENS_ELSEWHERE`).

    The page is drawn from the JSON report alone (see the first test), so the two runs'
    documents are compared, suite by suite for the suites both ran, all but the comparison
    the second run adds, and each page is checked against its own document. The first run
    also checks every output against the project's pinned goldens, so a change that moves
    a built-in suite's output fails here, not only under the README's first command.
    """
    main = suites_dir()
    shipped = sorted(suite for suite, path in packaged_suites().items() if path.parent == main)
    assert set(GOLDENS_ELSEWHERE) <= set(shipped)
    shown = [suite for suite in shipped if suite not in GOLDENS_ELSEWHERE]
    assert set(DISTRIBUTED) <= set(shown)
    goldens = ["-o", "agentbench_snapshot=true", "-o", f"agentbench_snapshot_dir={GOLDENS}"]
    serial, parallel = pytester.path / "serial.json", pytester.path / "parallel.json"
    operations = pytester.path / "operations.json"
    variants = [*VARIANTS_RUN, "--agentbench-suite", OPERATIONS_SUITE]
    # Per run: the suites it runs, its own options, and how many suites its page compares
    # (the maintenance suite is no part of the baseline).
    runs = {
        serial: (shown, ["-q", f"--agentbench-report={serial}", *goldens], 0),
        parallel: (
            DISTRIBUTED,
            [
                f"--agentbench-report={parallel}",
                f"--agentbench-baseline={serial}",
                "-n2",
                *variants,
                f"--agentbench-ledger={pytester.path / 'ledger-parallel'}",
            ],
            len(DISTRIBUTED),
        ),
    }
    results = {}
    for report, (suites, extra, _) in runs.items():
        page = report.with_suffix(".html")
        chosen = (f"--agentbench-suite={suite}" for suite in suites)
        result = pytester.runpytest(
            "-p", "no:cacheprovider", *chosen, f"--agentbench-html={page}", *extra
        )
        assert result.ret == 0, result.stdout.str()[-2000:]
        results[report] = result
    results[operations] = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        f"--agentbench-report={operations}",
        *variants,
        f"--agentbench-ledger={pytester.path / 'ledger-serial'}",
    )
    documents = {report: json.loads(report.read_text(encoding="utf-8")) for report in results}
    for document in documents.values():
        assert_valid_report(document)
    assert documents[serial]["comparison"] is None
    assert documents[parallel]["comparison"] is not None
    by_suite = {suite["id"]: suite for suite in documents[serial]["suites"]}
    assert sorted(by_suite) == shown
    spread = {suite["id"]: suite for suite in documents[parallel]["suites"]}
    assert list(spread) == [*DISTRIBUTED, OPERATIONS_SUITE]
    serial_part = {
        **documents[serial],
        "suites": [by_suite[s] for s in DISTRIBUTED],
        "transcripts": transcripts_of(documents[serial], DISTRIBUTED),
    }
    parallel_part = {
        **documents[parallel],
        "comparison": None,
        "suites": [spread[s] for s in DISTRIBUTED],
        "transcripts": transcripts_of(documents[parallel], DISTRIBUTED),
    }
    assert normalised(parallel_part) == normalised(serial_part)
    # The maintenance suite's transcripts: the same bytes serially and under -n 2.
    assert normalised(transcripts_of(documents[parallel], [OPERATIONS_SUITE])) == normalised(
        transcripts_of(documents[operations], [OPERATIONS_SUITE])
    )
    assert transcripts_of(documents[operations], [OPERATIONS_SUITE]), "its cases use tools"
    for report, (suites, _, compared) in runs.items():
        page = report.with_suffix(".html").read_text(encoding="utf-8")
        drawn = render_html(documents[report], read_extras(documents[report], report))
        assert stable(page) == stable(drawn)
        for suite_id in documents[report]["suites"]:
            assert f'data-suite="{suite_id["id"]}"' in page
        assert page.count('class="volatile"') >= len(suites)
        assert page.count('class="compared-suite"') == compared
        assert page.count('class="plot forest"') == compared
        # Each case with a transcript in the sidecar carries it in its detail, and the
        # compared suites list both runs' answers case by case (the baseline read back).
        assert page.count("<h4>Side by side: ") == compared
        named = {entry["suite_id"]: entry["cases"] for entry in documents[report]["transcripts"]}
        assert bool(named) is (report == parallel), "the maintenance suite's cases use tools"
        for number, suite in enumerate(documents[report]["suites"]):
            details = sample.case_details(page, f"s{number}")
            assert sum("transcript" in d for d in details) == named.get(suite["id"], 0)

    # The maintenance suite, serially and among the suites under -n 2: its 14 items pass
    # alike, each case's ledger audits, and the two runs show the same.
    results[operations].assert_outcomes(passed=14, warnings=0)
    others = sum(len(by_suite[s]["cases"]) + len(by_suite[s]["controls"]) for s in DISTRIBUTED)
    results[parallel].assert_outcomes(passed=14 + others, warnings=0)
    (alone,) = documents[operations]["suites"]
    seen = {
        run: variants_seen(results[report], suite, pytester.path / f"ledger-{run}", run)
        for run, report, suite in (
            ("serial", operations, alone),
            ("parallel", parallel, spread[OPERATIONS_SUITE]),
        )
    }
    assert seen["parallel"] == seen["serial"], "the same figures and ledgers under -n 2"
    check_variants_controls_and_projections(seen["serial"])


def transcripts_of(document: dict[str, Any], suites: Sequence[str]) -> list[Any]:
    """The report's transcripts files of these suites."""
    return [entry for entry in document["transcripts"] if entry["suite_id"] in suites]


def test_with_a_baseline_the_page_draws_the_forest_and_the_flipped_cases(
    demo: pytest.Pytester,
) -> None:
    questions = {f"c{i}": f"{i}+{i}" for i in range(12)}
    write_demo_suite(demo.path, questions=questions)
    before = demo.path / "before.json"
    demo.runpytest(f"--agentbench-report={before}", "-m", "not agentbench_control")
    wrong = {cid: (i * 2 if i < 3 else -1) for i, cid in enumerate(questions)}
    write_demo_suite(demo.path, questions=questions, answers=wrong)
    html, after = demo.path / "after.html", demo.path / "after.json"
    demo.runpytest(
        f"--agentbench-baseline={before}",
        "--agentbench-baseline-allow-changed",
        f"--agentbench-report={after}",
        f"--agentbench-html={html}",
        "-m",
        "not agentbench_control",
    )
    document = json.loads(after.read_text(encoding="utf-8"))
    assert document["comparison"] is not None
    page = html.read_text(encoding="utf-8")
    assert page == render_html(document, read_extras(document, after))
    assert '<section class="comparison" id="comparison"' in page
    # The two runs' answers and verdicts side by side, the nine that flipped first.
    assert "Side by side: 9 of 12 cases changed" in page
    table = page[page.index('<table class="side-by-side"') :]
    changes = re.findall(r'<tr class="change-(\d)">', table[: table.index("</table>")])
    assert changes == ["0"] * 9 + ["3"] * 3
    rows = document["comparison"]["suites"][0]["rows"]
    assert page.count('class="plot forest"') == 1
    drawn = page.count('class="mark-value significant"') + page.count(
        'class="mark-value not-significant"'
    )
    assert drawn == sum(1 for row in rows if row["difference"] is not None)
    flipped = document["comparison"]["suites"][0]["passed_only_before"]
    assert len(flipped) == 9
    assert "Passed in the baseline, not now: 9" in page
    assert "Holm-adjusted p" in page


def test_a_page_rebuilt_from_the_run_shows_the_transcripts_of_one_read_back(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the JSON report cannot be written (a full disk), the page is built from the
    run itself: it still shows every case's transcript, as a page read back does."""
    write_demo_suite(demo.path, questions={"c1": "1+2", "c2": "2+2"}, world="demo-tools")
    args = ("-m", "not agentbench_control", "-p", "no:randomly")
    read_back, rebuilt = demo.path / "read.html", demo.path / "rebuilt.html"
    demo.runpytest(
        *args, f"--agentbench-report={demo.path / 'read.json'}", f"--agentbench-html={read_back}"
    ).assert_outcomes(passed=2)

    from pytest_agentbench.report import json_report

    def full_disk(path: Path, *_: Any, **__: Any) -> None:
        raise AgentbenchError("output_unwritable", "No space left on device", file=str(path))

    monkeypatch.setattr(json_report, "write_report", full_disk)
    result = demo.runpytest(
        *args, f"--agentbench-report={demo.path / 'lost.json'}", f"--agentbench-html={rebuilt}"
    )
    result.assert_outcomes(passed=2)
    assert not (demo.path / "lost.json").exists()

    def transcripts(page: Path) -> dict[str, Any]:
        details = sample.case_details(page.read_text(encoding="utf-8"), "s0")
        return {case["id"]: case.get("transcript") for case in details}

    shown = transcripts(read_back)
    assert sorted(shown) == ["c1", "c2"]
    assert all(events and events[-1]["event"] == "final" for events in shown.values())
    assert transcripts(rebuilt) == shown

"""The HTML report in headless Chromium: the DOM after load, console, network, keyboard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.report.html import write_html
from pytest_agentbench.scoring.comparison import Comparison
from tests.browser import Browser, dump_dom, find_chromium
from tests.html import sample

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on PATH (.ci/run installs Debian's chromium; the install failed here)",
)


OPEN_CASE = """const openCase = async (hash) => {
  // The detail is drawn once its compressed block is inflated: wait for the panel to say so.
  const panel = document.getElementById(hash.split('-')[1] + '-detail');
  location.hash = hash;
  window.dispatchEvent(new HashChangeEvent('hashchange'));
  for (let tries = 0; tries < 1000 && panel.dataset.shown !== hash.slice(1); tries++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  if (panel.dataset.shown !== hash.slice(1)) { throw new Error('no detail for ' + hash); }
  return panel;
};
"""
"""A page-side helper: open a case by its link and resolve with its drawn detail panel."""


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("html") / "report.html"
    write_html(sample.report(sample.suite("alpha", 20), sample.suite("beta", 300)), path)
    return path


def test_page_loads_with_no_console_error_and_no_request_but_itself(
    browser: Browser, page: Path
) -> None:
    load = browser.open(page.as_uri())
    assert load.console_errors == []
    assert load.exceptions == []
    assert load.requests == [page.as_uri()]
    counts = browser.evaluate(
        """({
        suites: [...document.querySelectorAll('section.suite')].map(s => s.dataset.suite),
        plots: document.querySelectorAll('svg.dot-whisker').length,
        values: document.querySelectorAll('svg .mark-value').length,
        nulls: document.querySelectorAll('svg .mark-null').length,
        gates: document.querySelectorAll('svg .mark-gate').length,
        groups: document.querySelectorAll('#s1 details.group').length,
        rows: document.querySelectorAll('#s0 table.cases tbody tr').length,
        })"""
    )
    assert counts == {
        "suites": ["alpha", "beta"],
        "plots": 6,
        "values": 6,
        "nulls": 2,
        "gates": 4,
        "groups": 15,
        "rows": 20,
    }
    browser.screenshot(page.with_name("top.png"))


def test_a_cell_opens_the_case_detail_with_expected_and_actual(
    browser: Browser, page: Path
) -> None:
    browser.open(page.as_uri())
    # A case of the large suite sits in a closed group: the link must open it.
    detail = browser.evaluate(
        OPEN_CASE
        + """(async () => {
        const panel = await openCase('#case-s1-3-k1');
        const focused = panel.querySelector('tr.focus');
        const group = document.querySelector('#s1 a[href="#case-s1-3"]').closest('details');
        return {
          heading: panel.querySelector('h4').textContent,
          focused: focused ? [...focused.cells].map(c => c.textContent) : null,
          calls: panel.querySelectorAll('table')[1].tBodies[0].rows.length,
          active: document.activeElement === panel,
          open: group.open,
        };
        })()""",
        await_promise=True,
    )
    assert detail["heading"] == "Case ops-T4-00003"
    assert detail["focused"] == ["answer_keys_present", "✗ fail", '"right"', '"wrong"', ""]
    assert detail["calls"] == 4
    assert detail["active"] is True
    assert detail["open"] is True
    browser.screenshot(page.with_name("detail.png"))


def test_arrow_keys_move_between_grid_cells(browser: Browser, page: Path) -> None:
    browser.open(page.as_uri())
    first = "#s0 table.cases tbody tr:first-child th a"
    browser.evaluate(f"document.querySelector('{first}').focus()")
    for key in ("ArrowRight", "ArrowRight", "ArrowDown"):
        browser.send(
            "Input.dispatchKeyEvent",
            {
                "type": "keyDown",
                "key": key,
                "code": key,
                "windowsVirtualKeyCode": {"ArrowRight": 39, "ArrowDown": 40}[key],
            },
        )
        browser.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "code": key})
    # Failing cases come first: case 3 heads the grid, case 5 follows it.
    assert browser.evaluate("document.activeElement.getAttribute('href')") == "#case-s0-5-k1"


def test_comparison_draws_a_forest_and_links_flipped_cases(
    browser: Browser, tmp_path: Path
) -> None:
    document = sample.report(sample.suite("alpha", 40))
    document["comparison"] = sample.comparison("alpha", ["ops-T4-00003", "gone-case"])
    Comparison.model_validate(document["comparison"])
    path = tmp_path / "compared.html"
    write_html(document, path)
    load = browser.open(path.as_uri())
    assert (load.console_errors, load.exceptions, load.requests) == ([], [], [path.as_uri()])
    drawn = browser.evaluate(
        """({
        diamonds: document.querySelectorAll('svg.forest .mark-value').length,
        filled: document.querySelectorAll('svg.forest .mark-value.significant').length,
        whiskers: document.querySelectorAll('svg.forest .mark-interval').length,
        nulls: document.querySelectorAll('svg.forest .mark-null').length,
        flipped: [...document.querySelectorAll('#comparison ul.flipped li')].map(
          li => [li.textContent, li.querySelector('a') ? li.querySelector('a').hash : null]),
        })"""
    )
    assert drawn == {
        "diamonds": 3,
        "filled": 2,
        "whiskers": 3,
        "nulls": 1,
        "flipped": [["ops-T4-00003", "#case-s0-3"], ["gone-case", None]],
    }
    browser.evaluate("document.getElementById('comparison').scrollIntoView()")
    browser.screenshot(tmp_path / "comparison.png")


def test_dump_dom_after_load_holds_every_suite(page: Path, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    dom = dump_dom(CHROMIUM, page.as_uri(), tmp_path / "profile")
    assert 'data-suite="alpha"' in dom
    assert 'data-suite="beta"' in dom
    assert dom.count('class="plot dot-whisker"') == 6


def test_opening_an_authority_case_shows_its_recorded_trace_row(
    browser: Browser, tmp_path: Path
) -> None:
    authority = sample.suite("authority-demo", 4, interactive=False)
    authority["world"] = "authority"
    authority["cases"][2]["result"]["recorded"] = sample.recorded(sample.trace_row("evt-0042"))
    path = tmp_path / "authority.html"
    write_html(sample.report(authority), path)
    load = browser.open(path.as_uri())
    assert (load.console_errors, load.exceptions) == ([], [])
    shown = browser.evaluate(
        OPEN_CASE
        + """(async () => {
        const open = async (hash) => {
          const panel = await openCase(hash);
          return {
            headings: [...panel.querySelectorAll('h4')].map(h => h.textContent),
            output: panel.querySelector('pre.adapter-output')
              ? panel.querySelector('pre.adapter-output').textContent : null,
          };
        };
        return {recorded: await open('#case-s0-2'), plain: await open('#case-s0-1')};
        })()""",
        await_promise=True,
    )
    recorded = shown["recorded"]
    assert "Adapter output (tests.agents:Oracle)" in recorded["headings"]
    assert json.loads(recorded["output"])["event_id"] == "evt-0042"
    assert '\n  "event_id": "evt-0042",\n' in recorded["output"]
    assert shown["plain"]["output"] is None
    assert not any(h.startswith("Adapter output") for h in shown["plain"]["headings"])
    browser.evaluate("location.hash = '#case-s0-2'")
    browser.screenshot(tmp_path / "authority-detail.png")


def _wide_suite() -> dict[str, Any]:
    """A suite whose grid has many long-named checks, a long traceback and long values."""
    wide = sample.suite("wide", 6)
    names = [f"behaviour_check_with_a_long_descriptive_name_{n:02d}" for n in range(40)]
    unbroken = "x" * 600
    for entry in wide["cases"]:
        result = entry["result"]
        result["checks"] = [
            {"actual": unbroken, "detail": None, "expected": "y", "name": name, "status": "fail"}
            for name in names
        ]
        result["failure_traceback"] = (
            'Traceback (most recent call last):\n  File "' + "/deep" * 80 + '.py", line 1\n'
            "ValueError: " + unbroken
        )
    return wide


@pytest.mark.parametrize("width", [1280, 1920])
def test_the_page_and_its_grid_fit_the_window_without_sideways_scrolling(
    tmp_path: Path, width: int
) -> None:
    """40 long-named checks: their names run upwards, so the single grid fits at 1280 px
    with no scroll bar of its own, and neither the page nor an open case scrolls sideways."""
    assert CHROMIUM is not None
    path = tmp_path / "wide.html"
    write_html(sample.report(_wide_suite(), sample.suite("beta", 300)), path)
    instance = Browser(CHROMIUM, tmp_path / "profile", width=width)
    try:
        load = instance.open(path.as_uri())
        assert load.exceptions == []
        measure = """(() => {
          const grid = document.querySelector('#s0 table.cases');
          return {
            viewport: window.innerWidth,
            page: document.scrollingElement.scrollWidth,
            grid: grid.scrollWidth,
            box: grid.parentElement.clientWidth,
            headings: grid.querySelectorAll('th.check').length,
          };
        })()"""
        before = instance.evaluate(measure)
        assert before["viewport"] == width
        assert before["headings"] == 40
        assert before["page"] <= width
        assert before["grid"] <= before["box"], "the grid scrolls sideways in its box"
        instance.evaluate(OPEN_CASE + "openCase('#case-s0-0-k1')", await_promise=True)
        shown = instance.evaluate(
            "document.querySelector('#s0-detail pre.adapter-traceback').textContent"
        )
        assert shown.startswith("Traceback (most recent call last):")
        assert instance.evaluate(measure)["page"] <= width
        instance.evaluate("window.scrollTo(0, 0)")
        instance.screenshot(tmp_path / f"wide-{width}.png")
    finally:
        instance.close()


def test_a_case_in_a_later_compressed_block_opens_with_its_details(
    browser: Browser, tmp_path: Path
) -> None:
    large = sample.suite("large", 1200)
    path = tmp_path / "large.html"
    write_html(sample.report(large), path)
    page = path.read_text(encoding="utf-8")
    case_id = large["cases"][1101]["result"]["case_id"]
    # The details are not in the page as text: only inflated, by the page's script.
    assert f"answer of {case_id}" not in page
    assert page.count('id="cases-s0-c') == 3
    load = browser.open(path.as_uri())
    assert (load.console_errors, load.exceptions, load.requests) == ([], [], [path.as_uri()])
    shown = browser.evaluate(
        OPEN_CASE
        + """(async () => {
        const first = await openCase('#case-s0-1101-k1');
        const seen = {
          heading: first.querySelector('h4').textContent,
          focused: [...first.querySelector('tr.focus').cells].map(c => c.textContent),
          final: [...first.querySelectorAll('pre')].map(p => p.textContent).at(-1),
        };
        const other = await openCase('#case-s0-7');
        seen.other = other.querySelector('h4').textContent;
        seen.active = document.activeElement === other;
        return seen;
        })()""",
        await_promise=True,
    )
    assert shown == {
        "heading": f"Case {case_id}",
        "focused": ["answer_keys_present", "✓ pass", '"right"', '"right"', ""],
        "final": f'{{"answer":"answer of {case_id}","state_diff":""}}',
        "other": f"Case {large['cases'][7]['result']['case_id']}",
        "active": True,
    }
    assert browser.evaluate("document.querySelectorAll('.detail-error').length") == 0

"""The report as a viewer: contents, filters, search, transcripts, comparison, keyboard.

The page-side parts run in headless Chromium (skipped cleanly without it); what the
page is built from (the sidecar's digest, the search index, the order) is read as text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli.main import main
from pytest_agentbench.report.html import grid, render_html, write_html
from pytest_agentbench.report.html.sidecar import EVENT_LIMIT, bounded_events, read_extras
from pytest_agentbench.sdk.errors import AgentbenchError
from tests.browser import Browser, find_chromium
from tests.html import sample
from tests.html.test_browser import OPEN_CASE

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on PATH (.ci/run installs Debian's chromium; the install failed here)",
)


def _index(page: str, sid: str) -> list[Any]:
    found = re.search(rf'<script type="[^"]+" id="index-{sid}" data-cases="\d+">([^<]*)<', page)
    assert found is not None
    import base64
    import zlib

    return list(json.loads(zlib.decompress(base64.b64decode(found[1]), -zlib.MAX_WBITS)))


def test_contents_count_each_suite_and_list_the_most_failing_first() -> None:
    calm, busy = sample.suite("calm", 3), sample.suite("busy", 30)
    page = render_html(sample.report(calm, busy))
    toc = page[page.index('<nav class="toc"') : page.index("</nav>")]
    entries = re.findall(
        r'<li><a href="#(s\d)">([^<]+)</a> <span class="counts">(.*?)</span></li>', toc
    )
    assert [(sid, name) for sid, name, _ in entries] == [("s1", "busy"), ("s0", "calm")]
    failed = busy["counts"]["failed"]
    assert f"✗ {failed} failed" in entries[0][2]
    assert f"✓ {busy['counts']['passed']} passed" in entries[0][2]
    # Case rows list failing cases first, then passes, each in report order.
    rows = re.findall(r'<tr><th scope="row"><a href="#case-s1-(\d+)">', page)
    outcomes = [busy["cases"][int(i)]["result"]["outcome"] for i in rows]
    assert outcomes == sorted(outcomes, key=lambda o: o == "passed")
    assert outcomes.count("failed") == failed


def test_the_search_index_holds_ids_labels_prompts_and_answers_of_every_case(
    tmp_path: Path,
) -> None:
    document = sample.report(sample.suite("alpha", 12))
    report = tmp_path / "run.json"
    sample.with_transcripts(document, report, every=3)
    page = render_html(document, read_extras(document, report))
    index = _index(page, "s0")
    assert len(index) == 12
    outcome, failure_class, labels, text = index[5]
    assert (outcome, failure_class) == ("failed", "agent_error")
    assert labels == ["tier_T1", "world_clinic"]
    assert "clinic-t1-00005" in text
    assert "answer of clinic-t1-00005" in text, "the receipt's final answer"
    assert "lighthouse" not in text, "case 5 has no transcript: no prompt"
    assert "find the open record of ops-t1-00000 (lighthouse)" in index[0][3]
    assert "the answer is rec-00001" in index[0][3], "the transcript's raw answer"
    # The whole index travels compressed: the prompt is not in the page as text.
    assert "lighthouse" not in page


def test_transcripts_are_embedded_bounded_and_only_when_their_digest_matches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = sample.report(sample.suite("alpha", 4))
    report = tmp_path / "run.json"
    sample.with_transcripts(document, report)
    report.write_text(json.dumps(document), encoding="utf-8")
    assert main(["html", str(report)]) == 0
    details = sample.case_details(report.with_suffix(".html").read_text(encoding="utf-8"), "s0")
    assert [event["event"] for event in details[0]["transcript"]] == [
        "model_request",
        "model_response",
        "tool_call",
        "model_response",
        "final",
    ]
    # A changed byte in the sidecar: the page is refused by name, not drawn.
    sidecar = tmp_path / "run.json.transcripts" / "alpha.ndjson"
    sidecar.write_bytes(sidecar.read_bytes().replace(b"lighthouse", b"lightHouse", 1))
    assert main(["html", str(report), "-o", str(tmp_path / "refused.html")]) == 1
    err = capsys.readouterr().err
    assert "[transcripts_digest_mismatch]" in err
    assert "alpha.ndjson" in err
    assert "transcripts[0].digest_sha256" in err
    assert not (tmp_path / "refused.html").exists()
    sidecar.unlink()
    with pytest.raises(AgentbenchError) as missing:
        read_extras(document, report)
    assert missing.value.code == "transcripts_missing"
    document["transcripts"][0]["file"] = "../elsewhere.ndjson"
    with pytest.raises(AgentbenchError) as outside:
        read_extras(document, report)
    assert (outside.value.code, outside.value.location.field) == (
        "invalid_run_report",
        "transcripts[0].file",
    )
    long = [{"event": "model_response", "text": {"text": "y" * 5000}}] * (EVENT_LIMIT + 7)
    kept = bounded_events(long)
    assert len(kept) == EVENT_LIMIT + 1
    assert kept[-1] == {"event": "page_cut", "dropped": 7}
    assert kept[0]["text"]["text"].endswith("(4000 more characters in the file)")


def test_a_baseline_that_is_not_found_leaves_the_comparison_saying_so(tmp_path: Path) -> None:
    document = sample.report(sample.suite("alpha", 10))
    document["comparison"] = sample.comparison("alpha", [])
    document["comparison"]["baseline"]["path"] = str(tmp_path / "gone.json")
    extras = read_extras(document, tmp_path / "run.json")
    assert extras.baseline is None
    page = render_html(document, extras)
    assert "is not found here, so its answers are not shown" in page
    assert "Side by side" not in page


def _compared(tmp_path: Path, cases: int = 40) -> tuple[dict[str, Any], Path]:
    """A run and its baseline: the baseline passed case 3 and answered case 8 otherwise."""
    before = sample.report(sample.suite("alpha", cases))
    passed = before["suites"][0]["cases"][3]["result"]
    passed.update(outcome="passed", failure_class=None, failure_reason=None)
    for check in passed["checks"]:
        check["status"] = "pass"
    receipt = before["suites"][0]["cases"][8]["result"]["receipt"]
    receipt["canonical"]["final"] = {"answer": "an older answer", "state_diff": ""}
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(before), encoding="utf-8")
    after = sample.report(sample.suite("alpha", cases))
    after["comparison"] = sample.comparison("alpha", ["ops-T4-00003"])
    after["comparison"]["baseline"]["path"] = "baseline.json"
    return after, tmp_path / "run.json"


def test_side_by_side_lists_changed_cases_first_with_both_answers(tmp_path: Path) -> None:
    document, report = _compared(tmp_path)
    page = render_html(document, read_extras(document, report))
    assert "Side by side: 2 of 40 cases changed" in page
    table = page[page.index('<table class="side-by-side"') :]
    table = table[: table.index("</table>")]
    first = re.findall(r'<tr class="change-(\d)"><th scope="row"><a href="#case-s0-(\d+)"', table)
    assert first[:2] == [("0", "3"), ("2", "8")]
    assert {change for change, _ in first[2:]} == {"3"}
    assert "an older answer" in table
    assert "answer of ops-T4-00003" in table


FILTER = r"""const filter = async (changes) => {
  // Set the controls as a user would, then wait for the filter pass they start.
  const status = document.getElementById('f-status');
  for (const [id, value] of Object.entries(changes)) {
    const control = document.getElementById(id);
    control.value = value;
    control.dispatchEvent(new Event(id === 'f-search' ? 'input' : 'change', {bubbles: true}));
  }
  const value = (id) => document.getElementById(id).value;
  const want = JSON.stringify([value('f-outcome'), value('f-class'), value('f-label'),
    value('f-search').trim().toLowerCase().split(/\s+/).filter(Boolean)]);
  for (let tries = 0; tries < 1000 && status.dataset.query !== want; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  if (status.dataset.query !== want) { throw new Error('the filter did not apply ' + want); }
  const visible = [...document.querySelectorAll('#s0 table.cases tbody tr')]
    .filter((tr) => !tr.hidden).map((tr) => tr.querySelector('th a').textContent);
  const groups = [...document.querySelectorAll('#s0 details.group')].filter((d) => !d.hidden);
  return {status: status.textContent, visible: visible, groups: groups.length};
};
"""


@needs_chromium
def test_filters_and_search_narrow_the_cases_in_the_browser(
    browser: Browser, tmp_path: Path
) -> None:
    document = sample.report(sample.suite("alpha", 200))
    report = tmp_path / "run.json"
    sample.with_transcripts(document, report, every=10)
    path = tmp_path / "viewer.html"
    write_html(document, path, source=report)
    load = browser.open(path.as_uri())
    assert (load.console_errors, load.exceptions, load.requests) == ([], [], [path.as_uri()])
    cases = [entry["result"] for entry in document["suites"][0]["cases"]]

    def ids(keep: Any) -> list[str]:
        return sorted(c["case_id"] for c in cases if keep(c))

    seen = browser.evaluate(
        FILTER
        + """(async () => ({
          failed: await filter({'f-outcome': 'failed'}),
          tier: await filter({'f-label': 'tier_T2'}),
          klass: await filter({'f-outcome': '', 'f-label': '', 'f-class': 'agent_error'}),
          word: await filter({'f-class': '', 'f-search': 'OPS-T3'}),
          prompt: await filter({'f-search': 'lighthouse clinic'}),
          answer: await filter({'f-search': 'answer of doc-T1-0004'}),
          none: await filter({'f-search': 'no such thing'}),
          cleared: await filter({'f-search': ''}),
        }))()""",
        await_promise=True,
    )
    failed = ids(lambda c: c["outcome"] == "failed")
    assert sorted(seen["failed"]["visible"]) == failed
    assert seen["failed"]["status"] == f"{len(failed)} of 200 cases match"
    tier = ids(lambda c: c["outcome"] == "failed" and "tier_T2" in c["labels"])
    assert sorted(seen["tier"]["visible"]) == tier
    assert seen["tier"]["groups"] == len({c[:-6] for c in tier}), "groups without a match hide"
    assert sorted(seen["klass"]["visible"]) == ids(lambda c: c["failure_class"] == "agent_error")
    assert sorted(seen["word"]["visible"]) == ids(lambda c: c["case_id"].startswith("ops-T3"))
    # The prompt is only in the transcripts (every tenth case has one).
    assert sorted(seen["prompt"]["visible"]) == sorted(
        c["case_id"] for n, c in enumerate(cases) if n % 10 == 0 and "clinic" in c["case_id"]
    )
    answered = ids(lambda c: c["case_id"].startswith("doc-T1-0004"))
    assert sorted(seen["answer"]["visible"]) == answered
    assert (seen["none"]["visible"], seen["none"]["groups"]) == ([], 0)
    assert seen["none"]["status"] == "0 of 200 cases match"
    assert len(seen["cleared"]["visible"]) == 200
    assert seen["cleared"]["status"] == ""
    # Filtering inflated no case detail: only the index.
    assert browser.evaluate("document.querySelectorAll('.case-detail h4').length") == 0


@needs_chromium
def test_a_case_shows_its_transcript_as_a_conversation(browser: Browser, tmp_path: Path) -> None:
    document = sample.report(sample.suite("alpha", 20))
    report = tmp_path / "run.json"
    sample.with_transcripts(document, report)
    path = tmp_path / "viewer.html"
    write_html(document, path, source=report)
    load = browser.open(path.as_uri())
    assert (load.console_errors, load.exceptions) == ([], [])
    shown = browser.evaluate(
        OPEN_CASE
        + """(async () => {
        const panel = await openCase('#case-s0-1');
        const box = panel.querySelector('.transcript');
        const who = [...box.children].map((m) => m.classList.contains('fold')
          ? 'fold:' + m.querySelector('summary').textContent
          : m.querySelector('.who').textContent);
        const long = box.querySelector('details.long');
        const tool = box.querySelector('details.fold.msg-tool');
        return {
          who: who,
          asked: box.querySelector('.msg-assistant details.asked summary').textContent,
          toolOpen: tool.open,
          toolText: tool.textContent,
          longOpen: long ? long.open : null,
          longSummary: long ? long.querySelector('summary').textContent : null,
          final: box.querySelector('.msg-final pre').textContent,
          why: box.querySelector('.msg-final .detail-error').textContent,
          headings: [...panel.querySelectorAll('h4')].map((h) => h.textContent),
        };
        })()""",
        await_promise=True,
    )
    assert shown["who"] == [
        "system prompt",
        "user",
        "model, stopped: tool_calls, 50 tokens in, 9 out",
        "fold:tool get_record #0 → result, 61 bytes",
        "model, stopped: stop, 90 tokens in, 12 out",
        "final answer as returned: refused",
    ]
    assert shown["asked"] == "asks for tool get_record (call-1)"
    assert shown["toolOpen"] is False
    assert '"status":"open"' in shown["toolText"]
    # Case 1's answer is long: collapsed behind its first words, whole when opened.
    assert shown["longOpen"] is False
    assert shown["longSummary"].startswith("Let me think about it.")
    assert shown["longSummary"].endswith("characters: show all)")
    assert shown["final"].endswith("The answer is REC-00001.")
    assert shown["why"] == "why: [malformed_json] Expecting value (column 1)"
    # What the agent said comes right after the checks, before the receipt it left.
    headings = [h.split(" (")[0] for h in shown["headings"]]
    assert headings[1:] == [
        "Checks: expected and actual",
        "Transcript",
        "Tool-session receipt",
        "Final answer",
    ]
    assert "Transcript (5 events)" in shown["headings"]


@needs_chromium
def test_comparison_puts_both_answers_side_by_side_in_the_case_view(
    browser: Browser, tmp_path: Path
) -> None:
    document, report = _compared(tmp_path)
    path = tmp_path / "compared.html"
    write_html(document, path, source=report)
    load = browser.open(path.as_uri())
    assert (load.console_errors, load.exceptions) == ([], [])
    shown = browser.evaluate(
        OPEN_CASE
        + """(async () => {
        const link = document.querySelector('table.side-by-side tbody tr a');
        const panel = await openCase(link.getAttribute('href'));
        const sides = [...panel.querySelectorAll('.compared .pair > div')];
        return sides.map((side) => [...side.children].map((n) => n.textContent));
        })()""",
        await_promise=True,
    )
    assert shown == [
        ["baseline", "✓ passed", '{"answer":"answer of ops-T4-00003","state_diff":""}'],
        [
            "this run",
            "✗ failed (agent_error)",
            "failed: answer_keys_present",
            '{"answer":"answer of ops-T4-00003","state_diff":""}',
        ],
    ]


def _key(browser: Browser, key: str, code: str, vk: int, text: str | None = None) -> None:
    down: dict[str, Any] = {"type": "keyDown", "key": key, "code": code}
    down["windowsVirtualKeyCode"] = vk
    if text is not None:
        down["text"] = text
    browser.send("Input.dispatchKeyEvent", down)
    browser.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "code": code})


@needs_chromium
def test_keyboard_slash_searches_j_and_k_move_enter_opens(browser: Browser, tmp_path: Path) -> None:
    document = sample.report(sample.suite("alpha", 20))
    path = tmp_path / "keys.html"
    write_html(document, path)
    browser.open(path.as_uri())
    browser.evaluate("document.body.focus()")
    _key(browser, "/", "Slash", 191, "/")
    assert browser.evaluate("document.activeElement.id") == "f-search"
    assert browser.evaluate("document.getElementById('f-search').value") == ""
    browser.evaluate("document.activeElement.blur()")
    for key in "jjjk":
        _key(browser, key, f"Key{key.upper()}", ord(key.upper()), key)
    # Failing cases first: 3, 5, 10, ... ; three steps down and one up land on case 5.
    assert browser.evaluate("document.activeElement.getAttribute('href')") == "#case-s0-5"
    focus = browser.evaluate(
        "(() => { const s = getComputedStyle(document.activeElement);"
        " return [s.outlineStyle, s.outlineWidth, s.outlineColor]; })()"
    )
    assert focus == ["solid", "3px", "rgb(154, 52, 18)"], "a visible focus ring (7:1 on white)"
    _key(browser, "Enter", "Enter", 13, "\r")
    opened = browser.evaluate(
        """(async () => {
        const panel = document.getElementById('s0-detail');
        for (let i = 0; i < 500 && panel.dataset.shown !== 'case-s0-5'; i++) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        return panel.dataset.shown;
        })()""",
        await_promise=True,
    )
    assert opened == "case-s0-5"
    # From the open case, j goes on to the next visible case.
    _key(browser, "j", "KeyJ", 74, "j")
    assert browser.evaluate("document.activeElement.getAttribute('href')") == "#case-s0-10"
    labels = browser.evaluate(
        "[...document.querySelectorAll('#filters select, #filters input')]"
        ".map((c) => document.querySelector('label[for=\"' + c.id + '\"]').textContent)"
    )
    assert labels == ["outcome", "failure class", "label", "search"]


def test_grid_rows_carry_a_symbol_beside_the_outcome_colour() -> None:
    page = render_html(sample.report(sample.suite("alpha", 8)))
    assert '<td class="outcome oc-failed">✗ failed</td>' in page
    assert '<td class="outcome oc-passed">✓ passed</td>' in page
    assert grid.OUTCOME_MARK["error"] == "! "

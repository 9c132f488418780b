"""The HTML page drawn from a run report document, read as text and as XML-ish markup."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pytest_agentbench.cli.main import main
from pytest_agentbench.report.html import grid, render_html
from pytest_agentbench.sdk.contracts import RecordedOutput
from tests.html import sample


class Collector(HTMLParser):
    """Tags, attributes and external references of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def parsed(page: str) -> Collector:
    collector = Collector()
    collector.feed(page)
    return collector


def with_class(page: str, cls: str) -> int:
    return sum(1 for _, attrs in parsed(page).tags if cls in (attrs.get("class") or "").split())


def test_page_is_self_contained() -> None:
    page = render_html(sample.report(sample.suite("alpha", 30)))
    for tag, attrs in parsed(page).tags:
        for name in ("src", "href"):
            target = attrs.get(name)
            assert target is None or target.startswith("#"), (tag, attrs)
        assert tag not in {"link", "img", "iframe", "object", "embed"}
    assert "default-src 'none'" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page


def test_every_suite_and_metric_family_is_drawn_with_a_table_beside_it() -> None:
    page = render_html(sample.report(sample.suite("alpha", 30), sample.suite("beta", 90)))
    assert page.count('<section class="suite"') == 2
    # outcome, safety, cost: three families per suite, each a plot and a table.
    assert with_class(page, "dot-whisker") == 6
    assert page.count('aria-label="metrics of family') == 6
    assert with_class(page, "count-bar") == 2
    # pass_at_1 and behaviour_accuracy are dots; injection_resistance is null.
    assert with_class(page, "mark-value") == 2 * 3
    assert with_class(page, "mark-null") == 2
    assert with_class(page, "mark-gate") == 2 * 2


def test_a_null_metric_reads_not_computable_in_plot_and_table() -> None:
    page = render_html(sample.report(sample.suite("alpha", 20)))
    row = re.search(r"<th scope=\"row\">injection_resistance.*?</tr>", page)
    assert row is not None
    assert "not computable" in row.group(0)
    assert "0.0000" not in row.group(0)


def test_small_suites_get_one_open_grid_large_ones_groups_with_an_aggregate() -> None:
    small = render_html(sample.report(sample.suite("alpha", 20)))
    assert small.count('<details class="group"') == 1
    assert '<details class="group" id="grid-s0-g0" open>' in small
    assert 'class="grid aggregate"' not in small
    large = render_html(sample.report(sample.suite("alpha", 300)))
    # 5 tiers x 3 worlds
    assert large.count('<details class="group"') == 15
    assert " open>" not in large
    assert large.count('class="grid aggregate"') == 1


def test_grid_cells_carry_a_symbol_and_link_to_the_case_detail() -> None:
    page = render_html(sample.report(sample.suite("alpha", 20)))
    # case 3 fails answer_keys_present (column 1); case 5 misses behaviour_correct.
    assert '<td class="st-fail"><a href="#case-s0-3-k1" tabindex="-1" title="fail">✗</a>' in page
    assert 'href="#case-s0-5-k2" tabindex="-1" title="missing">?</a>' in page
    # citations_match is graded on T5 cases only: elsewhere it is "not graded".
    assert 'href="#case-s0-0-k3" tabindex="-1" title="not graded">' in page
    cases = sample.case_details(page, "s0")
    assert len(cases) == 20
    assert cases[3]["checks"][1] == {
        "actual": '"wrong"',
        "detail": "",
        "expected": '"right"',
        "name": "answer_keys_present",
        "status": "fail",
    }
    assert cases[3]["receipt"]["calls"][0]["tool"] == "get_record"


def test_controls_show_declared_and_observed_dimensions() -> None:
    page = render_html(sample.report(sample.suite("alpha", 10)))
    row = re.search(r"<th scope=\"row\">control-leaky</th>.*?</tr>", page)
    assert row is not None
    cells = re.findall(r"<td>(.*?)</td>", row.group(0))
    # observed: state_diff, behaviour; behaviour was a surprise and answer_keys was
    # declared but passed, so declared = answer_keys_present + state_diff_matches.
    assert cells[1] == "<code>answer_keys_present</code>, <code>state_diff_matches</code>"
    assert cells[2] == "<code>state_diff_matches</code>, <code>behaviour_correct</code>"
    assert "✗ NOT as declared" in row.group(0)


def test_text_in_the_report_is_escaped_even_inside_the_data_block() -> None:
    suite = sample.suite("alpha", 3)
    suite["title"] = "<script>alert(1)</script>"
    suite["cases"][0]["result"]["failure_reason"] = "</script><script>alert(2)</script>"
    page = render_html(sample.report(suite))
    assert "alert(1)</script>" not in page
    assert "</script><script>alert(2)" not in page
    detail = sample.case_details(page, "s0")[0]
    assert detail["failure_reason"] == "</script><script>alert(2)</script>"


LARGE_CASES = 3000
PAGE_BYTES_PER_CASE = 600
"""Measured 514 bytes a case at 3,000 sample cases (1,840 when details were plain JSON)."""


def test_a_large_run_embeds_its_case_details_compressed_in_blocks() -> None:
    large = sample.suite("large", LARGE_CASES)
    page = render_html(sample.report(large))
    assert len(page.encode("utf-8")) < PAGE_BYTES_PER_CASE * LARGE_CASES
    blocks = re.findall(r'id="cases-s0-c\d+" data-first="\d+" data-count="(\d+)">([^<]*)<', page)
    assert [int(count) for count, _ in blocks] == [grid.CHUNK_CASES] * 6
    details = sample.case_details(page, "s0")
    assert [case["id"] for case in details] == [c["result"]["case_id"] for c in large["cases"]]
    embedded = sum(len(text) for _, text in blocks)
    assert len(json.dumps(details)) > 10 * embedded


def test_a_report_missing_fields_still_renders() -> None:
    page = render_html({"schema_version": "agentbench-run-report/9", "suites": [{"id": "x"}]})
    assert '<section class="suite" id="s0" data-suite="x"' in page
    assert "No metrics in this report." in page
    assert "No case results in this report." in page
    broken = render_html(
        {
            "suites": [
                {
                    "id": "y",
                    "metrics": [{"name": "m", "value": "high", "interval": [1]}],
                    "cases": "none",
                }
            ]
        }
    )
    assert "not computable" in broken


def test_rendering_is_deterministic() -> None:
    document = sample.report(sample.suite("alpha", 120))
    assert render_html(document) == render_html(json.loads(json.dumps(document)))


def test_cli_writes_the_page_beside_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "run.json"
    document = sample.report(sample.suite("alpha", 12))
    source.write_text(json.dumps(document), encoding="utf-8")
    assert main(["html", str(source)]) == 0
    assert (tmp_path / "run.html").read_text(encoding="utf-8") == render_html(document)
    assert main(["html", str(source), "-o", str(tmp_path / "out" / "page.html")]) == 0
    assert (tmp_path / "out" / "page.html").is_file()
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('{"a": 1, "a": 2}', "duplicate_key"),
        ("[1, 2]", "invalid_run_report"),
        ('{"schema_version": "other/1", "suites": []}', "invalid_run_report"),
        ('{"schema_version": "agentbench-run-report/1", "suites": {}}', "invalid_run_report"),
        ("{not json", "malformed_json"),
    ],
)
def test_cli_refuses_what_is_not_a_run_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, code: str
) -> None:
    source = tmp_path / "run.json"
    source.write_text(text, encoding="utf-8")
    assert main(["html", str(source)]) == 1
    err = capsys.readouterr().err
    assert f"[{code}]" in err
    assert str(source) in err
    assert not (tmp_path / "run.html").exists()


def test_comparison_section_tables_every_row_and_links_flipped_cases() -> None:
    document = sample.report(sample.suite("alpha", 20))
    document["comparison"] = sample.comparison("alpha", ["ops-T4-00003", "gone-case"])
    page = render_html(document)
    assert '<a href="#comparison">' in page
    assert page.count('class="plot forest"') == 1
    table = re.search(r'aria-label="metric differences">.*?</table>', page)
    assert table is not None
    assert table.group(0).count('<th scope="row">') == 4
    assert '<td class="verdict-fail">✗ regression</td>' in table.group(0)
    assert '<td class="verdict-neutral">= no significant change</td>' in table.group(0)
    assert '<li><a href="#case-s0-3">ops-T4-00003</a></li><li>gone-case</li>' in page
    assert "Passed in the baseline, not now: 2" in page


def test_a_comparison_missing_fields_still_renders() -> None:
    document = sample.report(sample.suite("alpha", 5))
    document["comparison"] = {"suites": [{"id": "alpha", "rows": [{"metric": "m"}]}]}
    page = render_html(document)
    assert "✗ FAILED" in page
    assert page.count('class="mark-null"') >= 2
    assert render_html({**document, "comparison": None}).count('id="comparison"') == 0


def test_coverage_trials_and_trial_cases_are_drawn() -> None:
    repeated = sample.suite("alpha", 4)
    for entry in repeated["cases"]:
        entry["result"]["trial"] = 2
    repeated["coverage"] = {
        "total": 8,
        "selected": 4,
        "run": 4,
        "missing": 0,
        "complete": False,
    }
    figure = {"value": 0.5, "interval": [0.25, 0.75], "cases": 4, "clusters": 2}
    repeated["trials"] = {
        "trials": 2,
        "cases": 4,
        "clusters": 2,
        "pass_at_1": figure,
        "pass_hat_k": {**figure, "value": 0.25},
        "pass_at_k": {**figure, "value": None, "interval": None},
        "consistency": 0.75,
        "inconsistent_cases": ["c1"],
    }
    page = render_html(sample.report(repeated, sample.suite("beta", 3)))
    assert (
        "<dt>coverage</dt><dd>8 in suite, 4 selected, 4 run, 0 missing "
        '<strong class="partial">(partial run)</strong></dd>'
    ) in page
    # A report without coverage (schema /1) says so instead of inventing counts.
    assert page.count("<dt>coverage</dt><dd><em>not recorded</em></dd>") == 1
    assert page.count("<h3>Trials</h3>") == 1
    assert (
        '<tr><th scope="row">pass^2</th><td class="num">0.2500</td>'
        '<td class="num">[0.2500, 0.7500]</td></tr>'
    ) in page
    assert '<tr><th scope="row">pass@2</th><td class="num">null</td><td class="num"></td>' in page
    assert "0.7500 (1 cases pass some trials only: c1)" in page
    case_id = repeated["cases"][0]["result"]["case_id"]
    assert f"{case_id}[trial-2]" in page


def _detail_cases(page: str) -> list[dict[str, object]]:
    cases: list[dict[str, object]] = sample.case_details(page, "s0")
    return cases


def test_the_detail_carries_the_recorded_adapter_output_pretty_printed() -> None:
    suite = sample.suite("alpha", 3, interactive=False)
    row = sample.trace_row("evt-0042")
    suite["cases"][1]["result"]["recorded"] = sample.recorded(row)
    suite["cases"][2]["result"]["recorded"] = sample.recorded(None)
    RecordedOutput.model_validate(suite["cases"][1]["result"]["recorded"])
    cases = _detail_cases(render_html(sample.report(suite)))
    # No ``recorded`` (the run kept none): no output, not an empty one.
    assert "output" not in cases[0]
    assert cases[1]["output"] == {
        "adapter": "tests.agents:Oracle",
        "json": json.dumps(row, sort_keys=True, indent=2),
    }
    # An adapter that answered nothing recorded null: shown as such.
    assert cases[2]["output"] == {"adapter": "tests.agents:Oracle", "json": "null"}


def test_a_large_adapter_output_is_cut_with_a_count_of_what_was_left_out() -> None:
    suite = sample.suite("alpha", 1, interactive=False)
    suite["cases"][0]["result"]["recorded"] = sample.recorded({"records": ["r" * 50] * 200})
    shown = _detail_cases(render_html(sample.report(suite)))[0]["output"]
    assert isinstance(shown, dict)
    assert len(shown["json"]) < grid.OUTPUT_LIMIT + 40
    assert shown["json"].endswith(" more characters)")


def test_script_end_tags_inside_the_adapter_output_are_escaped() -> None:
    suite = sample.suite("alpha", 1, interactive=False)
    hostile = {"note": "</script><script>alert(3)</script>"}
    suite["cases"][0]["result"]["recorded"] = sample.recorded(hostile)
    page = render_html(sample.report(suite))
    assert "alert(3)</script>" not in page
    assert "</script><script>alert(3)" not in page
    output = _detail_cases(page)[0]["output"]
    assert isinstance(output, dict)
    assert json.loads(output["json"]) == hostile


def test_a_case_names_its_episode_artefact_in_its_detail() -> None:
    report = sample.report(sample.suite("alpha", 5))
    result = report["suites"][0]["cases"][3]["result"]
    result["artifact"] = {"file": "alpha/c3.artifact.json", "digest_sha256": "a" * 64}
    page = render_html(report)
    cases = _detail_cases(page)
    assert cases[3]["artifact"] == {"file": "alpha/c3.artifact.json", "digest": "a" * 64}
    assert "artifact" not in cases[2]
    assert '"episode artefact"' in page


def test_judged_diagnostics_sit_apart_and_name_each_judges_calibration() -> None:
    """A calibrated rubric shows its kappa, an unlabelled classifier ``uncalibrated``."""
    calibrated = {
        "rater": "answer-prose:majority",
        "status": "calibrated",
        "support": 4,
        "categories": ["1", "2", "3", "4", "5"],
        "confusion": [],
        "kappa": 0.6,
        "agreement": 0.75,
    }
    unlabelled = {
        **calibrated,
        "rater": "toolgrammar.behaviour:toolgrammar.behaviour",
        "status": "uncalibrated",
        "support": 0,
        "kappa": None,
    }
    rubric = {
        "name": "answer-prose",
        "source": "demo-suite/rubrics/answer-prose.yaml",
        "seats": ["local/alpha-judge", "local/beta-judge"],
        "dropped": ["local/qwen-judge"],
        "items": 4,
        "passed": 3,
        "split": 1,
        "unparsable": 0,
        "refused": 0,
        "calibration": calibrated,
        "seat_calibration": [
            {**calibrated, "rater": "answer-prose:local/alpha-judge", "kappa": 0.25},
            {**unlabelled, "rater": "answer-prose:local/beta-judge"},
        ],
        "traffic": None,
        "gate": "judged:answer-prose: pass rate 0.750 vs >= 0.5 (PASS; judge kappa 0.600)",
    }
    document = sample.report(sample.suite("alpha", 3))
    assert 'id="judged"' not in render_html(document)
    document["judged"] = {
        "role": "diagnostic",
        "judgments": "run.judgments.json",
        "rubrics": [rubric],
        "classifiers": [{"name": "toolgrammar.behaviour", "labels": 3, "calibration": unlabelled}],
        "cases": [
            {
                "suite_id": "alpha",
                "case_id": case,
                "rubric": "answer-prose",
                "majority": 4,
                "passed": True,
                "disagreement": spread,
                "scores": {"local/alpha-judge": 4, "local/beta-judge": 4 + spread},
                "unparsable": 0,
                "refused": 0,
            }
            for case, spread in (("calm", 0), ("split", 1))
        ],
    }
    page = render_html(document)
    section = page.split('<section class="judged" id="judged">')[1].split("</section>")[0]
    assert "they decide no outcome, metric or gate" in section
    assert '<td class="judge-calibrated">kappa 0.600 on 4 labels</td>' in section
    assert '<td class="judge-uncalibrated">uncalibrated (no human labels)</td>' in section
    assert '<td class="num">3/4</td>' in section
    assert (
        '<code>local/alpha-judge</code> <span class="judge-calibrated">kappa 0.250 on 4 labels'
        "</span>, <code>local/beta-judge</code> "
        '<span class="judge-uncalibrated">uncalibrated (no human labels)</span>'
    ) in section
    assert "dropped (family of the model under test): <code>local/qwen-judge</code>" in section
    assert "<em>all from the judge cache</em>" in section
    assert "(PASS; judge kappa 0.600)" in section
    # Each judged case beside its seats' scores, disagreements first.
    assert section.index("<code>alpha/split</code>") < section.index("<code>alpha/calm</code>")
    # The suites' own gates table is not where a judged number goes.
    assert page.index('id="judged"') > page.rindex('aria-label="gates"')


def test_hostile_text_in_the_judged_member_is_escaped_everywhere_it_is_drawn() -> None:
    """Rubric, seat, suite, case, gate, traffic and unjudged-reason text come from files a
    suite author or a judge's endpoint wrote: none of it is drawn as markup."""
    bad = '"><script>alert({})</script>'
    calibration = {
        "rater": bad.format(1), "status": "calibrated", "support": 4,
        "categories": [bad.format(2)], "confusion": [], "kappa": 0.6, "agreement": 0.75,
    }  # fmt: skip
    rubric = {
        "name": bad.format(3),
        "source": bad.format(4),
        "seats": [bad.format(5)],
        "dropped": [bad.format(6)],
        "items": 1, "passed": 1, "split": 0, "unparsable": 0, "refused": 0,
        "unjudged": {bad.format(7): 1},
        "calibration": calibration,
        "seat_calibration": [calibration],
        "traffic": {
            "models": [bad.format(8)], "mode": bad.format(9), "calls": 1, "attempts": 1,
            "input_tokens": 1, "output_tokens": 1, "cost": bad.format(10),
            "refused": 1, "refusal": bad.format(11), "ledger": bad.format(12),
        },
        "gate": bad.format(13),
    }  # fmt: skip
    document = sample.report(sample.suite("alpha", 1))
    document["judged"] = {
        "role": "diagnostic",
        "judgments": bad.format(14),
        "rubrics": [rubric],
        "classifiers": [{"name": bad.format(15), "labels": 1, "calibration": calibration}],
        "cases": [
            {
                "suite_id": bad.format(16), "case_id": bad.format(17), "rubric": bad.format(3),
                "majority": 4, "passed": True, "disagreement": 0,
                "scores": {bad.format(18): 4}, "unparsable": 0, "refused": 0,
            }
        ],
    }  # fmt: skip
    page = render_html(document)
    section = page.split('<section class="judged" id="judged">')[1].split("</section>")[0]
    assert "<script" not in section
    # Every one was drawn, as text (the calibration's rater and categories are not shown).
    drawn = {n for n in range(1, 19) if f"&lt;script&gt;alert({n})&lt;/script&gt;" in section}
    assert drawn == set(range(3, 19)) - {4}, drawn

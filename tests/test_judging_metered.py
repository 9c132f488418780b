"""Judge calls under the run's budget guard and provider ledger, in the JSON and HTML reports.

One pytest session judges its own report with a call ceiling that leaves two
seat calls unsent; the judged numbers and the refusal land in the JSON report
(schema-valid) and the HTML page, and ``agentbench audit`` holds the judgments
to the judges' ledger rows. A second session, under ``-n 2``, must judge alike:
the two sessions are the test's time (about 10 s on a quiet machine).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli.main import main
from pytest_agentbench.report.html import render_html
from pytest_agentbench.sdk.canonical import artifact_set_digest, tree_files
from tests.demo_runs import demo_project, run_cases
from tests.demo_world import MANIFEST
from tests.judge_server import ScriptedJudges
from tests.reports import assert_valid_report
from tests.test_cli_judging import ADAPTERS, GATE, QUESTIONS
from tests.test_judging import RUBRIC

PRICES = {
    "delta-9b": ("0.001", "0.002"),
    "alpha-judge": ("0.0001", "0.0005"),
    "beta-judge": ("0.0002", "0.001"),
    "gamma-judge": ("0.0003", "0.002"),
}
JUDGE_LEDGER = "%judges/answer-prose.ndjson"


def pricing_table(path: Path) -> Path:
    models = {
        model: {"input_per_token": given, "output_per_token": taken}
        for model, (given, taken) in PRICES.items()
    }
    path.write_text(
        json.dumps({"scheme": "agentbench-pricing/1", "currency": "USD", "models": models})
    )
    return path


def expected_cost(models: list[str]) -> str:
    """100 prompt and 10 completion tokens per call (the scripted judges' usage)."""
    from decimal import Decimal

    total = sum(
        (Decimal(PRICES[m][0]) * 100 + Decimal(PRICES[m][1]) * 10 for m in models), Decimal(0)
    )
    return format(total.normalize(), "f")


def test_judge_calls_share_the_runs_budget_and_ledger_and_reach_every_report(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = demo_project(demo, QUESTIONS, ADAPTERS)
    suite = project.path / "suites" / "demo-suite"
    (suite / "rubrics").mkdir()
    (suite / "rubrics" / "answer-prose.yaml").write_text(RUBRIC % "gamma-judge" + GATE)
    files = tree_files(suite, exclude=("suite.yaml", MANIFEST))
    digest = artifact_set_digest({rel: path.read_bytes() for rel, path in files.items()})
    (suite / MANIFEST).write_text(json.dumps({"artifact_set_digest": digest}))
    pricing = pricing_table(project.path / "pricing.json")
    for name in ("AGENTBENCH_CASSETTES", "AGENTBENCH_CASSETTE_MODE"):
        monkeypatch.delenv(name, raising=False)
    # The model under test is named (and priced) so the run states its provenance; the demo
    # adapter makes no model call, so the ceiling of 10 calls is the judges' to reach. One
    # turn a case and no retry keep the run's worst case (4 cases x 1 turn x 1 request)
    # under it before any call.
    for name, value in (
        ("AGENTBENCH_LLM_MODEL", "delta-9b"),
        ("AGENTBENCH_LLM_MAX_TURNS", "1"),
        ("AGENTBENCH_LLM_MAX_RETRIES", "0"),
    ):
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(project.path)
    options = [
        "--agentbench-adapter=my_adapters:Adds",
        "--agentbench-judge-cache=cache",
        "--agentbench-ledger=ledgers",
        "--agentbench-html=run.html",
        f"--agentbench-pricing={pricing}",
        "--agentbench-max-calls=10",
    ]
    judges = ScriptedJudges()
    with judges.serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        result, report = run_cases(project, "run.json", *options)
        assert result.ret == 0, result.stdout.str()[-3000:]
        # Ten calls sent; c4's beta and gamma seats refused before they were sent.
        assert sum(judges.calls.values()) == 10
        result.stdout.fnmatch_lines(
            [
                "*answer-prose: 2/4 pass by majority*; uncalibrated",
                "*[[]budget_exceeded_calls[]] 1 items judged by fewer seats*",
                "*judges: alpha-judge, beta-judge, gamma-judge (live): 10 calls, 10 attempts, "
                "tokens 1000 in / 100 out, cost *, 2 refused; ledger %judges/answer-prose.ndjson",
            ]
        )
        judgments = json.loads((project.path / "run.judgments.json").read_text())
        last = judgments["items"][3]["judgment"]
        assert (last["case_id"], last["refused"], last["unparsable"]) == ("demo-suite/c4", 2, 0)
        assert [(v["seat"], v["score"], v["refused"]) for v in last["verdicts"]] == [
            ("local/alpha-judge", 5, None),
            ("local/beta-judge", None, "budget_exceeded_calls"),
            ("local/gamma-judge", None, "budget_exceeded_calls"),
        ]
        assert (last["majority"], last["passed"]) == (5, True)
        # The labels file offers only the seats that voted.
        labels = json.loads((project.path / "run.labels.json").read_text())
        assert set(labels["items"][3]["predictions"]) == {"local/alpha-judge", "majority"}

        json_and_html_carry_the_judged_numbers(project.path, report)

        the_judges_ledger_audits(project.path, pricing, capsys)

        # Under -n 2 the judges reserve from the tally the workers shared, and with
        # --agentbench-concurrency three seat calls are in flight at once: the same ten
        # calls, the same refusals, the same votes and numbers (from a cold cache).
        fresh = [o.replace("=cache", "=cache2").replace("=ledgers", "=ledgers2") for o in options]
        spread, parallel = run_cases(
            project, "parallel.json", *fresh, "-n", "2", "--agentbench-concurrency=3"
        )
        assert spread.ret == 0, spread.stdout.str()[-3000:]
        assert sum(judges.calls.values()) == 20
        assert parallel["judged"]["rubrics"] == report["judged"]["rubrics"]
        spread_judgments = json.loads((project.path / "parallel.judgments.json").read_text())
        assert spread_judgments["items"] == judgments["items"]

        # Refused verdicts were never cached: judging again asks only those two seats,
        # here under `agentbench judge`'s own ceiling of one call and its own ledger.
        # It then refuses the uncalibrated gate the pytest run only showed.
        rejudge = [
            "judge",
            "run.json",
            "--judge-cache",
            "cache",
            "--ledger",
            "again",
            "--into-report",
        ]
        assert main([*rejudge, "--max-calls", "1"]) == 1
        assert "[uncalibrated_judge_gate]" in capsys.readouterr().err
    assert sum(judges.calls.values()) == 21
    again = json.loads((project.path / "run.judgments.json").read_text())
    assert again["items"][3]["judgment"]["refused"] == 1
    assert again["rubrics"]["answer-prose"]["traffic"]["calls"] == 1
    rows = (project.path / "again" / JUDGE_LEDGER).read_text().splitlines()
    assert [json.loads(row)["row_kind"] for row in rows] == ["header", "call", "call", "terminal"]
    # --into-report: the report's `judged` is the new judging's, its outcomes untouched,
    # and `agentbench html` draws it.
    rejudged = json.loads((project.path / "run.json").read_text())
    assert rejudged["judged"]["rubrics"][0]["traffic"]["calls"] == 1
    assert {k: v for k, v in rejudged.items() if k != "judged"} == {
        k: v for k, v in report.items() if k != "judged"
    }
    assert main(["html", "run.json", "-o", "again.html"]) == 0
    assert "not checked: [uncalibrated_judge_gate]" in (project.path / "again.html").read_text()


def audit_refusals(folder: Path, pricing: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Judgments that do not match the judges' ledger, or are missing, are refused by code."""
    path = folder / "run.judgments.json"
    original = path.read_text()
    cases: list[tuple[str, Any]] = [
        ("audit_judge_mismatch", lambda d: d["rubrics"]["answer-prose"]["traffic"].update(calls=9)),
        (
            "audit_judge_mismatch",
            lambda d: d["rubrics"]["answer-prose"]["traffic"].update(ledger="../run.json"),
        ),
        (
            "audit_terminal_mismatch",
            lambda d: d["rubrics"]["answer-prose"]["traffic"].update(
                refusal="budget_exceeded_cost"
            ),
        ),
        ("audit_cost_mismatch", lambda d: d["rubrics"]["answer-prose"]["traffic"].update(cost="1")),
    ]
    for code, change in cases:
        document = json.loads(original)
        change(document)
        path.write_text(json.dumps(document))
        assert main(["audit", "run.json", "ledgers", "--pricing", str(pricing)]) == 1
        assert code in capsys.readouterr().err
    path.unlink()
    assert main(["audit", "run.json", "ledgers"]) == 1
    assert "audit_ledger_unreported" in capsys.readouterr().err
    path.write_text(original)


def json_and_html_carry_the_judged_numbers(folder: Path, report: dict[str, Any]) -> None:
    # The JSON report carries the judged numbers beside its untouched outcomes.
    assert_valid_report(report)
    assert [e["result"]["outcome"] for e in report["suites"][0]["cases"]] == ["passed"] * 4
    assert report["model_run"]["calls"] == 0, "judge calls are not the model run's"
    rubric = report["judged"]["rubrics"][0]
    assert (rubric["items"], rubric["passed"], rubric["refused"]) == (4, 2, 1)
    assert rubric["calibration"]["status"] == "uncalibrated"
    # The rubric's own gate is not checked without calibration, and says so; the
    # run's gates and exit status know nothing of it.
    assert rubric["gate"].startswith("judged:answer-prose: not checked: [uncalibrated_judge_gate]")
    assert (report["gates"], report["exit_status"]) == ([], 0)
    models = ["alpha-judge", "beta-judge", "gamma-judge"] * 3 + ["alpha-judge"]
    assert rubric["traffic"] == {
        "models": ["alpha-judge", "beta-judge", "gamma-judge"],
        "mode": "live",
        "calls": 10,
        "attempts": 10,
        "input_tokens": 1000,
        "output_tokens": 100,
        "cost": expected_cost(models),
        "refused": 2,
        "refusal": "budget_exceeded_calls",
        "ledger": JUDGE_LEDGER,
    }
    # The page is drawn again from the judged report.
    page = (folder / "run.html").read_text()
    assert page == render_html(report)
    section = page.split('<section class="judged" id="judged">')[1].split("</section>")[0]
    assert "uncalibrated (no human labels)" in section
    assert [c["status"] for c in rubric["seat_calibration"]] == ["uncalibrated"] * 3
    assert report["judged"]["cases"][3] == {
        "suite_id": "demo-suite",
        "case_id": "c4",
        "rubric": "answer-prose",
        "majority": 5,
        "passed": True,
        "disagreement": 0,
        "scores": {"local/alpha-judge": 5, "local/beta-judge": None, "local/gamma-judge": None},
        "unparsable": 0,
        "refused": 2,
    }
    assert "4 cases judged on <code>answer-prose</code>" in section
    assert "<code>local/beta-judge</code> refused" in section
    assert "<code>budget_exceeded_calls</code>" in section
    assert "<code>%judges/answer-prose.ndjson</code>" in section
    assert "not checked: [uncalibrated_judge_gate]" in section
    assert '<a href="#judged">judged diagnostics</a>' in page


def the_judges_ledger_audits(
    folder: Path, pricing: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The judges' ledger ends excluded under the refusal; audit holds both to the rows.
    rows = [json.loads(line) for line in (folder / "ledgers" / JUDGE_LEDGER).open()]
    assert [r["row_kind"] for r in rows] == ["header"] + ["call"] * 12 + ["terminal"]
    assert rows[-1]["terminal"]["exclusion_code"] == "budget_exceeded_calls"
    assert rows[0]["header"]["provider"]["models"] == [
        "alpha-judge",
        "beta-judge",
        "gamma-judge",
    ]
    capsys.readouterr()
    assert main(["audit", "run.json", "ledgers", "--pricing", str(pricing)]) == 0
    assert "10 judge calls" in capsys.readouterr().out
    audit_refusals(folder, pricing, capsys)

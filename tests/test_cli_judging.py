"""``agentbench judge`` and ``agentbench calibrate`` over real run reports, serial and -n 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from pytest_agentbench.cli.main import main
from pytest_agentbench.sdk.canonical import artifact_set_digest, tree_files
from tests.demo_runs import demo_project, run_cases
from tests.demo_world import MANIFEST
from tests.judge_server import ScriptedJudges
from tests.test_judging import RUBRIC

QUESTIONS = {"c1": "1+1", "c2": "2+3", "c3": "20+13", "c4": "4+4"}
ADAPTERS = """
class Adds:
    def answer(self, question):
        left, right = question.split("+")
        return int(left) + int(right)
"""
GATE = "gate: {min_pass_rate: 0.5, min_kappa: 0.5}\n"


def judged_here(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo suite given the answer-prose rubric (its file returned), judged from the
    project's folder with no model or cassettes of the run's configured."""
    rubric = project.path / "suites" / "demo-suite" / "rubrics" / "answer-prose.yaml"
    rubric.parent.mkdir()
    rubric.write_text(RUBRIC % "gamma-judge", encoding="utf-8")
    monkeypatch.chdir(project.path)
    for name in ("AGENTBENCH_LLM_MODEL", "AGENTBENCH_CASSETTES", "AGENTBENCH_CASSETTE_MODE"):
        monkeypatch.delenv(name, raising=False)
    return rubric


def test_a_run_judged_in_pytest_and_by_the_command_serial_and_parallel_alike_then_calibrating(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One serial run and one under ``-n 2``, both judged by pytest itself with a cache;
    then ``agentbench judge`` over each run's report from that cache, and a person's labels
    calibrating the judges (two sessions for what two tests each ran a pair of)."""
    project = demo_project(demo, QUESTIONS, ADAPTERS)
    suite = project.path / "suites" / "demo-suite"
    (suite / "rubrics").mkdir()
    rubric = suite / "rubrics" / "answer-prose.yaml"
    rubric.write_text(RUBRIC % "gamma-judge")
    # A rubric inside a suite folder is part of the suite's artifact set: re-pin it.
    files = tree_files(suite, exclude=("suite.yaml", MANIFEST))
    digest = artifact_set_digest({rel: path.read_bytes() for rel, path in files.items()})
    (suite / MANIFEST).write_text(json.dumps({"artifact_set_digest": digest}))
    for name in ("AGENTBENCH_LLM_MODEL", "AGENTBENCH_CASSETTES", "AGENTBENCH_CASSETTE_MODE"):
        monkeypatch.delenv(name, raising=False)
    judged = ["--agentbench-adapter=my_adapters:Adds", "--agentbench-judge-cache=cache"]
    judges = ScriptedJudges()
    with judges.serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        serial_run, serial = run_cases(project, "serial.json", *judged, "--junitxml=serial.xml")
        parallel_run, parallel = run_cases(project, "parallel.json", *judged, "-n", "2")
    assert serial_run.ret == parallel_run.ret == 0
    assert len(parallel["suites"][0]["cases"]) == len(QUESTIONS)
    check_judged_in_pytest(project, serial_run, parallel_run, serial)
    # The parallel run was judged from the serial run's cache: no further judge call.
    assert sum(judges.calls.values()) == 3 * len(QUESTIONS)

    # The command, from the project's folder with no endpoint, model or cassettes.
    monkeypatch.chdir(project.path)
    monkeypatch.delenv("AGENTBENCH_LLM_BASE_URL")
    check_the_command_judges_each_report_from_the_cache(project, capsys, serial)

    labels = check_calibrating_and_gating(project, rubric, capsys)
    assert sum(judges.calls.values()) == 3 * len(QUESTIONS)
    # Labels survive a re-judge of the same content, bound to its digest.
    kept = json.loads((project.path / "serial.labels.json").read_text())
    assert all(item["human_digest"] == item["digest"] for item in kept["items"])
    assert [item["human"] for item in kept["items"]] == [item["human"] for item in labels["items"]]


def check_calibrating_and_gating(
    project: pytest.Pytester, rubric: Path, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    """A person's labels calibrate the judges; the rubric's gate is refused, then checked.
    Every judging here is answered from the cache (no endpoint is up)."""
    # A person labels: agrees with the majority on three items, not on c3.
    labels_file = project.path / "serial.labels.json"
    labels = label_like_the_majority_except(labels_file, "demo-suite/c3", "4")
    capsys.readouterr()
    # Four labels are not enough to call a judge calibrated (30 by default) ...
    assert main(["calibrate", "serial.labels.json"]) == 0
    out = capsys.readouterr().out
    assert "answer-prose:majority: uncalibrated (4 of the 30 labels needed; kappa" in out
    # ... unless the project says so.
    args = ["calibrate", "serial.labels.json", "--min-labels", "4", "--json", "calibration.json"]
    assert main(args) == 0
    out = capsys.readouterr().out
    # Quadratic-weighted on the ordered scale (c3: a 4 judged a 2), with its interval.
    assert (
        "answer-prose:majority: kappa 0.750 [0.000, 1.000] (quadratic-weighted) on 4 labels" in out
    )
    assert "answer-prose:local/gamma-judge: kappa" in out
    calibration = json.loads((project.path / "calibration.json").read_text())
    majority = next(r for r in calibration["raters"] if r["rater"] == "answer-prose:majority")
    assert (majority["support"], majority["categories"]) == (4, ["1", "2", "3", "4", "5"])
    assert majority["confusion"][1] == [0, 1, 0, 0, 0]  # c2 (5): 2 by both
    assert majority["confusion"][3] == [0, 1, 0, 0, 0]  # c3: human 4, majority 2

    # A gate on the judged metric: refused without calibration, checked with it.
    rubric.write_text(RUBRIC % "gamma-judge" + GATE, encoding="utf-8")
    assert main(["judge", "serial.json", "--judge-cache", "cache"]) == 1
    assert "uncalibrated_judge_gate" in capsys.readouterr().err
    # A gate is not part of the rubric's digest: the cache still answers every seat.
    calibrated = ["judge", "serial.json", "--judge-cache", "cache"]
    calibrated += ["--calibration", "calibration.json"]
    # Kappa 0.750 clears the floor of 0.5; its interval's lower bound (0.000) does not.
    assert main(calibrated) == 1
    err = capsys.readouterr().err
    assert "[judge_below_kappa_floor]" in err
    assert "the interval's lower bound is below the gate's floor 0.5" in err
    rubric.write_text(RUBRIC % "gamma-judge" + GATE.replace("0.5}", "0.0}"), encoding="utf-8")
    code = main(calibrated)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "judged:answer-prose: pass rate 0.500 vs >= 0.5 (PASS; judge" in out
    assert all(
        line in out
        for line in (
            "answer-prose: 2/4 pass by majority, 4 split, 1 unparsable seat answers; kappa 0.750",
            "seats: local/alpha-judge (kappa ",
        )
    ), out
    return labels


def strip_cached(items: list[dict[str, object]]) -> str:
    text = json.dumps(items, sort_keys=True)
    return text.replace('"cached": true', '"cached": false')


def label_like_the_majority_except(path: Path, item: str, label: str) -> dict[str, Any]:
    """Label every item as the panel's majority did, except ``item`` (labelled ``label``)."""
    labels: dict[str, Any] = json.loads(path.read_text())
    assert {entry["human"] for entry in labels["items"]} == {None}
    for entry in labels["items"]:
        own = entry["item"].startswith(item)
        entry["human"] = label if own else entry["predictions"]["majority"]
    path.write_text(json.dumps(labels))
    return labels


def check_the_command_judges_each_report_from_the_cache(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str], serial: dict[str, Any]
) -> None:
    """``agentbench judge`` over each run's report: every seat answered from the cache (no
    endpoint at all), the same judgments from both."""
    capsys.readouterr()
    assert main(["judge", "serial.json", "--judge-cache", "cache"]) == 0
    out = capsys.readouterr().out
    assert "they decide no outcome, metric or gate" in out
    assert (
        "answer-prose: 2/4 pass by majority, 4 split, 1 unparsable seat answers; uncalibrated"
        in out
    )
    assert main(["judge", "parallel.json", "--judge-cache", "cache"]) == 0
    first = json.loads((project.path / "serial.judgments.json").read_text())
    second = json.loads((project.path / "parallel.judgments.json").read_text())
    assert len(first["items"]) == len(QUESTIONS)
    assert strip_cached(first["items"]) == strip_cached(second["items"])
    assert all(v["cached"] for item in second["items"] for v in item["judgment"]["verdicts"])
    # The run reports themselves are untouched by the command.
    assert json.loads((project.path / "serial.json").read_text()) == serial


def check_judged_in_pytest(
    project: pytest.Pytester,
    serial_run: pytest.RunResult,
    parallel_run: pytest.RunResult,
    serial: dict[str, Any],
) -> None:
    """Each run judged its own report, alike; the judged numbers sit beside the run's own."""
    for run in (serial_run, parallel_run):
        run.stdout.fnmatch_lines(
            [
                "*agentbench judged diagnostics*",
                "*answer-prose: 2/4 pass by majority, 4 split, 1 unparsable seat answers; "
                "uncalibrated",
            ]
        )
    first = json.loads((project.path / "serial.judgments.json").read_text())
    second = json.loads((project.path / "parallel.judgments.json").read_text())
    assert strip_cached(first["items"]) == strip_cached(second["items"])
    properties = {
        p.get("name"): p.get("value")
        for p in ElementTree.parse(project.path / "serial.xml").iter("property")
    }
    assert properties["agentbench.judged.answer-prose"] == (
        "diagnostic: 2/4 pass by majority; uncalibrated (no human labels)"
    )
    assert properties["agentbench.judged.answer-prose.seat.local/gamma-judge"] == (
        "uncalibrated (no human labels)"
    )
    # Judging changed nothing in the run's own outcomes, metrics or gates: the judged
    # numbers sit beside them, each naming its calibration.
    assert [e["result"]["outcome"] for e in serial["suites"][0]["cases"]] == ["passed"] * 4
    assert "judg" not in json.dumps({k: v for k, v in serial.items() if k != "judged"})
    judged = serial["judged"]
    assert (judged["role"], judged["judgments"]) == ("diagnostic", "serial.judgments.json")
    rubric = judged["rubrics"][0]
    assert (rubric["name"], rubric["items"], rubric["passed"], rubric["unparsable"]) == (
        "answer-prose",
        4,
        2,
        1,
    )
    assert rubric["calibration"]["status"] == "uncalibrated"


def test_judging_with_concurrency_writes_what_a_serial_judging_writes(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = demo_project(demo, QUESTIONS, ADAPTERS)
    ran, _ = run_cases(project, "run.json", "--agentbench-adapter=my_adapters:Adds")
    assert ran.ret == 0
    judged_here(project, monkeypatch)
    with pytest.raises(SystemExit):
        main(["judge", "run.json", "--concurrency", "0"])
    assert "not a whole number from 1 to 1024" in capsys.readouterr().err

    written: dict[int, dict[str, bytes]] = {}
    peaks: dict[int, int] = {}
    for concurrency in (1, 4):
        folder = project.path / f"at{concurrency}"
        folder.mkdir()
        (folder / "run.json").write_bytes((project.path / "run.json").read_bytes())
        judges = ScriptedJudges()
        # Held until two calls are in flight together: only a concurrent judging gets there.
        judges.gather = 2 if concurrency > 1 else 0
        with judges.serving() as base_url:
            monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
            # Ten of the twelve seat calls fit the ceiling: c4's last two seats are refused.
            code = main(
                [
                    "judge",
                    f"at{concurrency}/run.json",
                    "--judge-cache",
                    f"at{concurrency}/cache",
                    "--ledger",
                    f"at{concurrency}/ledgers",
                    "--into-report",
                    "--max-calls",
                    "10",
                    "--concurrency",
                    str(concurrency),
                ]
            )
        assert code == 0, capsys.readouterr()
        peaks[concurrency] = judges.peak
        written[concurrency] = {
            path.relative_to(folder).as_posix(): path.read_bytes()
            for path in sorted(folder.rglob("*"))
            if path.is_file()
        }
    assert peaks == {1: 1, 4: peaks[4]}
    assert peaks[4] > 1
    serial = written[1]
    assert "ledgers/%judges/answer-prose.ndjson" in serial
    assert sum(1 for name in serial if name.startswith("cache/")) == 10
    judged = json.loads(serial["run.json"])["judged"]
    assert (judged["rubrics"][0]["traffic"]["calls"], judged["rubrics"][0]["refused"]) == (10, 1)
    # The judgments, labels, report (its `judged` member), cache and ledger, byte for byte.
    assert written[4] == serial


CRASHING = """
class Uneven:
    def answer(self, question):
        if question == "2+2":
            raise RuntimeError("the agent fell over")
        if question == "3+3":
            return 10**2000  # wrong, and its recorded output is over the run's limit
        left, right = question.split("+")
        return int(left) + int(right)
"""


def test_crashed_and_oversized_cases_are_counted_unjudged_with_their_reason(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A crashed case is never judged on ``null`` and an output the report did not keep
    (over agentbench_max_output_bytes) is never skipped silently: both are counted."""
    project = demo_project(demo, {"c1": "1+1", "c2": "2+2", "c3": "3+3"}, CRASHING)
    ran, report = run_cases(
        project, "run.json", "--agentbench-adapter=my_adapters:Uneven",
        "--agentbench-max-output-bytes=1500",
    )  # fmt: skip
    outcomes = [case["result"]["outcome"] for case in report["suites"][0]["cases"]]
    assert sorted(outcomes) == ["failed", "failed", "passed"], ran.stdout.str()
    judged_here(project, monkeypatch)
    judges = ScriptedJudges()
    with judges.serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        assert main(["judge", "run.json", "--into-report"]) == 0
    out = capsys.readouterr().out
    assert "  answer-prose: 1/1 pass by majority, 1 split, 0 unparsable seat answers" in out
    assert "    judged 1 of 3; 2 unjudged: 1 crashed, 1 not_recorded" in out
    assert dict(judges.calls) == {"alpha-judge": 1, "beta-judge": 1, "gamma-judge": 1}
    judgments = json.loads((project.path / "run.judgments.json").read_text())
    assert [(u["case_id"], u["reason"]) for u in judgments["unjudged"]] == [
        ("c2", "crashed"),
        ("c3", "not_recorded"),
    ]
    rubric = json.loads((project.path / "run.json").read_text())["judged"]["rubrics"][0]
    assert (rubric["items"], rubric["unjudged"]) == (1, {"crashed": 1, "not_recorded": 1})

"""Model matrices: every case once per model, a model-by-metric table and paired comparisons.

Two "models" behind the scripted loopback server (``tests/llm_server.py``) answer
differently: ``scripted-model`` answers every question right, ``weak-model`` gets
the two questions it may answer without a tool wrong. The same run serially and
under ``-n 2`` reports the same table; the models file is read by the project's
bounded readers and refused by name.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.agents.matrix import (
    label_of,
    model_settings,
    models_from_names,
    read_models_file,
    resolve_matrix,
)
from pytest_agentbench.agents.settings import ChatSettings
from pytest_agentbench.report.summary import SuiteSummary
from pytest_agentbench.scoring.matrix import model_item_name, split_model, summarise_suite
from pytest_agentbench.scoring.trials import summarise_trials
from pytest_agentbench.sdk.contracts import CaseOutcome, CaseResult, MetricSpec
from pytest_agentbench.sdk.errors import UsageError
from tests.chat_projects import CHAT_RUN_ARGS, write_chat_project
from tests.llm_server import ScriptedLLM, answer
from tests.reports import assert_valid_report, normalised

QUESTIONS = {"c1": "tools", "c2": "tools", "c3": "plain", "c4": "direct"}
WRONG_FOR_WEAK = {"plain", "direct"}

MODELS_YAML = """\
scheme: agentbench-models/1
models:
  - name: strong
    model: scripted-model
    pricing: {input_per_token: "0.000001", output_per_token: "0.000002"}
  - name: weak
    model: weak-model
    temperature: 0.5
    seed: 7
"""


class TwoModels(ScriptedLLM):
    """The scripted server, where ``weak-model`` answers two questions wrong."""

    def __init__(self) -> None:
        super().__init__()
        self._asked = threading.local()

    def reply(self, body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
        self._asked.model = body["model"]
        return super().reply(body)

    def script(self, question: str, turn: int) -> dict[str, Any]:
        if self._asked.model == "weak-model" and question in WRONG_FOR_WEAK:
            return answer('{"answer": 4}')
        return super().script(question, turn)


def _run(project: pytest.Pytester, tag: str, *args: str) -> tuple[pytest.RunResult, Any]:
    report = project.path / f"{tag}.json"
    result = project.runpytest(
        *CHAT_RUN_ARGS,
        f"--agentbench-report={report}",
        f"--agentbench-ledger={project.path / f'ledger-{tag}'}",
        *args,
    )
    return result, json.loads(report.read_text()) if report.exists() else {}


def _assert_side_outputs(path: Path) -> None:
    """The serial run's log, HTML page, cassettes and ledgers, each per model."""
    # The run log names each model at the start, and each case's model.
    start, *events = (
        json.loads(line) for line in (path / "serial.json.log.ndjson").read_text().splitlines()
    )
    assert start["model"] is None
    assert {name: shown["model"] for name, shown in start["models"].items()} == {
        "strong": "scripted-model",
        "weak": "weak-model",
    }
    assert (
        sorted(e["model"] for e in events if e["event"] == "case") == ["strong"] * 4 + ["weak"] * 4
    )
    page = (path / "serial.html").read_text(encoding="utf-8")
    models_table = page[page.index("<h3>Models</h3>") : page.index("<h3>Metrics</h3>")]
    assert '<th scope="row">strong</th><td class="num">4</td><td class="num">0</td>' in models_table
    assert '<th scope="row">weak</th><td class="num">2</td><td class="num">2</td>' in models_table
    assert '<th scope="row">strong vs weak</th><td class="num">4</td>' in models_table
    # Each model records into a cassette folder of its own, and each case a ledger per model.
    assert sorted(p.name for p in (path / "tapes-spread").iterdir()) == ["strong", "weak"]
    ledgers = sorted(p.name for p in (path / "ledger-serial").rglob("*") if p.is_file())
    assert len(ledgers) == 8, ledgers
    weak_ledger = next((path / "ledger-serial").rglob("c3%5Bmodel%3Dweak%5D.ndjson"))
    header = weak_ledger.read_text(encoding="utf-8").splitlines()[0]
    assert "weak-model" in header, "its header names the model that answered"
    assert "scripted-model" not in header


def test_two_models_give_one_table_serially_and_under_xdist(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_chat_project(demo, QUESTIONS)
    (demo.path / "models.yaml").write_text(MODELS_YAML, encoding="utf-8")
    server = TwoModels()
    with server.serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        serial, serial_report = _run(
            demo,
            "serial",
            "--agentbench-models=models.yaml",
            "-v",
            f"--agentbench-html={demo.path / 'serial.html'}",
        )
        spread, spread_report = _run(
            demo,
            "spread",
            "--agentbench-models=models.yaml",
            "-n",
            "2",
            f"--agentbench-cassettes={demo.path / 'tapes-spread'}",
        )
        from_file = list(server.requests)
        # Named on the command line: the same models, named by what is sent.
        named, named_report = _run(
            demo,
            "named",
            "--agentbench-model=scripted-model",
            "--agentbench-model=weak-model",
            f"--agentbench-cassettes={demo.path / 'tapes-named'}",
            # Cases run ahead in threads: each still answered by its own model.
            "--agentbench-concurrency=3",
            f"--agentbench-record={demo.path / 'records'}",
            f"--agentbench-receipts={demo.path / 'receipts'}",
        )
    # The server is gone: each model replays from its own cassette folder.
    replayed, replayed_report = _run(
        demo,
        "replayed",
        "--agentbench-models=models.yaml",
        f"--agentbench-cassettes={demo.path / 'tapes-spread'}",
    )
    serial.assert_outcomes(passed=6, failed=2)
    spread.assert_outcomes(passed=6, failed=2)
    named.assert_outcomes(passed=6, failed=2)
    replayed.assert_outcomes(passed=6, failed=2)
    assert normalised(replayed_report["suites"]) == normalised(serial_report["suites"])
    serial.stdout.fnmatch_lines(
        [
            "*c1?model=strong? PASSED*",
            "*c3?model=weak? FAILED*",
            "*models: 2 (every case run with each)",
            "*model *passed*failed*error*calls*tokens*cost",
            "*strong *4 *0 *0 *",
            "*weak *2 *2 *0 *",
            "*strong vs weak: 4 paired cases, pass rate 1.0000 vs 0.5000 (-0.5000); "
            "only strong passed 2, only weak passed 0, McNemar p 0.5 (Holm 0.5)",
        ]
    )
    assert_valid_report(serial_report)
    assert serial_report["schema_version"] == "agentbench-run-report/3"
    (suite,) = serial_report["suites"]
    assert {entry["result"]["model"] for entry in suite["cases"]} == {"strong", "weak"}
    assert suite["coverage"]["total"] == 8
    assert suite["coverage"]["complete"]
    matrix = suite["models"]
    strong, weak = matrix["rows"]
    assert (strong["model"], weak["model"]) == ("strong", "weak")
    assert (strong["counts"]["passed"], weak["counts"]["passed"]) == (4, 2)
    assert strong["settings_sha256"] != weak["settings_sha256"]
    assert strong["cost"] is not None, "strong has a price"
    assert weak["cost"] is None, "weak has none"
    assert strong["calls"] == weak["calls"] == 6
    (pair,) = matrix["pairs"]
    assert (pair["only_a_passed"], pair["only_b_passed"], pair["p_value"]) == (2, 0, 0.5)
    # Each model asked with its own settings.
    sent = {(r["model"], r["temperature"], r.get("seed")) for r in from_file}
    assert sent == {("scripted-model", 0.0, 0), ("weak-model", 0.5, 7)}
    _assert_side_outputs(demo.path)
    # -n 2 aggregates exactly what the serial run did.
    assert normalised(spread_report["suites"]) == normalised(serial_report["suites"])
    (named_suite,) = named_report["suites"]
    assert [row["model"] for row in named_suite["models"]["rows"]] == [
        "scripted-model",
        "weak-model",
    ]
    assert [row["counts"] for row in named_suite["models"]["rows"]] == [
        strong["counts"],
        weak["counts"],
    ]
    # Every model's run of a case keeps its own record and receipt.
    for folder in ("records", "receipts"):
        files = {p.name for p in (demo.path / folder / "chat-suite").iterdir()}
        assert len(files) == 8, files
        assert "c3[model=weak-model].json" in files


def test_a_matrix_refuses_what_it_cannot_combine_with(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_chat_project(demo, {"c1": "tools"})
    monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # never asked
    duplicate = demo.runpytest_inprocess(
        *CHAT_RUN_ARGS, "--agentbench-model=a", "--agentbench-model=a"
    )
    assert duplicate.ret == pytest.ExitCode.USAGE_ERROR
    duplicate.stderr.fnmatch_lines(["*[[]duplicate_model[]]*--agentbench-model*"])
    # One model is no matrix; two models and two trials make four items a case.
    single = demo.runpytest_inprocess(*CHAT_RUN_ARGS, "--agentbench-model=m", "--co", "-q")
    single.stdout.fnmatch_lines(["suites/chat-suite/cases.jsonl::c1"])
    repeated = demo.runpytest_inprocess(
        *CHAT_RUN_ARGS,
        "--agentbench-model=a",
        "--agentbench-model=b",
        "--agentbench-repeat=2",
        "--co",
        "-q",
    )
    repeated.stdout.fnmatch_lines(
        [
            "*::c1?model=a??trial-1?",
            "*::c1?model=a??trial-2?",
            "*::c1?model=b??trial-1?",
            "*::c1?model=b??trial-2?",
            "4/6 tests collected (2 deselected)*",
        ]
    )
    # Each model's worst case (1 case x 4 turns x 3 attempts) against its own budget: 12
    # calls each are allowed, as a budget for both together would not be; 11 are not.
    budgets = {}
    for ceiling in (12, 11):
        budgets[ceiling] = demo.runpytest_inprocess(
            *CHAT_RUN_ARGS,
            "--agentbench-model=a",
            "--agentbench-model=b",
            f"--agentbench-max-calls={ceiling}",
            "--co",
            "-q",
        )
    assert budgets[12].ret == pytest.ExitCode.OK
    assert budgets[11].ret == pytest.ExitCode.USAGE_ERROR
    budgets[11].stdout.fnmatch_lines(["*run refused before any call*"])
    isolated = demo.runpytest_inprocess(
        *CHAT_RUN_ARGS, "--agentbench-model=a", "--agentbench-model=b", "--agentbench-isolate"
    )
    assert isolated.ret == pytest.ExitCode.USAGE_ERROR
    isolated.stderr.fnmatch_lines(["*[[]model_matrix_unsupported[]]*--agentbench-isolate*"])


# --- the models file ----------------------------------------------------------


def _refusal(path: Path, text: str) -> UsageError:
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        read_models_file(path)
    return caught.value


@pytest.mark.parametrize(
    ("name", "text", "code", "field"),
    [
        ("dup.yaml", "models:\n  - name: a\n  - name: a\n", "duplicate_model", "models.1.name"),
        ("key.yaml", "models:\n  - name: a\n    name: b\n", "duplicate_key", None),
        ("extra.yaml", "models:\n  - name: a\n    top_p: 1\n", "invalid_models_file", None),
        ("bad.yaml", "models:\n  - name: 'a b'\n", "invalid_models_file", "models.0.name"),
        ("none.yaml", "models: []\n", "invalid_models_file", "models"),
        ("temp.json", '{"models": [{"name": "a", "temperature": 3}]}', "invalid_models_file", None),
        (
            "creds.yaml",
            "models:\n  - name: a\n    base_url: http://u:p@h/v1\n",
            "llm_base_url_credentials",
            "models.0.base_url",
        ),
        ("json.json", '{"models": [{"name": "a"}], "models": []}', "duplicate_key", None),
        ("scheme.yaml", "scheme: other/1\nmodels:\n  - name: a\n", "invalid_models_file", None),
    ],
)
def test_a_bad_models_file_is_refused_by_name(
    tmp_path: Path, name: str, text: str, code: str, field: str | None
) -> None:
    error = _refusal(tmp_path / name, text)
    assert error.code == code
    assert error.location.file == str(tmp_path / name)
    if field is not None:
        assert error.location.field == field
    elif code == "invalid_models_file":
        assert error.location.field, "a validation refusal names its field"


def test_a_models_file_alias_bomb_and_missing_file_are_refused(tmp_path: Path) -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
    )
    assert _refusal(tmp_path / "bomb.yaml", bomb).code == "yaml_alias_limit"
    with pytest.raises(UsageError) as missing:
        read_models_file(tmp_path / "absent.yaml")
    assert missing.value.code == "models_file_missing"
    with pytest.raises(UsageError) as both:
        resolve_matrix(["a"], "models.yaml", tmp_path)
    assert both.value.code == "model_matrix_conflict"


def test_model_settings_take_the_entry_over_the_run(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(MODELS_YAML, encoding="utf-8")
    strong, weak = read_models_file(tmp_path / "m.yaml")
    base = ChatSettings(model="base", base_url="http://h/v1", cassettes=tmp_path / "tapes")
    mine = model_settings(base, weak)
    assert (mine.model, mine.temperature, mine.seed, mine.base_url) == (
        "weak-model",
        0.5,
        7,
        "http://h/v1",
    )
    assert mine.cassettes == tmp_path / "tapes" / "weak"
    assert mine.settings_digest() != model_settings(base, strong).settings_digest()
    assert label_of("org/llama3:8b") == "org-llama3-8b"
    (named,) = models_from_names(["org/llama3:8b"])
    assert (named.name, named.sent_model) == ("org-llama3-8b", "org/llama3:8b")


# --- names and figures ----------------------------------------------------------


def test_item_names_carry_the_model_before_the_trial() -> None:
    assert model_item_name("c1", None) == "c1"
    assert model_item_name("c1", "a") == "c1[model=a]"
    assert model_item_name("c1[trial-2]", "a") == "c1[model=a][trial-2]"
    assert split_model("c1[model=a][trial-2]") == ("c1[trial-2]", "a")
    assert split_model("c1[model=a]") == ("c1", "a")
    assert split_model("c1[trial-2]") == ("c1[trial-2]", None)


def _result(case: str, model: str, passed: bool) -> CaseResult:
    outcome = CaseOutcome.PASSED if passed else CaseOutcome.FAILED
    return CaseResult(
        suite_id="s",
        case_id=case,
        outcome=outcome,
        measurements={"ok": int(passed), "n": 1},
        model=model,
    )


def test_summarise_suite_pairs_models_on_the_same_cases() -> None:
    spec = MetricSpec(
        name="accuracy",
        family="f",
        direction="higher_is_better",
        numerator="ok",
        denominator="n",
        support_meaning="cases",
    )
    results = [
        *(_result(f"c{i}", "a", True) for i in range(6)),
        *(_result(f"c{i}", "b", i < 1) for i in range(6)),
        _result("c9", "c", False),
    ]
    matrix = summarise_suite("s", ["a", "b", "c"], [spec], None, results, digests={"a": "d"})
    assert [row.metrics[0].value for row in matrix.rows] == [1.0, 1 / 6, 0.0]
    assert [row.settings_sha256 for row in matrix.rows] == ["d", None, None]
    ab, ac, bc = matrix.pairs
    assert (ab.pairs, ab.only_a_passed, ab.only_b_passed) == (6, 5, 0)
    assert ab.p_value == pytest.approx(2 / 32)
    assert ab.difference == pytest.approx(1 / 6 - 1)
    assert (ac.pairs, ac.p_value, ac.pass_rate_a) == (0, None, None), "no case in common"
    assert bc.pairs == 0
    assert ab.adjusted_p == pytest.approx(2 / 32), "the only tested pair: Holm keeps it"


def test_trials_are_counted_per_model() -> None:
    results = [
        _result("c1", model, passed).model_copy(update={"trial": trial})
        for model, passes in (("a", (True, True)), ("b", (True, False)))
        for trial, passed in enumerate(passes, start=1)
    ]
    trials = summarise_trials("s", results)
    assert trials is not None
    assert (trials.trials, trials.cases) == (2, 2)
    assert trials.pass_hat_k.value == 0.5, "a passed both trials, b one of two"
    assert trials.inconsistent_cases == ("c1[model=b]",)


def test_a_run_of_one_model_reports_no_model_keys() -> None:
    result = CaseResult(suite_id="s", case_id="c", outcome=CaseOutcome.PASSED)
    assert "model" not in result.model_dump(mode="json")
    assert "model" not in json.loads(result.model_dump_json())
    assert result.model_copy(update={"model": "a"}).model_dump()["model"] == "a"
    suite = SuiteSummary(
        id="s",
        version="1",
        world="w",
        title="t",
        digests={},
        counts={},
        failure_classes={},
        metrics=(),
        gates=(),
        controls=(),
        cases=(),
    )
    assert "models" not in suite.model_dump(mode="json")

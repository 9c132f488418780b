"""Budgets, provenance and replay of chat-model runs, through pytest, against a loopback server.

One suite of ``demo-tools`` questions answered by the scripted server
(``tests/llm_server.py``): the run's provenance is the same serially and under
``-n 2``; a run whose worst case passes a ceiling is refused with the server
never asked; a ceiling reached mid-run excludes the later cases, counted and
named; a replay opens no socket.
"""

from __future__ import annotations

import json
import socket
import threading
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.agents.cassettes import request_digest
from pytest_agentbench.cli.main import main
from tests.chat_projects import CHAT_RUN_ARGS, write_chat_project
from tests.demo_world import write_demo_suite
from tests.llm_server import ScriptedLLM
from tests.reports import assert_valid_report

QUESTIONS = {"c1": "tools", "c2": "tools", "c3": "malformed_args", "c4": "rate_limited"}
PRICING = {
    "scheme": "agentbench-pricing/1",
    "currency": "USD",
    "models": {
        "scripted-model": {"input_per_token": "0.0000025", "output_per_token": "0.00001"},
        "other-model": {"input_per_token": "1", "output_per_token": "1"},
    },
}
RUN_ARGS = CHAT_RUN_ARGS


def count_connects(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every address a socket connects to from now on, in order (a replay must open none)."""
    connects: list[object] = []
    real_connect = socket.socket.connect

    def counting_connect(self: socket.socket, address: Any) -> None:
        connects.append(address)
        real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", counting_connect)
    return connects


@pytest.fixture
def chat_project(demo: pytest.Pytester) -> pytest.Pytester:
    write_chat_project(
        demo,
        QUESTIONS,
        "agentbench_llm_max_tokens_per_call = 1000",
        "agentbench_pricing = pricing.json",
    )
    (demo.path / "pricing.json").write_text(json.dumps(PRICING), encoding="utf-8")
    return demo


def run(project: pytest.Pytester, tag: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    report = project.path / f"{tag}.json"
    result = project.runpytest(
        *RUN_ARGS,
        f"--agentbench-report={report}",
        f"--junitxml={project.path / f'{tag}.xml'}",
        f"--agentbench-ledger={project.path / f'ledger-{tag}'}",
        *args,
    )
    document = json.loads(report.read_text()) if report.exists() else {}
    return result, document


def junit_model_properties(path: Path) -> dict[str, str]:
    return {
        prop.get("name", ""): prop.get("value", "")
        for prop in ET.parse(path).getroot().iter("property")
        if prop.get("name", "").startswith("agentbench.model.")
    }


def case_calls(document: dict[str, Any]) -> dict[str, Any]:
    (suite,) = document["suites"]
    return {entry["result"]["case_id"]: entry["result"]["model_calls"] for entry in suite["cases"]}


def recorded(folder: Path) -> set[str]:
    return {path.stem for path in folder.glob("*.json")}


def requested(by_case: dict[str, Any]) -> set[str]:
    return {digest for calls in by_case.values() for digest in calls["request_digests"]}


def assert_settings_in_clear(
    provenance: dict[str, Any], properties: dict[str, str], page: str, host: str
) -> None:
    """The chat project's provenance in the HTML report's Model block, and its settings in
    clear beside their digest there, in the JSON report and in the JUnit properties."""
    model_block = page[page.index("<h3>Model</h3>") : page.index("</dl>", page.index("<h3>Model"))]
    for shown in (host, provenance["settings_digest"], provenance["cost"], "record", "USD"):
        assert shown in model_block
    assert provenance["settings"] == {
        "base_url_path": "/v1",
        "temperature": 0.0,
        "seed": 0,
        "max_turns": 4,
        "max_tokens_per_call": 1000,
        "timeout_s": 5.0,
        "max_retries": 2,
        "retry_backoff_s": 0.0,
        "retry_jitter": 0.5,
        "fence_results": True,
        "max_connections": None,
        "requests_per_minute": None,
        "tokens_per_minute": None,
    }, "the ini's, and the defaults for the rest"
    assert properties["agentbench.model.setting.max_turns"] == "4"
    assert properties["agentbench.model.setting.base_url_path"] == "/v1"
    assert "agentbench.model.setting.tokens_per_minute" not in properties, "unset: not stated"
    for shown in (
        f"{host}/v1",
        "max-turns 4",
        "max-tokens-per-call 1000",
        "temperature 0.0",
        "timeout-s 5.0",
        "requests-per-minute -",
    ):
        assert shown in model_block


def log_events(path: Path) -> list[dict[str, Any]]:
    """A run log's events, without when each happened."""
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(event.pop("at").endswith("Z") for event in events)
    return events


def assert_run_logs(folder: Path, report: dict[str, Any], by_case: dict[str, Any]) -> None:
    """The serial and ``-n 2`` runs' logs beside their reports: the model run's start, one
    event per case with its traffic as the report states it, and the end of a failed run."""
    serial = log_events(folder / "serial.json.log.ndjson")
    spread = log_events(folder / "spread.json.log.ndjson")
    provenance = report["model_run"]
    start, *cases, end = serial
    assert (start["event"], start["scheme"]) == ("start", "agentbench-run-log/1")
    assert start["model"]["settings"] == provenance["settings"]
    assert start["model"]["settings_digest"] == provenance["settings_digest"]
    assert "calls" not in start["model"], "the traffic is the cases' and the end's"
    assert [event["case_id"] for event in cases] == ["c1", "c2", "c3", "c4"]
    assert [event["outcome"] for event in cases] == ["passed", "passed", "failed", "passed"]
    for event in cases:
        calls = by_case[event["case_id"]]
        traffic = event["model_calls"]
        assert (traffic["calls"], traffic["attempts"], traffic["cost"]) == (
            calls["calls"],
            calls["attempts"],
            calls["cost"],
        )
    assert cases[3]["model_calls"]["retries"] == 1, "c4's 429, retried"
    assert end == {
        "event": "end",
        "exit_status": 1,
        "interrupted": False,
        "cases": 4,
        "outcomes": {"failed": 1, "passed": 3},
        "calls": provenance["calls"],
        "attempts": provenance["attempts"],
        "retries": 1,
        "input_tokens": provenance["input_tokens"],
        "output_tokens": provenance["output_tokens"],
        "refused": 0,
        "cost": provenance["cost"],
    }
    # Under -n 2 the cases finish in another order, and say the same.
    assert spread[-1] == end
    assert sorted(spread[1:-1], key=lambda event: event["nodeid"]) == cases


def test_provenance_is_the_same_serially_and_under_xdist_and_replays_with_no_socket(
    chat_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server each, so each run meets the same scripted 429.
    server = ScriptedLLM()
    with server.serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        # No mode given and no cassette folder yet: the run records, and says so to the
        # end, though the folder exists by then (serially and from every xdist worker).
        serial, serial_report = run(
            chat_project,
            "serial",
            # The worst case, 4 cases x 4 turns x 1000 tokens, costs exactly this: a
            # ceiling that is met is allowed (see the refusals below), in every run here.
            "--agentbench-max-cost=0.16",
            f"--agentbench-html={chat_project.path / 'serial.html'}",
        )
    with ScriptedLLM().serving() as other_url:
        # The same port may not be free again: compare hosts only through the first run.
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", other_url)
        spread, spread_report = run(
            chat_project,
            "spread",
            "-n",
            "2",
            f"--agentbench-cassettes={chat_project.path / 'tapes-spread'}",
            "--agentbench-max-cost=0.16",
        )
    serial.assert_outcomes(passed=3, failed=1)
    spread.assert_outcomes(passed=3, failed=1)
    assert_valid_report(serial_report)
    assert serial_report["schema_version"] == "agentbench-run-report/3"
    provenance = serial_report["model_run"]
    host = base_url.split("//")[1].split("/")[0]
    assert provenance["base_url_host"] == host, "no path"
    assert (provenance["provider"], provenance["model"], provenance["mode"]) == (
        "openai-compatible",
        "scripted-model",
        "record",
    )
    assert provenance["ceilings"] == {"max_calls": None, "max_cost": "0.16", "max_tokens": None}
    assert provenance["calls"] == len(server.requests) - 1, "the 429 is an attempt, not a call"
    assert provenance["attempts"] == provenance["calls"] + 1
    by_case = case_calls(serial_report)
    assert [c["calls"] for c in by_case.values()] == [2, 2, 3, 1]
    assert provenance["input_tokens"] == sum(c["input_tokens"] for c in by_case.values())
    expected_cost = sum(c["input_tokens"] * 25 + c["output_tokens"] * 100 for c in by_case.values())
    assert provenance["cost"] == str(expected_cost / 10**7).rstrip("0")
    assert by_case["c4"]["waits"] == [{"reason": "retry", "seconds": 0.0}]
    assert [d["call_index"] for d in by_case["c1"]["decisions"]] == [0]
    # Identical but for the port: the same mode, calls, tokens, cost and digests.
    other_host = other_url.split("//")[1].split("/")[0]
    assert spread_report["model_run"] == {**provenance, "base_url_host": other_host}
    assert recorded(chat_project.path / "tapes-spread") == requested(by_case)
    spread.stdout.fnmatch_lines(
        [
            f"model: openai-compatible {other_host}/v1, model scripted-model, record",
            f"  settings sha256:{provenance['settings_digest']}",
            "  settings: temperature 0.0, seed 0, max-turns 4, max-tokens-per-call 1000, "
            "timeout 5.0s, retries 2 (backoff 0.0s, jitter 0.5), tool results fenced",
        ]
    )
    assert case_calls(spread_report) == by_case
    properties = junit_model_properties(chat_project.path / "serial.xml")
    assert properties == {
        **junit_model_properties(chat_project.path / "spread.xml"),
        "agentbench.model.base_url_host": host,
    }
    assert properties["agentbench.model.mode"] == "record"
    assert properties["agentbench.model.cost"] == provenance["cost"]
    assert any(
        line.startswith("agentbench model: openai-compatible " + host) for line in serial.outlines
    ), "the terminal header names the model"
    serial.stdout.fnmatch_lines(["*agentbench: model*", f"model: openai-compatible {host}*"])
    page = (chat_project.path / "serial.html").read_text()
    assert_settings_in_clear(provenance, properties, page, host)
    assert_run_logs(chat_project.path, serial_report, by_case)

    connects = count_connects(monkeypatch)
    replayed, replay_report = run(
        chat_project, "replay", "--agentbench-cassette-mode=replay", "--agentbench-max-cost=0.16"
    )
    replayed.assert_outcomes(passed=3, failed=1)
    assert connects == [], "a replay opens no connection"
    # A replay waits for no limit and no retry; everything else is as recorded.
    assert replay_report["model_run"] == {
        **provenance,
        "mode": "replay",
        "base_url_host": other_host,
        "waits": 0,
        "wait_seconds": "0",
    }
    assert case_calls(replay_report) == {
        case_id: {**calls, "waits": []} for case_id, calls in by_case.items()
    }


def test_a_run_whose_worst_case_passes_a_ceiling_is_refused_before_any_call(
    chat_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = ScriptedLLM()
    with server.serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        # 4 cases x 4 turns = 16 calls at worst, each sent up to 3 times (2 retries).
        calls, _ = run(
            chat_project, "calls", "--agentbench-max-calls=47", "--agentbench-cassette-mode=off"
        )
        tokens, _ = run(
            chat_project,
            "tokens",
            "--agentbench-max-tokens=15999",
            "--agentbench-cassette-mode=off",
        )
        # 16 calls x 1000 tokens x 0.00001 = 0.16 at worst. Under xdist the controller
        # preflights the count each worker collected (one worker shows it, as two would).
        cost, _ = run(
            chat_project,
            "cost",
            "--agentbench-max-cost=0.159",
            "-n",
            "1",
            "--agentbench-cassette-mode=off",
        )
        assert server.requests == [], "the endpoint never asked"
    # A ceiling the worst case meets exactly (0.16) is allowed: the serial run of
    # test_provenance_is_the_same_serially_and_under_xdist_and_replays_with_no_socket.
    assert calls.ret == tokens.ret == cost.ret == pytest.ExitCode.USAGE_ERROR
    calls.stdout.fnmatch_lines(
        [
            "*refused before any call:*budget_preflight_calls*"
            "*4 turns x 3 requests is 48*max-calls=47*"
        ]
    )
    tokens.stdout.fnmatch_lines(["*budget_preflight_tokens*16000*"])
    cost.stdout.fnmatch_lines(["*budget_preflight_cost*0.16, above --agentbench-max-cost=0.159*"])


MID_RUN = {"c1": "slow", "c2": "verbose", "c3": "tools", "c4": "tools"}
CUT_OFF_LIMITS_S = (1.5, 5)
"""The overspend test's case limits, tried in turn: the limit cuts off c1, whose answer the
server holds until the run is over, and must leave c2 time to be answered. 1.5 s does on a
machine that is not overloaded; where c1's request had not reached the server by then, or
c2 timed out too (as under 1 s on a machine loaded far past its cores), the session is run
again under 5 s. c1 spends each limit in full: the shorter is the usual cost."""


def _run_cut_off(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, isolation: tuple[str, ...]
) -> tuple[str, ScriptedLLM, pytest.RunResult, dict[str, Any]]:
    """The overspend run (its outputs' tag, server, result and report) under the first of
    ``CUT_OFF_LIMITS_S`` that fired after c1's request reached the server and not on c2."""
    for limit in CUT_OFF_LIMITS_S:
        tag = f"mid-{limit:g}"
        server = ScriptedLLM()
        server.hold = threading.Event()
        with server.serving() as base_url:
            monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
            try:
                result, report = run(
                    project,
                    tag,
                    "--agentbench-max-tokens=4000",
                    "--agentbench-cassette-mode=off",
                    f"--agentbench-timeout={limit:g}",
                    *isolation,
                )
            finally:
                server.hold.set()  # c1's answer, long after its case was cut off
        if not report:
            break  # no rerun: the test's assertions say what went wrong
        cases = {e["result"]["case_id"]: e["result"] for e in report["suites"][0]["cases"]}
        c2_reason = cases.get("c2", {}).get("failure_reason") or ""
        if server.hits["slow"] > 0 and "timed out" not in c2_reason:
            break
    return tag, server, result, report


@pytest.mark.parametrize(
    "isolation", [(), ("--agentbench-isolate",)], ids=["in-process", "isolated"]
)
def test_an_endpoint_that_overspends_is_refused_by_name_and_the_later_cases_excluded(
    chat_project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolation: tuple[str, ...],
) -> None:
    # Isolated, the case limit interrupts the adapter's process as it interrupts the
    # adapter in-process: the request it cut off crosses back and is in the report and
    # the ledger (issue 43; it was lost with the process, which was killed).
    # The worst case, 4 cases x 2 turns x 500 tokens = 4000, meets the ceiling. Each request
    # asks for at most what its 500 leave after the request (about 340 tokens of it).
    # c1's request is cut off by the case limit (the server holds its answer until the
    # run has ended): its 500 stay reserved, and it is in the report. c2's endpoint
    # ignores max_tokens and reports 3120 tokens: refused by name, its tokens counted
    # (3620 in all), so c3's first reservation (4120) and c4's are refused.
    write_demo_suite(
        chat_project.path,
        "chat-suite",
        questions=MID_RUN,
        answers=dict.fromkeys(MID_RUN, 3),
        world="demo-tools",
    )
    monkeypatch.setenv("AGENTBENCH_LLM_MAX_TURNS", "2")
    monkeypatch.setenv("AGENTBENCH_LLM_MAX_TOKENS_PER_CALL", "500")
    tag, server, result, report = _run_cut_off(chat_project, monkeypatch, isolation)
    assert len(server.requests) == 2, "a refused call is never sent"
    assert all(0 < r["max_tokens"] < 500 for r in server.requests), "each answer is capped"
    result.assert_outcomes(failed=2, skipped=2)
    (suite,) = report["suites"]
    assert suite["counts"] == {"passed": 0, "failed": 2, "error": 0, "skipped": 0, "excluded": 2}
    results = {entry["result"]["case_id"]: entry["result"] for entry in suite["cases"]}
    assert {cid: r["exclusion"] for cid, r in results.items()} == {
        "c1": None,
        "c2": None,
        "c3": "budget_exceeded_tokens",
        "c4": "budget_exceeded_tokens",
    }
    assert "timed out" in results["c1"]["failure_reason"]
    assert (
        "[llm_usage_over_call_bound] the endpoint reported 3120 tokens"
        in (results["c2"]["failure_reason"])
    )
    cut_off = results["c1"]["model_calls"]
    assert (cut_off["calls"], cut_off["attempts"], cut_off["input_tokens"]) == (1, 1, 0)
    assert [results[c]["model_calls"]["calls"] for c in ("c2", "c3", "c4")] == [1, 0, 0]
    assert results["c4"]["model_calls"]["refused"] == "budget_exceeded_tokens"
    provenance = report["model_run"]
    assert (provenance["calls"], provenance["input_tokens"] + provenance["output_tokens"]) == (
        2,
        3120,
    ), "every request the server received is in the report"
    assert provenance["excluded"] == [
        "suites/chat-suite/cases.jsonl::c3",
        "suites/chat-suite/cases.jsonl::c4",
    ]
    assert any(p.startswith("[budget_exceeded] 2 cases excluded") for p in report["problems"])
    ledger = chat_project.path / f"ledger-{tag}" / "chat-suite"
    rows = [json.loads(line) for line in (ledger / "c1.ndjson").read_text().splitlines()]
    (attempt,) = next(r["call"]["attempts"] for r in rows if "call" in r)
    assert (attempt["outcome"], attempt["fault"]) == ("fault", "cut_off")
    terminal = json.loads((ledger / "c4.ndjson").read_text().splitlines()[-1])["terminal"]
    assert (terminal["kind"], terminal["exclusion_code"]) == ("excluded", "budget_exceeded_tokens")
    junit = ET.parse(chat_project.path / f"{tag}.xml").getroot()
    skipped = [c.get("name") for c in junit.iter("testcase") if c.find("skipped") is not None]
    assert skipped == ["c3", "c4"]
    result.stdout.fnmatch_lines(["*budget: max-tokens 4000; 2 cases excluded*"])
    # The transcripts say which call the budget refused, unsent.
    (transcripts,) = report["transcripts"]
    lines = (chat_project.path / transcripts["file"]).read_text(encoding="utf-8").splitlines()
    transcribed = {line["case_id"]: line for line in map(json.loads, lines)}
    assert transcribed["c4"]["outcome"] == "excluded"
    assert [e["event"] for e in transcribed["c4"]["events"]] == ["model_refused", "no_final"]
    assert transcribed["c4"]["events"][0]["code"] == "budget_exceeded_tokens"
    assert [e["event"] for e in transcribed["c3"]["events"]][-2:] == ["model_refused", "no_final"]
    capsys.readouterr()
    audited = ["audit", str(chat_project.path / f"{tag}.json"), str(ledger.parent)]
    pricing = ["--pricing", str(chat_project.path / "pricing.json")]
    assert main([*audited, *pricing]) == 0, capsys.readouterr().err


WAITING_LIMITS_S = (2, 8)
"""The case limits of the shared-minute test, tried in turn: what ends the case left waiting
for the minute, which spends it in full. A sent case must finish well inside it: 2 s does on
a machine that is not overloaded; where a sent case timed out as well (the server shares the
test process with the xdist controller: at twenty times the cores 1.5 s was not enough, and
cases timed out before their request was sent), the session is run again under 8 s."""


def test_xdist_workers_share_one_minute_of_requests(
    chat_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three requests a minute for the run, not for each worker: of four one-call cases on
    # two workers (two each, as xdist hands out so few), three are sent; the fourth waits
    # for the minute until its case limit ends it, unsent (so uncounted). A limit each
    # worker kept for itself would send all four.
    plain = {f"p{index}": "plain" for index in range(4)}
    write_demo_suite(
        chat_project.path,
        "chat-suite",
        questions=plain,
        answers=dict.fromkeys(plain, 3),
        world="demo-tools",
    )
    for limit in WAITING_LIMITS_S:
        server = ScriptedLLM()
        with server.serving() as base_url:
            monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
            result, report = run(
                chat_project,
                f"shared-minute-{limit}",
                "-n",
                "2",
                "--agentbench-cassette-mode=off",
                f"--agentbench-timeout={limit}",
                "--agentbench-requests-per-minute=3",
            )
        cases = [e["result"] for e in report["suites"][0]["cases"]] if report else []
        if sum("timed out" in (c.get("failure_reason") or "") for c in cases) <= 1:
            break
    assert len(server.requests) == 3, "one minute for the run, not one for each worker"
    result.assert_outcomes(passed=3, failed=1)
    assert report["model_run"]["calls"] == 3
    (suite,) = report["suites"]
    (waited,) = [e["result"] for e in suite["cases"] if e["result"]["outcome"] == "failed"]
    assert "timed out" in waited["failure_reason"]
    assert waited["model_calls"]["calls"] == 0, "never sent, not counted"


def _case_of(document: dict[str, Any], case_id: str) -> dict[str, Any]:
    (suite,) = document["suites"]
    result: dict[str, Any] = next(
        e["result"] for e in suite["cases"] if e["result"]["case_id"] == case_id
    )
    return result


def _edit_report(path: Path, change: Any) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def _edit_row(path: Path, index: int, field: str, value: Any) -> None:
    """Change a row's payload and write its exact encoding back, without re-chaining."""
    lines = path.read_bytes().splitlines(keepends=True)
    row = json.loads(lines[index])
    row[row["row_kind"]][field] = value
    lines[index] = json.dumps(row, sort_keys=True).encode() + b"\n"
    path.write_bytes(b"".join(lines))


def _drop_line(path: Path, index: int) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    del lines[index]
    path.write_bytes(b"".join(lines))


def _set_calls(case_id: str, key: str, change: Any) -> Any:
    return lambda d: change(_case_of(d, case_id)["model_calls"], key)


TAMPERINGS: list[tuple[str, str, Any]] = [
    ("a call row edited", "ledger_row_edited", ("c1", lambda p: _edit_row(p, 1, "method", "x"))),
    ("a call row removed", "ledger_row_missing", ("c1", lambda p: _drop_line(p, 1))),
    ("the terminal row removed", "ledger_incomplete", ("c1", lambda p: _drop_line(p, -1))),
    ("a ledger removed", "audit_ledger_missing", ("c1", lambda p: p.unlink())),
    (
        "a ledger the report does not name",
        "audit_ledger_unreported",
        ("c1", lambda p: p.with_name("c9.ndjson").write_bytes(p.read_bytes())),
    ),
    (
        "the run's totals changed",
        "audit_run_totals_mismatch",
        lambda d: d["model_run"].update(calls=d["model_run"]["calls"] + 1),
    ),
    (
        "a case's totals changed",
        "audit_totals_mismatch",
        lambda d: _case_of(d, "c2")["model_calls"].update(input_tokens=1),
    ),
    (
        "a case's decision digest changed",
        "audit_decision_mismatch",
        lambda d: _case_of(d, "c1")["model_calls"]["decisions"][0].update(
            decision_digest_sha256="0" * 64
        ),
    ),
    (
        "a case's request digest changed",
        "audit_request_mismatch",
        lambda d: _case_of(d, "c1")["model_calls"]["request_digests"].__setitem__(0, "0" * 64),
    ),
    (
        "the model renamed",
        "audit_header_mismatch",
        lambda d: d["model_run"].update(model="other-model"),
    ),
    (
        "the settings digest changed",
        "audit_header_mismatch",
        lambda d: d["model_run"].update(settings_digest="0" * 64),
    ),
    (
        "a setting in clear changed",
        "audit_settings_mismatch",
        lambda d: d["model_run"]["settings"].update(max_turns=9),
    ),
    ("the model run removed", "audit_header_mismatch", lambda d: d.update(model_run=None)),
    # Cassette mode auto (issue 43): a run of another mode states no counts, and a mixed
    # run's cases state theirs.
    (
        "counts in a live run",
        "audit_mode_mismatch",
        lambda d: d["model_run"].update(cassette_hits=0, recorded=8),
    ),
    (
        "a live run relabelled mixed",
        "audit_mode_mismatch",
        lambda d: d["model_run"].update(mode="mixed", cassette_hits=0, recorded=8),
    ),
    ("a suite that is not one", "audit_unreadable", lambda d: d["suites"].append(5)),
    (
        "a scored case reported excluded",
        "audit_terminal_mismatch",
        lambda d: _case_of(d, "c3").update(outcome="excluded", exclusion="budget_x"),
    ),
]


def test_audit_holds_a_report_to_its_ledgers_and_names_each_tampering(
    chat_project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with ScriptedLLM().serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        run(chat_project, "audited", "--agentbench-cassette-mode=off")
    report = chat_project.path / "audited.json"
    ledgers = chat_project.path / "ledger-audited"
    pricing = chat_project.path / "pricing.json"
    pristine = {path: path.read_bytes() for path in [report, *ledgers.rglob("*.ndjson")]}

    def audit(*extra: str) -> str:
        capsys.readouterr()
        status = main(["audit", str(report), str(ledgers), *extra])
        err = capsys.readouterr().err
        for path in set(ledgers.rglob("*.ndjson")) - set(pristine):
            path.unlink()
        for path, data in pristine.items():
            path.write_bytes(data)
        if status == 0:
            return "ok"
        assert status == 1, err
        assert err.count("\n") == 1, "one line"
        return err.split("[")[1].split("]")[0]

    # Without the pricing table the costs the report states are not checked: never "ok".
    assert audit() == "audit_costs_unchecked"
    # A ledger is the same whoever answered and whether recorded or replayed: the audit
    # says it cannot vouch for the endpoint and the mode rather than pass them as checked.
    capsys.readouterr()
    assert main(["audit", str(report), str(ledgers), "--pricing", str(pricing)]) == 0
    assert (
        "not bound by any ledger: base_url_host, mode, settings.base_url_path, "
        "settings.max_connections, settings.requests_per_minute, settings.tokens_per_minute"
    ) in capsys.readouterr().out
    assert audit("--pricing", str(pricing)) == "ok"
    found = {}
    for name, code, tamper in TAMPERINGS:
        if isinstance(tamper, tuple):
            case_id, change = tamper
            change(ledgers / "chat-suite" / f"{case_id}.ndjson")
        else:
            _edit_report(report, tamper)
        found[name] = (code, audit())
    assert {name: got for name, (_, got) in found.items()} == {
        name: code for name, (code, _) in found.items()
    }
    _edit_report(report, lambda d: _case_of(d, "c1")["model_calls"].update(cost="0.1"))
    assert audit("--pricing", str(pricing)) == "audit_cost_mismatch"
    # Issue 43: the tampered cost passed as "ok" when no pricing table was given.
    _edit_report(report, lambda d: _case_of(d, "c1")["model_calls"].update(cost="0.1"))
    assert audit() == "audit_costs_unchecked"
    # A renamed model the pricing table also prices, or does not: named, never a KeyError.
    for renamed in ("other-model", "unpriced-model"):
        _edit_report(report, lambda d, name=renamed: d["model_run"].update(model=name))
        assert audit("--pricing", str(pricing)) == "audit_header_mismatch"
    other = chat_project.path / "other-pricing.json"
    other.write_text(json.dumps({**PRICING, "currency": "EUR"}))
    assert audit("--pricing", str(other)) == "audit_pricing_mismatch"


def _copy_tapes(source: Path, target: Path, names: set[str] | None = None) -> None:
    target.mkdir()
    for path in source.glob("*.json"):
        if names is None or path.stem in names:
            (target / path.name).write_bytes(path.read_bytes())


def _tapes(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*.json"))}


def test_cassette_mode_auto_replays_hits_records_misses_and_reports_a_mixed_run(
    chat_project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 43 / 47: cassette mode ``auto`` (a cache that goes live on a miss). The run is
    ``mixed`` with its cassette hits and recordings counted in every output, the same
    serially and under ``-n 2``; what it records is byte for byte what ``record`` writes;
    a tampered cassette is refused, never recorded over; audit checks the counts."""
    path = chat_project.path
    with ScriptedLLM().serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        recorded_run, reference = run(
            chat_project,
            "reference",
            "--agentbench-cassette-mode=record",
            f"--agentbench-cassettes={path / 'tapes-record'}",
        )
    recorded_run.assert_outcomes(passed=3, failed=1)
    by_case = case_calls(reference)
    # c1 and c2 ask the same question: c1's cassettes answer both.
    hits = set(by_case["c1"]["request_digests"])
    assert len(hits) == 2
    assert by_case["c2"]["request_digests"] == by_case["c1"]["request_digests"]
    modes = {"serial": (), "spread": ("-n", "2"), "isolated": ("--agentbench-isolate",)}
    for tag in modes:
        _copy_tapes(path / "tapes-record", path / f"tapes-{tag}", hits)
    servers = {tag: ScriptedLLM() for tag in modes}
    outcomes: dict[str, tuple[pytest.RunResult, dict[str, Any]]] = {}
    for tag, extra in modes.items():
        with servers[tag].serving() as url:
            monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", url)
            outcomes[tag] = run(
                chat_project,
                tag,
                "--agentbench-cassette-mode=auto",
                f"--agentbench-cassettes={path / f'tapes-{tag}'}",
                f"--agentbench-html={path / f'{tag}.html'}",
                *extra,
            )
    serial_report = outcomes["serial"][1]
    for result, _ in outcomes.values():
        result.assert_outcomes(passed=3, failed=1)
    provenance = serial_report["model_run"]
    total = reference["model_run"]["calls"]
    assert (provenance["mode"], provenance["cassette_hits"], provenance["recorded"]) == (
        "mixed",
        4,
        total - 4,
    )
    for server in servers.values():
        sent = {request_digest(request) for request in server.requests}
        assert not sent & hits, "a hit never reaches the endpoint"
        assert len(server.requests) == total - 4 + 1, "every miss, and c4's 429"
    # The same counts and traffic under -n 2 and isolated as serially, and per case.
    for _, other in outcomes.values():
        other_host = other["model_run"]["base_url_host"]
        assert other["model_run"] == {**provenance, "base_url_host": other_host}
        assert case_calls(other) == case_calls(serial_report)
    counts = {c: (v["cassette_hits"], v["recorded"]) for c, v in case_calls(serial_report).items()}
    assert counts == {"c1": (2, 0), "c2": (2, 0), "c3": (0, 3), "c4": (0, 1)}
    assert all(v["cassette_hits"] is None for v in by_case.values()), "record mode: not counted"
    assert reference["model_run"]["cassette_hits"] is None
    # What auto mode recorded is what record mode wrote, byte for byte.
    for tag in modes:
        assert _tapes(path / f"tapes-{tag}") == _tapes(path / "tapes-record"), tag
    assert_mixed_outputs(path, tuple(result for result, _ in outcomes.values()), total)
    assert "agentbench.model.cassette_hits" not in junit_model_properties(path / "reference.xml")
    assert_all_hits_and_tampering_in_auto(chat_project, monkeypatch, by_case, total)
    assert_audit_of_a_mixed_run(path, capsys, total)


def assert_mixed_outputs(path: Path, results: tuple[pytest.RunResult, ...], total: int) -> None:
    """The auto runs' counts in the terminal, JUnit, HTML and run log."""
    for result in results:
        result.stdout.fnmatch_lines(
            [
                "agentbench model: * mixed (replaying cassette hits, recording misses live)*",
                "model: openai-compatible *, model scripted-model, mixed",
                f"  cassettes: 4 hits, {total - 4} recorded",
            ]
        )
    for tag in ("serial", "spread", "isolated"):
        properties = junit_model_properties(path / f"{tag}.xml")
        assert properties["agentbench.model.mode"] == "mixed"
        assert properties["agentbench.model.cassette_hits"] == "4"
        assert properties["agentbench.model.recorded"] == str(total - 4)
        page = (path / f"{tag}.html").read_text()
        assert f"mixed (4 cassette hits, {total - 4} recorded)" in page
        events = log_events(path / f"{tag}.json.log.ndjson")
        assert events[0]["model"]["mode"] == "mixed"
        assert (events[-1]["cassette_hits"], events[-1]["recorded"]) == (4, total - 4)
        logged = {e["case_id"]: e["model_calls"] for e in events[1:-1]}
        assert (logged["c1"]["cassette_hits"], logged["c1"]["recorded"]) == (2, 0)


def assert_all_hits_and_tampering_in_auto(
    chat_project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    by_case: dict[str, Any],
    total: int,
) -> None:
    path = chat_project.path
    # Every request a hit: still mixed, recorded 0; the endpoint is closed and never asked.
    # c4's cassette tampered (its answer edited): refused by name in auto mode too, and
    # never recorded over.
    _copy_tapes(path / "tapes-record", path / "tapes-all")
    tampered = path / "tapes-all" / f"{by_case['c4']['request_digests'][0]}.json"
    data = json.loads(tampered.read_text())
    data["response"]["status"] = 503
    tampered.write_text(json.dumps(data))
    edited = tampered.read_bytes()
    with ScriptedLLM().serving() as closed:
        pass
    monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", closed)
    hit, hit_report = run(
        chat_project,
        "all-hits",
        "--agentbench-cassette-mode=auto",
        f"--agentbench-cassettes={path / 'tapes-all'}",
    )
    hit.assert_outcomes(passed=2, failed=2)
    assert "[cassette_tampered]" in _case_of(hit_report, "c4")["failure_reason"]
    assert tampered.read_bytes() == edited
    assert (hit_report["model_run"]["mode"], hit_report["model_run"]["recorded"]) == ("mixed", 0)
    assert hit_report["model_run"]["cassette_hits"] == total - 1, "all but c4's"


def assert_audit_of_a_mixed_run(path: Path, capsys: pytest.CaptureFixture[str], total: int) -> None:
    """audit accepts a mixed run and checks its counts against the ledgers and the log."""
    report = path / "spread.json"
    ledgers = str(path / "ledger-spread")
    pricing = ["--pricing", str(path / "pricing.json")]
    capsys.readouterr()
    assert main(["audit", str(report), ledgers, *pricing]) == 0
    assert f"mixed: 4 cassette hits, {total - 4} recorded" in capsys.readouterr().out
    pristine = report.read_bytes()
    for change in (
        lambda d: d["model_run"].update(cassette_hits=3),
        lambda d: (
            _case_of(d, "c2")["model_calls"].update(recorded=1),
            d["model_run"].update(recorded=total - 3),
        ),
        lambda d: _case_of(d, "c3")["model_calls"].update(cassette_hits=None),
        lambda d: d["model_run"].update(mode="record"),
    ):
        _edit_report(report, change)
        assert main(["audit", str(report), ledgers, *pricing]) == 1
        assert "[audit_mode_mismatch]" in capsys.readouterr().err
        report.write_bytes(pristine)
    log = path / "spread.json.log.ndjson"
    lines = log.read_text().splitlines()
    end = json.loads(lines[-1])
    lines[-1] = json.dumps({**end, "recorded": end["recorded"] - 1})
    log.write_text("\n".join(lines) + "\n")
    assert main(["audit", str(report), ledgers, *pricing]) == 1
    err = capsys.readouterr().err
    assert "[audit_mode_mismatch]" in err
    assert "the run log's end states" in err
    # A malformed log is refused naming the log and its line, not the report beside it.
    start = json.loads(lines[0])
    for number, line, reason in (
        (2, "{not json", "the run log's event is not JSON (Expecting property name"),
        (3, "[1, 2]", "the run log's event is a JSON list, not an object"),
        (1, json.dumps({**start, "model": {}}), "model.mode: the run log's start event"),
        (1, json.dumps({**start, "model": "mixed"}), "model.mode: the run log's start event"),
    ):
        broken = list(lines)
        broken[number - 1] = line
        log.write_text("\n".join(broken) + "\n")
        assert main(["audit", str(report), ledgers, *pricing]) == 1
        err = capsys.readouterr().err
        assert f"[audit_unreadable] {log}:{number}: {reason}" in err, err
    log.write_bytes(b"\xff\n")
    assert main(["audit", str(report), ledgers, *pricing]) == 1
    assert f"[audit_unreadable] {log}: the run log is not UTF-8 (byte 0)" in capsys.readouterr().err

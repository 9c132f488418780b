"""``--agentbench-concurrency N``: cases run at once inside a process, reports as in a serial run.

Every comparison is between sessions of the same project: a serial one without xdist
and concurrent ones, one of them under ``-n 2`` (concurrency inside each xdist worker,
the workers' reports aggregated). Only durations may differ.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from pytest_agentbench.run.case_ledger import digest_of, ledger_path
from pytest_agentbench.sdk.ledger import read_ledger
from tests.demo_world import write_demo_suite
from tests.llm_server import ScriptedLLM
from tests.reports import normalised

KEY_ENV = "AGENTBENCH_TEST_LLM_KEY"
CHAT_QUESTIONS = ("tools", "malformed_args", "rate_limited", "server_error", "not_json", "prose")
"""The scripted server's scenarios that end quickly: answered, retried, refused, malformed."""

CHAT_INI = (
    "[pytest]\n"
    "agentbench_llm_model = scripted-model\n"
    f"agentbench_llm_api_key_env = {KEY_ENV}\n"
    "agentbench_llm_timeout = 5\n"
    "agentbench_llm_max_turns = 4\n"
    "agentbench_llm_retry_backoff = 0\n"
)

ADAPTERS = """
import asyncio
import time


class Hangs:
    '''Two cases never answer: one blocked where no interrupt reaches, one in a Python loop.'''

    def answer(self, question):
        if question == "2+3":
            time.sleep(3600)
        if question == "10+5":
            while True:
                time.sleep(0.01)
        return eval(question)


class Async:
    async def answer(self, question):
        await asyncio.sleep(0.01)
        return eval(question)


class Raises:
    def answer(self, question):
        if question == "4+4":
            raise ValueError("no")
        if question == "5+5":
            return "ten"
        return eval(question)
"""

QUESTIONS = {f"c{index}": f"{index}+{index}" for index in range(1, 10)}
TRIALS = 2
"""Trials per case in the repeated runs: two tell one trial's result and ledger from another's."""


def junit_normalised(path: Path) -> list[str]:
    """The JUnit file's test cases, without times or the loopback server's port, in name order
    (xdist's order varies)."""
    root = ElementTree.parse(path).getroot()
    for element in root.iter():
        for attribute in ("time", "timestamp", "hostname"):
            element.attrib.pop(attribute, None)
        name = element.get("name", "")
        if name in {"agentbench.model.base_url_host", "agentbench.model.mode"} or (
            name.startswith("agentbench.model.") and "wait" in name
        ):
            element.set("value", "")
    suite = root if root.tag == "testsuite" else root[0]
    cases = sorted(
        ElementTree.tostring(case, encoding="unicode") for case in suite if case.tag == "testcase"
    )
    others = [
        ElementTree.tostring(child, encoding="unicode")
        for child in suite
        if child.tag != "testcase"
    ]
    return [json.dumps(dict(sorted(suite.attrib.items()))), *others, *cases]


def run(project: pytest.Pytester, name: str, *args: str) -> tuple[pytest.RunResult, Any]:
    report = project.path / f"{name}.json"
    result = project.runpytest(
        f"--agentbench-report={report}",
        f"--junitxml={name}.xml",
        "-p",
        "no:cacheprovider",
        "-m",
        "not agentbench_control",
        *args,
    )
    return result, normalised(json.loads(report.read_text()))


def ledger_files(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_a_concurrent_chat_run_reports_exactly_as_a_serial_one_and_replays_alike(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_demo_suite(
        demo.path,
        "chat-suite",
        questions={q: q for q in CHAT_QUESTIONS},
        answers=dict.fromkeys(CHAT_QUESTIONS, 3),
        world="demo-tools",
    )
    demo.makeini(CHAT_INI)
    chat = ("--agentbench-adapter=pytest_agentbench.agents.chat:ChatAgent",)
    runs: dict[str, tuple[pytest.RunResult, Any]] = {}
    for name, extra in {
        "serial": (),
        "concurrent": ("--agentbench-concurrency=8",),
        "recorded": ("--agentbench-concurrency=8", "--agentbench-cassettes=cassettes"),
    }.items():
        # A fresh server per run: its rate-limit scenario answers 429 to a question once.
        with ScriptedLLM().serving() as base_url:
            monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
            runs[name] = run(demo, name, *chat, f"--agentbench-ledger={name}", *extra)
    # Nothing listens at the address any more: replay alone answers, in two workers.
    runs["replayed"] = run(
        demo,
        "replayed",
        *chat,
        "--agentbench-ledger=replayed",
        "--agentbench-concurrency=8",
        "--agentbench-cassettes=cassettes",
        "-n",
        "2",
    )
    serial_result, serial = runs["serial"]
    serial_result.assert_outcomes(passed=2, failed=4)
    (suite,) = serial["suites"]
    assert {e["result"]["case_id"]: e["result"]["failure_class"] for e in suite["cases"]} == {
        "tools": None,
        "malformed_args": None,
        "rate_limited": None,
        "server_error": "agent_error",
        "not_json": "agent_error",
        "prose": "product_error",
    }
    serial_junit = junit_normalised(demo.path / "serial.xml")
    serial_ledgers = ledger_files(demo.path / "serial")
    assert len(serial_ledgers) == len(CHAT_QUESTIONS)
    for name in ("concurrent", "recorded", "replayed"):
        result, report = runs[name]
        result.assert_outcomes(passed=2, failed=4)
        assert report == serial, name
        assert junit_normalised(demo.path / f"{name}.xml") == serial_junit, name
        assert ledger_files(demo.path / name) == serial_ledgers, name


def test_concurrency_with_repeats_async_adapters_and_failures_matches_serial(
    demo: pytest.Pytester,
) -> None:
    write_demo_suite(demo.path, questions=QUESTIONS)
    demo.makepyfile(my_adapters=ADAPTERS)
    # Without xdist: the chat run above is the one a concurrent run under -n 2 is compared
    # in, and tests/test_plugin_trials.py spreads repeats over workers.
    for adapter in ("Async", "Raises"):
        args = (f"--agentbench-adapter=my_adapters:{adapter}", f"--agentbench-repeat={TRIALS}")
        serial_result, serial = run(
            demo, f"{adapter}-serial", *args, f"--agentbench-ledger={adapter}-serial"
        )
        result, concurrent = run(
            demo,
            f"{adapter}-concurrent",
            *args,
            "--agentbench-concurrency=4",
            f"--agentbench-ledger={adapter}-concurrent",
        )
        assert concurrent == serial, adapter
        ledgers = ledger_files(demo.path / f"{adapter}-concurrent")
        assert ledgers == ledger_files(demo.path / f"{adapter}-serial")
        assert len(ledgers) == TRIALS * len(QUESTIONS)
        assert junit_normalised(demo.path / f"{adapter}-concurrent.xml") == junit_normalised(
            demo.path / f"{adapter}-serial.xml"
        )
        cases = [entry["result"] for entry in concurrent["suites"][0]["cases"]]
        assert len(cases) == TRIALS * len(QUESTIONS)
        assert sorted({case["trial"] for case in cases}) == list(range(1, TRIALS + 1))
        failed = {
            case["case_id"]: case["failure_class"] for case in cases if case["outcome"] != "passed"
        }
        if adapter == "Async":
            assert not failed, "an async adapter method is awaited: every case answers"
            result.assert_outcomes(passed=TRIALS * len(QUESTIONS))
            path = ledger_path(demo.path / "Async-concurrent", "demo-suite", "c3[trial-2]")
            (call,) = [row["call"] for row in read_ledger(path).rows if row["row_kind"] == "call"]
            # The ledger records what the coroutine answered, not the coroutine.
            assert call["decision"]["decision_digest_sha256"] == digest_of(6)
        else:
            assert failed == {"c4": "agent_error", "c5": "product_error"}
    assert serial_result.ret == 1


def test_hung_concurrent_cases_time_out_classified_and_free_their_slots(
    demo: pytest.Pytester,
) -> None:
    # Two slots, and the first two cases hang: the other cases only run if the
    # hung ones give their slots up.
    questions = {"h1": "2+3", "h2": "10+5", **{f"c{i}": f"{i}+1" for i in range(1, 6)}}
    write_demo_suite(demo.path, questions=questions)
    demo.makepyfile(my_adapters=ADAPTERS)
    report = demo.path / "run.json"
    result = demo.runpytest_subprocess(
        "--agentbench-adapter=my_adapters:Hangs",
        "--agentbench-concurrency=2",
        # Short: the five cases that must answer in it do nothing but add.
        "--agentbench-timeout=0.5",
        "--agentbench-ledger=ledgers",
        f"--agentbench-report={report}",
        "-m",
        "not agentbench_control",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=5, failed=2)
    (suite,) = json.loads(report.read_text())["suites"]
    outcomes = {e["result"]["case_id"]: e["result"] for e in suite["cases"]}
    for hung in ("h1", "h2"):
        assert outcomes[hung]["failure_class"] == "agent_error"
        assert outcomes[hung]["failure_reason"].startswith("timed out after ")
        assert outcomes[hung]["failure_reason"].endswith("(--agentbench-timeout=0.5)")
        last = (demo.path / "ledgers" / "demo-suite" / f"{hung}.ndjson").read_text()
        terminal = json.loads(last.splitlines()[-1])
        assert terminal["row_kind"] == "terminal"
        assert terminal["terminal"]["kind"] == "excluded"
        assert terminal["terminal"]["exclusion_code"] == "case_timeout"
    assert all(outcomes[f"c{i}"]["outcome"] == "passed" for i in range(1, 6))


@pytest.mark.parametrize(
    ("args", "ini", "code", "named"),
    [
        (["--agentbench-concurrency=0"], "", "invalid_concurrency", "--agentbench-concurrency"),
        (["--agentbench-concurrency=-2"], "", "invalid_concurrency", "--agentbench-concurrency"),
        (["--agentbench-concurrency=many"], "", "invalid_concurrency", "--agentbench-concurrency"),
        (["--agentbench-concurrency=1025"], "", "invalid_concurrency", "--agentbench-concurrency"),
        ([], "agentbench_concurrency = 1.5", "invalid_concurrency", "agentbench_concurrency"),
    ],
)
def test_bad_concurrency_is_refused_by_name(
    demo: pytest.Pytester, args: list[str], ini: str, code: str, named: str
) -> None:
    write_demo_suite(demo.path)
    demo.makeini(f"[pytest]\n{ini}\n")
    result = demo.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*[[]{code}[]]*{named}*"])


def test_a_concurrent_resume_runs_only_what_is_missing_and_merges_exactly(
    demo: pytest.Pytester,
) -> None:
    write_demo_suite(demo.path, questions=QUESTIONS)
    demo.makepyfile(my_adapters=ADAPTERS)
    adapter = "--agentbench-adapter=my_adapters:Raises"
    _, complete = run(demo, "complete", adapter)
    run(demo, "partial", adapter, "-k", "c1 or c2 or c4")
    result, resumed = run(
        demo,
        "resumed",
        adapter,
        f"--agentbench-resume={demo.path / 'partial.json'}",
        "--agentbench-concurrency=4",
    )
    # The six missing cases ran, and c4 again: an agent_error is not a graded result.
    result.assert_outcomes(passed=5, failed=2)
    (suite,) = resumed["suites"]
    (whole,) = complete["suites"]
    assert suite["metrics"] == whole["metrics"]
    assert suite["counts"] == whole["counts"]
    assert sorted(suite["cases"], key=lambda e: e["result"]["case_id"]) == sorted(
        whole["cases"], key=lambda e: e["result"]["case_id"]
    )

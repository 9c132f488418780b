"""``--agentbench-ledger``: every case of a pytest run writes an execution ledger that audits."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli.main import main
from pytest_agentbench.run.case_ledger import evidence, ledger_path
from pytest_agentbench.sdk.canonical import canonical_bytes, sha256_hex
from pytest_agentbench.sdk.files import id_file_name
from pytest_agentbench.sdk.ledger import read_ledger
from tests.demo_world import REGISTERING_CONFTEST, write_demo_suite
from tests.llm_server import ScriptedLLM

ADAPTERS = """
import time


class Raises:
    def answer(self, question):
        if question == "2+3":
            raise ValueError("cannot add today")
        return eval(question)


class Sleeps:
    def answer(self, question):
        if question == "2+3":
            time.sleep(60)
        return eval(question)


class ReturnsText:
    def answer(self, question):
        return str(eval(question))
"""


def audit(path: Path) -> str:
    """``agentbench audit-ledger PATH``, its command run in this process (a process per
    ledger would cost a second of start-up each); its one line of output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["audit-ledger", str(path)])
    assert status == 0, out.getvalue() + err.getvalue()
    return out.getvalue().strip()


def calls_of(path: Path) -> list[dict[str, Any]]:
    return [row["call"] for row in read_ledger(path).rows if row["row_kind"] == "call"]


def ledgers(folder: Path) -> dict[str, bytes]:
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in files}


def report_cases(path: Path) -> dict[str, dict[str, Any]]:
    report = json.loads(path.read_text())
    return {
        f"{suite['id']}/{entry['result']['case_id']}": entry["result"]
        for suite in report["suites"]
        for entry in suite["cases"]
    }


# A built-in suite's ledgers, audited and the same under xdist: in the sessions
# tests/test_plugin_operations.py runs serially and under -n 2 anyway.


@pytest.fixture
def project(demo: pytest.Pytester) -> pytest.Pytester:
    write_demo_suite(demo.path)
    demo.makepyfile(faulty=ADAPTERS)
    return demo


def run_demo(project: pytest.Pytester, adapter: str, *args: str) -> dict[str, dict[str, Any]]:
    report = project.path / "run.json"
    project.runpytest(
        f"--agentbench-adapter=faulty:{adapter}",
        f"--agentbench-report={report}",
        "--agentbench-ledger=ledgers",
        "-m",
        "not agentbench_control",
        *args,
    )
    return report_cases(report)


def terminal_of(path: Path) -> dict[str, Any]:
    row = read_ledger(path).rows[-1]
    assert row["row_kind"] == "terminal"
    terminal = row["terminal"]
    assert isinstance(terminal, dict)
    return terminal


@pytest.mark.parametrize("isolate", [(), ("--agentbench-isolate",)], ids=["inline", "isolated"])
def test_rows_are_the_adapter_calls_and_a_raise_aborts(
    project: pytest.Pytester, isolate: tuple[str, ...]
) -> None:
    cases = run_demo(project, "Raises", *isolate)
    assert cases["demo-suite/c2"]["failure_class"] == "agent_error"
    folder = project.path / "ledgers" / "demo-suite"
    for case_id, question, answer in (("c1", "1+1", 2), ("c3", "10+5", 15)):
        path = folder / f"{case_id}.ndjson"
        audit(path)
        (call,) = calls_of(path)
        received = {"method": "answer", "args": [question], "kwargs": {}}
        assert call["method"] == "answer"
        assert call["observation_digest_sha256"] == sha256_hex(canonical_bytes(received))
        assert call["decision"]["decision_digest_sha256"] == sha256_hex(canonical_bytes(answer))
        assert "attempts" not in call, "never invented"
        assert "request_digest_sha256" not in call
        assert terminal_of(path)["kind"] == "scored"
    (raised,) = calls_of(folder / "c2.ndjson")
    assert raised["decision"] is None
    assert len(raised["error_digest_sha256"]) == 64
    assert terminal_of(folder / "c2.ndjson")["kind"] == "aborted"
    audit(folder / "c2.ndjson")


def test_a_hung_adapter_ledger_ends_timed_out(project: pytest.Pytester) -> None:
    cases = run_demo(project, "Sleeps", "--agentbench-timeout=0.5")
    assert "timed out" in (cases["demo-suite/c2"]["failure_reason"] or "")
    path = project.path / "ledgers" / "demo-suite" / "c2.ndjson"
    audit(path)
    assert terminal_of(path) == {
        "kind": "excluded",
        "exclusion_code": "case_timeout",
        "totals": {
            "attempts": 0,
            "calls": 1,
            "decisions": 0,
            "input_tokens": 0,
            "output_tokens": 0,
        },
    }
    assert calls_of(path)[0]["decision"] is None


def test_returned_text_garbage_an_existing_ledger_and_a_linked_folder_side_by_side(
    project: pytest.Pytester,
) -> None:
    """One session of an adapter returning text, over suites whose ledger folders differ:
    - demo-suite (a clean folder): garbage output is a completed call;
    - existing (c1's ledger there from an earlier run): that case is a harness error, the
      file never overwritten, the other cases still run;
    - linked (its folder a link): every case refused, no link followed."""
    write_demo_suite(project.path, "existing")
    write_demo_suite(project.path, "linked")
    existing = project.path / "ledgers" / "existing"
    existing.mkdir(parents=True)
    (existing / "c1.ndjson").write_bytes(b"earlier run\n")
    elsewhere = project.path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, project.path / "ledgers" / "linked")
    cases = run_demo(project, "ReturnsText")

    # Garbage output is a completed call.
    assert cases["demo-suite/c1"]["failure_class"] == "product_error"
    path = project.path / "ledgers" / "demo-suite" / "c1.ndjson"
    audit(path)
    (call,) = calls_of(path)
    assert call["decision"]["decision_digest_sha256"] == sha256_hex(canonical_bytes("2"))
    assert terminal_of(path)["kind"] == "scored"

    # A ledger that cannot be written is that case's harness error.
    assert cases["existing/c1"]["failure_class"] == "harness_error"
    assert "[ledger_exists]" in (cases["existing/c1"]["failure_reason"] or "")
    assert (existing / "c1.ndjson").read_bytes() == b"earlier run\n", "never overwritten"
    assert cases["existing/c2"]["failure_class"] == "product_error", "other cases still run"
    audit(existing / "c2.ndjson")

    # A ledger folder that is a link is refused.
    reasons = [
        result["failure_reason"] or "" for key, result in cases.items() if key.startswith("linked/")
    ]
    assert len(reasons) == 3
    assert all("[ledger_unsafe_path]" in reason for reason in reasons)
    assert not any(elsewhere.iterdir()), "no link is followed"


def test_ledger_names_are_one_safe_component_per_id(tmp_path: Path) -> None:
    assert id_file_name("a/b") == "a%2Fb"
    assert id_file_name("..") == "%2E."
    assert id_file_name("x:y") != id_file_name("x_y")
    assert ledger_path(tmp_path, "s", "../c").parent == tmp_path / "s"
    assert len(ledger_path(tmp_path, "s", "c" * 1000).name) == 255


KEY_ENV = "AGENTBENCH_TEST_LLM_KEY"
QUESTIONS = ("tools", "rate_limited", "prose", "server_error")


def chat_run(project: pytest.Pytester, folder: str) -> None:
    project.runpytest(
        "--agentbench-adapter=pytest_agentbench.agents.chat:ChatAgent",
        f"--agentbench-ledger={folder}",
        "--agentbench-timeout=20",
        "-m",
        "not agentbench_control",
    )


def test_chat_agent_ledger_carries_usage_and_replays_identically(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_demo_suite(
        demo.path,
        "chat-suite",
        questions={q: q for q in QUESTIONS},
        answers=dict.fromkeys(QUESTIONS, 3),
        world="demo-tools",
    )
    demo.makeini(
        "[pytest]\n"
        "agentbench_llm_model = scripted-model\n"
        f"agentbench_llm_api_key_env = {KEY_ENV}\n"
        "agentbench_llm_timeout = 5\n"
        "agentbench_llm_max_turns = 4\n"
        "agentbench_llm_retry_backoff = 0\n"
        "agentbench_cassettes = cassettes\n"
    )
    server = ScriptedLLM()
    with server.serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        chat_run(demo, "recorded")
    monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)  # nothing listens there now
    chat_run(demo, "replayed")
    recorded = demo.path / "recorded" / "chat-suite"
    for question in QUESTIONS:
        audit(recorded / f"{question}.ndjson")
    (tools,) = calls_of(recorded / "tools.ndjson")
    requests = [r for r in server.requests if '"question":"tools"' in r["messages"][1]["content"]]
    assert [a["request_digest_sha256"] for a in tools["attempts"]] == [
        sha256_hex(canonical_bytes(r)) for r in requests
    ]
    assert tools["request_digest_sha256"] == tools["attempts"][-1]["request_digest_sha256"]
    assert [a["outcome"] for a in tools["attempts"]] == ["response", "response"]
    assert tools["attempts"][0]["tokens"] == {"input": 120, "output": 5, "total": 125}
    (limited,) = calls_of(recorded / "rate_limited.ndjson")
    assert [(a["outcome"], a.get("fault")) for a in limited["attempts"]] == [
        ("fault", "http_429"),
        ("response", None),
    ]
    (prose,) = calls_of(recorded / "prose.ndjson")
    assert all("tokens" not in a for a in prose["attempts"]), "absent usage is never invented"
    (failed,) = calls_of(recorded / "server_error.ndjson")
    assert [a.get("fault") for a in failed["attempts"]] == ["http_500"] * 3
    assert failed["decision"] is None
    assert terminal_of(recorded / "tools.ndjson")["totals"]["input_tokens"] == 120 + 140
    assert ledgers(demo.path / "replayed") == ledgers(demo.path / "recorded")


FAILING_FSYNC = """
import os

import pytest

from pytest_agentbench.sdk.ledger import writer

real = writer.LedgerIO
synced = {}


def fsync(fd):
    path = os.readlink(f"/proc/self/fd/{fd}")
    synced[path] = synced.get(path, 0) + 1
    if path.endswith("c2.ndjson") and synced[path] == 2:
        raise OSError(5, "Input/output error")
    os.fsync(fd)


@pytest.fixture(autouse=True)
def failing_disk(monkeypatch):
    monkeypatch.setattr(writer, "LedgerIO", lambda: real(fsync=fsync))
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_a_row_that_fails_to_write_makes_that_case_a_harness_error(
    project: pytest.Pytester,
) -> None:
    project.makeconftest(REGISTERING_CONFTEST + FAILING_FSYNC)
    cases = run_demo(project, "ReturnsText")
    assert cases["demo-suite/c2"]["failure_class"] == "harness_error"
    assert "[ledger_write_failed]" in (cases["demo-suite/c2"]["failure_reason"] or "")
    assert cases["demo-suite/c3"]["failure_class"] == "product_error", "other cases still run"
    folder = project.path / "ledgers" / "demo-suite"
    assert read_ledger(folder / "c2.ndjson").status == "incomplete"
    audit(folder / "c3.ndjson")


def test_evidence_never_uses_repr() -> None:
    class Opaque:
        pass

    one, other = evidence({"x": Opaque(), "n": float("nan")}), evidence({"x": Opaque()})
    assert one["x"] == other["x"] == {"$object": f"{__name__}.{Opaque.__qualname__}"}
    assert one["n"] == {"$float": "nan"}


def test_every_trial_of_a_repeated_case_writes_its_own_ledger(project: pytest.Pytester) -> None:
    report = project.path / "run.json"
    project.runpytest(
        "--agentbench-adapter=faulty:ReturnsText",
        f"--agentbench-report={report}",
        "--agentbench-ledger=ledgers",
        "--agentbench-repeat=2",
        "-m",
        "not agentbench_control",
    )
    results = [
        entry["result"]
        for suite in json.loads(report.read_text())["suites"]
        for entry in suite["cases"]
    ]
    assert len(results) == 6
    assert {result["failure_class"] for result in results} == {"product_error"}
    folder = project.path / "ledgers"
    for case_id in ("c1", "c2", "c3"):
        for index in (1, 2):
            path = ledger_path(folder, "demo-suite", f"{case_id}[trial-{index}]")
            audit(path)
            assert read_ledger(path).rows[0]["header"]["scenario_id"] == f"{case_id}[trial-{index}]"
    assert len(ledgers(folder)) == 6

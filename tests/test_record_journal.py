"""``agentbench record --journal``: a chat-model run's episode in OperateBench's journal layout.

The chat agent runs an operations case against a scripted model served over
``https`` on 127.0.0.1 (a certificate made for the test, trusted through
``SSL_CERT_FILE``): the original's journal header states only a bare https base
URL. The journal ``record`` writes is audited by ``agentbench audit-ledger`` and a
rerun writes the same bytes; every run the layout cannot state is refused by name.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.agents import settings, transport
from tests import test_operations_artifacts as artifacts
from tests.llm_server import tool_call
from tests.test_cli_operations import run
from tests.test_operations_artifacts import CHAT, PRICING, REFERENCE, SUITE

READ = json.dumps({"requests": [{"collection": "operation"}]})


class WaitingModel(artifacts.WaitingModel):
    """Answers every observation WAIT at once (one request per decision); with ``reads``,
    reads the operation record first (two requests behind one decision)."""

    reads = False
    down = False
    """Every request answered 500 (the chat agent retries, then raises)."""

    def reply(self, body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
        if self.down:
            return 500, '{"error": {"message": "internal"}}', {}
        return super().reply(body)

    def message(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        turn = sum(1 for m in messages if m["role"] == "assistant")
        if self.reads and turn == 0:
            return tool_call(turn, "retrieve", READ)
        return super().message(messages)


def record(capsys: pytest.CaptureFixture[str], out: str, *how: str) -> tuple[int, str, str]:
    return run(capsys, "record", SUITE, "V1", *how, "--out", out, "--journal")


def files(folder: Path) -> dict[str, bytes]:
    if not folder.exists():
        return {}
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


@pytest.fixture
def tls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ssl.SSLContext]:
    """A server context for 127.0.0.1, its certificate the only one the client trusts."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is needed to make the test server's certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    # The process's clients share one TLS context, made once: made again with this trust,
    # and again after, so no other test sees it.
    transport._shared_tls_context.cache_clear()
    yield context
    transport._shared_tls_context.cache_clear()


@pytest.fixture
def model_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    # Outside a pytest session the command reads the environment: not this session's settings.
    monkeypatch.setattr(settings._Configured, "settings", None)
    pricing = tmp_path / "pricing.json"
    pricing.write_text(json.dumps(PRICING), encoding="utf-8")
    for name, value in {
        "AGENTBENCH_LLM_MODEL": "scripted-model",
        "AGENTBENCH_LLM_TIMEOUT": "5",
        "AGENTBENCH_LLM_RETRY_BACKOFF": "0",
        "AGENTBENCH_LLM_MAX_TOKENS_PER_CALL": "16000",
        "AGENTBENCH_PRICING": str(pricing),
    }.items():
        monkeypatch.setenv(name, value)
    return tmp_path


def test_record_writes_a_journal_audit_ledger_accepts_and_a_rerun_repeats(
    capsys: pytest.CaptureFixture[str],
    model_env: Path,
    tls: ssl.SSLContext,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = WaitingModel()
    with model.serving(tls) as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        status, out, err = record(capsys, "first", "--adapter", CHAT)
        assert (status, err) == (0, ""), err
        sent = len(model.requests)
        again = record(capsys, "again", "--adapter", CHAT)
    lines = out.splitlines()
    assert [line.split(" ")[0] for line in lines] == ["episode", "ledger", "journal"]
    assert lines[2].startswith("journal first/V1.journal.ndjson sha256:")
    digest = lines[2].rpartition("sha256:")[2]
    journal = Path("first/V1.journal.ndjson")
    rows = [json.loads(line) for line in journal.read_bytes().splitlines()]
    assert rows[-1]["row_digest_sha256"] == digest
    header = rows[0]["header"]
    assert header["provider"]["base_url"] == base_url
    assert header["provider"]["model"] == "scripted-model"
    assert header["provider"]["implementation"] == CHAT
    assert header["controls"]["max_output_tokens"] == 16000
    assert header["controls"]["pricing"] == {
        "input_usd_per_mtok": "2.5",
        "output_usd_per_mtok": "10",
    }
    assert header["agent_id"] == CHAT
    calls = [row["call"] for row in rows if row["row_kind"] == "call"]
    assert calls
    assert all(len(call["attempts"]) == 1 for call in calls)
    assert rows[-1]["terminal"]["kind"] == "scored"
    # Each decision one request: the server saw as many as the journal states.
    assert len(calls) == sent

    status, audited, err = run(capsys, "audit-ledger", str(journal))
    assert (status, err) == (0, "")
    assert audited.startswith(f"ok: {journal}: OperateBench journal, ledger_version 3, ")
    assert "terminal scored" in audited
    assert run(capsys, "audit-ledger", "first/V1.ledger.ndjson")[0] == 0

    # A rerun against the same endpoint writes the same bytes: every instant is simulated.
    assert again[0] == 0
    assert again[1] == out.replace("first/", "again/")
    assert files(Path("again")) == files(Path("first"))


def test_record_names_what_a_journal_it_cannot_write_or_a_failed_run_leaves(
    capsys: pytest.CaptureFixture[str],
    model_env: Path,
    tls: ssl.SSLContext,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = WaitingModel()
    with model.serving(tls) as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        # Two requests behind one decision: the original's call is one request.
        model.reads = True
        status_reads, out_reads, err_reads = record(capsys, "reads", "--adapter", CHAT)
        # An endpoint that fails: the adapter raises, the ledger and journal are aborted.
        model.reads, model.down = False, True
        status_down, out_down, err_down = record(capsys, "down", "--adapter", CHAT)
    # Refused by name, the ledger and episode kept and named, no journal left.
    assert status_reads == 1
    assert out_reads == ""
    assert err_reads.startswith("agentbench: [journal_call_unrepresentable] reads/V1.journal")
    assert "no journal written (episode reads/V1.episode.json; ledger reads/V1.ledger" in err_reads
    assert sorted(files(Path("reads"))) == ["V1.episode.json", "V1.ledger.ndjson"]
    assert run(capsys, "audit-ledger", "reads/V1.ledger.ndjson")[0] == 0

    # One line, no traceback, naming what the failure left; both files audit as aborted.
    assert (status_down, out_down) == (1, "")
    assert err_down.startswith(
        "agentbench: [adapter_failed] down/V1.ledger.ndjson: adapter raised ChatAgentError: "
        "[llm_http_error] the endpoint answered HTTP 500; no episode; ledger down/V1.ledger"
    )
    assert err_down.count("\n") == 1
    assert "; journal down/V1.journal.ndjson sha256:" in err_down
    assert sorted(files(Path("down"))) == ["V1.journal.ndjson", "V1.ledger.ndjson"]
    status, audited, _ = run(capsys, "audit-ledger", "down/V1.journal.ndjson")
    assert status == 0
    assert "terminal aborted (execution_aborted)" in audited
    assert "faults: provider_server_error 3" in audited


def test_record_refuses_a_journal_it_cannot_state_before_running(
    capsys: pytest.CaptureFixture[str], model_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A built-in agent and a user's adapter call no provider: there is no journal to write.
    status, out, err = record(capsys, "builtin", "--agent", "reference")
    assert (status, out) == (1, "")
    assert err.startswith("agentbench: [journal_no_provider] --journal: built-in agent ")
    status, _, err = record(capsys, "adapter", "--adapter", REFERENCE)
    assert status == 1
    assert err.startswith("agentbench: [journal_no_provider] --journal: adapter ")
    # The chat agent on a plain-http endpoint, or with no price for its model: the
    # original's header cannot state it, and nothing is sent (no server listens).
    monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    status, _, err = record(capsys, "plain", "--adapter", CHAT)
    assert status == 1
    assert err.startswith(
        "agentbench: [journal_setup_unrepresentable] agentbench_llm_base_url: "
        "the original's journal states only a bare https base URL"
    )
    monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", "https://127.0.0.1:9/v1")
    monkeypatch.delenv("AGENTBENCH_PRICING")
    status, _, err = record(capsys, "unpriced", "--adapter", CHAT)
    assert status == 1
    assert err.startswith("agentbench: [journal_setup_unrepresentable] agentbench_pricing: ")
    monkeypatch.delenv("AGENTBENCH_LLM_MAX_TOKENS_PER_CALL")
    status, _, err = record(capsys, "unbound", "--adapter", CHAT)
    assert err.startswith(
        "agentbench: [journal_setup_unrepresentable] agentbench_llm_max_tokens_per_call: "
    )
    for folder in ("builtin", "adapter", "plain", "unpriced", "unbound"):
        assert files(Path(folder)) == {}, folder
    # Without --journal the built-in agent records as before: ledger and episode only.
    status, out, _ = run(capsys, "record", SUITE, "V1", "--agent", "reference", "--out", "plain")
    assert status == 0
    assert sorted(files(Path("plain"))) == ["V1.episode.json", "V1.ledger.ndjson"]

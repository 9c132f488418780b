"""An operations episode's ledger in OperateBench's journal layout, read back by our reader of it.

A model run is stood in for by the reference agent reporting one model request per
decision, as the chat agent does (``drain_usage``). Its episode is recorded with a
journal setup (provider and controls); the journal is audited by the reader behind
``agentbench audit-ledger`` (the original's layout), and each field the writer adds
is tampered with (and re-chained, so no digest sees it) to get the reader's code.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import io
import json
import os
import stat
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli.main import main
from pytest_agentbench.sdk.canonical import canonical_bytes, sha256_hex
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger import (
    Attempt,
    CallPayload,
    Decision,
    Tokens,
    UsageReport,
    journal_writer,
)
from pytest_agentbench.sdk.ledger.journal import (
    CONTROLS_FIELDS,
    audit_journal,
    journal_row_digest,
)
from pytest_agentbench.sdk.ledger.journal_writer import (
    NO_COST_CAP,
    NO_LIMIT,
    JournalCall,
    JournalProvider,
    JournalSetup,
    journal_bytes,
    original_fault,
    run_controls,
    write_journal,
)
from pytest_agentbench.sdk.ledger.rows import HeaderPayload
from pytest_agentbench.sdk.runner import AdapterFailure
from pytest_agentbench.worlds.operations.agents import Reference
from pytest_agentbench.worlds.operations.execution import record_episode, replay_episode
from pytest_agentbench.worlds.operations.spec import render_time
from tests.worlds.operations.helpers import shipped

IN_RATE, OUT_RATE, BOUND, RETRIES = "0.0000025", "0.00001", 1000, 2
UNREPORTED = 2
"""The decision whose answer reported no token counts (its reservation is forfeited)."""

PROVIDER = JournalProvider(
    provider="openai-compatible",
    api="chat.completions",
    model="scripted-model",
    base_url="https://models.example/v1",
    implementation="pytest-agentbench.chat",
    request_mapping="chat.completions.v1",
    protocol_version="1",
    sdk="httpx",
    sdk_version="0.27",
    settings={"temperature": 0.0, "seed": 0, "max_retries": RETRIES},
)


def setup(**limits: Any) -> JournalSetup:
    controls = run_controls(
        max_tokens_per_call=BOUND,
        input_per_token=IN_RATE,
        output_per_token=OUT_RATE,
        max_retries=RETRIES,
        timeout_s=60.0,
        **limits,
    )
    return JournalSetup(provider=PROVIDER, controls=controls)


class ModelLike(Reference):
    """The reference agent's decisions with the usage of one model request each.

    ``faults`` maps a decision's number to the faults its request met before the
    answer; ``raise_at`` is the decision whose request only faulted (the adapter
    then raises, so the episode aborts); ``malformed_at`` answers outside the schema.
    """

    def __init__(
        self, faults: dict[int, list[str]] | None = None, raise_at: int = -1, malformed_at: int = -1
    ) -> None:
        super().__init__()
        self.calls = 0
        self.faults = faults or {}
        self.raise_at = raise_at
        self.malformed_at = malformed_at
        self.pending: UsageReport | None = None

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        number, self.calls = self.calls, self.calls + 1
        request = sha256_hex(canonical_bytes({"request": task}))
        attempts = [
            Attempt(
                attempt_index=index,
                outcome="fault",
                fault=fault,
                response_received=True,
                http_status=int(fault.removeprefix("http_")),
                request_digest_sha256=request,
            )
            for index, fault in enumerate(self.faults.get(number, []), start=1)
        ]
        if number == self.raise_at:
            self.pending = UsageReport(request_digest_sha256=request, attempts=tuple(attempts))
            raise RuntimeError("the endpoint kept failing")
        tokens = None if number == UNREPORTED else Tokens(input=100 + number, output=7)
        attempts.append(
            Attempt(
                attempt_index=len(attempts) + 1,
                outcome="response",
                tokens=tokens,
                response_received=True,
                http_status=200,
                request_digest_sha256=request,
            )
        )
        self.pending = UsageReport(request_digest_sha256=request, attempts=tuple(attempts))
        if number == self.malformed_at:
            return {"outcome": "SHRUG"}
        return super().solve(task, session)

    def drain_usage(self) -> UsageReport | None:
        report, self.pending = self.pending, None
        return report


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def rechained(source: list[dict[str, Any]], edit: Callable[[list[dict[str, Any]]], None]) -> bytes:
    """The rows edited, every digest and back-link recomputed: only the checks can see it."""
    edited = copy.deepcopy(source)
    edit(edited)
    previous = "0" * 64
    data = b""
    for row in edited:
        row["previous_row_digest_sha256"] = previous
        row["row_digest_sha256"] = journal_row_digest(row)
        previous = row["row_digest_sha256"]
        data += (json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    return data


def audit(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "tampered.journal.ndjson"
    path.write_bytes(data)
    with pytest.raises(AgentbenchError) as refused:
        audit_journal(path)
    return refused.value.code


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("journal")
    result = record_episode(shipped(), "V1", "model", ModelLike(), out, journal=setup())
    assert result.journal is not None
    return result.journal


def test_an_episode_journal_reads_back_with_instants_controls_and_amounts_derived(
    recorded: Path,
) -> None:
    reading = audit_journal(recorded)
    written = rows(recorded)
    header, calls, terminal = written[0], written[1:-1], written[-1]
    episode = json.loads((recorded.parent / "V1.episode.json").read_text(encoding="utf-8"))
    decisions = episode["decision_tape"]["decisions"]
    assert reading.version == 3
    assert reading.terminal_kind == "scored"
    assert reading.digest == terminal["row_digest_sha256"]
    # The header: the original's 11 controls in its order, from the run's own limits.
    controls = header["header"]["controls"]
    assert list(controls) == sorted(CONTROLS_FIELDS), "rows are written with sorted keys"
    assert set(controls) == set(CONTROLS_FIELDS)
    assert controls["max_attempts_per_call"] == RETRIES + 1
    assert controls["max_output_tokens"] == BOUND
    assert controls["max_provider_calls"] == NO_LIMIT
    assert controls["cost_cap_usd"] == NO_COST_CAP
    assert controls["turn_deadline_seconds"] == 60.0
    assert controls["wall_clock_deadline_seconds"] is None
    assert controls["pricing"] == {"input_usd_per_mtok": "2.5", "output_usd_per_mtok": "10"}
    # Instants: the simulated clock, in the original's form: the scenario's start, each
    # decision's own time in the episode's ledger, the time the episode ended.
    start = shipped().spec.scenarios["V1"].starts_at
    assert header["header"]["started_at"] == start
    assert terminal["terminal"]["ended_at"] == render_time(
        shipped().start("V1"), episode["simulated_minutes"]
    )
    assert terminal["terminal"]["ended_at"] > start
    outcome_at = {
        (row["invocation_index"], row["turn_index"]): row["at"]
        for row in episode["ledger"]
        if row["record_type"] == "agent_outcome"
    }
    instants = [c["call"]["started_at"] for c in calls]
    assert instants == [
        outcome_at[c["call"]["invocation_index"], c["call"]["turn_index"]] for c in calls
    ]
    assert len(set(instants)) > 1, "the clock moves between invocations"
    assert all(c["call"]["ended_at"] == c["call"]["started_at"] for c in calls)
    assert [(c["call"]["invocation_index"], c["call"]["turn_index"]) for c in calls] == [
        (d["invocation_index"], d["turn_index"]) for d in decisions
    ]
    # Amounts: the original's reservation (input bound and output ceiling at the rates).
    reservation = (Decimal(BOUND) * Decimal("2.5") + Decimal(BOUND) * Decimal(10)) / 10**6
    attempts = [a for c in calls for a in c["call"]["attempts"]]
    assert {a["cost_reservation_usd"] for a in attempts} == {format(reservation, "f")}
    forfeited = [a for a in attempts if a["cost_settlement"] == "forfeited"]
    assert len(forfeited) == 1
    assert forfeited[0]["usage_reported"] is False
    totals = terminal["terminal"]["totals"]
    assert totals["provider_calls"] == len(decisions)
    assert totals["fault_counts"] == {}
    assert Decimal(totals["forfeited_reservation_usd"]) == reservation
    assert Decimal(totals["reserved_usd"]) == reservation * len(decisions)
    # Every decision is bound to the answer of its call's last attempt.
    for call in calls:
        last = call["call"]["attempts"][-1]
        digest = call["call"]["decision"]["decision_digest_sha256"]
        assert last["response_normalized_digest_sha256"] == digest


def test_audit_ledger_reads_it_and_a_rerun_writes_the_same_bytes(
    recorded: Path, tmp_path: Path
) -> None:
    episode = json.loads((recorded.parent / "V1.episode.json").read_text(encoding="utf-8"))
    # `agentbench audit-ledger` reads it as the original's layout.
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["audit-ledger", str(recorded)]) == 0
    assert "OperateBench journal, ledger_version 3" in out.getvalue()
    # Byte-identical rerun: no wall clock in any row.
    again = record_episode(shipped(), "V1", "model", ModelLike(), tmp_path, journal=setup())
    assert again.journal is not None
    assert again.journal.read_bytes() == recorded.read_bytes()
    assert again.ledger_digest == episode["execution_ledger"]["digest_sha256"]
    # The episode recorded beside a journal replays from its tape as any other.
    assert replay_episode(shipped(), episode, "V1.episode.json")[0].startswith("reproduced V1")


def test_a_malformed_answer_is_classified_by_the_code_the_episode_refused_it_with(
    tmp_path: Path,
) -> None:
    result = record_episode(
        shipped(), "V1", "model", ModelLike(malformed_at=1), tmp_path, journal=setup()
    )
    assert result.journal is not None
    episode = json.loads(result.episode.read_text(encoding="utf-8"))
    (refused,) = [row for row in episode["ledger"] if row.get("outcome") == "MALFORMED"]
    calls = [row["call"] for row in rows(result.journal)[1:-1]]
    assert [c["decision"]["classification_code"] for c in calls] == [None, refused["code"]]
    assert calls[1]["decision"]["kind"] == "SHRUG"
    assert audit_journal(result.journal).terminal_kind == "scored"


TAMPERS: dict[str, tuple[Callable[[list[dict[str, Any]]], None], str]] = {
    "call started_at not an instant": (
        lambda r: r[1]["call"].update(started_at="09:00"),
        "journal_value_invalid",
    ),
    "call ended before it started": (
        lambda r: r[1]["call"].update(ended_at="2000-01-01T00:00:00Z"),
        "journal_value_invalid",
    ),
    "header started_at removed": (
        lambda r: r[0]["header"].pop("started_at"),
        "journal_fields_mismatch",
    ),
    "terminal ended_at not an instant": (
        lambda r: r[-1]["terminal"].update(ended_at=1),
        "journal_value_invalid",
    ),
    "a control removed": (
        lambda r: r[0]["header"]["controls"].pop("token_hard_cap"),
        "journal_fields_mismatch",
    ),
    "max_attempts_per_call zero": (
        lambda r: r[0]["header"]["controls"].update(max_attempts_per_call=0),
        "journal_value_invalid",
    ),
    "a rate changed under its digest": (
        lambda r: r[0]["header"]["controls"]["pricing"].update(input_usd_per_mtok="3"),
        "journal_digest_mismatch",
    ),
    "max_provider_calls below the calls made": (
        lambda r: r[0]["header"]["controls"].update(
            max_provider_calls=1, expected_provider_calls=1
        ),
        "journal_call_inadmissible",
    ),
    "provider settings changed under their digest": (
        lambda r: r[0]["header"]["provider"]["settings"].update(seed=1),
        "journal_digest_mismatch",
    ),
    "a reservation changed": (
        lambda r: r[1]["call"]["attempts"][0].update(cost_reservation_usd="0.1"),
        "journal_amount_mismatch",
    ),
    "an input bound changed": (
        lambda r: r[1]["call"].update(input_token_upper_bound=1),
        "journal_amount_mismatch",
    ),
    "a forfeit settled as measured": (
        lambda r: r[3]["call"]["attempts"][-1].update(
            cost_settlement="measured", cost_forfeited_usd=None, cost_measured_usd="0"
        ),
        "journal_call_incoherent",
    ),
    "a prompt digest not a digest": (
        lambda r: r[1]["call"].update(prompt_digest_sha256="x"),
        "journal_value_invalid",
    ),
    "half a wire request": (
        lambda r: r[1]["call"].update(wire_request_method="POST"),
        "journal_call_incoherent",
    ),
    "terminal_reason against the last attempt": (
        lambda r: r[1]["call"].update(terminal_reason="retries_exhausted"),
        "journal_call_incoherent",
    ),
    "a decision without its normalized digest": (
        lambda r: r[1]["call"]["attempts"][-1].update(response_normalized_digest_sha256=None),
        "journal_call_incoherent",
    ),
    "classification_code with whitespace": (
        lambda r: r[1]["call"]["decision"].update(classification_code="not a code"),
        "journal_value_invalid",
    ),
    "exclusion_detail not the fixed one": (
        lambda r: r[-1]["terminal"].update(exclusion_detail="all good"),
        "journal_value_invalid",
    ),
    "fault_counts stated where none faulted": (
        lambda r: r[-1]["terminal"]["totals"].update(fault_counts={"provider_timeout": 1}),
        "journal_totals_mismatch",
    ),
    "agent_kind with whitespace": (
        lambda r: r[0]["header"].update(agent_kind="a model"),
        "journal_value_invalid",
    ),
    "intended_artifact_version not 8": (
        lambda r: r[0]["header"].update(intended_artifact_version=7),
        "journal_value_invalid",
    ),
    "provider base_url over plain http": (
        lambda r: r[0]["header"]["provider"].update(base_url="http://models.example/v1"),
        "journal_value_invalid",
    ),
    "cost_cap_policy unknown": (
        lambda r: r[0]["header"]["controls"].update(cost_cap_policy="settle_after"),
        "journal_value_invalid",
    ),
    "cost_cap_usd zero": (
        lambda r: r[0]["header"]["controls"].update(cost_cap_usd="0"),
        "journal_value_invalid",
    ),
    "expected_provider_calls past the bound": (
        lambda r: r[0]["header"]["controls"].update(expected_provider_calls=NO_LIMIT + 1),
        "journal_value_invalid",
    ),
    "turn_deadline_seconds negative": (
        lambda r: r[0]["header"]["controls"].update(turn_deadline_seconds=-1),
        "journal_value_invalid",
    ),
    "wall_clock_deadline_seconds a string": (
        lambda r: r[0]["header"]["controls"].update(wall_clock_deadline_seconds="1800"),
        "journal_value_invalid",
    ),
    "max_output_tokens changed (every reservation moves)": (
        lambda r: r[0]["header"]["controls"].update(max_output_tokens=BOUND + 1),
        "journal_amount_mismatch",
    ),
    "a payload digest removed": (
        lambda r: r[1]["call"].pop("payload_digest_sha256"),
        "journal_fields_mismatch",
    ),
    "turn_latency_seconds negative": (
        lambda r: r[1]["call"].update(turn_latency_seconds=-0.5),
        "journal_value_invalid",
    ),
    "latency_seconds a boolean": (
        lambda r: r[1]["call"]["attempts"][0].update(latency_seconds=True),
        "journal_value_invalid",
    ),
    "response_received false on a response": (
        lambda r: r[1]["call"]["attempts"][0].update(response_received=False),
        "journal_call_incoherent",
    ),
    "usage_reported false beside both counts": (
        lambda r: r[1]["call"]["attempts"][0].update(usage_reported=False),
        "journal_call_incoherent",
    ),
    "a measured cost changed": (
        lambda r: r[1]["call"]["attempts"][0].update(cost_measured_usd="0.5"),
        "journal_amount_mismatch",
    ),
    "http_status below 100": (
        lambda r: r[1]["call"]["attempts"][0].update(http_status=99),
        "journal_value_invalid",
    ),
    "a fault outside version 3's vocabulary": (
        lambda r: r[1]["call"]["attempts"][0].update(
            outcome="fault", fault="http_503", response_normalized_digest_sha256=None
        ),
        "journal_fault_unknown",
    ),
    "operation_instance_id not one": (
        lambda r: r[0]["header"].update(operation_instance_id="opinst_x"),
        "journal_value_invalid",
    ),
}


def test_each_field_the_writer_adds_is_held_by_the_reader(recorded: Path, tmp_path: Path) -> None:
    source = rows(recorded)
    codes = {name: audit(tmp_path, rechained(source, edit)) for name, (edit, _) in TAMPERS.items()}
    assert codes == {name: code for name, (_, code) in TAMPERS.items()}


def test_faulted_attempts_forfeit_their_whole_reservation_and_abort_the_journal(
    tmp_path: Path,
) -> None:
    agent = ModelLike(faults={1: ["http_503"], 3: ["http_500", "http_502"]}, raise_at=3)
    with pytest.raises(AgentbenchError) as failed:
        record_episode(shipped(), "V1", "model", agent, tmp_path, journal=setup())
    assert failed.value.code == "adapter_failed"
    assert isinstance(failed.value.__cause__, AdapterFailure)
    path = tmp_path / "V1.journal.ndjson"
    reading = audit_journal(path)
    # The failure names the aborted journal it left, by its digest.
    assert f"; journal {path} sha256:{reading.digest} (aborted)" in failed.value.reason
    assert reading.terminal_kind == "aborted"
    assert reading.exclusion_code == "execution_aborted"
    last = rows(path)[-2]["call"]
    assert last["decision"] is None
    assert last["terminal_reason"] == "deadline_exceeded"
    totals = reading.totals
    assert totals["fault_counts"] == {"provider_server_error": 3}
    reservation = Decimal(rows(path)[1]["call"]["attempts"][0]["cost_reservation_usd"])
    # Two server-error attempts on the last call forfeit exactly what they reserved.
    assert [a["cost_forfeited_usd"] for a in last["attempts"]] == [str(reservation)] * 2
    # Three faulted attempts and the answer that reported no counts (decision 2).
    assert Decimal(totals["forfeited_reservation_usd"]) == reservation * 4
    # Decisions 0 and 2 one attempt each, 1 and 3 two: every attempt reserves.
    assert totals["attempts"] == 6
    assert Decimal(totals["reserved_usd"]) == reservation * 6


def test_what_the_original_cannot_state_is_refused_by_name(tmp_path: Path) -> None:
    # A retried fault in a run that went on to be scored: the original scores no run
    # with a faulted attempt, so the journal is refused (ledger and episode are kept).
    agent = ModelLike(faults={1: ["http_429"]})
    result = record_episode(shipped(), "V1", "model", agent, tmp_path, journal=setup())
    assert result.journal_refused is not None
    assert result.journal_refused.code == "journal_terminal_inadmissible"
    assert result.journal is None
    assert result.journal_digest is None
    assert result.episode.exists()
    assert result.ledger.exists()
    assert not (tmp_path / "V1.journal.ndjson").exists()
    # A call with no model request behind it (an adapter that reported no usage).
    header = HeaderPayload(
        execution_run_id="exec_" + "0" * 32,
        operation_id="op",
        spec_digest_sha256="a" * 64,
        scenario_id="V1",
        agent_id="model",
        engine_version="1.0.0",
    )
    bare = CallPayload(
        call_index=0,
        invocation_index=1,
        turn_index=0,
        observation_digest_sha256="b" * 64,
        decision=Decision(kind="WAIT", decision_digest_sha256="c" * 64),
    )
    with pytest.raises(AgentbenchError) as unstated:
        journal_bytes(
            header,
            setup(),
            [JournalCall(bare, "2035-01-01T00:00:00Z")],
            started_at="2035-01-01T00:00:00Z",
            ended_at="2035-01-01T00:00:00Z",
            kind="scored",
        )
    assert unstated.value.code == "journal_call_unrepresentable"


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        ("http_429", "provider_rate_limited"),
        ("http_500", "provider_server_error"),
        ("http_529", "provider_server_error"),
        ("http_401", "provider_authentication"),
        ("http_400", "provider_bad_request_unclassified"),
        ("http_404", "provider_request_rejected"),
        ("timeout", "provider_timeout"),
        ("cut_off", "provider_timeout"),
        ("http_None", "provider_response_invalid"),
    ],
)
def test_our_fault_names_map_into_the_originals_vocabulary(ours: str, theirs: str) -> None:
    assert original_fault(ours) == theirs


def test_a_journal_is_created_as_the_original_creates_its_own(
    recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = recorded.read_bytes()
    assert stat.S_IMODE(recorded.stat().st_mode) == 0o600
    target = tmp_path / "copy.journal.ndjson"
    assert write_journal(target, data) == rows(recorded)[-1]["row_digest_sha256"]
    assert target.read_bytes() == data
    codes = []
    for path in (target, tmp_path / "link" / "x.journal.ndjson"):
        (tmp_path / "real").mkdir(exist_ok=True)
        if not (tmp_path / "link").exists():
            (tmp_path / "link").symlink_to(tmp_path / "real")
        with pytest.raises(AgentbenchError) as refused:
            write_journal(path, data)
        codes.append(refused.value.code)
    assert codes == ["ledger_exists", "ledger_unsafe_path"]
    assert target.read_bytes() == data, "never overwritten"

    def full(fd: int, chunk: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(journal_writer.os, "write", full)
    failed = tmp_path / "full.journal.ndjson"
    with pytest.raises(AgentbenchError) as refused:
        write_journal(failed, data)
    assert refused.value.code == "ledger_write_failed"
    assert not failed.exists(), "no partial journal is left behind"

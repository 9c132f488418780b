"""The execution ledger: writing whole rows, poisoning on failure, safe creation, and the audit."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger import (
    Attempt,
    CallPayload,
    Decision,
    HeaderPayload,
    LedgerIO,
    LedgerWriter,
    Tokens,
    audit_ledger,
    read_ledger,
)
from pytest_agentbench.sdk.ledger.rows import encode_row, row_digest
from pytest_agentbench.sdk.ledger.writer import open_no_follow, write_new_file

LEDGER_CODES = {
    "ledger_row_malformed",
    "ledger_row_edited",
    "ledger_row_truncated",
    "ledger_row_duplicated",
    "ledger_row_missing",
    "ledger_rows_reordered",
    "ledger_chain_broken",
    "ledger_row_invalid",
    "ledger_header_missing",
    "ledger_header_repeated",
    "ledger_row_after_terminal",
    "ledger_call_order",
    "ledger_terminal_contradicts_rows",
    "ledger_version_unsupported",
    "ledger_incomplete",
}
DIGEST = "ab" * 32


def header() -> HeaderPayload:
    return HeaderPayload(
        execution_run_id="exec_" + "0f" * 16,
        operation_id="op",
        spec_digest_sha256=DIGEST,
        scenario_id="V1",
        agent_id="reference",
        engine_version="1.0.0",
    )


def call(index: int, *, usage: bool = False, answered: bool = True) -> CallPayload:
    return CallPayload(
        call_index=index,
        invocation_index=1 + index // 2,
        turn_index=index % 2,
        observation_digest_sha256=f"{index:064x}",
        decision=Decision(kind="WAIT", decision_digest_sha256=DIGEST) if answered else None,
        request_digest_sha256=f"{index + 7:064x}" if usage else None,
        attempts=(
            (
                Attempt(attempt_index=1, outcome="fault", fault="provider_rate_limited"),
                Attempt(attempt_index=2, outcome="response", tokens=Tokens(input=120, output=30)),
            )
            if usage
            else None
        ),
    )


def write_ledger(path: Path, calls: int = 3, *, usage: bool = False) -> Path:
    writer = LedgerWriter(path, header())
    for index in range(calls):
        writer.call(call(index, usage=usage and index == 1))
    writer.finish("scored")
    return path


@cache
def recorded(tmp: str, calls: int = 3) -> bytes:
    return write_ledger(Path(tmp) / f"ledger-{calls}.ndjson", calls, usage=True).read_bytes()


def refusal(path: Path, data: bytes | None = None) -> str:
    with pytest.raises(AgentbenchError) as refused:
        audit_ledger(path, data)
    return refused.value.code


def test_a_written_ledger_reads_back_complete_with_the_terminal_digest(tmp_path: Path) -> None:
    path = write_ledger(tmp_path / "deep" / "er" / "ledger.ndjson")
    reading = audit_ledger(path)
    lines = path.read_bytes().splitlines(keepends=True)
    assert (reading.status, reading.terminal_kind, len(reading.rows)) == ("complete", "scored", 5)
    assert reading.digest == json.loads(lines[-1])["row_digest_sha256"]
    first = json.loads(lines[0])
    assert first["previous_row_digest_sha256"] == "0" * 64
    assert first["row_digest_sha256"] == row_digest(first)
    assert all(encode_row(json.loads(line)) == line for line in lines)
    totals = json.loads(lines[-1])["terminal"]["totals"]
    assert totals == {
        "calls": 3,
        "decisions": 3,
        "attempts": 0,
        "input_tokens": 0,
        "output_tokens": 0,
    }


def test_usage_fields_appear_only_where_the_adapter_reported_them(tmp_path: Path) -> None:
    path = write_ledger(tmp_path / "ledger.ndjson", usage=True)
    rows = [json.loads(line) for line in path.read_bytes().splitlines()]
    plain, reported = rows[1]["call"], rows[2]["call"]
    assert not {"request_digest_sha256", "wire_digest_sha256", "attempts"} & set(plain)
    assert reported["attempts"][0] == {
        "attempt_index": 1,
        "fault": "provider_rate_limited",
        "outcome": "fault",
    }
    assert "wire_digest_sha256" not in reported, "not reported, so absent"
    assert rows[-1]["terminal"]["totals"]["input_tokens"] == 120


def test_a_null_where_a_field_should_be_absent_is_refused(tmp_path: Path) -> None:
    path = write_ledger(tmp_path / "ledger.ndjson")
    lines = path.read_bytes().splitlines(keepends=True)
    row = json.loads(lines[1])
    row["call"]["attempts"] = None
    row["row_digest_sha256"] = row_digest(row)
    lines[1] = encode_row(row)
    path.write_bytes(b"".join(lines))
    assert refusal(path) == "ledger_row_invalid"


def test_a_rechained_terminal_that_contradicts_the_rows_is_refused(tmp_path: Path) -> None:
    path = write_ledger(tmp_path / "ledger.ndjson")
    lines = path.read_bytes().splitlines(keepends=True)
    row = json.loads(lines[-1])
    row["terminal"]["totals"]["calls"] = 2
    row["row_digest_sha256"] = row_digest(row)
    lines[-1] = encode_row(row)
    path.write_bytes(b"".join(lines))
    assert refusal(path) == "ledger_terminal_contradicts_rows"


def test_a_scored_terminal_over_an_unanswered_call_is_refused_by_the_writer(
    tmp_path: Path,
) -> None:
    writer = LedgerWriter(tmp_path / "ledger.ndjson", header())
    writer.call(call(0, answered=False))
    with pytest.raises(AgentbenchError) as refused:
        writer.finish("scored")
    assert refused.value.code == "ledger_terminal_unsupported"
    writer.finish("aborted")
    assert audit_ledger(tmp_path / "ledger.ndjson").terminal_kind == "aborted"


def test_short_writes_are_looped_over(tmp_path: Path) -> None:
    def one_byte(fd: int, data: bytes) -> int:
        return os.write(fd, data[:1])

    path = tmp_path / "ledger.ndjson"
    writer = LedgerWriter(path, header(), io=LedgerIO(write=one_byte))
    writer.call(call(0))
    writer.finish("scored")
    assert audit_ledger(path).status == "complete"


@pytest.mark.parametrize("failing", ["write", "fsync"])
def test_a_failed_row_is_truncated_back_and_poisons_the_writer(
    tmp_path: Path, failing: str
) -> None:
    # Row 0 is the header, row 1 the first call; row 2 fails.
    seen = {"write": 0, "fsync": 0}

    def write(fd: int, data: bytes) -> int:
        seen["write"] += 1
        if failing == "write" and seen["write"] == 3:
            os.write(fd, data[:10])  # part of the row reaches the file first
            raise OSError(28, "No space left on device")
        return os.write(fd, data)

    def fsync(fd: int) -> None:
        seen["fsync"] += 1
        if failing == "fsync" and seen["fsync"] == 3:
            raise OSError(5, "Input/output error")
        os.fsync(fd)

    path = tmp_path / "ledger.ndjson"
    writer = LedgerWriter(path, header(), io=LedgerIO(write=write, fsync=fsync))
    writer.call(call(0))
    with pytest.raises(AgentbenchError) as refused:
        writer.call(call(1))
    assert refused.value.code == "ledger_write_failed"
    with pytest.raises(AgentbenchError) as poisoned:
        writer.finish("aborted")
    assert poisoned.value.code == "ledger_poisoned"
    reading = read_ledger(path)
    assert (reading.status, len(reading.rows), reading.digest) == ("incomplete", 2, None)
    assert refusal(path) == "ledger_incomplete"


def test_a_new_file_is_written_once_and_every_refusal_carries_the_callers_code(
    tmp_path: Path,
) -> None:
    path = tmp_path / "made" / "here.json"
    write_new_file(path, b"{}\n", "artifact_write_failed")
    assert path.read_bytes() == b"{}\n"
    with pytest.raises(AgentbenchError) as again:
        write_new_file(path, b"[]\n", "episode_write_failed")
    assert (again.value.code, again.value.location.file) == ("episode_write_failed", str(path))
    assert path.read_bytes() == b"{}\n"
    (tmp_path / "link").symlink_to(tmp_path / "made")
    with pytest.raises(AgentbenchError) as linked:
        write_new_file(tmp_path / "link" / "other.json", b"{}", "artifact_write_failed")
    assert linked.value.code == "artifact_write_failed"
    assert not (tmp_path / "made" / "other.json").exists()


def test_no_symbolic_link_is_followed_in_any_component(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(AgentbenchError) as refused:
        LedgerWriter(tmp_path / "link" / "sub" / "ledger.ndjson", header())
    assert refused.value.code == "ledger_unsafe_path"
    (tmp_path / "target.ndjson").write_text("", encoding="utf-8")
    (tmp_path / "real" / "ledger.ndjson").symlink_to(tmp_path / "target.ndjson")
    with pytest.raises(AgentbenchError) as existing:
        LedgerWriter(tmp_path / "real" / "ledger.ndjson", header())
    assert existing.value.code == "ledger_exists"
    assert not list((tmp_path / "real").glob("sub*"))
    assert (tmp_path / "target.ndjson").read_text(encoding="utf-8") == ""


def _rows(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def test_every_row_deletion_duplication_and_swap_is_refused_by_name(tmp_path: Path) -> None:
    rows = _rows(recorded(str(tmp_path)))
    variants: dict[str, list[bytes]] = {}
    for i in range(len(rows)):
        variants[f"delete {i}"] = rows[:i] + rows[i + 1 :]
        for j in range(len(rows) + 1):
            variants[f"duplicate {i} at {j}"] = [*rows[:j], rows[i], *rows[j:]]
        for j in range(i + 1, len(rows)):
            swapped = list(rows)
            swapped[i], swapped[j] = swapped[j], swapped[i]
            variants[f"swap {i} {j}"] = swapped
    path = tmp_path / "variant.ndjson"
    for name, lines in variants.items():
        path.write_bytes(b"".join(lines))
        code = refusal(path)
        assert code in LEDGER_CODES, name
        # Every swap of two rows, and every move, reads as a reordering, never a loss.
        if name.startswith("swap"):
            assert code == "ledger_rows_reordered", name
        if name.startswith("delete") and name != f"delete {len(rows) - 1}":
            assert code == "ledger_row_missing", name
    for source in range(len(rows)):
        for target in range(len(rows)):
            if source == target:
                continue
            moved = list(rows)
            moved.insert(target, moved.pop(source))
            path.write_bytes(b"".join(moved))
            assert refusal(path) == "ledger_rows_reordered", (source, target)
    path.write_bytes(b"".join(rows[:-1]))
    assert refusal(path) == "ledger_incomplete"
    path.write_bytes(b"".join([*rows[:2], rows[1], *rows[2:]]))
    assert refusal(path) == "ledger_row_duplicated"
    path.write_bytes(b"".join([rows[0], *rows[2:]]))
    assert refusal(path) == "ledger_row_missing"
    path.write_bytes(b"".join([rows[0], rows[2], rows[1], *rows[3:]]))
    assert refusal(path) == "ledger_rows_reordered"
    path.write_bytes(b"".join([rows[0], rows[1], rows[3], rows[2], *rows[4:]]))
    assert refusal(path) == "ledger_rows_reordered"


def test_an_edit_at_every_byte_position_is_refused_by_name(tmp_path: Path) -> None:
    # Header, two calls (one with usage) and the terminal: every row shape once.
    data = recorded(str(tmp_path), 2)
    for position in range(len(data)):
        edited = bytearray(data)
        edited[position] ^= 0x01
        assert refusal(tmp_path / "edited.ndjson", bytes(edited)) in LEDGER_CODES, position


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_any_single_byte_edit_is_refused_by_name(tmp_path: Path, data: st.DataObject) -> None:
    original = recorded(str(tmp_path))
    position = data.draw(st.integers(0, len(original) - 1), label="position")
    value = data.draw(
        st.integers(0, 255).filter(lambda byte: byte != original[position]), label="byte"
    )
    edited = bytearray(original)
    edited[position] = value
    assert refusal(tmp_path / "fuzzed.ndjson", bytes(edited)) in LEDGER_CODES


def test_a_folder_created_meanwhile_by_another_process_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_mkdir = os.mkdir

    def racing_mkdir(path: Any, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real_mkdir(path, mode, dir_fd=dir_fd)  # the other worker wins the race
        real_mkdir(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", racing_mkdir)
    fd = open_no_follow(tmp_path / "suite" / "case.ndjson")
    os.close(fd)
    assert (tmp_path / "suite" / "case.ndjson").is_file()


PRICED = {
    "provider": "openai-compatible",
    "api": "chat.completions",
    "model": "m",
    "settings_digest_sha256": DIGEST,
    "pricing_digest_sha256": "cd" * 32,
    "input_per_token": "0.000002",
    "output_per_token": "0.00001",
    "max_tokens_per_call": 500,
}


def test_each_attempt_states_what_it_reserved_and_whether_a_response_came_back(
    tmp_path: Path,
) -> None:
    """As the original's ledger: two server errors forfeit their whole reservations, the
    answer settles at its counts; every attempt states its reservation and response_received."""
    path = tmp_path / "ledger.ndjson"
    writer = LedgerWriter(path, header().model_copy(update={"provider": PRICED}))
    server_error = {"outcome": "fault", "fault": "http_500", "response_received": True}
    writer.call(
        call(0).model_copy(
            update={
                "attempts": (
                    Attempt(attempt_index=1, http_status=500, **server_error),
                    Attempt(attempt_index=2, http_status=500, **server_error),
                    Attempt(
                        attempt_index=3,
                        outcome="response",
                        response_received=True,
                        http_status=200,
                        tokens=Tokens(input=100, output=20),
                    ),
                )
            }
        )
    )
    writer.call(
        call(1).model_copy(
            update={
                "attempts": (
                    Attempt(
                        attempt_index=1, outcome="fault", fault="timeout", response_received=False
                    ),
                ),
                "decision": None,
            }
        )
    )
    writer.finish("aborted")
    rows = [json.loads(line) for line in path.read_bytes().splitlines()]
    attempts = rows[1]["call"]["attempts"]
    # 500 tokens at the dearer rate: 0.005 USD before each dispatch.
    assert [a["cost_reservation_usd"] for a in attempts] == ["0.005"] * 3
    assert [a["response_received"] for a in attempts] == [True, True, True]
    assert [a["http_status"] for a in attempts] == [500, 500, 200]
    assert rows[2]["call"]["attempts"][0]["response_received"] is False
    assert "http_status" not in rows[2]["call"]["attempts"][0]
    totals = rows[-1]["terminal"]["totals"]
    assert totals["fault_counts"] == {"http_500": 2, "timeout": 1}
    assert totals["forfeited_reservation_usd"] == "0.015"
    assert totals["reserved_usd"] == "0.02"
    assert totals["measured_cost_usd"] == "0.0004"
    assert audit_ledger(path).terminal_kind == "aborted"
    # A re-chained edit of one attempt's reservation is re-derived from the rates.
    lines = path.read_bytes().splitlines(keepends=True)
    previous = json.loads(lines[0])["row_digest_sha256"]
    edited = []
    for index, line in enumerate(lines):
        row = json.loads(line)
        if index == 1:
            row["call"]["attempts"][0]["cost_reservation_usd"] = "0.004"
        if index:
            row["previous_row_digest_sha256"] = previous
        row["row_digest_sha256"] = previous = row_digest(row)
        edited.append(encode_row(row))
    path.write_bytes(b"".join(edited))
    assert refusal(path) == "ledger_amount_mismatch"


def test_an_attempt_states_response_evidence_coherently() -> None:
    with pytest.raises(ValueError, match="response_received false"):
        Attempt(attempt_index=1, outcome="response", response_received=False)
    with pytest.raises(ValueError, match="http_status"):
        Attempt(attempt_index=1, outcome="fault", fault="http_503", http_status=503)
    assert Attempt(attempt_index=1, outcome="response").response_received is None


def test_the_chat_agents_attempts_say_whether_a_response_came_back() -> None:
    from pytest_agentbench.agents.cassettes import RecordedResponse
    from pytest_agentbench.agents.usage import final_attempt, retried_attempt

    assert retried_attempt("http_503") == {
        "outcome": "fault",
        "fault": "http_503",
        "response_received": True,
        "http_status": 503,
    }
    assert retried_attempt("timeout")["response_received"] is False
    assert final_attempt(RecordedResponse(transport_error="timeout")) == {
        "outcome": "fault",
        "fault": "timeout",
        "response_received": False,
    }

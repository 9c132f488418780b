"""OperateBench's execution journals (``ledger_version`` 2 and 3): read, audited, refused by name.

Every journal here is built from our own values in the original's row layout; the
original's published bundle journal is read only when ``OPERATEBENCH_ROOT`` names a
fetched snapshot of it (never committed).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli.main import main
from pytest_agentbench.sdk.canonical import canonical_bytes, sha256_hex
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger.journal import (
    FAULTS,
    audit_journal,
    cut_short,
    is_journal_row,
    journal_row_digest,
    read_journal,
)

Rows = list[dict[str, Any]]
INSTANT = "2031-05-06T07:08:09Z"
RATES = {"input_usd_per_mtok": "2.5", "output_usd_per_mtok": "8", "policy_id": "our_rates_v1"}
MAX_OUTPUT = 1000


def hexes(seed: str) -> str:
    return sha256_hex(seed.encode())


def header(version: int, *, max_attempts: int = 3) -> dict[str, Any]:
    settings = {
        "model": "our-model",
        "max_output_tokens": MAX_OUTPUT,
        "retry": {"max": max_attempts},
    }
    return {
        "execution_run_id": "exec_" + "1a" * 16,
        "operation_instance_id": "opinst_" + "2b" * 16,
        "operation_id": "our_operation_v1",
        "spec_digest_sha256": hexes("spec"),
        "scenario_id": "V2",
        "agent_id": "our-agent",
        "agent_kind": "model",
        "engine_version": "9.9.9",
        "intended_artifact_version": 8,
        "started_at": INSTANT,
        "provider": {
            "provider": "ours",
            "api": "chat",
            "model": "our-model",
            "base_url": "https://models.example.test/v1",
            "implementation": "OurTransport",
            "request_mapping": "our_mapping_v1",
            "protocol_version": "our.v1",
            "sdk": "none",
            "sdk_version": "0",
            "settings": settings,
            "settings_digest_sha256": sha256_hex(canonical_bytes(settings)),
        },
        "controls": {
            "max_provider_calls": 5,
            "max_attempts_per_call": max_attempts,
            "expected_provider_calls": 2,
            "token_hard_cap": 100_000,
            "max_output_tokens": MAX_OUTPUT,
            "cost_cap_usd": "1.50",
            "cost_cap_policy": "refuse_before_dispatch",
            "turn_deadline_seconds": 30.0,
            "wall_clock_deadline_seconds": 600,
            "pricing": dict(RATES),
            "pricing_digest_sha256": sha256_hex(canonical_bytes(RATES)),
        },
    }


def usd(value: Decimal) -> str:
    text = format(value, "f")
    return (text.rstrip("0").rstrip(".") if "." in text else text) or "0"


def cost(tokens_in: int, tokens_out: int) -> str:
    return usd((Decimal(tokens_in) * Decimal("2.5") + Decimal(tokens_out) * 8) / 1_000_000)


def attempt(
    index: int, bound: int, *, fault: str | None = None, tokens: tuple[int, int] = (0, 0)
) -> dict[str, Any]:
    reservation = cost(bound, MAX_OUTPUT)
    answered = fault is None
    return {
        "attempt_index": index,
        "outcome": "response" if answered else "fault",
        "fault": fault,
        "http_status": None,
        "latency_seconds": 0.25,
        "response_received": answered,
        "usage_reported": answered,
        "cost_reservation_usd": reservation,
        "cost_settlement": "measured" if answered else "forfeited",
        "cost_measured_usd": cost(*tokens) if answered else None,
        "cost_forfeited_usd": None if answered else reservation,
        "input_tokens": tokens[0] if answered else None,
        "output_tokens": tokens[1] if answered else None,
        "response_model": "our-model" if answered else None,
        "response_id_digest_sha256": hexes(f"id{index}") if answered else None,
        "response_stop_classification": "completed" if answered else None,
        "response_normalized_digest_sha256": hexes(f"answer{index}") if answered else None,
    }


def call(
    index: int, turn: int, attempts: list[dict[str, Any]], *, bound: int = 3000
) -> dict[str, Any]:
    last = attempts[-1]
    answered = last["outcome"] == "response"
    return {
        "call_index": index,
        "invocation_index": 1,
        "turn_index": turn,
        "request_digest_sha256": hexes(f"request{index}"),
        "prompt_digest_sha256": hexes(f"prompt{index}"),
        "observation_digest_sha256": hexes(f"observation{index}"),
        "payload_digest_sha256": hexes(f"payload{index}"),
        "wire_request_digest_sha256": hexes(f"wire{index}"),
        "wire_request_bytes": bound - 100,
        "wire_request_method": "POST",
        "wire_request_url": "https://models.example.test/v1/chat",
        "input_token_upper_bound": bound,
        "started_at": INSTANT,
        "ended_at": "2031-05-06T07:08:10Z",
        "turn_latency_seconds": 0.5,
        "terminal_reason": "response" if answered else "retries_exhausted",
        "attempts": attempts,
        "decision": {
            "kind": "ACT",
            "decision_digest_sha256": hexes(f"d{index}"),
            "classification_code": None,
        }
        if answered
        else None,
    }


def totals(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Written out independently of the reader's own arithmetic."""
    attempts = [a for c in calls for a in c["attempts"]]
    faults: dict[str, int] = {}
    for a in attempts:
        if a["fault"]:
            faults[a["fault"]] = faults.get(a["fault"], 0) + 1

    def add(name: str) -> str:
        return usd(sum((Decimal(a[name]) for a in attempts if a[name] is not None), Decimal(0)))

    return {
        "provider_calls": len(calls),
        "attempts": len(attempts),
        "input_tokens": sum(a["input_tokens"] or 0 for a in attempts),
        "output_tokens": sum(a["output_tokens"] or 0 for a in attempts),
        "measured_cost_usd": add("cost_measured_usd"),
        "forfeited_reservation_usd": add("cost_forfeited_usd"),
        "reserved_usd": add("cost_reservation_usd"),
        "fault_counts": faults,
    }


def terminal(
    calls: list[dict[str, Any]], kind: str = "scored", code: str | None = None
) -> dict[str, Any]:
    details = {
        "scored": "",
        "excluded": "execution stopped at the provider boundary",
        "aborted": "execution did not reach a terminal state and was abandoned",
    }
    return {
        "kind": kind,
        "ended_at": INSTANT,
        "exclusion_code": code,
        "exclusion_detail": details[kind],
        "totals": totals(calls),
    }


def chain(version: int, payloads: list[tuple[str, dict[str, Any]]]) -> Rows:
    rows: Rows = []
    previous = "0" * 64
    for index, (kind, payload) in enumerate(payloads):
        row: dict[str, Any] = {
            "ledger_version": version,
            "row_index": index,
            "row_kind": kind,
            "previous_row_digest_sha256": previous,
            kind: payload,
        }
        row["row_digest_sha256"] = previous = journal_row_digest(row)
        rows.append(row)
    return rows


def rechain(rows: Rows) -> Rows:
    """Every digest and back-link recomputed after an edit, so only the edit itself shows."""
    previous = "0" * 64
    for row in rows:
        row["previous_row_digest_sha256"] = previous
        row["row_digest_sha256"] = previous = journal_row_digest(row)
    return rows


def encode(rows: Rows) -> bytes:
    return b"".join(
        (json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n").encode() for row in rows
    )


def retried(version: int = 3, kind: str = "excluded", code: str | None = "provider_budget") -> Rows:
    """Two calls; the first met two server errors before it was answered, then the run
    stopped at its call budget (a scored terminal is refused over any faulted attempt)."""
    first = call(
        0,
        0,
        [
            attempt(1, 3000, fault="provider_server_error"),
            attempt(2, 3000, fault="provider_server_error"),
            attempt(3, 3000, tokens=(2100, 40)),
        ],
    )
    second = call(1, 1, [attempt(1, 3500, tokens=(2600, 55))], bound=3500)
    calls = [first, second]
    return chain(
        version,
        [
            ("header", header(version)),
            ("call", first),
            ("call", second),
            ("terminal", terminal(calls, kind, code)),
        ],
    )


def scored(version: int = 3) -> Rows:
    first = call(0, 0, [attempt(1, 3000, tokens=(2100, 40))])
    second = call(1, 1, [attempt(1, 3500, tokens=(2600, 55))], bound=3500)
    return chain(
        version,
        [
            ("header", header(version)),
            ("call", first),
            ("call", second),
            ("terminal", terminal([first, second])),
        ],
    )


def excluded(version: int, fault: str, *, max_attempts: int = 2) -> Rows:
    attempts = [attempt(1, 4000, fault=fault)]
    if fault in ("provider_server_error", "provider_timeout"):
        attempts.append(attempt(2, 4000, fault=fault))
    only = call(0, 0, attempts, bound=4000)
    if len(attempts) < max_attempts:
        only["terminal_reason"] = "fault_not_retryable"
    return chain(
        version,
        [
            ("header", header(version, max_attempts=max_attempts)),
            ("call", only),
            ("terminal", terminal([only], "excluded", fault)),
        ],
    )


def write(tmp_path: Path, rows: Rows | bytes, name: str = "journal.ndjson") -> Path:
    path = tmp_path / name
    path.write_bytes(rows if isinstance(rows, bytes) else encode(rows))
    return path


@pytest.mark.parametrize("version", [2, 3])
def test_a_journal_of_either_version_reads_complete_with_totals_derived_from_its_rows(
    tmp_path: Path, version: int
) -> None:
    assert audit_journal(write(tmp_path, scored(version), "s.ndjson")).terminal_kind == "scored"
    rows = retried(version)
    reading = audit_journal(write(tmp_path, rows))
    assert (reading.version, reading.status, reading.terminal_kind) == (
        version,
        "complete",
        "excluded",
    )
    assert reading.exclusion_code == "provider_budget"
    assert reading.digest == rows[-1]["row_digest_sha256"]
    assert reading.rows_verified == 4
    reservation = cost(3000, MAX_OUTPUT)
    assert reading.totals == {
        "provider_calls": 2,
        "attempts": 4,
        "input_tokens": 4700,
        "output_tokens": 95,
        "measured_cost_usd": usd(Decimal(cost(2100, 40)) + Decimal(cost(2600, 55))),
        "forfeited_reservation_usd": usd(2 * Decimal(reservation)),
        "reserved_usd": usd(3 * Decimal(reservation) + Decimal(cost(3500, MAX_OUTPUT))),
        "fault_counts": {"provider_server_error": 2},
    }
    assert is_journal_row(rows[0])


def test_two_server_errors_forfeit_exactly_what_they_reserved(tmp_path: Path) -> None:
    """The original's expectation: two faulted attempts forfeit their whole reservations."""
    reading = audit_journal(write(tmp_path, excluded(2, "provider_server_error")))
    assert reading.terminal_kind == "excluded"
    assert reading.exclusion_code == "provider_server_error"
    assert reading.totals["forfeited_reservation_usd"] == reading.totals["reserved_usd"]
    assert reading.totals["reserved_usd"] == usd(2 * Decimal(cost(4000, MAX_OUTPUT)))
    assert reading.totals["measured_cost_usd"] == "0"
    assert reading.totals["fault_counts"] == {"provider_server_error": 2}


def test_each_version_owns_its_fault_vocabulary(tmp_path: Path) -> None:
    assert set(FAULTS[3]) - set(FAULTS[2]) == {
        "provider_bad_request_unclassified",
        "provider_invalid_request_or_spend_limit",
        "provider_spend_limit",
    }
    assert (
        audit_journal(write(tmp_path, excluded(3, "provider_spend_limit"), "v3.ndjson")).version
        == 3
    )
    with pytest.raises(AgentbenchError) as refused:
        audit_journal(write(tmp_path, excluded(2, "provider_spend_limit"), "v2.ndjson"))
    assert refused.value.code == "journal_fault_unknown"
    assert refused.value.location.line == 2
    # A v3 HTTP status is response evidence: it needs response_received.
    rows = excluded(3, "provider_rate_limited", max_attempts=1)
    rows[1]["call"]["attempts"][0]["http_status"] = 429
    with pytest.raises(AgentbenchError, match="journal_call_incoherent"):
        audit_journal(write(tmp_path, rechain(rows), "status3.ndjson"))
    rows = excluded(2, "provider_rate_limited", max_attempts=1)
    rows[1]["call"]["attempts"][0]["http_status"] = 429
    assert audit_journal(write(tmp_path, rechain(rows), "status2.ndjson")).version == 2


def first_attempt(rows: Rows) -> dict[str, Any]:
    return rows[1]["call"]["attempts"][0]


def answer(rows: Rows) -> dict[str, Any]:
    return rows[1]["call"]["attempts"][2]


def set_in(
    target: Callable[[Rows], dict[str, Any]], name: str, value: Any
) -> Callable[[Rows], None]:
    def edit(rows: Rows) -> None:
        target(rows)[name] = value

    return edit


def drop(target: Callable[[Rows], dict[str, Any]], name: str) -> Callable[[Rows], None]:
    def edit(rows: Rows) -> None:
        del target(rows)[name]

    return edit


def header_of(rows: Rows) -> dict[str, Any]:
    return rows[0]["header"]


def controls_of(rows: Rows) -> dict[str, Any]:
    return rows[0]["header"]["controls"]


def second_call(rows: Rows) -> dict[str, Any]:
    return rows[2]["call"]


def totals_of_rows(rows: Rows) -> dict[str, Any]:
    return rows[3]["terminal"]["totals"]


def terminal_of(rows: Rows) -> dict[str, Any]:
    return rows[3]["terminal"]


def an_extra_attempt_after_the_answer(rows: Rows) -> None:
    rows[1]["call"]["attempts"].append(attempt(4, 3000, tokens=(1, 1)))


def swap_first_and_last_attempt(rows: Rows) -> None:
    attempts = rows[1]["call"]["attempts"]
    attempts[0], attempts[2] = attempts[2], attempts[0]
    for index, entry in enumerate(attempts, start=1):
        entry["attempt_index"] = index


def a_scored_terminal_over_a_retried_fault(rows: Rows) -> None:
    """The original refuses a scored terminal over any faulted attempt, even one retried."""
    rows[3]["terminal"].update(kind="scored", exclusion_code=None, exclusion_detail="")


def a_version_changed_mid_journal(rows: Rows) -> None:
    rows[2]["ledger_version"] = 2


# Each edit is re-chained, so nothing but the reader's own checks can see it.
RECHAINED: list[tuple[str, Callable[[Rows], None], str, int]] = [
    (
        "a reservation edited",
        set_in(answer, "cost_reservation_usd", "0.01"),
        "journal_amount_mismatch",
        2,
    ),
    (
        "a measured cost edited",
        set_in(answer, "cost_measured_usd", "0.001"),
        "journal_amount_mismatch",
        2,
    ),
    (
        "part of a reservation forfeited",
        set_in(first_attempt, "cost_forfeited_usd", "0.0001"),
        "journal_amount_mismatch",
        2,
    ),
    (
        "an input bound edited",
        set_in(second_call, "input_token_upper_bound", 3499),
        "journal_amount_mismatch",
        3,
    ),
    ("a total edited", set_in(totals_of_rows, "reserved_usd", "1"), "journal_totals_mismatch", 4),
    (
        "a fault count dropped",
        set_in(totals_of_rows, "fault_counts", {}),
        "journal_totals_mismatch",
        4,
    ),
    ("an unknown attempt field", set_in(answer, "spend_usd", "0"), "journal_fields_mismatch", 2),
    ("response_received missing", drop(answer, "response_received"), "journal_fields_mismatch", 2),
    ("the controls block missing", drop(header_of, "controls"), "journal_fields_mismatch", 1),
    (
        "an answer not received",
        set_in(answer, "response_received", False),
        "journal_call_incoherent",
        2,
    ),
    (
        "a fault without its outcome",
        set_in(answer, "fault", "provider_timeout"),
        "journal_call_incoherent",
        2,
    ),
    (
        "an attempt after the answer",
        an_extra_attempt_after_the_answer,
        "journal_call_incoherent",
        2,
    ),
    ("the answer first", swap_first_and_last_attempt, "journal_call_incoherent", 2),
    (
        "more attempts than allowed",
        set_in(controls_of, "max_attempts_per_call", 2),
        "journal_call_inadmissible",
        2,
    ),
    ("a repeated turn", set_in(second_call, "turn_index", 0), "journal_call_inadmissible", 3),
    ("a call index skipped", set_in(second_call, "call_index", 2), "journal_call_inadmissible", 3),
    (
        "a scored run over a fault",
        a_scored_terminal_over_a_retried_fault,
        "journal_terminal_inadmissible",
        4,
    ),
    (
        "an aborted run without its code",
        set_in(terminal_of, "kind", "aborted"),
        "journal_value_invalid",
        4,
    ),
    (
        "a credential in the settings",
        lambda rows: rows[0]["header"]["provider"]["settings"].update(auth="Bearer abc"),
        "journal_secret_material",
        1,
    ),
    (
        "an amount as a JSON number",
        set_in(answer, "cost_measured_usd", 0.0053),
        "journal_value_invalid",
        2,
    ),
    (
        "an instant with an offset",
        set_in(second_call, "ended_at", "2031-05-06T07:08:10+00:00"),
        "journal_value_invalid",
        3,
    ),
    (
        "a rate as a JSON number",
        lambda rows: controls_of(rows)["pricing"].update(input_usd_per_mtok=2.5),
        "journal_value_invalid",
        1,
    ),
    ("a version changed mid-journal", a_version_changed_mid_journal, "journal_version_mixed", 3),
    (
        "an unsupported version",
        lambda rows: [row.update(ledger_version=4) for row in rows],
        "journal_version_unsupported",
        1,
    ),
]


def test_every_rechained_edit_is_refused_by_name_at_its_line(tmp_path: Path) -> None:
    seen: set[str] = set()
    for name, edit, code, line in RECHAINED:
        rows = retried()
        edit(rows)
        with pytest.raises(AgentbenchError) as refused:
            audit_journal(write(tmp_path, rechain(rows)))
        assert (refused.value.code, refused.value.location.line) == (code, line), name
        seen.add(code)
    # The header's two digests cover what they name.
    rows = scored()
    header_of(rows)["provider"]["settings"]["model"] = "another-model"
    with pytest.raises(AgentbenchError, match="journal_digest_mismatch"):
        audit_journal(write(tmp_path, rechain(rows)))
    rows = scored()
    controls_of(rows)["pricing"]["output_usd_per_mtok"] = "0"
    with pytest.raises(AgentbenchError, match="journal_digest_mismatch"):
        audit_journal(write(tmp_path, rechain(rows)))
    assert len(seen) == 10


def test_the_chain_refuses_edits_moves_and_tails_by_name(tmp_path: Path) -> None:
    rows = scored()
    data = encode(rows)
    lines = data.splitlines(keepends=True)
    cases: list[tuple[str, bytes, str, int | None]] = [
        ("a byte edited", data.replace(b'"V2"', b'"V3"', 1), "journal_row_edited", 1),
        (
            "two rows swapped",
            lines[0] + lines[2] + lines[1] + lines[3],
            "journal_row_index_mismatch",
            2,
        ),
        ("a row dropped", lines[0] + lines[2] + lines[3], "journal_row_index_mismatch", 2),
        ("a row after the terminal", data + lines[1], "journal_row_after_terminal", 5),
        (
            "a duplicate key",
            data.replace(b'{"call": {', b'{"call": {"call_index": 9, ', 1),
            "journal_row_malformed",
            2,
        ),
        ("a header out of place", lines[1], "journal_row_index_mismatch", 1),
        ("no terminal row", b"".join(lines[:3]), "journal_incomplete", None),
        ("a cut-short last row", b"".join(lines[:3]) + lines[3][:40], "journal_incomplete", None),
        ("an empty file", b"", "journal_header_misplaced", None),
        ("garbage mid-journal", lines[0] + b"{not json\n" + lines[1], "journal_row_malformed", 2),
    ]
    for name, body, code, line in cases:
        with pytest.raises(AgentbenchError) as refused:
            audit_journal(write(tmp_path, body))
        assert (refused.value.code, refused.value.location.line) == (code, line), name
    broken = copy.deepcopy(rows)
    broken[2]["previous_row_digest_sha256"] = "1" * 64
    broken[2]["row_digest_sha256"] = journal_row_digest(broken[2])
    with pytest.raises(AgentbenchError, match="journal_chain_broken"):
        audit_journal(write(tmp_path, broken))
    # A prefix reads as incomplete, never as a run; a cut-short tail says so.
    reading = read_journal(write(tmp_path, b"".join(lines[:3]) + lines[3][:40]))
    assert (reading.status, reading.truncated_tail, reading.digest) == ("incomplete", True, None)
    assert reading.totals["provider_calls"] == 2


def test_only_a_final_fragment_some_bytes_could_complete_is_a_row_cut_short(
    tmp_path: Path,
) -> None:
    last = encode(scored())[:-1].rsplit(b"\n", 1)[1]
    assert all(cut_short(last[:cut]) for cut in range(len(last)))
    assert not cut_short(last)  # whole: it parses, so it is no prefix
    text = '{"a": [1, -2.5e3, true, null, "x\u00e9\\"y", {"b": false}], "c": "d"}'
    whole = text.encode()
    assert all(cut_short(whole[:cut]) for cut in range(len(whole)))
    for fragment in (
        b'{"a": 1}x',
        b'{"a" 1',
        b'{"a": tru e',
        b"[1,",
        b' {"a"',
        b'{"a": 01',
        b'{"a": 1.e',
        b'{"a": "\x01',
        b'{"a": \xc3',
        b'{"a": "\xff',
        b'{"a": 1,}',
    ):
        assert not cut_short(fragment), fragment
    lines = encode(scored()).splitlines(keepends=True)
    reading = read_journal(write(tmp_path, b"".join(lines[:3]) + b'{"call": {"x": tru'))
    assert (reading.status, reading.truncated_tail) == ("incomplete", True)
    with pytest.raises(AgentbenchError) as refused:
        read_journal(write(tmp_path, b"".join(lines[:3]) + b'{"call": {"x": trux'))
    assert (refused.value.code, refused.value.location.line) == ("journal_row_malformed", 4)


def run_cli(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["audit-ledger", str(path)])
    return status, out.getvalue(), err.getvalue()


def test_audit_ledger_detects_the_journal_layout_and_its_version(tmp_path: Path) -> None:
    status, out, _ = run_cli(write(tmp_path, excluded(2, "provider_server_error"), "v2.ndjson"))
    assert status == 0
    assert "OperateBench journal, ledger_version 2, 3 rows verified, terminal excluded" in out
    assert "(provider_server_error)" in out
    assert "faults: provider_server_error 2" in out
    rows = retried()
    answer(rows)["cost_measured_usd"] = "0.5"
    status, _, err = run_cli(write(tmp_path, rechain(rows), "edited.ndjson"))
    assert status == 1
    assert "journal_amount_mismatch" in err
    assert "edited.ndjson" in err


ORIGINAL_JOURNAL = "tests/fixtures/b3/artifact8-fake-openai-reference-v1.execution-ledger-v2.ndjson"


@pytest.mark.skipif(not os.environ.get("OPERATEBENCH_ROOT"), reason="OPERATEBENCH_ROOT is not set")
def test_the_originals_published_bundle_journal_audits() -> None:
    path = Path(os.environ["OPERATEBENCH_ROOT"]) / ORIGINAL_JOURNAL
    reading = audit_journal(path)
    assert (reading.version, reading.terminal_kind) == (2, "scored")
    assert reading.totals["forfeited_reservation_usd"] == "0"
    assert run_cli(path)[0] == 0


def test_an_empty_engine_version_reads_as_the_originals_reader_defaults_it(
    tmp_path: Path,
) -> None:
    for value, readable in (("", True), (None, True), ("has space", False), (7, False)):
        rows = scored()
        header_of(rows)["engine_version"] = value
        path = write(tmp_path, rechain(rows))
        if readable:
            assert audit_journal(path).terminal_kind == "scored"
        else:
            with pytest.raises(AgentbenchError, match="journal_value_invalid"):
                audit_journal(path)

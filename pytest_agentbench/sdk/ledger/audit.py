"""Reading and auditing an execution ledger; every refusal has its own name.

The reader trusts nothing the file says about itself: each line must be the
exact encoding of the row it parses to, each row's digest is recomputed, its
index must be its position (a missing, duplicated or re-ordered row is told
apart by the index it carries: a row found early whose own position is taken
by a later line is a reordering, one found early whose position no line
takes marks a missing row), its previous digest must be the digest of
the row before, calls must advance strictly in (invocation, turn), and the
terminal's totals are re-derived from the call rows. A ledger whose verified
rows end without a terminal row reads as ``incomplete``, never as a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_agentbench.sdk.canonical import JsonValue, loads_strict, read_bytes
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger.rows import (
    GENESIS,
    LEDGER_VERSION,
    PAYLOADS,
    CallPayload,
    HeaderPayload,
    TerminalPayload,
    encode_row,
    payload_json,
    reservation_usd,
    row_digest,
    totals_of,
)

ROW_KEYS = frozenset(
    {"ledger_version", "row_index", "row_kind", "previous_row_digest_sha256", "row_digest_sha256"}
)


@dataclass(frozen=True)
class LedgerReading:
    status: str
    """``complete`` (a verified terminal row) or ``incomplete`` (a verified prefix only)."""
    rows: tuple[dict[str, JsonValue], ...]
    digest: str | None
    """The terminal row's digest; ``None`` while incomplete."""
    terminal_kind: str | None


def _refuse(code: str, reason: str, path: Path, line: int | None = None) -> AgentbenchError:
    return AgentbenchError(code, reason, file=str(path), line=line)


_NOT_JSON = frozenset({"malformed_json", "duplicate_key", "non_finite_number"})


def _parse(raw: bytes, path: Path, line: int) -> dict[str, Any]:
    try:
        row = loads_strict(raw.decode("utf-8"), file=str(path), line=line)
    except UnicodeDecodeError:
        raise _refuse("ledger_row_malformed", "not a JSON line", path, line) from None
    except AgentbenchError as exc:
        # Size and depth limits keep their own names; anything else is not a row.
        if exc.code not in _NOT_JSON:
            raise
        raise _refuse("ledger_row_malformed", "not a JSON line", path, line) from None
    if not isinstance(row, dict):
        raise _refuse("ledger_row_malformed", "a row is a JSON object", path, line)
    if encode_row(row) != raw:
        raise _refuse(
            "ledger_row_edited", "the line is not the exact encoding of its row", path, line
        )
    if not isinstance(row.get("row_kind"), str) or set(row) != ROW_KEYS | {row["row_kind"]}:
        raise _refuse("ledger_row_malformed", "unexpected row keys", path, line)
    if row["ledger_version"] != LEDGER_VERSION:
        raise _refuse(
            "ledger_version_unsupported",
            f"ledger_version {row['ledger_version']!r}; this build reads {LEDGER_VERSION}",
            path,
            line,
        )
    if row_digest(row) != row["row_digest_sha256"]:
        raise _refuse("ledger_row_edited", "the row's own digest does not match it", path, line)
    return row


def read_ledger(path: Path) -> LedgerReading:
    """Verify ``path`` row by row; raise the first refusal, by name."""
    try:
        data = read_bytes(path)
    except AgentbenchError as exc:
        if exc.code not in ("missing_file", "unreadable_file"):
            raise
        raise _refuse("ledger_unreadable", exc.reason, path) from None
    return verify_ledger_bytes(data, path)


def verify_ledger_bytes(data: bytes, path: Path) -> LedgerReading:
    """The checks of :func:`read_ledger` on bytes already read (``path`` names them)."""
    if not data:
        raise _refuse("ledger_header_missing", "the ledger is empty", path)
    if not data.endswith(b"\n"):
        raise _refuse("ledger_row_truncated", "the last row is not whole", path)
    rows: list[dict[str, Any]] = []
    calls: list[CallPayload] = []
    seen: dict[str, int] = {}
    previous = GENESIS
    terminal: TerminalPayload | None = None
    header: HeaderPayload | None = None
    lines = data.split(b"\n")[:-1]
    for position, raw in enumerate(lines):
        line = position + 1
        row = _parse(raw + b"\n", path, line)
        digest = _check_place(row, position, seen, previous, lines, path=path)
        if terminal is not None:
            raise _refuse("ledger_row_after_terminal", "a row follows the terminal row", path, line)
        kind = row["row_kind"]
        if (position == 0) != (kind == "header"):
            code = "ledger_header_missing" if position == 0 else "ledger_header_repeated"
            raise _refuse(code, f"row {position} is a {kind!r} row", path, line)
        model = PAYLOADS.get(kind)
        if model is None:
            raise _refuse("ledger_row_malformed", f"unknown row_kind {kind!r}", path, line)
        try:
            payload = model.model_validate(row[kind])
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise _refuse(
                "ledger_row_invalid", f"{kind}.{where}: {first['msg']}", path, line
            ) from None
        if payload_json(payload) != row[kind]:
            raise _refuse(
                "ledger_row_invalid", f"{kind}: a field is null instead of absent", path, line
            )
        if isinstance(payload, HeaderPayload):
            header = payload
        elif isinstance(payload, CallPayload):
            _check_call(payload, calls, path, line)
            _check_reservations(payload, header, path, line)
            calls.append(payload)
        elif isinstance(payload, TerminalPayload):
            _check_terminal(payload, calls, header, path, line)
            terminal = payload
        seen[digest] = line
        previous = digest
        rows.append(row)
    return LedgerReading(
        status="incomplete" if terminal is None else "complete",
        rows=tuple(rows),
        digest=None if terminal is None else previous,
        terminal_kind=None if terminal is None else terminal.kind,
    )


def _line_of_row(index: int, lines: list[bytes], after: int) -> int | None:
    """The 1-based line after ``after`` whose row claims ``index``, if any line does.

    Only read on the way to a refusal, so a later line that is not a row is skipped
    here: the reader will name it when it gets there.
    """
    for position in range(after + 1, len(lines)):
        try:
            row = loads_strict(lines[position].decode("utf-8"))
        except (UnicodeDecodeError, AgentbenchError):
            continue
        if isinstance(row, dict) and row.get("row_index") == index:
            return position + 1
    return None


def _check_place(
    row: dict[str, Any],
    position: int,
    seen: dict[str, int],
    previous: str,
    lines: list[bytes],
    *,
    path: Path,
) -> str:
    """The row's digest, once it is known to stand where it claims, after its predecessor."""
    line = position + 1
    digest = str(row["row_digest_sha256"])
    index = row["row_index"]
    if digest in seen:
        raise _refuse("ledger_row_duplicated", f"the same row as line {seen[digest]}", path, line)
    if index != position:
        if isinstance(index, int) and not isinstance(index, bool) and index > position:
            later = _line_of_row(position, lines, position)
            if later is None:
                raise _refuse(
                    "ledger_row_missing", f"row {position} is missing (found {index})", path, line
                )
            raise _refuse(
                "ledger_rows_reordered",
                f"row {index} found at position {position}; row {position} is at line {later}",
                path,
                line,
            )
        raise _refuse(
            "ledger_rows_reordered", f"row {index!r} found at position {position}", path, line
        )
    if row["previous_row_digest_sha256"] != previous:
        raise _refuse("ledger_chain_broken", "previous digest does not match", path, line)
    return digest


def _check_call(call: CallPayload, calls: list[CallPayload], path: Path, line: int) -> None:
    if call.call_index != len(calls):
        raise _refuse(
            "ledger_call_order", f"call_index {call.call_index}, expected {len(calls)}", path, line
        )
    if calls and (call.invocation_index, call.turn_index) <= (
        calls[-1].invocation_index,
        calls[-1].turn_index,
    ):
        raise _refuse(
            "ledger_call_order", "(invocation, turn) does not strictly increase", path, line
        )
    attempts = call.attempts or ()
    if [a.attempt_index for a in attempts] != list(range(1, len(attempts) + 1)):
        raise _refuse("ledger_call_order", "attempts are not contiguous from 1", path, line)


def _check_reservations(
    call: CallPayload, header: HeaderPayload | None, path: Path, line: int
) -> None:
    """A stated reservation is re-derived from the header's rates, never read.

    Absent is accepted (a ledger written before attempts stated it); a stated
    one that the rates do not give, or one under a header with no rates, is refused.
    """
    expected = None if header is None else reservation_usd(header)
    for attempt in call.attempts or ():
        stated = attempt.cost_reservation_usd
        if stated is not None and stated != expected:
            raise _refuse(
                "ledger_amount_mismatch",
                f"attempt {attempt.attempt_index}: cost_reservation_usd {stated}, the header's "
                f"rates give {expected}",
                path,
                line,
            )


def _check_terminal(
    terminal: TerminalPayload,
    calls: list[CallPayload],
    header: HeaderPayload | None,
    path: Path,
    line: int,
) -> None:
    # Every amount is re-derived from the rows at the header's rates, never read.
    if terminal.totals != totals_of(calls, header):
        raise _refuse(
            "ledger_terminal_contradicts_rows",
            "the terminal's totals are not those of the call rows",
            path,
            line,
        )
    if terminal.kind == "scored" and any(call.decision is None for call in calls):
        raise _refuse(
            "ledger_terminal_contradicts_rows",
            "a scored terminal over a call that produced no decision",
            path,
            line,
        )
    if (terminal.kind == "excluded") != (terminal.exclusion_code is not None):
        raise _refuse(
            "ledger_terminal_contradicts_rows",
            "an exclusion code belongs to exactly the excluded terminal",
            path,
            line,
        )


def audit_ledger(path: Path, data: bytes | None = None) -> LedgerReading:
    """A complete, verified ledger, or the refusal; an incomplete one is refused too."""
    reading = read_ledger(path) if data is None else verify_ledger_bytes(data, path)
    if reading.status != "complete":
        raise _refuse(
            "ledger_incomplete",
            f"{len(reading.rows)} verified rows and no terminal row: the run did not finish",
            path,
        )
    return reading

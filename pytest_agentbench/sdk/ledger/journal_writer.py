"""A model run's execution ledger in OperateBench's journal layout (its ``ledger_version`` 3).

Our own ledger (:mod:`.rows`) is written row by row while the run goes; this
module re-states a finished one in the original's row layout so that the
original's reader (and ours of its layout, :mod:`.journal`) accepts it: per-call
instants, per-attempt reservation and settlement, the header's ``provider`` and
``controls`` blocks, the terminal's fixed detail and totals with ``fault_counts``.

Nothing here reads a clock. The instants are the episode's simulated clock,
rendered as the original renders its wall-clock instants (``2035-01-02T03:04:05Z``):
the same field names and form, a simulated value. Every latency is ``null``.

Where our rows carry less than the original's, the mapping is stated once here
and in ``docs/worlds/operations.md``: our fault names become the original's closed
vocabulary, each call's input bound is the run's per-call token bound, and the
reservation is the original's formula. A run the original's rules cannot
express (a call without a model request behind it, several requests in one
call, a scored run with a faulted attempt) is refused by name, never bent.
The bytes are read back through :func:`.journal.read_journal` before they are
written, so the writer never leaves a journal its reader refuses.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt, StrictStr

from pytest_agentbench.sdk.canonical import JsonValue, canonical_bytes, sha256_hex
from pytest_agentbench.sdk.contracts import Record
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger import journal
from pytest_agentbench.sdk.ledger.rows import (
    GENESIS,
    Attempt,
    CallPayload,
    HeaderPayload,
    encode_row,
    row_digest,
)
from pytest_agentbench.sdk.ledger.writer import open_no_follow

JOURNAL_VERSION = 3
JOURNAL_SUFFIX = ".journal.ndjson"
NO_LIMIT = 2**31 - 1
"""A count ceiling the run did not set. The original states every ceiling as a positive
integer and has no "no limit" value; this is the largest 32-bit signed integer."""
NO_COST_CAP = "1000000000"
"""The cost cap of a run that set none (USD): the original's cap is a positive amount and
has no "no cap" value either."""
AGENT_KIND = "model"

_Count = Annotated[StrictInt, Field(ge=1)]
_Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_Rate = Annotated[StrictStr, Field(pattern=r"^[0-9]+(\.[0-9]+)?$")]
_Token = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9._:@/+-]{1,256}$")]

# Our transport's fault names (``agents.usage``: ``http_NNN``, ``timeout``, ``cut_off``)
# in the original's closed version-3 vocabulary.
_STATUS_FAULTS = {
    400: "provider_bad_request_unclassified",
    401: "provider_authentication",
    403: "provider_authentication",
    429: "provider_rate_limited",
}
_NAMED_FAULTS = {
    "timeout": "provider_timeout",
    "cut_off": "provider_timeout",
    "connect_error": "provider_network_error",
    "network_error": "provider_network_error",
}
_EXCLUSIONS = {"case_timeout": "provider_deadline", "provider_budget": "provider_budget"}


class JournalProvider(Record):
    """Who answered, as the original's header names it; its settings are carried whole."""

    provider: _Token
    api: _Token
    model: _Token
    base_url: Annotated[
        StrictStr, Field(pattern=r"^https://[A-Za-z0-9.-]+(?::\d+)?(?:/[A-Za-z0-9._~/-]*)?$")
    ]
    implementation: _Token
    request_mapping: _Token
    protocol_version: _Token
    sdk: _Token
    sdk_version: _Token
    settings: dict[str, JsonValue]

    def as_json(self) -> dict[str, JsonValue]:
        data: dict[str, JsonValue] = self.model_dump(mode="json")
        data["settings_digest_sha256"] = sha256_hex(canonical_bytes(self.settings))
        return data


class JournalControls(Record):
    """The header's ``controls``: the original's 11 fields, in its order (the digest derived)."""

    max_provider_calls: _Count
    max_attempts_per_call: _Count
    expected_provider_calls: _Count
    token_hard_cap: _Count
    max_output_tokens: _Count
    cost_cap_usd: Annotated[StrictStr, Field(pattern=r"^(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$")]
    cost_cap_policy: Literal["refuse_before_dispatch"] = "refuse_before_dispatch"
    turn_deadline_seconds: _Seconds | None
    wall_clock_deadline_seconds: _Seconds | None
    pricing: dict[Literal["input_usd_per_mtok", "output_usd_per_mtok"], _Rate]

    def as_json(self) -> dict[str, JsonValue]:
        data: dict[str, JsonValue] = self.model_dump(mode="json")
        data["pricing_digest_sha256"] = sha256_hex(canonical_bytes(self.pricing))
        return data


def per_mtok(per_token: str) -> str:
    """A per-token rate (our pricing table's unit) as the original's per-million rate."""
    return journal.usd_text(Decimal(per_token) * 1_000_000)


def run_controls(
    *,
    max_tokens_per_call: int,
    input_per_token: str,
    output_per_token: str,
    max_retries: int,
    max_calls: int | None = None,
    max_tokens: int | None = None,
    max_cost: str | None = None,
    timeout_s: float | None = None,
    case_timeout_s: float | None = None,
) -> JournalControls:
    """The ``controls`` block of a run's own limits (``ChatSettings`` and the case timeout).

    A ceiling the run did not set is :data:`NO_LIMIT` (:data:`NO_COST_CAP`); we make no
    forecast of the calls a scenario needs, so ``expected_provider_calls`` is the least
    the format admits, 1. Our per-call bound covers input and output together, so it is
    both the output ceiling and (below) every call's input bound.
    """
    calls = NO_LIMIT if max_calls is None else max(max_calls, 1)
    return JournalControls(
        max_provider_calls=calls,
        max_attempts_per_call=max_retries + 1,
        expected_provider_calls=1,
        token_hard_cap=NO_LIMIT if max_tokens is None else max(max_tokens, 1),
        max_output_tokens=max_tokens_per_call,
        cost_cap_usd=NO_COST_CAP if max_cost is None else journal.usd_text(Decimal(max_cost)),
        turn_deadline_seconds=timeout_s,
        wall_clock_deadline_seconds=case_timeout_s,
        pricing={
            "input_usd_per_mtok": per_mtok(input_per_token),
            "output_usd_per_mtok": per_mtok(output_per_token),
        },
    )


@dataclass(frozen=True)
class JournalCall:
    """One of our call rows, with what the journal states beside it."""

    call: CallPayload
    at: str
    """The call's simulated instant (its ``started_at`` and ``ended_at``)."""
    classification_code: str | None = None
    """The code the run classified the decision under (a malformed answer's refusal)."""


@dataclass(frozen=True)
class JournalSetup:
    """What a model run states beyond our own header: its provider and its controls."""

    provider: JournalProvider
    controls: JournalControls


def original_fault(fault: str | None) -> str:
    """Our fault name in the original's version-3 vocabulary."""
    name = fault or ""
    if name in _NAMED_FAULTS:
        return _NAMED_FAULTS[name]
    digits = name.removeprefix("http_")
    if name.startswith("http_") and digits.isdigit():
        status = int(digits)
        if status in _STATUS_FAULTS:
            return _STATUS_FAULTS[status]
        if 500 <= status <= 599:
            return "provider_server_error"
        if 400 <= status <= 499:
            return "provider_request_rejected"
    return "provider_response_invalid"


def _refuse(display: str, field: str, reason: str) -> AgentbenchError:
    return AgentbenchError("journal_call_unrepresentable", reason, file=display, field=field)


def _attempt(
    ours: Attempt, reservation: str, controls: Mapping[str, Any], normalized: str | None
) -> dict[str, JsonValue]:
    response = ours.outcome == "response"
    received = response or bool(ours.response_received)
    tokens = ours.tokens
    # The usage the journal states: only what a received answer reported in full.
    usage = (
        (tokens.input, tokens.output)
        if received
        and tokens is not None
        and tokens.input is not None
        and tokens.output is not None
        else None
    )
    measured = response and usage is not None
    return {
        "attempt_index": ours.attempt_index,
        "outcome": ours.outcome,
        "fault": original_fault(ours.fault) if ours.outcome == "fault" else None,
        "http_status": ours.http_status if received else None,
        "latency_seconds": None,
        "response_received": received,
        "usage_reported": usage is not None,
        "cost_reservation_usd": reservation,
        "cost_settlement": "measured" if measured else "forfeited",
        "cost_measured_usd": journal.priced(controls, *usage)
        if response and usage is not None
        else None,
        "cost_forfeited_usd": None if measured else reservation,
        "input_tokens": None if usage is None else usage[0],
        "output_tokens": None if usage is None else usage[1],
        "response_model": None,
        "response_id_digest_sha256": None,
        "response_stop_classification": None,
        "response_normalized_digest_sha256": normalized if response else None,
    }


def _turn_end(attempts: Sequence[dict[str, JsonValue]], ceiling: int) -> str:
    last = attempts[-1]
    if last["outcome"] in ("response", "unclassified_error"):
        return str(last["outcome"])
    if last["fault"] not in journal.RETRYABLE[JOURNAL_VERSION]:
        return "fault_not_retryable"
    # A retryable fault with attempts left ended on our transport's time, not its policy.
    return "retries_exhausted" if len(attempts) == ceiling else "deadline_exceeded"


def journal_call(
    stated: JournalCall, controls: Mapping[str, Any], display: str
) -> dict[str, JsonValue]:
    """One of our call rows in the original's call layout, at its simulated instant."""
    call, at = stated.call, stated.at
    where = f"call {call.call_index}"
    if not call.attempts or call.request_digest_sha256 is None:
        raise _refuse(display, where, "no model request behind this call: nothing to journal")
    requests = {a.request_digest_sha256 for a in call.attempts} - {None}
    if len(requests) > 1:
        raise _refuse(
            display, where, f"{len(requests)} model requests in one call; the original's is one"
        )
    bound = int(controls["max_output_tokens"])
    reservation = journal.priced(controls, bound, bound)
    decision = call.decision
    attempts = [
        _attempt(
            attempt,
            reservation,
            controls,
            decision.decision_digest_sha256 if decision is not None else None,
        )
        for attempt in call.attempts
    ]
    if decision is not None and attempts[-1]["outcome"] != "response":
        raise _refuse(display, where, "a decision without a model answer behind it")
    return {
        "call_index": call.call_index,
        "invocation_index": call.invocation_index,
        "turn_index": call.turn_index,
        "request_digest_sha256": call.request_digest_sha256,
        # We pin one digest of the request (prompt included) and one of the observation.
        "prompt_digest_sha256": call.request_digest_sha256,
        "observation_digest_sha256": call.observation_digest_sha256,
        "payload_digest_sha256": call.observation_digest_sha256,
        # The exact wire bytes, method and endpoint are not ours to state: all or none.
        "wire_request_digest_sha256": None,
        "wire_request_bytes": None,
        "wire_request_method": None,
        "wire_request_url": None,
        "input_token_upper_bound": bound,
        "started_at": at,
        "ended_at": at,
        "turn_latency_seconds": None,
        "terminal_reason": _turn_end(attempts, int(controls["max_attempts_per_call"])),
        "attempts": attempts,
        "decision": None
        if decision is None
        else {
            "kind": decision.kind,
            "decision_digest_sha256": decision.decision_digest_sha256,
            "classification_code": stated.classification_code,
        },
    }


def _row(index: int, kind: str, previous: str, payload: dict[str, JsonValue]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "ledger_version": JOURNAL_VERSION,
        "row_index": index,
        "row_kind": kind,
        "previous_row_digest_sha256": previous,
        kind: payload,
    }
    row["row_digest_sha256"] = row_digest(row)
    return row


def journal_bytes(
    header: HeaderPayload,
    setup: JournalSetup,
    calls: Sequence[JournalCall],
    *,
    started_at: str,
    ended_at: str,
    kind: str,
    exclusion_code: str | None = None,
    display: str = "journal",
) -> bytes:
    """The whole journal: the header, one row per call, the terminal row."""
    controls = setup.controls.as_json()
    seed = {"execution_run_id": header.execution_run_id, "scenario": header.scenario_id}
    payloads: list[tuple[str, dict[str, JsonValue]]] = [
        (
            "header",
            {
                "execution_run_id": header.execution_run_id,
                # Derived like the run id (the original's is random): reruns stay identical.
                "operation_instance_id": "opinst_" + sha256_hex(canonical_bytes(seed))[:32],
                "operation_id": header.operation_id,
                "spec_digest_sha256": header.spec_digest_sha256,
                "scenario_id": header.scenario_id,
                "agent_id": header.agent_id,
                "agent_kind": AGENT_KIND,
                "engine_version": header.engine_version,
                "intended_artifact_version": 8,
                "started_at": started_at,
                "provider": setup.provider.as_json(),
                "controls": controls,
            },
        )
    ]
    rows = [journal_call(call, controls, display) for call in calls]
    payloads += [("call", row) for row in rows]
    if kind == "scored":
        code = None
    elif kind == "aborted":
        code = "execution_aborted"
    else:
        code = _EXCLUSIONS.get(exclusion_code or "", exclusion_code)
    payloads.append(
        (
            "terminal",
            {
                "kind": kind,
                "ended_at": ended_at,
                "exclusion_code": code,
                "exclusion_detail": journal.TERMINAL_DETAILS[kind],
                "totals": journal.totals_of(rows),
            },
        )
    )
    previous, data = GENESIS, b""
    for index, (row_kind, payload) in enumerate(payloads):
        row = _row(index, row_kind, previous, payload)
        previous = str(row["row_digest_sha256"])
        data += encode_row(row)
    # Read back before it exists: the writer never leaves a journal its reader refuses.
    journal.audit_journal(Path(display), data)
    return data


def write_journal(path: Path, data: bytes) -> str:
    """Write a journal made by :func:`journal_bytes` as a new file; its digest (the terminal's).

    Created as our ledger is (no symbolic link followed, never over an existing file:
    ``ledger_unsafe_path``, ``ledger_exists``), mode 0600 as the original creates its
    journals (its descriptor reader refuses any other), written whole and fsynced; a
    failed write removes the file, so no partial journal is left behind.
    """
    fd = open_no_follow(path)
    try:
        os.fchmod(fd, 0o600)
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        fd = -1
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise AgentbenchError(
            "ledger_write_failed", f"journal not durable: {exc.strerror or exc}", file=str(path)
        ) from None
    finally:
        if fd >= 0:
            os.close(fd)
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    return str(json.loads(last)["row_digest_sha256"])

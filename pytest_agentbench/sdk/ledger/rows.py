"""Rows of the execution ledger: payload models, digests and the exact line encoding.

A row is ``{ledger_version, row_index, row_kind, previous_row_digest_sha256,
<row_kind>: payload, row_digest_sha256}``; its digest is SHA-256 of the
canonical JSON of the row without ``row_digest_sha256``; its line is
``json.dumps(row, sort_keys=True, ensure_ascii=False) + "\\n"``. Usage fields
(request digests, attempts, token counts) appear only where the adapter
reported them: absent, never invented and never null.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from pytest_agentbench.sdk.canonical import JsonValue, canonical_bytes, sha256_hex
from pytest_agentbench.sdk.contracts import Record

LEDGER_VERSION = 3
GENESIS = "0" * 64
ROW_KINDS = ("header", "call", "terminal")

Digest = Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]
Amount = Annotated[StrictStr, Field(pattern=r"^(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$")]
"""An exact decimal amount as text: no exponent, no trailing zeros."""
Count = Annotated[StrictInt, Field(ge=0)]


class HeaderPayload(Record):
    execution_run_id: Annotated[StrictStr, Field(pattern=r"^exec_[0-9a-f]{32}$")]
    operation_id: StrictStr
    spec_digest_sha256: Digest
    scenario_id: StrictStr
    agent_id: StrictStr
    engine_version: StrictStr
    intended_artifact_version: Literal[8] = 8
    provider: dict[str, JsonValue] | None = None
    """Only where the adapter reports a provider (settings digest and the like)."""


class Tokens(Record):
    """Token counts as the model's response reported them; a count it did not report is absent."""

    input: Count | None = None
    output: Count | None = None
    total: Count | None = None


class Attempt(Record):
    attempt_index: Annotated[StrictInt, Field(ge=1)]
    outcome: Literal["fault", "response", "unclassified_error"]
    fault: StrictStr | None = None
    tokens: Tokens | None = None
    request_digest_sha256: Digest | None = None
    """The model request this attempt sent (the digest its cassette is named by)."""
    response_received: StrictBool | None = None
    """Whether anything came back (an error status too), as the original's ledger states it;
    absent where the adapter did not say."""
    http_status: Annotated[StrictInt, Field(ge=100, le=599)] | None = None
    """The status that came back; stated only with ``response_received`` true."""
    cost_reservation_usd: Amount | None = None
    """What this attempt was authorised to cost before dispatch, at the header's rates
    (written by the ledger, re-derived by the audit); absent when the header pins none."""

    @model_validator(mode="after")
    def _coherent(self) -> Attempt:
        # A response was received by definition, and a status is response evidence.
        if self.outcome == "response" and self.response_received is False:
            raise ValueError("a response outcome states response_received false")
        if self.http_status is not None and self.response_received is not True:
            raise ValueError("an http_status is stated only with response_received true")
        return self


class Decision(Record):
    kind: StrictStr
    decision_digest_sha256: Digest


class CallPayload(Record):
    call_index: Count
    invocation_index: Annotated[StrictInt, Field(ge=1)]
    turn_index: Count
    observation_digest_sha256: Digest
    decision: Decision | None
    """``None`` when the adapter raised instead of answering."""
    request_digest_sha256: Digest | None = None
    wire_digest_sha256: Digest | None = None
    attempts: tuple[Attempt, ...] | None = None
    method: StrictStr | None = None
    """The adapter method called (ledgers of pytest runs, which wrap any adapter)."""
    error_digest_sha256: Digest | None = None
    """Digest of what the call raised instead of answering (``decision`` is then ``None``)."""


class Totals(Record):
    calls: Count
    decisions: Count
    attempts: Count
    input_tokens: Count
    output_tokens: Count
    fault_counts: dict[StrictStr, Annotated[StrictInt, Field(ge=1)]] | None = None
    """Attempts that faulted, by fault (the original's ``fault_counts``); absent when none did."""
    measured_cost_usd: Amount | None = None
    """What the reported token counts come to at the header's rates; absent when unpriced."""
    forfeited_reservation_usd: Amount | None = None
    """Whole reservations of the attempts whose cost is unknown (faulted, or no counts)."""
    reserved_usd: Amount | None = None
    """What every attempt was authorised to cost before dispatch. The three are never summed."""


class TerminalPayload(Record):
    kind: Literal["scored", "excluded", "aborted"]
    exclusion_code: StrictStr | None = None
    totals: Totals


PAYLOADS: Mapping[str, type[Record]] = {
    "header": HeaderPayload,
    "call": CallPayload,
    "terminal": TerminalPayload,
}


def payload_json(payload: Record) -> dict[str, JsonValue]:
    """The payload as stored: optional fields the adapter did not report are absent."""
    data: dict[str, JsonValue] = payload.model_dump(mode="json", exclude_none=True)
    if isinstance(payload, CallPayload):
        data["decision"] = None if payload.decision is None else payload.decision.model_dump()
    if isinstance(payload, TerminalPayload):
        data["exclusion_code"] = payload.exclusion_code
    return data


def row_digest(row: Mapping[str, Any]) -> str:
    return sha256_hex(canonical_bytes({k: v for k, v in row.items() if k != "row_digest_sha256"}))


def make_row(index: int, kind: str, previous: str, payload: Record) -> dict[str, JsonValue]:
    row: dict[str, JsonValue] = {
        "ledger_version": LEDGER_VERSION,
        "row_index": index,
        "row_kind": kind,
        "previous_row_digest_sha256": previous,
        kind: payload_json(payload),
    }
    row["row_digest_sha256"] = row_digest(row)
    return row


def encode_row(row: Mapping[str, Any]) -> bytes:
    return (json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def amount_text(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return "0" if Decimal(text) == 0 else text


class Amounts(Record):
    """A ledger's spend, derived from its rows at the rates its header pins."""

    measured: Decimal
    forfeited: Decimal
    reserved: Decimal
    responses: int


def _pricing(header: HeaderPayload) -> tuple[Decimal, Decimal, Decimal] | None:
    """The header's input and output rates and one attempt's reservation
    (``max_tokens_per_call`` tokens at the dearer rate); ``None`` when unpriced.

    One derivation for the writer, the audit and the totals, so a stated
    reservation and the reserved total cannot drift apart.
    """
    provider = header.provider or {}
    rates = (provider.get("input_per_token"), provider.get("output_per_token"))
    if not all(isinstance(rate, str) for rate in rates) or not isinstance(
        provider.get("pricing_digest_sha256"), str
    ):
        return None
    per_in, per_out = Decimal(str(rates[0])), Decimal(str(rates[1]))
    bound = provider.get("max_tokens_per_call")
    return per_in, per_out, max(per_in, per_out) * (bound if isinstance(bound, int) else 0)


def reservation_usd(header: HeaderPayload) -> str | None:
    """What one attempt is authorised to cost at the header's rates; ``None`` when unpriced."""
    pricing = _pricing(header)
    return None if pricing is None else amount_text(pricing[2])


def with_reservations(header: HeaderPayload, call: CallPayload) -> CallPayload:
    """The call with each attempt's reservation stated, when the header pins rates."""
    reservation = reservation_usd(header)
    if reservation is None or not call.attempts:
        return call
    attempts = tuple(
        attempt.model_copy(update={"cost_reservation_usd": reservation})
        for attempt in call.attempts
    )
    return call.model_copy(update={"attempts": attempts})


def amounts_of(header: HeaderPayload, calls: list[CallPayload]) -> Amounts | None:
    """Measured, forfeited and reserved amounts; ``None`` when the header pins no pricing.

    Each attempt reserves the most one call can cost (``max_tokens_per_call``
    tokens at the dearer rate). An answer that reported token counts settles at
    them; an attempt that faulted, or an answer that reported none, forfeits its
    whole reservation: its cost is unknown, and a forfeited reservation is not spend.
    """
    pricing = _pricing(header)
    if pricing is None:
        return None
    per_in, per_out, reservation = pricing
    measured = forfeited = reserved = Decimal(0)
    responses = 0
    for call in calls:
        for attempt in call.attempts or ():
            reserved += reservation
            tokens = attempt.tokens
            if attempt.outcome != "response":
                forfeited += reservation
                continue
            responses += 1
            if tokens is None or (tokens.input is None and tokens.output is None):
                forfeited += reservation
            else:
                measured += per_in * (tokens.input or 0) + per_out * (tokens.output or 0)
    return Amounts(measured=measured, forfeited=forfeited, reserved=reserved, responses=responses)


def totals_of(calls: list[CallPayload], header: HeaderPayload | None = None) -> Totals:
    """The terminal's totals, derived from the call rows (and the header's rates, if any)."""
    attempts = [a for call in calls for a in call.attempts or ()]
    faults: dict[str, int] = {}
    for attempt in attempts:
        if attempt.outcome != "response":
            name = attempt.fault or attempt.outcome
            faults[name] = faults.get(name, 0) + 1
    amounts = None if header is None else amounts_of(header, calls)
    return Totals(
        fault_counts=dict(sorted(faults.items())) or None,
        calls=len(calls),
        decisions=sum(1 for call in calls if call.decision is not None),
        attempts=len(attempts),
        input_tokens=sum(a.tokens.input or 0 for a in attempts if a.tokens is not None),
        output_tokens=sum(a.tokens.output or 0 for a in attempts if a.tokens is not None),
        measured_cost_usd=None if amounts is None else amount_text(amounts.measured),
        forfeited_reservation_usd=None if amounts is None else amount_text(amounts.forfeited),
        reserved_usd=None if amounts is None else amount_text(amounts.reserved),
    )

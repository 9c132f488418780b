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
from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt, StrictStr

from pytest_agentbench.sdk.canonical import JsonValue, canonical_bytes, sha256_hex
from pytest_agentbench.sdk.contracts import Record

LEDGER_VERSION = 3
GENESIS = "0" * 64
ROW_KINDS = ("header", "call", "terminal")

Digest = Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]
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


def totals_of(calls: list[CallPayload]) -> Totals:
    """The terminal's totals, derived from the call rows alone."""
    attempts = [a for call in calls for a in call.attempts or ()]
    return Totals(
        calls=len(calls),
        decisions=sum(1 for call in calls if call.decision is not None),
        attempts=len(attempts),
        input_tokens=sum(a.tokens.input or 0 for a in attempts if a.tokens is not None),
        output_tokens=sum(a.tokens.output or 0 for a in attempts if a.tokens is not None),
    )

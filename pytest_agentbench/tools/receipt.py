"""Receipts: one interactive case's tool calls and final answer, digest-bound.

A receipt has two partitions. ``canonical`` holds every decision-affecting
input and output (the tools offered, the budget, each call's arguments,
result, outcome code and model-visible bytes, the final answer, how the run
ended); ``digest`` is the sha256 of its canonical JSON, so unchanged inputs give
a byte-identical digest on every rerun and every worker. ``observations`` holds
what may change between identical runs (timings, free-text failure messages)
and is excluded from the digest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Final, Literal

from pydantic import Field, model_validator

from pytest_agentbench.canonical import JsonValue, canonical_bytes, sha256_hex
from pytest_agentbench.contracts import Record
from pytest_agentbench.tools.records import ToolCallRecord
from pytest_agentbench.tools.spec import Budget, ToolDescriptor

RECEIPT_SCHEME: Final = "agentbench-tool-receipt/1"


class ReceiptCall(Record):
    index: int
    name: str
    arguments: JsonValue = None
    raw_arguments: str | None = None
    result: JsonValue = None
    error: str | None = None
    delivered: bool
    model_visible_bytes: int = Field(ge=0)


class ReceiptTotals(Record):
    calls: int
    delivered: int
    model_visible_bytes: int
    errors: dict[str, int]
    """Calls per outcome code, sorted by code."""


class ReceiptCanonical(Record):
    scheme: Literal["agentbench-tool-receipt/1"] = RECEIPT_SCHEME
    context: dict[str, JsonValue] = Field(default_factory=dict)
    """What the world binds the receipt to (suite, case, seed ...)."""
    tools: tuple[ToolDescriptor, ...]
    budget: Budget
    calls: tuple[ReceiptCall, ...]
    totals: ReceiptTotals
    final: JsonValue = None
    """The final answer as the world accepted it; ``None`` when there is none."""
    failure_class: str | None = None
    failure_code: str | None = None


class CallObservation(Record):
    index: int
    duration_ms: float | None = None
    message: str | None = None


class ReceiptObservations(Record):
    calls: tuple[CallObservation, ...] = ()
    failure_reason: str | None = None


def canonical_digest(canonical: ReceiptCanonical) -> str:
    return sha256_hex(canonical_bytes(canonical.model_dump(mode="json")))


class Receipt(Record):
    canonical: ReceiptCanonical
    digest: str
    """sha256 of the canonical JSON of ``canonical``; checked whenever a receipt is read."""
    observations: ReceiptObservations = Field(default_factory=ReceiptObservations)

    @model_validator(mode="after")
    def _digest_matches(self) -> Receipt:
        actual = canonical_digest(self.canonical)
        if self.digest != actual:
            raise ValueError(
                f"digest is {self.digest!r}, its canonical partition hashes to {actual}"
            )
        return self

    @classmethod
    def build(
        cls,
        *,
        tools: Sequence[ToolDescriptor],
        budget: Budget,
        calls: Sequence[ToolCallRecord],
        final: JsonValue = None,
        failure_class: str | None = None,
        failure_code: str | None = None,
        failure_reason: str | None = None,
        context: Mapping[str, JsonValue] | None = None,
    ) -> Receipt:
        errors = Counter(call.error for call in calls if call.error is not None)
        canonical = ReceiptCanonical(
            context=dict(context or {}),
            tools=tuple(tool.describe() for tool in tools),
            budget=budget,
            calls=tuple(ReceiptCall(**call.canonical()) for call in calls),
            totals=ReceiptTotals(
                calls=len(calls),
                delivered=sum(call.delivered for call in calls),
                model_visible_bytes=sum(call.model_visible_bytes for call in calls),
                errors=dict(sorted(errors.items())),
            ),
            final=final,
            failure_class=failure_class,
            failure_code=failure_code,
        )
        observations = ReceiptObservations(
            calls=tuple(
                CallObservation(
                    index=call.index, duration_ms=call.duration_ms, message=call.message
                )
                for call in calls
            ),
            failure_reason=failure_reason,
        )
        return cls(
            canonical=canonical, digest=canonical_digest(canonical), observations=observations
        )

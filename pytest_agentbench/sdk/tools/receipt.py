"""Receipts: one interactive case's tool calls and final answer, digest-bound.

A receipt has two partitions. ``canonical`` holds every decision-affecting
input and output (the tools offered, the budget, each call's arguments,
result, outcome code and model-visible bytes, the final answer, how the run
ended); ``digest`` is the sha256 of its canonical JSON, so unchanged inputs give
a byte-identical digest on every rerun and every worker. ``observations`` holds
what may change between identical runs (timings, free-text failure messages)
and is excluded from the digest.

A case whose world opens one session per invocation (issue 9: "for one case
(or one invocation)") carries one :class:`EpisodeReceipt`: the invocations'
receipts in order, bound by one digest over all of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, Literal

from pydantic import Field, model_validator

from pytest_agentbench.sdk.canonical import JsonValue, pretty_json, sha256_hex
from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, Record
from pytest_agentbench.sdk.tools.records import ToolCallRecord, encode_canonical
from pytest_agentbench.sdk.tools.spec import Budget, ToolDescriptor

RECEIPT_SCHEME: Final = "agentbench-tool-receipt/1"


class ReceiptCall(Record):
    model_config = BUILT_ON_FIRST_USE

    index: int
    name: str
    arguments: JsonValue = None
    raw_arguments: str | None = None
    result: JsonValue = None
    error: str | None = None
    delivered: bool
    model_visible_bytes: int = Field(ge=0)


class ReceiptTotals(Record):
    model_config = BUILT_ON_FIRST_USE

    calls: int
    delivered: int
    model_visible_bytes: int
    errors: dict[str, int]
    """Calls per outcome code, sorted by code."""


class ReceiptCanonical(Record):
    model_config = BUILT_ON_FIRST_USE

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
    model_config = BUILT_ON_FIRST_USE

    index: int
    duration_ms: float | None = None
    message: str | None = None


class ReceiptObservations(Record):
    model_config = BUILT_ON_FIRST_USE

    calls: tuple[CallObservation, ...] = ()
    failure_reason: str | None = None


def canonical_digest(canonical: ReceiptCanonical) -> str:
    return sha256_hex(encode_canonical(canonical.model_dump(mode="json")).encode("utf-8"))


class Receipt(Record):
    model_config = BUILT_ON_FIRST_USE

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
        # Built here from its own digest: the check on reading would only repeat the hash.
        digest = _digest_from_texts(canonical, [tool.canonical_text() for tool in tools], calls)
        return cls.model_construct(canonical=canonical, digest=digest, observations=observations)


def _digest_from_texts(
    canonical: ReceiptCanonical, tool_texts: Sequence[str], calls: Sequence[ToolCallRecord]
) -> str:
    """:func:`canonical_digest`, from the canonical JSON the tools and calls already have.

    A canonical JSON object is its sorted keys, each with its value's canonical
    JSON, so the text is put together from its fields' texts. The tools' part is
    most of it and a world serialises it once per declared tool
    (:meth:`ToolSpec.canonical_text`); a call keeps its arguments and result as
    canonical JSON text, which ``canonical.calls`` holds decoded.
    """
    texts = {
        key: encode_canonical(value)
        for key, value in canonical.model_dump(mode="json", exclude={"tools", "calls"}).items()
    }
    texts["tools"] = "[" + ",".join(tool_texts) + "]"
    texts["calls"] = "[" + ",".join(_call_text(call) for call in calls) + "]"
    return sha256_hex(_object_text(texts).encode("utf-8"))


def _call_text(call: ToolCallRecord) -> str:
    """Canonical JSON of the call's :class:`ReceiptCall`, its arguments and result as recorded."""
    texts = {
        "index": encode_canonical(call.index),
        "name": encode_canonical(call.name),
        "arguments": _NULL if call.arguments_json is None else call.arguments_json,
        "raw_arguments": encode_canonical(call.raw_arguments),
        "result": _NULL if call.result_json is None else call.result_json,
        "error": encode_canonical(call.error),
        "delivered": encode_canonical(call.delivered),
        "model_visible_bytes": encode_canonical(call.model_visible_bytes),
    }
    return _object_text(texts)


_NULL = encode_canonical(None)


def _object_text(texts: Mapping[str, str]) -> str:
    """The canonical JSON of an object whose values' canonical JSON is given."""
    body = ",".join(f"{encode_canonical(key)}:{texts[key]}" for key in sorted(texts))
    return "{" + body + "}"


EPISODE_RECEIPT_SCHEME: Final = "agentbench-episode-receipt/1"


class InvocationReceipt(Record):
    """One invocation's session receipt inside an episode receipt: its canonical part and digest."""

    model_config = BUILT_ON_FIRST_USE

    canonical: ReceiptCanonical
    digest: str

    @model_validator(mode="after")
    def _digest_matches(self) -> InvocationReceipt:
        actual = canonical_digest(self.canonical)
        if self.digest != actual:
            raise ValueError(
                f"invocation digest is {self.digest!r}, its canonical partition hashes to {actual}"
            )
        return self


class EpisodeReceiptCanonical(Record):
    model_config = BUILT_ON_FIRST_USE

    scheme: Literal["agentbench-episode-receipt/1"] = EPISODE_RECEIPT_SCHEME
    context: dict[str, JsonValue] = Field(default_factory=dict)
    invocations: tuple[InvocationReceipt, ...]
    """The receipt of each tool session of the case, in the order they were opened."""
    totals: ReceiptTotals
    """The invocations' totals summed."""
    failure_class: str | None = None
    failure_code: str | None = None


class EpisodeReceiptObservations(Record):
    model_config = BUILT_ON_FIRST_USE

    invocations: tuple[ReceiptObservations, ...] = ()
    failure_reason: str | None = None


def episode_digest(canonical: EpisodeReceiptCanonical) -> str:
    return sha256_hex(encode_canonical(canonical.model_dump(mode="json")).encode("utf-8"))


class EpisodeReceipt(Record):
    """The receipts of a case that opened one tool session per invocation, digest-bound together.

    Its ``digest`` covers every invocation's canonical partition (and so each
    invocation digest), the order they ran in and how the case ended.
    """

    model_config = BUILT_ON_FIRST_USE

    canonical: EpisodeReceiptCanonical
    digest: str
    observations: EpisodeReceiptObservations = Field(default_factory=EpisodeReceiptObservations)

    @model_validator(mode="after")
    def _digest_matches(self) -> EpisodeReceipt:
        actual = episode_digest(self.canonical)
        if self.digest != actual:
            raise ValueError(
                f"digest is {self.digest!r}, its canonical partition hashes to {actual}"
            )
        return self

    @property
    def receipts(self) -> tuple[Receipt, ...]:
        """Each invocation's receipt, with its observations, as the session issued it."""
        observed = self.observations.invocations
        return tuple(
            Receipt.model_construct(
                canonical=item.canonical,
                digest=item.digest,
                observations=observed[index] if index < len(observed) else ReceiptObservations(),
            )
            for index, item in enumerate(self.canonical.invocations)
        )

    @classmethod
    def build(
        cls,
        receipts: Sequence[Receipt],
        *,
        failure_class: str | None = None,
        failure_code: str | None = None,
        failure_reason: str | None = None,
        context: Mapping[str, JsonValue] | None = None,
    ) -> EpisodeReceipt:
        errors: Counter[str] = Counter()
        for receipt in receipts:
            errors.update(receipt.canonical.totals.errors)
        canonical = EpisodeReceiptCanonical(
            context=dict(context or {}),
            invocations=tuple(
                InvocationReceipt.model_construct(canonical=r.canonical, digest=r.digest)
                for r in receipts
            ),
            totals=ReceiptTotals(
                calls=sum(r.canonical.totals.calls for r in receipts),
                delivered=sum(r.canonical.totals.delivered for r in receipts),
                model_visible_bytes=sum(r.canonical.totals.model_visible_bytes for r in receipts),
                errors=dict(sorted(errors.items())),
            ),
            failure_class=failure_class,
            failure_code=failure_code,
        )
        observations = EpisodeReceiptObservations(
            invocations=tuple(r.observations for r in receipts), failure_reason=failure_reason
        )
        return cls.model_construct(
            canonical=canonical, digest=episode_digest(canonical), observations=observations
        )


AnyReceipt = Receipt | EpisodeReceipt


def load_receipt(data: Mapping[str, JsonValue]) -> AnyReceipt:
    """A receipt read back from JSON, digests checked: a session's, or an episode's.

    Raises ``pydantic.ValidationError`` on anything else.
    """
    canonical = data.get("canonical")
    scheme = canonical.get("scheme") if isinstance(canonical, Mapping) else None
    if scheme == EPISODE_RECEIPT_SCHEME:
        return EpisodeReceipt.model_validate(data)
    return Receipt.model_validate(data)


def session_receipts(receipt: AnyReceipt) -> tuple[Receipt, ...]:
    """The session receipts a case's receipt stands for, in order."""
    return receipt.receipts if isinstance(receipt, EpisodeReceipt) else (receipt,)


SCHEMA_PATH = Path(__file__).with_name("receipt.schema.json")


def schema_text() -> str:
    """The JSON Schema of a receipt, as shipped beside this module."""
    return pretty_json(Receipt.model_json_schema())


if __name__ == "__main__":  # regenerate the shipped schema
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")

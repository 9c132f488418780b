"""The records of a run's model traffic that reports carry, apart from the client making it.

A case result's ``model_calls`` (:class:`CaseModelCalls`) and the run's
``model_run`` (:class:`RunProvenance`) are read wherever a report is written or
read: a run writing a JSON report that configures no chat model, ``agentbench
audit``. Kept here, with only what they are made of, so that reading them imports
none of the chat client's settings, budgets and rate limits; the client
(:mod:`pytest_agentbench.agents.provenance`) builds them from its own state.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr

from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, Record

Digest = Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]
DecimalText = Annotated[StrictStr, Field(pattern=r"^[0-9]+(\.[0-9]+)?$")]
RunMode = Literal["live", "record", "replay", "mixed"]
WaitReason = Literal["connections", "requests_per_minute", "tokens_per_minute", "retry"]


class Ceilings(Record):
    # Built on first use: a benchmark run that configures no chat model never makes one.
    model_config = BUILT_ON_FIRST_USE

    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost: DecimalText | None = None

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.max_calls, self.max_tokens, self.max_cost))


class Wait(Record):
    model_config = BUILT_ON_FIRST_USE

    reason: WaitReason
    seconds: float
    """Rounded to the microsecond."""


class DecisionCall(Record):
    """One answer of the adapter in a case: the ledger's call row it is."""

    model_config = BUILT_ON_FIRST_USE

    call_index: Annotated[int, Field(ge=0)]
    """The invocation's index in the case (the ledger's ``call_index``)."""
    decision_digest_sha256: Digest | None
    """Digest of the answer; ``None`` when the invocation raised instead."""
    request_digest_sha256: Digest | None
    """The last model request behind it."""


class CaseModelCalls(Record):
    """The model traffic of one case, as its result carries it."""

    model_config = BUILT_ON_FIRST_USE

    calls: int
    attempts: int
    input_tokens: int
    output_tokens: int
    cost: DecimalText | None
    """At the pricing table's rates; ``None`` without a table."""
    request_digests: tuple[Digest, ...]
    """Each model call's request digest, in order (its cassette's name)."""
    decisions: tuple[DecisionCall, ...]
    waits: tuple[Wait, ...] = ()
    """Every wait for a rate limit or before a retry, in order."""
    refused: StrictStr | None = None
    """The budget code that refused a call of this case (the case is then excluded)."""
    cassette_hits: StrictInt | None = None
    """In a ``mixed`` run, the requests a cassette answered; ``None`` in any other mode."""
    recorded: StrictInt | None = None
    """In a ``mixed`` run, the requests sent live and recorded; ``None`` in any other mode.
    A request cut off by the case limit, or that reached no endpoint, is neither."""


class RunSettings(Record):
    """The run's settings in clear, beside their digest: what shaped each request and its
    retries (the digest's inputs but the model), and the limits the calls were sent within.

    The endpoint is the provenance's host and this path: never a key, credentials or query.
    """

    model_config = BUILT_ON_FIRST_USE

    base_url_path: StrictStr | None
    """The endpoint's path (``/v1``); ``None`` without an endpoint."""
    temperature: StrictFloat
    seed: StrictInt | None
    max_turns: StrictInt
    max_tokens_per_call: StrictInt | None
    timeout_s: StrictFloat
    max_retries: StrictInt
    retry_backoff_s: StrictFloat
    retry_jitter: StrictFloat
    fence_results: StrictBool
    max_connections: StrictInt | None
    requests_per_minute: StrictInt | None
    tokens_per_minute: StrictInt | None

    def digest(self, model: str, provider: str = "openai") -> str:
        """The settings digest these settings, ``model`` and ``provider`` make: the
        provenance's ``settings_digest`` when they are the settings it was made from."""
        # The digest is the chat settings' own (one definition); only a report held to
        # its digest (``agentbench audit``) needs it, so reading a report does not.
        from pytest_agentbench.agents.settings import DIGESTED, digest_of_settings, with_provider

        shaping = self.model_dump(mode="json", include=set(DIGESTED))
        return digest_of_settings(with_provider({"model": model or None, **shaping}, provider))


class RunProvenance(Record):
    """The model behind a run and its traffic, summed over the cases' records."""

    model_config = BUILT_ON_FIRST_USE

    provider: StrictStr
    base_url_host: StrictStr | None
    model: StrictStr
    mode: RunMode
    """``live`` and ``record`` reached the endpoint; ``replay`` answered from cassettes;
    ``mixed`` (cassette mode ``auto``) answered from a cassette where one held the request
    and reached the endpoint, recording, where none did."""
    settings_digest: Digest
    settings: RunSettings | None = None
    """The settings in clear; ``None`` in a report written before they were stated."""
    pricing_digest: Digest | None
    currency: StrictStr | None
    ceilings: Ceilings
    calls: int
    attempts: int
    input_tokens: int
    output_tokens: int
    cost: DecimalText | None
    waits: int
    wait_seconds: DecimalText
    excluded: tuple[StrictStr, ...]
    """Node ids of the cases excluded because a call would have passed a ceiling."""
    cassette_hits: StrictInt | None = None
    """A ``mixed`` run's requests answered from cassettes (summed over its cases); ``None``
    in any other mode."""
    recorded: StrictInt | None = None
    """A ``mixed`` run's requests sent live and recorded; ``None`` in any other mode."""

"""A provider execution binding, derived from a complete ledger's own rows.

Every count comes from the call rows and every amount from the attempts'
reported token counts at the rates the ledger header pins: a request whose
answer reported no counts forfeits its whole reservation (the most
``max_tokens_per_call`` tokens can cost), which is not spend and is never
added to the measured cost. The writer of an episode artefact and the audit of
one derive the binding with this same function, so they cannot disagree about
arithmetic, only about rows.
"""

from __future__ import annotations

from decimal import Decimal

from pytest_agentbench.sdk.episode_artifacts import BoundCall, ProviderExecution
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger.rows import LEDGER_VERSION, CallPayload, HeaderPayload, totals_of


def amount_text(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return "0" if Decimal(text) == 0 else text


def bound_calls(calls: list[CallPayload]) -> tuple[BoundCall, ...]:
    """The ledger's call rows as an episode artefact's execution record repeats them."""
    return tuple(
        BoundCall(
            call_index=call.call_index,
            request_digest_sha256=call.request_digest_sha256,
            decision_digest_sha256=None
            if call.decision is None
            else call.decision.decision_digest_sha256,
        )
        for call in calls
    )


def derive_provider_execution(
    header: HeaderPayload, calls: list[CallPayload], digest: str, *, display: str
) -> ProviderExecution:
    """The binding a complete ledger's own rows derive; refused by name where they cannot."""
    provider = header.provider or {}
    rates = (provider.get("input_per_token"), provider.get("output_per_token"))
    if not all(isinstance(rate, str) for rate in rates) or not isinstance(
        provider.get("pricing_digest_sha256"), str
    ):
        raise AgentbenchError(
            "artifact_binding_unpriced",
            "the ledger header states no pricing table: the run's cost is not measurable",
            file=display,
            field="header.provider.pricing_digest_sha256",
        )
    per_in, per_out = Decimal(str(rates[0])), Decimal(str(rates[1]))
    bound = provider.get("max_tokens_per_call")
    reservation = max(per_in, per_out) * (bound if isinstance(bound, int) else 0)
    measured = forfeited = Decimal(0)
    requests = 0
    for call in calls:
        for attempt in call.attempts or ():
            if attempt.outcome != "response":
                continue
            requests += 1
            tokens = attempt.tokens
            if tokens is None or (tokens.input is None and tokens.output is None):
                forfeited += reservation  # nothing reported: the reservation stays whole
            else:
                measured += per_in * (tokens.input or 0) + per_out * (tokens.output or 0)
    totals = totals_of(calls)
    return ProviderExecution(
        execution_run_id=header.execution_run_id,
        execution_ledger_version=LEDGER_VERSION,
        execution_ledger_digest_sha256=digest,
        provider=str(provider.get("provider")),
        api=str(provider.get("api")),
        model=str(provider.get("model")),
        settings_digest_sha256=str(provider.get("settings_digest_sha256")),
        pricing_digest_sha256=str(provider.get("pricing_digest_sha256")),
        provider_calls=requests,
        attempts=totals.attempts,
        measured_cost_usd=amount_text(measured),
        forfeited_reservation_usd=amount_text(forfeited),
        input_tokens=totals.input_tokens,
        output_tokens=totals.output_tokens,
        decision_call_index=tuple(call.call_index for call in calls if call.decision is not None),
    )

"""Which model answered a run, at what cost, and which of its calls each case made.

A process has one :class:`ModelRun`: the chat client's settings with the rate
limiter, retry backoff, budget guard and pricing every case shares. While a
case runs, :func:`~pytest_agentbench.agents.case_calls.case_scope` collects the
model calls made on its thread into a
:class:`~pytest_agentbench.agents.case_calls.CaseCalls`, which becomes the case
result's ``model_calls`` (a
:class:`~pytest_agentbench.agents.provenance_records.CaseModelCalls`). The run's
:class:`~pytest_agentbench.agents.provenance_records.RunProvenance` is summed from
those per-case records where results arrive, so a run under xdist reports exactly
what the same run reports serially. The records are in their own module, which
reading or writing a report imports without the client.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import ValidationError

from pytest_agentbench.agents.budget import (
    BudgetGuard,
    BudgetRefused,
    ModelPrice,
    PricingTable,
    Tally,
    read_pricing,
)
from pytest_agentbench.agents.case_calls import CaseCalls, current_case
from pytest_agentbench.agents.limits import Backoff, Clock, RateLimiter, SystemClock
from pytest_agentbench.agents.provenance_records import (
    CaseModelCalls,
    Ceilings,
    RunMode,
    RunProvenance,
    RunSettings,
)
from pytest_agentbench.agents.providers import provider_label
from pytest_agentbench.agents.settings import ChatSettings
from pytest_agentbench.sdk.canonical import JsonValue, decimal_text
from pytest_agentbench.sdk.contracts import CaseResult, Outcome
from pytest_agentbench.sdk.errors import UsageError

PROVIDER = "openai-compatible"
"""The OpenAI-compatible provider's label (judges speak only it); a run's is its settings'."""


def endpoint_host(base_url: str | None) -> str | None:
    """``host[:port]`` of the endpoint: no scheme, credentials, path or query."""
    if not base_url:
        return None
    parts = urlsplit(base_url)
    host = parts.hostname
    if host is None:
        return None
    try:
        port = parts.port
    except ValueError:
        port = None
    shown = f"[{host}]" if ":" in host else host
    return shown if port is None else f"{shown}:{port}"


def endpoint_path(base_url: str | None) -> str | None:
    """The endpoint's path (``/v1``): never its credentials, query or fragment."""
    if not base_url or urlsplit(base_url).hostname is None:
        return None
    return urlsplit(base_url).path


def run_mode(settings: ChatSettings) -> RunMode:
    """The run's mode as reports and ledger headers state it (decided with the settings).

    Cassette mode ``auto`` is a ``mixed`` run, whether or not any request missed: which
    of its requests were replayed and which recorded are its ``cassette_hits`` and
    ``recorded`` counts, never a mode guessed from them afterwards.
    """
    mode = settings.effective_mode
    if mode == "off":
        return "live"
    return "mixed" if mode == "auto" else mode


def counts_sources(run: ModelRun | None) -> bool:
    """Whether a case counts its cassette hits and recordings: only a ``mixed`` run's do
    (any other mode's are all one or the other, so its reports stay as they were)."""
    return run is not None and run.settings.effective_mode == "auto"


class ModelRun:
    """The chat client's shared state in one process."""

    def __init__(
        self,
        settings: ChatSettings,
        *,
        clock: Clock | None = None,
        tally: Tally | None = None,
        window: Path | None = None,
        price: ModelPrice | None = None,
    ) -> None:
        """``tally`` and ``window``: the budget tally and the rate limits' minute the run's
        processes share (files in its shared folder); ``None`` keeps them this process's.
        ``price``: the model's own price (a models file's entry), over the pricing table's."""
        self.settings = settings
        self.clock = clock or SystemClock()
        self.pricing: PricingTable | None = (
            None if settings.pricing is None else read_pricing(settings.pricing)
        )
        self.price: ModelPrice | None = (
            price
            if price is not None or self.pricing is None or settings.model is None
            else self.pricing.models.get(settings.model)
        )
        self.ceilings = Ceilings(
            max_calls=settings.max_calls,
            max_tokens=settings.max_tokens,
            max_cost=settings.max_cost,
        )
        self._refuse_unpriceable()
        self.limiter = RateLimiter(
            max_connections=settings.max_connections,
            requests_per_minute=settings.requests_per_minute,
            tokens_per_minute=settings.tokens_per_minute,
            clock=self.clock,
            shared=window,
        )
        self.backoff = Backoff(settings.retry_backoff_s, settings.retry_jitter, settings.seed)
        self.guard = BudgetGuard(
            self.ceilings,
            price=self.price,
            max_tokens_per_call=settings.max_tokens_per_call,
            tally=tally,
        )

    def _refuse_unpriceable(self) -> None:
        ceilings, settings = self.ceilings, self.settings
        if ceilings.max_cost is not None and self.pricing is None:
            raise UsageError(
                "budget_needs_pricing",
                "a cost ceiling needs a pricing table",
                field="--agentbench-pricing",
            )
        if self.pricing is not None and self.price is None and settings.model is not None:
            raise UsageError(
                "pricing_model_missing",
                f"the pricing table has no price for model {settings.model!r}",
                file=str(settings.pricing),
                field="models",
            )
        if (
            ceilings.max_tokens is not None or ceilings.max_cost is not None
        ) and settings.max_tokens_per_call is None:
            raise UsageError(
                "budget_needs_call_bound",
                "a token or cost ceiling needs the most tokens one call may use",
                field="agentbench_llm_max_tokens_per_call",
            )

    def preflight(self, cases: int) -> None:
        settings = self.settings
        self.guard.preflight(cases, settings.max_turns, settings.max_retries + 1)


class _Configured:
    run: ModelRun | None = None
    models: dict[str, ModelRun] = {}  # noqa: RUF012 (replaced whole, never changed in place)
    """Under a model matrix: each model's own run, by its name."""


def configure_run(run: ModelRun | None) -> None:
    """The process's model run (the pytest session's); ``None`` forgets it."""
    _Configured.run = run


def configure_model_runs(runs: dict[str, ModelRun]) -> None:
    """Each matrix model's run (empty: no matrix); the running case's model picks one."""
    _Configured.models = dict(runs)


def model_runs() -> dict[str, ModelRun]:
    return _Configured.models


TALLY_FILE = "tally.json"
WINDOW_FILE = "window.json"
"""The files of the run's shared folder: its budget tally and its rate limits' minute."""


def shared_tally() -> Path | None:
    """The file the run's budget tally is kept in, when processes share it; else None."""
    run = _Configured.run
    return None if run is None else run.guard.tally.path


def use_shared_tally(path: Path) -> None:
    """Reserve this process's model calls from the run's tally file, and send them within
    the run's rate limits (the window file beside it): an isolated adapter's process,
    which has no pytest session (its settings are installed first)."""
    from pytest_agentbench.agents.settings import configured_settings

    run = ModelRun(configured_settings(), tally=Tally(path), window=path.with_name(WINDOW_FILE))
    configure_run(run)


def configured_run() -> ModelRun | None:
    """The process's model run, if the session configured one: under a model matrix, the
    run of the model the running case is for."""
    if _Configured.models:
        from pytest_agentbench.scoring.matrix import current_model

        name = current_model()
        if name is not None and name in _Configured.models:
            return _Configured.models[name]
    return _Configured.run


def current_run(settings: ChatSettings) -> ModelRun:
    """The session's model run for these settings, else a run of their own."""
    run = _Configured.run
    if run is not None and run.settings == settings:
        return run
    return ModelRun(settings)


def absorb_model_calls(record: JsonValue, refusal: JsonValue, events: JsonValue = None) -> None:
    """Add an isolated adapter's model calls, as its process sent them, to this thread's case,
    and their transcript ``events`` to the case's transcript.

    Raises ValueError for a record, refusal or events that are not one.
    """
    case = current_case()
    if case is None:
        return
    if events is not None:
        if not isinstance(events, list):
            raise ValueError("transcript events that are not a list")
        case.transcript.absorb(events)
    try:
        calls = CaseModelCalls.model_validate(record)
    except ValidationError as exc:
        raise ValueError(
            f"model calls that are not a record ({exc.error_count()} errors)"
        ) from None
    refused = None
    if refusal is not None:
        if not (
            isinstance(refusal, list)
            and len(refusal) == 2
            and all(isinstance(part, str) for part in refusal)
        ):
            raise ValueError("a budget refusal that is not [code, reason]")
        code, reason = refusal
        refused = BudgetRefused(str(code), str(reason))
    case.absorb(calls, refused)


def excluded_if_refused(outcome: Outcome) -> Outcome:
    """The case's outcome, or its exclusion when the budget refused one of its calls.

    The refusal reached the world as the adapter's error; it is not the agent's
    failure, so the case is excluded under the refusal's code instead.
    """
    calls = current_case()
    if calls is None or calls.refusal is None:
        return outcome
    return Outcome(
        exclusion=calls.refusal.code,
        failure_reason=calls.refusal.render(),
        receipt=outcome.receipt,
    )


def attach_model_calls(calls: CaseCalls, result: CaseResult) -> CaseResult:
    if not calls.used:
        return result
    return result.model_copy(update={"model_calls": calls.record().model_dump(mode="json")})


def run_settings(settings: ChatSettings) -> RunSettings:
    """``settings`` as a report states them (the ceilings are the provenance's own field)."""
    shown = settings.model_dump(
        include=set(RunSettings.model_fields) - {"base_url_path"}, mode="json"
    )
    return RunSettings(base_url_path=endpoint_path(settings.base_url), **shown)


def run_provenance(
    settings: ChatSettings, pricing: PricingTable | None, cases: Iterable[tuple[str, JsonValue]]
) -> RunProvenance:
    """Sum ``(node id, model_calls JSON)`` of every case into the run's provenance."""
    calls = attempts = input_tokens = output_tokens = waits = hits = saved = 0
    cost = Decimal(0)
    wait_seconds = Decimal(0)
    excluded: list[str] = []
    for nodeid, data in cases:
        if data is None:
            continue
        record = CaseModelCalls.model_validate(data)
        calls += record.calls
        attempts += record.attempts
        input_tokens += record.input_tokens
        output_tokens += record.output_tokens
        cost += Decimal(record.cost or "0")
        waits += len(record.waits)
        hits += record.cassette_hits or 0
        saved += record.recorded or 0
        wait_seconds += sum((Decimal(repr(w.seconds)) for w in record.waits), Decimal(0))
        if record.refused is not None:
            excluded.append(nodeid)
    mode = run_mode(settings)
    return RunProvenance(
        provider=provider_label(settings.provider),
        base_url_host=endpoint_host(settings.base_url),
        model=settings.model or "",
        mode=mode,
        settings_digest=settings.settings_digest(),
        settings=run_settings(settings),
        pricing_digest=None if pricing is None else pricing.digest,
        currency=None if pricing is None else pricing.currency,
        ceilings=Ceilings(
            max_calls=settings.max_calls, max_tokens=settings.max_tokens, max_cost=settings.max_cost
        ),
        calls=calls,
        attempts=attempts,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=None if pricing is None else decimal_text(cost),
        waits=waits,
        wait_seconds=decimal_text(wait_seconds),
        excluded=tuple(sorted(excluded)),
        cassette_hits=hits if mode == "mixed" else None,
        recorded=saved if mode == "mixed" else None,
    )

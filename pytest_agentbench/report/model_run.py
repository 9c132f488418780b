"""The model run's provenance in every report: summed from the cases, named in each output.

Where results arrive (the controller under xdist, else the only process),
:func:`model_run_of` sums every case's ``model_calls`` record, so a run under
xdist states the same calls, attempts, tokens and cost as the same run
serially. The static part (provider, endpoint host, model, digests, mode) is
this process's resolved settings, which every process of a run shares.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from pytest_agentbench.agents.provenance import model_runs, run_provenance
from pytest_agentbench.agents.provenance_records import RunProvenance, RunSettings
from pytest_agentbench.report.case_store import CaseStore
from pytest_agentbench.run.session import RUN_KEY
from pytest_agentbench.sdk.canonical import JsonValue


def model_run_of(config: pytest.Config, store: CaseStore) -> RunProvenance | None:
    """The run's provenance, or ``None`` when no chat model is configured."""
    run = config.stash.get(RUN_KEY, None)
    if run is None or not run.settings.model:
        return None
    if model_runs():
        # A model matrix: each model's traffic and settings are in its suites' model table;
        # one block naming the configured model would credit it with every model's calls.
        return None

    def cases() -> Iterator[tuple[str, JsonValue]]:
        for nodeid in store:
            data: JsonValue = json.loads(store.text(nodeid)).get("model_calls")
            yield nodeid, data

    return run_provenance(run.settings, run.pricing, cases())


def exclusion_problem(provenance: RunProvenance) -> str | None:
    """The line that says a ceiling excluded cases: the run is then not a whole result."""
    excluded = provenance.excluded
    if not excluded:
        return None
    shown = ", ".join(excluded[:5]) + (
        f" and {len(excluded) - 5} more" if len(excluded) > 5 else ""
    )
    return (
        f"[budget_exceeded] {len(excluded)} cases excluded, a call of each refused before it "
        f"was sent because it would pass a budget ceiling: {shown}"
    )


def endpoint_shown(provenance: RunProvenance) -> str:
    """The endpoint as reports show it: host and path, never credentials or a query."""
    if provenance.base_url_host is None:
        return "(no endpoint)"
    path = provenance.settings.base_url_path if provenance.settings is not None else None
    return provenance.base_url_host + (path or "")


def settings_line(settings: RunSettings) -> str:
    """What shaped each request and its retries, as the settings digest covers them."""
    per_call = settings.max_tokens_per_call
    return (
        f"temperature {settings.temperature}, seed "
        f"{'none' if settings.seed is None else settings.seed}, max-turns {settings.max_turns}, "
        f"max-tokens-per-call {'none' if per_call is None else per_call}, "
        f"timeout {settings.timeout_s}s, retries {settings.max_retries} (backoff "
        f"{settings.retry_backoff_s}s, jitter {settings.retry_jitter}), tool results "
        + ("fenced" if settings.fence_results else "unfenced")
    )


def rate_limits_line(settings: RunSettings) -> str | None:
    """The rate limits the calls were sent within; ``None`` when none is set."""
    limits = [
        f"{name.replace('_', '-')} {value}"
        for name, value in (
            ("max_connections", settings.max_connections),
            ("requests_per_minute", settings.requests_per_minute),
            ("tokens_per_minute", settings.tokens_per_minute),
        )
        if value is not None
    ]
    return ", ".join(limits) if limits else None


def sources_text(provenance: RunProvenance) -> str | None:
    """A ``mixed`` run's requests by where their answers came from; ``None`` in any other
    mode (whose answers all came from one place, the mode)."""
    if provenance.mode != "mixed":
        return None
    return f"{provenance.cassette_hits or 0} hits, {provenance.recorded or 0} recorded"


def model_run_lines(provenance: RunProvenance) -> list[str]:
    """The terminal summary's lines."""
    lines = [
        f"model: {provenance.provider} {endpoint_shown(provenance)}, model {provenance.model}, "
        f"{provenance.mode}",
        f"  settings sha256:{provenance.settings_digest}",
    ]
    settings = provenance.settings
    if settings is not None:
        lines.append(f"  settings: {settings_line(settings)}")
        limits = rate_limits_line(settings)
        if limits is not None:
            lines.append(f"  rate limits: {limits}")
    if provenance.pricing_digest is not None:
        lines.append(f"  pricing sha256:{provenance.pricing_digest} ({provenance.currency})")
    cost = "" if provenance.cost is None else f", cost {provenance.cost} {provenance.currency}"
    lines.append(
        f"  calls {provenance.calls}, attempts {provenance.attempts}, tokens "
        f"{provenance.input_tokens} in / {provenance.output_tokens} out{cost}"
    )
    sources = sources_text(provenance)
    if sources is not None:
        lines.append(f"  cassettes: {sources}")
    if provenance.waits:
        lines.append(f"  waits {provenance.waits} ({provenance.wait_seconds}s)")
    ceilings = [
        f"{name.replace('_', '-')} {value}"
        for name, value in provenance.ceilings.model_dump().items()
        if value is not None
    ]
    if ceilings:
        lines.append(f"  budget: {', '.join(ceilings)}; {len(provenance.excluded)} cases excluded")
    return lines


def model_run_properties(provenance: RunProvenance) -> list[tuple[str, str]]:
    """JUnit global properties: ``agentbench.model.<field>``."""
    data = provenance.model_dump(mode="json")
    properties: list[tuple[str, str]] = []
    for name in sorted(data):
        value = data[name]
        if name == "ceilings":
            for ceiling, amount in sorted(value.items()):
                if amount is not None:
                    properties.append((f"agentbench.model.ceiling.{ceiling}", str(amount)))
        elif name == "settings" and value is not None:
            for setting, shown in sorted(value.items()):
                if shown is not None:
                    properties.append((f"agentbench.model.setting.{setting}", str(shown)))
        elif name == "excluded":
            properties.append(("agentbench.model.excluded", str(len(value))))
        elif value is not None:
            properties.append((f"agentbench.model.{name}", str(value)))
    return properties

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

from pytest_agentbench.agents.provenance import RunProvenance, run_provenance
from pytest_agentbench.report.case_store import CaseStore
from pytest_agentbench.run.session import RUN_KEY
from pytest_agentbench.sdk.canonical import JsonValue


def model_run_of(config: pytest.Config, store: CaseStore) -> RunProvenance | None:
    """The run's provenance, or ``None`` when no chat model is configured."""
    run = config.stash.get(RUN_KEY, None)
    if run is None or not run.settings.model:
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


def model_run_lines(provenance: RunProvenance) -> list[str]:
    """The terminal summary's lines."""
    host = provenance.base_url_host or "(no endpoint)"
    lines = [
        f"model: {provenance.provider} {host}, model {provenance.model}, {provenance.mode}",
        f"  settings sha256:{provenance.settings_digest}",
    ]
    if provenance.pricing_digest is not None:
        lines.append(f"  pricing sha256:{provenance.pricing_digest} ({provenance.currency})")
    cost = "" if provenance.cost is None else f", cost {provenance.cost} {provenance.currency}"
    lines.append(
        f"  calls {provenance.calls}, attempts {provenance.attempts}, tokens "
        f"{provenance.input_tokens} in / {provenance.output_tokens} out{cost}"
    )
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
        elif name == "excluded":
            properties.append(("agentbench.model.excluded", str(len(value))))
        elif value is not None:
            properties.append((f"agentbench.model.{name}", str(value)))
    return properties

"""A chat-model run's provider and limits, as OperateBench's journal header states them.

``agentbench record ... --journal`` writes an operations episode a second time in
the original's journal layout (:mod:`pytest_agentbench.sdk.ledger.journal_writer`),
whose header names the provider that answered and the run's 11 ``controls``. Only
a :class:`~pytest_agentbench.agents.chat.ChatAgent` has both: its settings and its
model's price. What the original's header cannot state is refused here, before the
run spends anything, as ``journal_setup_unrepresentable`` naming the setting: a base
URL that is not a bare ``https`` one (the original's reader holds that form), a run
with no per-call token bound or no price for its model (every reservation is the
bound at the model's rates).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from pydantic import ValidationError

from pytest_agentbench.agents.providers import PROVIDER_APIS, PROVIDER_LABELS
from pytest_agentbench.agents.settings import DIGESTED, with_provider
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger.journal_writer import (
    JournalProvider,
    JournalSetup,
    run_controls,
)

if TYPE_CHECKING:
    from pytest_agentbench.agents.chat import ChatAgent

SETUP_UNREPRESENTABLE = "journal_setup_unrepresentable"
IMPLEMENTATION = "pytest_agentbench.agents.chat:ChatAgent"
"""The agent that made the requests: the adapter spec that builds it."""
REQUEST_MAPPINGS = {
    "openai": "pytest-agentbench.chat-completions.v1",
    "anthropic": "pytest-agentbench.messages.v1",
    "gemini": "pytest-agentbench.generate-content.v1",
}
"""How the chat agent turns a task into each provider's request (``agents.providers``).
The OpenAI-compatible one is the name episode artefacts give as ``protocol_version``."""
SDK = "httpx"


def _refuse(field: str, reason: str) -> AgentbenchError:
    return AgentbenchError(SETUP_UNREPRESENTABLE, reason, field=field)


def _sdk_version() -> str:
    try:
        return version(SDK)
    except PackageNotFoundError:  # replay needs no HTTP client; the journal still names one
        return "unknown"


def journal_setup(agent: ChatAgent, *, case_timeout_s: float | None = None) -> JournalSetup:
    """The journal header's ``provider`` and ``controls`` of ``agent``'s run.

    ``case_timeout_s`` is the whole episode's bound, where the run has one (the
    ``controls`` block's ``wall_clock_deadline_seconds``).
    """
    settings = agent.settings
    if settings.base_url is None:
        raise _refuse(
            "agentbench_llm_base_url", "no base URL: the journal names the endpoint it called"
        )
    if settings.max_tokens_per_call is None:
        raise _refuse(
            "agentbench_llm_max_tokens_per_call",
            "no per-call token bound: the journal reserves each attempt at it",
        )
    price = agent.run.price
    if price is None:
        raise _refuse(
            "agentbench_pricing",
            f"no price for model {settings.model!r}: the journal prices every reservation",
        )
    provider = settings.provider
    shaping = settings.model_dump(mode="json", include=set(DIGESTED))
    try:
        stated = JournalProvider(
            provider=PROVIDER_LABELS[provider],
            api=PROVIDER_APIS[provider],
            model=str(settings.model),
            base_url=settings.base_url.rstrip("/"),
            implementation=IMPLEMENTATION,
            request_mapping=REQUEST_MAPPINGS[provider],
            protocol_version=REQUEST_MAPPINGS[provider],
            sdk=SDK,
            sdk_version=_sdk_version(),
            # The settings that shape a request, as the run's settings digest covers them.
            settings=with_provider(shaping, provider),
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else "provider"
        where = {"base_url": "agentbench_llm_base_url", "model": "agentbench_llm_model"}
        reason = (
            "the original's journal states only a bare https base URL (scheme, host, path)"
            if name == "base_url"
            else f"{name}: {first['msg']}"
        )
        raise _refuse(where.get(name, name), reason) from None
    controls = run_controls(
        max_tokens_per_call=settings.max_tokens_per_call,
        input_per_token=price.input_per_token,
        output_per_token=price.output_per_token,
        max_retries=settings.max_retries,
        max_calls=settings.max_calls,
        max_tokens=settings.max_tokens,
        max_cost=settings.max_cost,
        timeout_s=settings.timeout_s,
        case_timeout_s=case_timeout_s,
    )
    return JournalSetup(provider=stated, controls=controls)

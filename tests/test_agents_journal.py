"""``agents.journal``: the chat agent's provider and limits as the journal header states them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.agents.chat import ChatAgent
from pytest_agentbench.agents.journal import journal_setup
from pytest_agentbench.agents.settings import ChatSettings
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger.journal_writer import NO_LIMIT

PRICES = {"input_per_token": "0.0000025", "output_per_token": "0.00001"}


@pytest.fixture
def pricing(tmp_path: Path) -> Path:
    path = tmp_path / "pricing.json"
    table = {
        "scheme": "agentbench-pricing/1",
        "currency": "USD",
        "models": {"m-1": PRICES, "my model": PRICES},
    }
    path.write_text(json.dumps(table), encoding="utf-8")
    return path


def agent(pricing: Path | None, **given: Any) -> ChatAgent:
    values: dict[str, Any] = {
        "base_url": "https://models.example/v1/",
        "model": "m-1",
        "max_tokens_per_call": 4000,
        "pricing": pricing,
        **given,
    }
    return ChatAgent(ChatSettings(**values))


def refusal(chat: ChatAgent) -> tuple[str, str]:
    with pytest.raises(AgentbenchError) as refused:
        journal_setup(chat)
    return refused.value.code, str(refused.value.location.field)


def test_the_header_states_the_chat_agents_provider_settings_and_limits(pricing: Path) -> None:
    chat = agent(pricing, max_calls=40, max_cost="2.5", max_retries=1, timeout_s=30.0)
    setup = journal_setup(chat, case_timeout_s=600.0)
    provider = setup.provider.as_json()
    assert provider["provider"] == "openai-compatible"
    assert provider["api"] == "chat.completions"
    assert provider["base_url"] == "https://models.example/v1"
    assert provider["request_mapping"] == "pytest-agentbench.chat-completions.v1"
    # The settings that shape a request: their digest is the run's settings digest.
    assert provider["settings_digest_sha256"] == chat.settings.settings_digest()
    controls = setup.controls.as_json()
    assert controls["max_provider_calls"] == 40
    assert controls["max_attempts_per_call"] == 2
    assert controls["token_hard_cap"] == NO_LIMIT
    assert controls["max_output_tokens"] == 4000
    assert controls["cost_cap_usd"] == "2.5"
    assert controls["turn_deadline_seconds"] == 30.0
    assert controls["wall_clock_deadline_seconds"] == 600.0
    assert controls["pricing"] == {"input_usd_per_mtok": "2.5", "output_usd_per_mtok": "10"}
    native = journal_setup(agent(pricing, provider="anthropic")).provider
    assert (native.provider, native.api) == ("anthropic", "messages")
    assert native.request_mapping == "pytest-agentbench.messages.v1"


def test_what_the_header_cannot_state_is_refused_by_the_setting(pricing: Path) -> None:
    unrepresentable = "journal_setup_unrepresentable"
    assert refusal(agent(pricing, base_url="http://127.0.0.1:8000/v1")) == (
        unrepresentable,
        "agentbench_llm_base_url",
    )
    assert refusal(agent(pricing, base_url="https://models.example/v1?x=1")) == (
        unrepresentable,
        "agentbench_llm_base_url",
    )
    assert refusal(agent(pricing, model="my model")) == (unrepresentable, "agentbench_llm_model")
    assert refusal(agent(pricing, max_tokens_per_call=None)) == (
        unrepresentable,
        "agentbench_llm_max_tokens_per_call",
    )
    assert refusal(agent(None)) == (unrepresentable, "agentbench_pricing")

"""The chat-model agent's settings, where each is read from, and what a run gave of them.

Imports nothing but the standard library: the plugin registers an option or an
ini key for each in every pytest process, benchmark run or not, and every benchmark
run reads what was given (:func:`given_settings`) to learn whether it drives a chat
model at all; only a run that does imports the settings' checks and records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

CassetteMode = Literal["record", "replay", "auto", "off"]
"""``auto``: replay what a cassette holds, send and record a miss (the run is ``mixed``)."""

# The chat-model agent's settings: setting -> (ini key, environment variable).
SOURCES: dict[str, tuple[str, str]] = {
    "base_url": ("agentbench_llm_base_url", "AGENTBENCH_LLM_BASE_URL"),
    "model": ("agentbench_llm_model", "AGENTBENCH_LLM_MODEL"),
    "api_key_env": ("agentbench_llm_api_key_env", "AGENTBENCH_LLM_API_KEY_ENV"),
    "temperature": ("agentbench_llm_temperature", "AGENTBENCH_LLM_TEMPERATURE"),
    "max_turns": ("agentbench_llm_max_turns", "AGENTBENCH_LLM_MAX_TURNS"),
    "seed": ("agentbench_llm_seed", "AGENTBENCH_LLM_SEED"),
    "timeout_s": ("agentbench_llm_timeout", "AGENTBENCH_LLM_TIMEOUT"),
    "max_retries": ("agentbench_llm_max_retries", "AGENTBENCH_LLM_MAX_RETRIES"),
    "retry_backoff_s": ("agentbench_llm_retry_backoff", "AGENTBENCH_LLM_RETRY_BACKOFF"),
    "fence_results": ("agentbench_llm_fence_results", "AGENTBENCH_LLM_FENCE_RESULTS"),
    "cassettes": ("agentbench_cassettes", "AGENTBENCH_CASSETTES"),
    "cassette_mode": ("agentbench_cassette_mode", "AGENTBENCH_CASSETTE_MODE"),
    "retry_jitter": ("agentbench_llm_retry_jitter", "AGENTBENCH_LLM_RETRY_JITTER"),
    "max_tokens_per_call": (
        "agentbench_llm_max_tokens_per_call",
        "AGENTBENCH_LLM_MAX_TOKENS_PER_CALL",
    ),
    # Rate limits and budgets of the run (agents/limits.py, agents/budget.py); each is
    # also a command-line option, --agentbench-<name with dashes>.
    "max_connections": ("agentbench_max_connections", "AGENTBENCH_MAX_CONNECTIONS"),
    "requests_per_minute": ("agentbench_requests_per_minute", "AGENTBENCH_REQUESTS_PER_MINUTE"),
    "tokens_per_minute": ("agentbench_tokens_per_minute", "AGENTBENCH_TOKENS_PER_MINUTE"),
    "max_calls": ("agentbench_max_calls", "AGENTBENCH_MAX_CALLS"),
    "max_tokens": ("agentbench_max_tokens", "AGENTBENCH_MAX_TOKENS"),
    "max_cost": ("agentbench_max_cost", "AGENTBENCH_MAX_COST"),
    "pricing": ("agentbench_pricing", "AGENTBENCH_PRICING"),
    # The model API the chat agent speaks (agents/providers.py); also
    # --agentbench-llm-provider.
    "provider": ("agentbench_llm_provider", "AGENTBENCH_LLM_PROVIDER"),
}

RUN_LIMITS: dict[str, tuple[str, str]] = {
    "max_connections": ("N", "model requests open at once in this process (default: unlimited)"),
    "requests_per_minute": ("N", "model requests the whole run sends in any minute"),
    "tokens_per_minute": (
        "N",
        "model tokens (reserved, then reported) the whole run sends in any minute",
    ),
    "max_calls": (
        "N",
        "model requests (retries too) the whole run may send; checked before each is sent",
    ),
    "max_tokens": (
        "N",
        "model tokens the whole run may use (needs agentbench_llm_max_tokens_per_call)",
    ),
    "max_cost": (
        "AMOUNT",
        "what the whole run may cost, an exact decimal (needs --agentbench-pricing)",
    ),
    "pricing": ("FILE", "pricing table: per model, the price of one input and one output token"),
}
"""The settings above that are command-line options too: metavar and help."""


OPTIONS = {"provider": "--agentbench-llm-provider"}
"""Command-line options not named ``--agentbench-<setting>``."""


Given = tuple[dict[str, str], dict[str, str]]
"""The settings given, as text, by name; and where each came from (an option, an
environment variable or an ini key), by name."""


def given_settings(
    *,
    ini: Callable[[str], str | None],
    environ: Mapping[str, str],
    overrides: Mapping[str, str | None] | None = None,
) -> Given:
    """What ``overrides``, ``environ`` and ``ini`` give (highest first), unchecked; a
    setting none of them gives keeps its default.

    ``ini`` returns the text of an ini key or ``None``.
    """
    values: dict[str, str] = {}
    origin: dict[str, str] = {}
    for name, (ini_key, env_key) in SOURCES.items():
        given = (overrides or {}).get(name)
        if given is not None:
            values[name], origin[name] = (
                given,
                OPTIONS.get(name, f"--agentbench-{name.replace('_', '-')}"),
            )
        elif environ.get(env_key):
            values[name], origin[name] = environ[env_key], env_key
        elif ini(ini_key):
            values[name], origin[name] = str(ini(ini_key)), ini_key
    return values, origin

"""How the chat-model agent is configured: ini keys, environment variables, defaults.

Precedence: the command line (cassettes only), then the environment, then the
ini file, then the defaults. The API key itself is never configured here, only
the *name* of the environment variable holding it, so no key reaches a config
file, a cassette or a report.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, model_validator

from pytest_agentbench.agents.providers import (
    DEFAULT_KEY_ENV,
    PROVIDERS,
    Provider,
)
from pytest_agentbench.agents.sources import CassetteMode, Given, given_settings
from pytest_agentbench.sdk.canonical import JsonValue, canonical_bytes, sha256_hex
from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, Record
from pytest_agentbench.sdk.errors import UsageError


class ChatSettings(Record):
    # Built on first use: a benchmark run that configures no chat model never makes one.
    model_config = BUILT_ON_FIRST_USE

    base_url: str | None = None
    """The OpenAI-compatible API root, e.g. ``http://127.0.0.1:8000/v1``."""
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the key; unset means no key is sent.
    Its default is the provider's (:data:`~pytest_agentbench.agents.providers.DEFAULT_KEY_ENV`)."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, allow_inf_nan=False)
    max_turns: int = Field(default=16, ge=1)
    seed: int | None = 0
    timeout_s: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    """Per HTTP request; the case's own ``--agentbench-timeout`` still bounds the whole case."""
    max_retries: int = Field(default=2, ge=0)
    """Retries after a 429 or 5xx answer."""
    retry_backoff_s: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    """First retry delay, doubling each time; a ``Retry-After`` header (capped) wins."""
    retry_jitter: float = Field(default=0.5, ge=0.0, le=1.0, allow_inf_nan=False)
    """The largest fraction of a retry delay added at random (seeded by ``seed``)."""
    max_tokens_per_call: int | None = Field(default=None, ge=1)
    """The most tokens (input and output) one call is reserved for; budgets need it."""
    max_connections: int | None = Field(default=None, ge=1)
    requests_per_minute: int | None = Field(default=None, ge=1)
    tokens_per_minute: int | None = Field(default=None, ge=1)
    max_calls: int | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    max_cost: str | None = Field(default=None, pattern=r"^[0-9]+(\.[0-9]+)?$")
    """An exact decimal amount in the pricing table's currency."""
    pricing: Path | None = None
    fence_results: bool = True
    """Render tool results inside per-call fences (``tools.wrapping``)."""
    cassettes: Path | None = None
    cassette_mode: CassetteMode | None = None
    """Unset with a cassette folder: ``replay`` when the folder exists when the settings are
    made, otherwise ``record`` (decided once, see :meth:`_decide_mode`). ``auto`` is only
    ever given: a request a cassette holds is replayed, a miss sent live and recorded."""

    provider: Provider = "openai"
    """The model API spoken (``agents.providers``): openai(-compatible), anthropic, gemini."""

    @model_validator(mode="before")
    @classmethod
    def _provider_key(cls, data: Any) -> Any:
        """Without a key variable named, the provider's own (``ANTHROPIC_API_KEY`` ...)."""
        if isinstance(data, dict) and not data.get("api_key_env"):
            provider = data.get("provider") or "openai"
            if provider in DEFAULT_KEY_ENV:
                data = {**data, "api_key_env": DEFAULT_KEY_ENV[provider]}
        return data

    @model_validator(mode="before")
    @classmethod
    def _decide_mode(cls, data: Any) -> Any:
        """Decide a cassette folder's mode once, when the settings are made.

        Deciding it again later (at report time, in a worker started after another
        recorded into the folder) would label a recording run ``replay``.
        """
        if isinstance(data, dict) and data.get("cassettes") and not data.get("cassette_mode"):
            data = {**data, "cassette_mode": decided_mode(Path(data["cassettes"]))}
        return data

    def settings_digest(self) -> str:
        """The settings that shape what is sent and how it is retried (the report's digest).

        Not the endpoint (reported as its host and path), the key's variable, the cassette
        folder, the budgets or the rate limits: none changes a request or an answer.
        """
        shaping = self.model_dump(mode="json", include=set(DIGESTED))
        return digest_of_settings(with_provider(shaping, self.provider))

    @property
    def effective_mode(self) -> CassetteMode:
        """The mode decided when the settings were made; never looked up again."""
        if self.cassettes is None or self.cassette_mode is None:
            return "off"
        return self.cassette_mode


DIGESTED = (
    "model",
    "temperature",
    "max_turns",
    "seed",
    "timeout_s",
    "max_retries",
    "retry_backoff_s",
    "retry_jitter",
    "max_tokens_per_call",
    "fence_results",
)
"""The settings the digest covers: those that shape a request or its retries."""


def with_provider(shaping: Mapping[str, JsonValue], provider: str) -> dict[str, JsonValue]:
    """The digested settings with the provider, named only when it is not OpenAI-compatible:
    a run's digest from before providers existed stays what it was."""
    return dict(shaping) if provider == "openai" else {**shaping, "provider": provider}


def digest_of_settings(shaping: Mapping[str, JsonValue]) -> str:
    """sha256 of the canonical JSON of the :data:`DIGESTED` settings' JSON values: how a
    report's settings in clear are held to its digest."""
    return sha256_hex(canonical_bytes(dict(shaping)))


def decided_mode(cassettes: Path) -> CassetteMode:
    """A cassette folder with no mode given: replay what exists, else record."""
    return "replay" if cassettes.is_dir() else "record"


def refuse_credentials(base_url: str | None) -> str | None:
    """Why ``base_url`` may not be used, or ``None``.

    ``user:pass@`` in the URL makes the HTTP client send Basic auth in place of the
    Bearer key, silently; the key belongs in the variable ``api_key_env`` names.
    """
    if base_url and urlsplit(base_url).netloc.rpartition("@")[1]:
        return (
            "the base URL carries credentials (user:pass@): they would replace the API key; "
            "put the key in the variable agentbench_llm_api_key_env names"
        )
    return None


def resolve_settings(
    *,
    ini: Callable[[str], str | None],
    environ: Mapping[str, str],
    overrides: Mapping[str, str | None] | None = None,
    root: Path | None = None,
) -> ChatSettings:
    """Settings from (highest first) ``overrides``, ``environ`` and ``ini``.

    ``ini`` returns the text of an ini key or ``None``; a relative cassette
    folder is taken relative to ``root``. Bad values are usage errors naming
    where they came from.
    """
    return checked_settings(given_settings(ini=ini, environ=environ, overrides=overrides), root)


def checked_settings(given: Given, root: Path | None = None) -> ChatSettings:
    """The settings ``given`` names over the defaults, checked (see :func:`resolve_settings`)."""
    values, origin = dict(given[0]), given[1]
    for name in ("cassettes", "pricing"):
        if name in values and root is not None:
            values[name] = str((root / values[name]).resolve())
    provider = values.get("provider")
    if provider is not None and provider not in PROVIDERS:
        raise UsageError(
            "unknown_llm_provider",
            f"{provider!r} is not a provider; one of {', '.join(PROVIDERS)}",
            field=origin["provider"],
        )
    credentials = refuse_credentials(values.get("base_url"))
    if credentials is not None:
        raise UsageError("llm_base_url_credentials", credentials, field=origin["base_url"])
    try:
        return ChatSettings.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else ""
        raise UsageError(
            "invalid_llm_setting",
            f"{name}: {first['msg']} (got {values.get(name)!r})",
            field=origin.get(name, name),
        ) from None


class _Configured:
    """The settings the pytest session resolved; ``None`` outside a session."""

    settings: ChatSettings | None = None


def configure(settings: ChatSettings | None) -> None:
    """Remember the settings the pytest session resolved (its ini, environment, options)."""
    _Configured.settings = settings


def configured_settings() -> ChatSettings:
    """The session's settings; outside pytest, the environment's."""
    if _Configured.settings is not None:
        return _Configured.settings
    return resolve_settings(ini=lambda key: None, environ=os.environ, root=Path.cwd())

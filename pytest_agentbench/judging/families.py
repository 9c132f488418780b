"""Model families, from a maintained table: who may judge whom.

A judge of the same family as the model under test is dropped from its panel
(it tends to prefer its own family's answers), and a panel's seats are of three
families. So a model name must resolve to its family however a provider spells
it: Bedrock's ``anthropic.claude-3-5-sonnet-20240620-v1:0`` and its
cross-region ``us.anthropic.…``, OpenAI's fine-tunes ``ft:gpt-4o-mini:org::id``,
aliases such as ``chatgpt-4o-latest``, routed names such as
``openrouter/anthropic/claude-3.5-sonnet``, Ollama tags such as ``llama3.1:8b``,
and Mistral's named lines (codestral, ministral, pixtral ...).

The lookup fails closed: a name the table (and a rubric's own ``families``)
does not know has no family, never a family of its own, and the panel warns
that it cannot show the seat independent; with ``strict_families`` it refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

KNOWN_FAMILIES: Final[Mapping[str, str]] = {
    # OpenAI
    "gpt-": "openai",
    "gpt4": "openai",
    "chatgpt-": "openai",
    "o1": "openai",
    "o3": "openai",
    "o4": "openai",
    "text-davinci": "openai",
    "davinci": "openai",
    "babbage": "openai",
    "codex-": "openai",
    # Anthropic
    "claude": "anthropic",
    # Google
    "gemini": "google",
    "gemma": "google",
    "palm": "google",
    "chat-bison": "google",
    "text-bison": "google",
    "codegemma": "google",
    # Meta
    "llama": "meta",
    "meta-llama": "meta",
    "codellama": "meta",
    # Mistral
    "mistral": "mistral",
    "open-mistral": "mistral",
    "mixtral": "mistral",
    "open-mixtral": "mistral",
    "codestral": "mistral",
    "ministral": "mistral",
    "pixtral": "mistral",
    "magistral": "mistral",
    "devstral": "mistral",
    "mathstral": "mistral",
    # Alibaba
    "qwen": "qwen",
    "qwq": "qwen",
    # Microsoft
    "phi-": "microsoft",
    "phi3": "microsoft",
    "phi4": "microsoft",
    # DeepSeek
    "deepseek": "deepseek",
    # Cohere
    "command": "cohere",
    "c4ai-command": "cohere",
    # Amazon
    "nova-": "amazon",
    "titan-": "amazon",
    # xAI
    "grok": "xai",
    # AI21
    "jamba": "ai21",
}
"""Model-name prefix (lower case) to family; the longest matching prefix wins."""

PROVIDER_FAMILIES: Final[Mapping[str, str]] = {
    "anthropic": "anthropic",
    "meta": "meta",
    "mistral": "mistral",
    "amazon": "amazon",
    "cohere": "cohere",
    "ai21": "ai21",
    "deepseek": "deepseek",
    "openai": "openai",
    "qwen": "qwen",
    "google": "google",
}
"""Bedrock's provider segment (``anthropic.claude-…``) to family: the model's maker."""

REGION_PREFIXES: Final = frozenset({"us", "eu", "apac", "global", "us-gov", "jp", "au", "ca"})
"""Bedrock cross-region inference profiles put one of these before the provider."""

FINE_TUNE_PREFIX: Final = "ft:"


def model_family(model: str, families: Mapping[str, str]) -> str | None:
    """The family of ``model``: its provider segment or longest known prefix, else ``None``.

    ``families`` (prefix to family) is consulted on the model's own name, after
    the provider's spelling is taken off; it is the whole table, so callers pass
    :data:`KNOWN_FAMILIES` merged with their own entries.
    """
    name = model.strip().lower()
    if name.startswith(FINE_TUNE_PREFIX):
        # ft:<base model>:<org>:<suffix>:<id>: the family is the base model's.
        name = name[len(FINE_TUNE_PREFIX) :].split(":", 1)[0]
    name = name.rsplit("/", 1)[-1]
    segments = name.split(".")
    if len(segments) > 2 and segments[0] in REGION_PREFIXES:
        segments = segments[1:]
    bare = name
    if len(segments) > 1 and segments[0] in PROVIDER_FAMILIES:
        provider = segments[0]
        bare = ".".join(segments[1:])
        found = _longest(bare, families)
        return found if found is not None else PROVIDER_FAMILIES[provider]
    return _longest(bare, families)


def _longest(name: str, families: Mapping[str, str]) -> str | None:
    matches = [prefix for prefix in families if name.startswith(prefix.lower())]
    if not matches:
        return None
    return families[max(matches, key=len)]

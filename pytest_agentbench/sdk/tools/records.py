"""What a tool session records about each call."""

from __future__ import annotations

import json
from dataclasses import dataclass

from pytest_agentbench.sdk.canonical import JsonValue

# canonical_json's output, without its walk over the value in search of
# non-finite numbers: the encoder refuses them itself (ValueError). Every call
# of a session and every receipt goes through here.
encode_canonical = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode
_RAW_DECODE = json.JSONDecoder().raw_decode


def decode_canonical(text: str) -> JsonValue:
    """Parse canonical JSON text (no whitespace to skip around the value)."""
    return _RAW_DECODE(text)[0]


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One call as the session saw it.

    Arguments and result are kept as canonical JSON text: what was validated
    and what was delivered can never change afterwards, whoever mutates the
    dicts the adapter or the handler held.
    """

    index: int
    """Position among the session's calls, from 0."""
    name: str
    arguments_json: str | None
    """Canonical JSON of the parsed arguments; ``None`` when they did not parse."""
    raw_arguments: str | None
    """The arguments text as given, kept only when it did not parse."""
    result_json: str | None
    """Canonical JSON of the result (a world refusal's payload for a refusal);
    kept for a result withheld by the byte budget, ``None`` when there was none."""
    error: str | None
    """The stable outcome code; ``None`` for a delivered result."""
    delivered: bool
    """Whether the world's answer (result or refusal) reached the adapter."""
    model_visible_bytes: int
    """UTF-8 length of what was delivered; 0 when nothing was."""
    message: str | None = None
    """The one-line reason of an error; may be volatile, so never part of a digest."""
    duration_ms: float | None = None
    """Time inside the session's call; an observation, never part of a digest."""

    @property
    def arguments(self) -> JsonValue:
        return None if self.arguments_json is None else decode_canonical(self.arguments_json)

    @property
    def result(self) -> JsonValue:
        return None if self.result_json is None else decode_canonical(self.result_json)

    def canonical(self) -> dict[str, JsonValue]:
        """The decision-affecting part, as it enters a receipt's canonical partition."""
        return {
            "index": self.index,
            "name": self.name,
            "arguments": self.arguments,
            "raw_arguments": self.raw_arguments,
            "result": self.result,
            "error": self.error,
            "delivered": self.delivered,
            "model_visible_bytes": self.model_visible_bytes,
        }

"""What an agent did in one case, in order: the case's transcript.

While a case runs, :func:`transcript_scope` collects on its thread the events
the parts of a run note as they happen: the chat agent each model request (the
messages it adds, bounded, with the digest of all of them) and each answer
(text, tool calls, finish reason, usage); the tool session each call, from the
very record its receipt is built from (arguments, result, refusal); the session
loop the final answer as the adapter returned it and how it was read.

Every event is JSON and holds nothing of the clock or the process (no
durations, waits or addresses), so a case's transcript is the same serially,
under xdist, in an isolated adapter process and when its model calls are
replayed from cassettes. Long text is cut at :data:`TEXT_CHARS` characters;
what was cut keeps its length and the sha256 of the whole.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_agentbench.sdk.canonical import JsonValue, sha256_hex
from pytest_agentbench.sdk.errors import escape_surrogates, escape_surrogates_json

if TYPE_CHECKING:
    from types import TracebackType

    from pytest_agentbench.sdk.tools.records import ToolCallRecord

TEXT_CHARS = 2000
"""Characters of one text (a message, an answer, a tool result) a transcript keeps."""

MAX_EVENTS = 2000
"""Events one case's transcript keeps; past it, one ``truncated`` event counts the rest."""


def bounded(text: str) -> dict[str, JsonValue]:
    """``{"text"}`` of at most :data:`TEXT_CHARS` characters; a cut one also has its full
    length and the sha256 of its UTF-8 bytes (lone surrogates escaped first)."""
    text = escape_surrogates(text)
    if len(text) <= TEXT_CHARS:
        return {"text": text}
    return {
        "text": text[:TEXT_CHARS],
        "chars": len(text),
        "sha256": sha256_hex(text.encode("utf-8")),
    }


def tool_call_event(record: ToolCallRecord) -> dict[str, JsonValue]:
    """One call of a tool session, from the record its receipt holds (without its duration)."""
    arguments = record.arguments_json if record.arguments_json is not None else record.raw_arguments
    event: dict[str, JsonValue] = {
        "event": "tool_call",
        "index": record.index,
        "name": escape_surrogates(record.name),
        "arguments": None if arguments is None else bounded(arguments),
        "result": None if record.result_json is None else bounded(record.result_json),
        "delivered": record.delivered,
        "bytes": record.model_visible_bytes,
    }
    if record.error is not None:
        event["refusal"] = {
            "code": record.error,
            "message": None if record.message is None else escape_surrogates(record.message),
        }
    return event


class CaseTranscript:
    """The events of one case, in the order they happened."""

    def __init__(self) -> None:
        self.events: list[dict[str, JsonValue]] = []
        self.dropped = 0
        self._lock = threading.Lock()

    def note(self, event: dict[str, JsonValue]) -> None:
        with self._lock:
            if len(self.events) < MAX_EVENTS:
                self.events.append(escape_surrogates_json(event))
            else:
                self.dropped += 1

    def absorb(self, model_events: Sequence[Any]) -> None:
        """Place the model events an isolated adapter's process sent with its answer.

        The tool calls its session served meanwhile were noted here as they came;
        each call follows the model answer that asked for it: an answer with ``n``
        tool calls takes the next ``n`` of them, in order.
        """
        for event in model_events:
            if not isinstance(event, dict) or not isinstance(event.get("event"), str):
                raise ValueError("a transcript event that is not an object with an 'event'")
        with self._lock:
            start = len(self.events)
            while start and self.events[start - 1].get("event") == "tool_call":
                start -= 1
            served = self.events[start:]
            merged: list[dict[str, JsonValue]] = []
            for event in model_events:
                merged.append(escape_surrogates_json(event))
                asked = event.get("tool_calls")
                if event["event"] == "model_response" and isinstance(asked, list):
                    merged.extend(served[: len(asked)])
                    served = served[len(asked) :]
            merged.extend(served)
            self.events[start:] = merged[: max(0, MAX_EVENTS - start)]
            self.dropped += max(0, len(merged) - (MAX_EVENTS - start))

    def record(self) -> list[JsonValue]:
        """The events, with a ``truncated`` event last when some were dropped."""
        with self._lock:
            events: list[JsonValue] = list(self.events)
            if self.dropped:
                events.append({"event": "truncated", "dropped": self.dropped})
            return events


_scope = threading.local()


class TranscriptScope:
    """The context manager of :func:`transcript_scope`: a class, not a ``@contextmanager``
    generator, because a run writing a report enters one per case, and a generator-based
    one costs a generator and its wrapper more at each entry."""

    def __init__(self) -> None:
        self._previous: CaseTranscript | None = None

    def __enter__(self) -> CaseTranscript:
        transcript = CaseTranscript()
        self._previous = getattr(_scope, "transcript", None)
        _scope.transcript = transcript
        return transcript

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _scope.transcript = self._previous


def transcript_scope() -> TranscriptScope:
    """Collect the transcript events noted on this thread while the block runs (one case)."""
    return TranscriptScope()


def current_transcript() -> CaseTranscript | None:
    """The transcript of the case running on this thread, if one is collected."""
    transcript: CaseTranscript | None = getattr(_scope, "transcript", None)
    return transcript

"""Recorded model calls, so an LLM agent's benchmark run replays in CI with no key.

A cassette is one small JSON file per distinct request, named by the sha256
of the request's canonical JSON (the chat-completions body: model, messages,
tools, sampling settings). It holds that request and what came back: the HTTP
status with the body (as JSON when it parsed, else as text), or the transport
failure. Never a header, a key or the server's address, so cassettes can be
committed and the same recording replays against any endpoint.

It also holds the sha256 of its request and of its response (canonical JSON),
and a replay re-derives both: a cassette whose response was edited (a failing
case made to pass) or whose request no longer matches its name is refused as
``cassette_tampered``, never replayed. A cassette of the first scheme, which
held no digests, is refused as ``cassette_outdated``: record it again.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final, Literal

from pydantic import ValidationError

from pytest_agentbench.sdk.canonical import (
    JsonValue,
    canonical_json,
    pretty_json,
    read_json,
    sha256_hex,
)
from pytest_agentbench.sdk.contracts import Record
from pytest_agentbench.sdk.errors import AgentbenchError

CASSETTE_SCHEME: Final = "agentbench-cassette/2"
OUTDATED_SCHEMES: Final = frozenset({"agentbench-cassette/1"})


class RecordedResponse(Record):
    status: int | None = None
    """HTTP status; ``None`` when the request failed in transport."""
    json_body: JsonValue = None
    text_body: str | None = None
    """The body when it was not JSON."""
    transport_error: Literal["timeout", "connection"] | None = None
    faults: tuple[str, ...] = ()
    """The retried failures before this answer (``http_429``, ``http_500`` ...), in order."""


def response_digest(response: RecordedResponse) -> str:
    """The sha256 of a recorded response's canonical JSON, as its cassette states it."""
    return sha256_hex(canonical_json(response.model_dump(mode="json")).encode("utf-8"))


class Cassette(Record):
    scheme: Literal["agentbench-cassette/2"] = CASSETTE_SCHEME
    request: dict[str, JsonValue]
    response: RecordedResponse
    request_digest_sha256: str
    """sha256 of the request's canonical JSON: the cassette's name."""
    response_digest_sha256: str
    """sha256 of the response's canonical JSON (:func:`response_digest`)."""


class EncodedRequest(Mapping[str, JsonValue]):
    """A request serialised once: its canonical JSON is the body sent over the wire, and
    its sha256 the cassette's name and the digest ledgers and usage reports record.

    A model call needs all three; serialising a request with its tool schemas four
    times was a tenth of a model-backed case's CPU. It reads as the request itself
    (a mapping), so a transport written for plain request dicts works unchanged.
    """

    __slots__ = ("body", "digest", "sent", "text")

    def __init__(
        self, body: dict[str, JsonValue], *, text: str | None = None, sent: str | None = None
    ) -> None:
        """``text``: ``body``'s canonical JSON when the caller already has it; ``sent``: the
        text sent over the wire when it is not ``text`` (a native provider's body, which
        its envelope holds), serialised once for both."""
        self.body = body
        self.text = canonical_json(body) if text is None else text
        self.digest = sha256_hex(self.text.encode("utf-8"))
        self.sent = sent

    def __getitem__(self, key: str) -> JsonValue:
        return self.body[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.body)

    def __len__(self) -> int:
        return len(self.body)


AnyRequest = dict[str, JsonValue] | EncodedRequest


def encoded(request: AnyRequest) -> EncodedRequest:
    return request if isinstance(request, EncodedRequest) else EncodedRequest(request)


def request_digest(request: AnyRequest) -> str:
    return encoded(request).digest


class CassetteMiss(AgentbenchError):
    """Replay found no recording for a request: the case fails, no live call is made."""


class CassetteShelf:
    """The cassette folder of a run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path_for(self, digest: str) -> Path:
        return self.folder / f"{digest}.json"

    def load(self, request: AnyRequest) -> RecordedResponse:
        request = encoded(request)
        digest = request.digest
        path = self.path_for(digest)
        display = path.name
        if not path.is_file():
            raise CassetteMiss(
                "cassette_miss",
                f"no recorded answer for request {digest[:16]} (record with "
                "--agentbench-cassette-mode=record)",
                file=display,
            )
        data = read_json(path, display=display)
        if isinstance(data, dict) and data.get("scheme") in OUTDATED_SCHEMES:
            raise AgentbenchError(
                "cassette_outdated",
                f"scheme {data['scheme']} holds no digests of its request and response: "
                "record it again (--agentbench-cassette-mode=record)",
                file=display,
                field="scheme",
            )
        try:
            cassette = Cassette.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise AgentbenchError(
                "invalid_cassette", first["msg"], file=display, field=str(first["loc"])
            ) from None
        if (
            canonical_json(cassette.request) != request.text
            or cassette.request_digest_sha256 != digest
        ):
            raise AgentbenchError(
                "cassette_tampered",
                "the recorded request is not the request its name is the digest of",
                file=display,
                field="request",
            )
        if response_digest(cassette.response) != cassette.response_digest_sha256:
            raise AgentbenchError(
                "cassette_tampered",
                "the recorded response is not the one recorded (its digest differs)",
                file=display,
                field="response",
            )
        return cassette.response

    def save(self, request: AnyRequest, response: RecordedResponse) -> Path:
        """Write atomically: xdist workers may record the same request at once."""
        request = encoded(request)
        path = self.path_for(request.digest)
        self.folder.mkdir(parents=True, exist_ok=True)
        cassette = Cassette(
            request=request.body,
            response=response,
            request_digest_sha256=request.digest,
            response_digest_sha256=response_digest(response),
        )
        text = pretty_json(cassette.model_dump(mode="json"))
        handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(text)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return path

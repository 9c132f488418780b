"""One chat-completions request, live (httpx), recorded, or replayed from a cassette."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.agents.cassettes import (
    AnyRequest,
    CassetteShelf,
    EncodedRequest,
    RecordedResponse,
    encoded,
)
from pytest_agentbench.agents.limits import Wait, wait
from pytest_agentbench.agents.provenance import ModelRun, current_run
from pytest_agentbench.agents.settings import ChatSettings
from pytest_agentbench.agents.usage import reported_tokens
from pytest_agentbench.ledger import Tokens
from pytest_agentbench.sdk.canonical import loads_strict
from pytest_agentbench.sdk.errors import AgentbenchError

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})


class ChatAgentError(AgentbenchError):
    """The model endpoint failed the agent: a stable code, classified as agent_error."""


@dataclass(frozen=True)
class Exchange:
    """What came back for one request, and every wait it took to get it."""

    response: RecordedResponse
    waits: tuple[Wait, ...] = ()


def refusing_transport() -> Any:
    """An httpx transport that refuses every connection: a replay's, so nothing leaves."""
    import httpx

    class RefusedConnection(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            raise httpx.ConnectError("a cassette replay opens no connection", request=request)

    return RefusedConnection()


class ChatTransport:
    """Sends requests as the settings say: ``off`` live, ``record`` live and saved, ``replay``.

    Live requests pass the run's rate limiter and retry with its backoff.
    """

    def __init__(self, settings: ChatSettings, run: ModelRun | None = None) -> None:
        self.settings = settings
        self.run = run or current_run(settings)
        self.mode = settings.effective_mode
        self.shelf = None if settings.cassettes is None else CassetteShelf(settings.cassettes)
        self._client: Any = None
        self._client_lock = threading.Lock()

    def send(self, request: AnyRequest, *, tokens: int = 0) -> Exchange:
        """``tokens``: what the request is expected to use, for the tokens-per-minute limit."""
        request = encoded(request)
        if self.mode == "replay":
            assert self.shelf is not None
            return Exchange(self.shelf.load(request))
        exchange = self._live(request, tokens)
        if self.mode == "record":
            assert self.shelf is not None
            self.shelf.save(request, exchange.response)
        return exchange

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _http(self) -> Any:
        with self._client_lock:
            if self._client is None:
                self._client = self._new_client()
            return self._client

    def _new_client(self) -> Any:
        try:
            import httpx
        except ImportError:
            raise ChatAgentError(
                "llm_unavailable",
                'live model calls need httpx: pip install "pytest-agentbench[llm]"',
            ) from None
        if self.mode == "replay":
            return httpx.Client(transport=refusing_transport())
        if not self.settings.base_url:
            raise ChatAgentError(
                "llm_config", "no base URL (agentbench_llm_base_url / AGENTBENCH_LLM_BASE_URL)"
            )
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.settings.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return httpx.Client(
            base_url=self.settings.base_url.rstrip("/") + "/",
            headers=headers,
            timeout=self.settings.timeout_s,
            limits=httpx.Limits(
                max_connections=self.settings.max_connections, max_keepalive_connections=None
            ),
        )

    def _live(self, request: EncodedRequest, tokens: int) -> Exchange:
        import httpx

        client = self._http()
        limiter, clock = self.run.limiter, self.run.clock
        faults: list[str] = []
        waits: list[Wait] = []
        while True:
            permit = limiter.acquire(tokens)
            waits.extend(permit.waits)
            try:
                answer = client.post("chat/completions", content=request.text.encode("utf-8"))
            except httpx.TimeoutException:
                limiter.release(permit, None)
                response = RecordedResponse(transport_error="timeout", faults=tuple(faults))
                return Exchange(response, tuple(waits))
            except httpx.TransportError as exc:
                limiter.release(permit, None)
                # Not recorded: an unreachable endpoint says nothing about the model.
                raise ChatAgentError(
                    "llm_unreachable", f"cannot reach the model endpoint ({type(exc).__name__})"
                ) from None
            response = _recorded(answer.status_code, answer.text)
            reported = reported_tokens(response.json_body)
            limiter.release(permit, None if reported is None else _used(reported))
            if answer.status_code in RETRIED_STATUSES and len(faults) < self.settings.max_retries:
                delay = self.run.backoff.delay(len(faults), answer.headers.get("retry-after"))
                faults.append(f"http_{answer.status_code}")
                waits.append(wait("retry", delay))
                clock.sleep(delay)
                continue
            return Exchange(response.model_copy(update={"faults": tuple(faults)}), tuple(waits))


def _used(tokens: Tokens) -> int:
    if tokens.total is not None:
        return tokens.total
    return (tokens.input or 0) + (tokens.output or 0)


def _recorded(status: int, text: str) -> RecordedResponse:
    try:
        return RecordedResponse(status=status, json_body=loads_strict(text))
    except AgentbenchError:
        return RecordedResponse(status=status, text_body=text)

"""One chat-completions request, live (httpx), recorded, or replayed from a cassette."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from pytest_agentbench.agents.budget import BudgetRefused
from pytest_agentbench.agents.cassettes import (
    AnyRequest,
    CassetteMiss,
    CassetteShelf,
    EncodedRequest,
    RecordedResponse,
    encoded,
)
from pytest_agentbench.agents.limits import wait
from pytest_agentbench.agents.provenance import ModelRun, current_run
from pytest_agentbench.agents.provenance_records import Wait
from pytest_agentbench.agents.providers import auth_headers, request_provider, wire
from pytest_agentbench.agents.settings import ChatSettings, refuse_credentials
from pytest_agentbench.agents.usage import reported_tokens
from pytest_agentbench.sdk.canonical import loads_strict
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger import Tokens

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
"""529: Anthropic's "overloaded"."""


class ChatAgentError(AgentbenchError):
    """The model endpoint failed the agent: a stable code, classified as agent_error."""


@dataclass(frozen=True)
class Exchange:
    """What came back for one request, and every wait it took to get it."""

    response: RecordedResponse
    waits: tuple[Wait, ...] = ()
    refused: BudgetRefused | None = None
    """A retry the run's budget refused: ``response`` is then the last failure before it."""
    source: Literal["live", "cassette", "recorded"] = "live"
    """Where the answer came from: the endpoint, a cassette, or the endpoint and then saved."""


class ClientShelf:
    """HTTP clients of one connection each, lent to one request at a time.

    One client shared by every concurrent case sends each request through one
    connection pool, whose lock each request takes twice and whose bookkeeping
    walks every connection while holding it: at 64 cases at once that queued the
    threads behind each other and cost about a millisecond of CPU a request. A
    client per request in flight, shelved again once its answer is read, keeps its
    connection alive for the next request.
    """

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._generation = 0

    @contextmanager
    def lend(self) -> Iterator[Any]:
        with self._lock:
            client = self._idle.pop() if self._idle else None
            generation = self._generation
        if client is None:
            client = self._make()
        try:
            yield client
        finally:
            with self._lock:
                # A client lent out when the shelf was closed is closed on its return.
                keep = generation == self._generation
                if keep:
                    self._idle.append(client)
            if not keep:
                client.close()

    def close(self) -> None:
        """Close every shelved client; one lent out now is closed when it comes back."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._generation += 1
        for client in idle:
            client.close()


def _httpx() -> Any:
    """The httpx module, imported when a live request needs it (a replay never does).

    Raises :class:`ChatAgentError` ``llm_unavailable`` when it is not installed: httpx
    is an optional dependency (the ``llm`` extra).
    """
    try:
        import httpx
    except ImportError as exc:
        raise ChatAgentError(
            "llm_unavailable",
            f"live model calls need httpx, which cannot be imported ({exc}): "
            'python -m pip install httpx, or ".[llm]" from a clone of pytest-agentbench',
        ) from None
    return httpx


@functools.cache
def _shared_tls_context() -> Any:
    """One TLS context for every client of the process: loading the CA bundle is most of the
    cost of a client, and one context serves many connections at once. (Two threads asking
    first may each build one; either serves.)"""
    return _httpx().create_ssl_context()


def prepare_for_fork() -> None:
    """Import httpx and build the shared TLS context ahead, in a process that forks adapter
    processes (the fork server's template): each forked process inherits both instead of
    paying for them (httpx's import brings about 150 modules, its CLI's included, and the
    CA bundle is read and parsed per context). Without httpx, nothing to do."""
    with contextlib.suppress(ChatAgentError):
        _shared_tls_context()


def refusing_transport() -> Any:
    """An httpx transport that refuses every connection: a replay's, so nothing leaves."""
    import httpx  # its callers have made sure it imports (``_httpx``)

    class RefusedConnection(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            raise httpx.ConnectError("a cassette replay opens no connection", request=request)

    return RefusedConnection()


class ChatTransport:
    """Sends requests as the settings say: ``off`` live, ``record`` live and saved, ``replay``
    from cassettes, ``auto`` from a cassette when one holds the request, else live and saved.

    Live requests pass the run's rate limiter and retry with its backoff.
    """

    def __init__(self, settings: ChatSettings, run: ModelRun | None = None) -> None:
        self.settings = settings
        self.run = run or current_run(settings)
        self.mode = settings.effective_mode
        self.shelf = None if settings.cassettes is None else CassetteShelf(settings.cassettes)
        self.clients = ClientShelf(self._new_client)

    def send(
        self, request: AnyRequest, *, tokens: int = 0, on_send: Callable[[], None] | None = None
    ) -> Exchange:
        """``tokens``: what the request is expected to use, for the tokens-per-minute limit;
        ``on_send`` is called once, as the request first leaves (past every rate limit)."""
        request = encoded(request)
        if self.mode in ("replay", "auto"):
            assert self.shelf is not None
            try:
                response = self.shelf.load(request)
            except CassetteMiss:
                # Only a miss goes live in auto mode: a tampered or unreadable cassette is
                # refused as in replay, never silently recorded over.
                if self.mode == "replay":
                    raise
            else:
                return self._replayed(response, on_send)
        exchange = self._live(request, tokens, on_send)
        if self.mode in ("record", "auto"):
            assert self.shelf is not None
            self.shelf.save(request, exchange.response)
            return dataclasses.replace(exchange, source="recorded")
        return exchange

    def _replayed(self, response: RecordedResponse, on_send: Callable[[], None] | None) -> Exchange:
        if on_send is not None:
            on_send()
        # The recorded retries count against the call ceiling as they did when recorded.
        for _ in response.faults:
            try:
                self.run.guard.reserve_retry()
            except BudgetRefused as refusal:
                return Exchange(response, refused=refusal, source="cassette")
        return Exchange(response, source="cassette")

    def close(self) -> None:
        self.clients.close()

    def _new_client(self) -> Any:
        httpx = _httpx()
        if self.mode == "replay":
            return httpx.Client(transport=refusing_transport())
        if not self.settings.base_url:
            raise ChatAgentError(
                "llm_config", "no base URL (agentbench_llm_base_url / AGENTBENCH_LLM_BASE_URL)"
            )
        credentials = refuse_credentials(self.settings.base_url)
        if credentials is not None:
            raise ChatAgentError("llm_base_url_credentials", credentials)
        return httpx.Client(
            base_url=self.settings.base_url.rstrip("/") + "/",
            headers={"Content-Type": "application/json"},
            timeout=self.settings.timeout_s,
            verify=_shared_tls_context(),
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        )

    def _live(
        self, request: EncodedRequest, tokens: int, on_send: Callable[[], None] | None
    ) -> Exchange:
        httpx = _httpx()

        # Each request names its provider (a judge's is always OpenAI-compatible), so the
        # path and the auth headers are the request's, not the client's.
        provider = request_provider(request)
        path, text = wire(request, request.text, request.sent)
        body = text.encode("utf-8")
        headers = auth_headers(provider, os.environ.get(self.settings.api_key_env))
        limiter, clock = self.run.limiter, self.run.clock
        faults: list[str] = []
        waits: list[Wait] = []
        while True:
            with self.clients.lend() as client:
                # Admitted into the minute's window as it is sent, the client ready.
                permit = limiter.acquire(tokens)
                waits.extend(permit.waits)
                if on_send is not None and not faults:
                    on_send()
                try:
                    answer = client.post(path, content=body, headers=headers)
                except httpx.TimeoutException:
                    limiter.release(permit, None)
                    response = RecordedResponse(transport_error="timeout", faults=tuple(faults))
                    return Exchange(response, tuple(waits))
                except httpx.TransportError as exc:
                    limiter.release(permit, None)
                    # Not recorded: an unreachable endpoint says nothing about the model.
                    raise ChatAgentError(
                        "llm_unreachable",
                        f"cannot reach the model endpoint ({type(exc).__name__})",
                    ) from None
                except BaseException:
                    # The case limit interrupted the request: its connection slot is free again.
                    limiter.release(permit, None)
                    raise
            response = _recorded(answer.status_code, answer.text)
            reported = reported_tokens(response.json_body, provider)
            limiter.release(permit, None if reported is None else _used(reported))
            if answer.status_code in RETRIED_STATUSES and len(faults) < self.settings.max_retries:
                try:
                    self.run.guard.reserve_retry()  # every request counts, retries too
                except BudgetRefused as refusal:
                    return Exchange(
                        response.model_copy(update={"faults": tuple(faults)}),
                        tuple(waits),
                        refused=refusal,
                    )
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

"""One chat-completions request, live (httpx), recorded, or replayed from a cassette."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from pytest_agentbench.agents.cassettes import CassetteShelf, RecordedResponse
from pytest_agentbench.agents.settings import ChatSettings
from pytest_agentbench.sdk.canonical import JsonValue, loads_strict
from pytest_agentbench.sdk.errors import AgentbenchError

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 30.0


class ChatAgentError(AgentbenchError):
    """The model endpoint failed the agent: a stable code, classified as agent_error."""


class ChatTransport:
    """Sends requests as the settings say: ``off`` live, ``record`` live and saved, ``replay``."""

    def __init__(
        self, settings: ChatSettings, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.settings = settings
        self.mode = settings.effective_mode
        self.shelf = None if settings.cassettes is None else CassetteShelf(settings.cassettes)
        self._sleep = sleep
        self._client: Any = None

    def send(self, request: dict[str, JsonValue]) -> RecordedResponse:
        if self.mode == "replay":
            assert self.shelf is not None
            return self.shelf.load(request)
        response = self._live(request)
        if self.mode == "record":
            assert self.shelf is not None
            self.shelf.save(request, response)
        return response

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _http(self) -> Any:
        if self._client is None:
            try:
                import httpx
            except ImportError:
                raise ChatAgentError(
                    "llm_unavailable",
                    'live model calls need httpx: pip install "pytest-agentbench[llm]"',
                ) from None
            if not self.settings.base_url:
                raise ChatAgentError(
                    "llm_config", "no base URL (agentbench_llm_base_url / AGENTBENCH_LLM_BASE_URL)"
                )
            headers = {"Content-Type": "application/json"}
            key = os.environ.get(self.settings.api_key_env)
            if key:
                headers["Authorization"] = f"Bearer {key}"
            self._client = httpx.Client(
                base_url=self.settings.base_url.rstrip("/") + "/",
                headers=headers,
                timeout=self.settings.timeout_s,
            )
        return self._client

    def _live(self, request: dict[str, JsonValue]) -> RecordedResponse:
        import httpx

        client = self._http()
        delay = self.settings.retry_backoff_s
        faults: list[str] = []
        while True:
            try:
                answer = client.post("chat/completions", json=request)
            except httpx.TimeoutException:
                return RecordedResponse(transport_error="timeout", faults=tuple(faults))
            except httpx.TransportError as exc:
                # Not recorded: an unreachable endpoint says nothing about the model.
                raise ChatAgentError(
                    "llm_unreachable", f"cannot reach the model endpoint ({type(exc).__name__})"
                ) from None
            if answer.status_code in RETRIED_STATUSES and len(faults) < self.settings.max_retries:
                faults.append(f"http_{answer.status_code}")
                self._sleep(_retry_after(answer.headers.get("retry-after"), delay))
                delay *= 2
                continue
            return _recorded(answer.status_code, answer.text).model_copy(
                update={"faults": tuple(faults)}
            )


def _retry_after(header: str | None, fallback: float) -> float:
    try:
        given = float(header) if header is not None else fallback
    except ValueError:
        given = fallback
    return min(max(given, 0.0), MAX_RETRY_AFTER_S)


def _recorded(status: int, text: str) -> RecordedResponse:
    try:
        return RecordedResponse(status=status, json_body=loads_strict(text))
    except AgentbenchError:
        return RecordedResponse(status=status, text_body=text)

"""The model usage behind a ChatAgent's answers, as the execution ledger records it.

One entry per completed model request: the request's canonical digest (the
name of its cassette), one attempt per retried fault and one for the answer
that ended the request, with the token counts the answer's ``usage`` object
reported. A count the endpoint did not report stays absent. Faults are kept
in cassettes, so a replayed run reports the same usage as the recorded one.
"""

from __future__ import annotations

import threading
from typing import Any

from pytest_agentbench.agents.cassettes import (
    AnyRequest,
    RecordedResponse,
    encoded,
    request_digest,
)
from pytest_agentbench.agents.providers import provider_tokens, request_provider
from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.ledger import Attempt, Tokens, UsageReport

CUT_OFF = "cut_off"
"""The fault of a request sent but never answered: the case limit interrupted it."""
_TOKEN_FIELDS = {"input": "prompt_tokens", "output": "completion_tokens", "total": "total_tokens"}


def reported_tokens(body: JsonValue, provider: str = "openai") -> Tokens | None:
    if provider != "openai":
        native = provider_tokens(provider, body)
        return None if native is None else Tokens(**native)
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return None
    counts: dict[str, Any] = {
        ours: usage[theirs]
        for ours, theirs in _TOKEN_FIELDS.items()
        if isinstance(usage.get(theirs), int)
        and not isinstance(usage.get(theirs), bool)
        and usage[theirs] >= 0
    }
    return Tokens(**counts) if counts else None


def _received(status: int | None) -> dict[str, Any]:
    """``response_received`` and the status, as the original's ledger states them."""
    if status is None or not 100 <= status <= 599:
        return {"response_received": False}
    return {"response_received": True, "http_status": status}


def retried_attempt(fault: str) -> dict[str, Any]:
    """An attempt a retry followed: an ``http_NNN`` status came back, a timeout did not."""
    digits = fault.removeprefix("http_")
    status = int(digits) if fault.startswith("http_") and digits.isdigit() else None
    return {"outcome": "fault", "fault": fault, **_received(status)}


def final_attempt(response: RecordedResponse, provider: str = "openai") -> dict[str, Any]:
    """The attempt that ended a request, without its index."""
    if response.transport_error is not None:
        return {"outcome": "fault", "fault": response.transport_error, "response_received": False}
    status = response.status
    if status is None or not 200 <= status < 300:
        return {"outcome": "fault", "fault": f"http_{status}", **_received(status)}
    if response.text_body is not None:
        return {"outcome": "unclassified_error", "fault": "not_json", **_received(status)}
    return {
        "outcome": "response",
        "tokens": reported_tokens(response.json_body, provider),
        **_received(status),
    }


def final_tokens(response: RecordedResponse, provider: str = "openai") -> Tokens | None:
    """The token counts of the answer that ended a request, when it reported them."""
    if response.transport_error is not None or response.text_body is not None:
        return None
    status = response.status
    if status is None or not 200 <= status < 300:
        return None
    return reported_tokens(response.json_body, provider)


def _cut_off(digest: str) -> dict[str, Any]:
    """The attempt a request stands as from :meth:`UsageLog.sent` until it is answered."""
    return {
        "outcome": "fault",
        "fault": CUT_OFF,
        "response_received": False,
        "request_digest_sha256": digest,
    }


class UsageLog:
    """The requests since the ledger last asked, per thread.

    One agent serves every case of a process, concurrently on their own
    threads; each case's ledger drains on the thread that ran the call, so
    each sees its own requests only.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def _pending(self) -> tuple[list[dict[str, Any]], list[str]]:
        local = self._local
        if not hasattr(local, "attempts"):
            local.attempts, local.requests = [], []
        return local.attempts, local.requests

    def sent(self, request: AnyRequest) -> None:
        """A request is about to be sent: until :meth:`note` replaces it, it stands as one
        ``cut_off`` fault, so a request the case limit interrupts is still ledgered."""
        attempts, requests = self._pending()
        digest = request_digest(request)
        attempts.append(_cut_off(digest))
        requests.append(digest)

    def withdraw(self, request: AnyRequest) -> None:
        """The request :meth:`sent` announced was never sent, or nothing came back."""
        attempts, requests = self._pending()
        digest = request_digest(request)
        if requests and requests[-1] == digest and attempts and attempts[-1] == _cut_off(digest):
            attempts.pop()
            requests.pop()

    def note(self, request: AnyRequest, response: RecordedResponse) -> None:
        self.withdraw(request)  # the request :meth:`sent` announced, answered
        attempts, requests = self._pending()
        digest = request_digest(request)
        for fault in response.faults:
            attempts.append({**retried_attempt(fault), "request_digest_sha256": digest})
        attempts.append(
            {
                **final_attempt(response, request_provider(encoded(request))),
                "request_digest_sha256": digest,
            }
        )
        requests.append(digest)

    def drain(self) -> UsageReport | None:
        """Every attempt since the last drain, numbered from 1; the last request's digest."""
        attempts, requests = self._pending()
        if not requests:
            return None
        report = UsageReport(
            request_digest_sha256=requests[-1],
            attempts=tuple(
                Attempt(attempt_index=index, **attempt)
                for index, attempt in enumerate(attempts, start=1)
            ),
        )
        attempts.clear()
        requests.clear()
        return report

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

from pytest_agentbench.agents.cassettes import RecordedResponse, request_digest
from pytest_agentbench.ledger import Attempt, Tokens, UsageReport
from pytest_agentbench.sdk.canonical import JsonValue

_TOKEN_FIELDS = {"input": "prompt_tokens", "output": "completion_tokens", "total": "total_tokens"}


def reported_tokens(body: JsonValue) -> Tokens | None:
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


def final_attempt(response: RecordedResponse) -> dict[str, Any]:
    """The attempt that ended a request, without its index."""
    if response.transport_error is not None:
        return {"outcome": "fault", "fault": response.transport_error}
    status = response.status
    if status is None or not 200 <= status < 300:
        return {"outcome": "fault", "fault": f"http_{status}"}
    if response.text_body is not None:
        return {"outcome": "unclassified_error", "fault": "not_json"}
    return {"outcome": "response", "tokens": reported_tokens(response.json_body)}


class _Pending(threading.local):
    """One thread's requests: under ``--agentbench-concurrency`` each case has its thread."""

    def __init__(self) -> None:
        self.attempts: list[dict[str, Any]] = []
        self.last_request: str | None = None


class UsageLog:
    """The requests since the ledger last asked, kept per thread so concurrent cases
    each drain their own."""

    def __init__(self) -> None:
        self._pending = _Pending()

    def note(self, request: dict[str, JsonValue], response: RecordedResponse) -> None:
        digest = request_digest(request)
        pending = self._pending
        for fault in response.faults:
            pending.attempts.append(
                {"outcome": "fault", "fault": fault, "request_digest_sha256": digest}
            )
        pending.attempts.append({**final_attempt(response), "request_digest_sha256": digest})
        pending.last_request = digest

    def drain(self) -> UsageReport | None:
        """Every attempt of this thread since its last drain, numbered from 1; the last digest."""
        pending = self._pending
        if pending.last_request is None:
            return None
        attempts = tuple(
            Attempt(attempt_index=index, **attempt)
            for index, attempt in enumerate(pending.attempts, start=1)
        )
        report = UsageReport(request_digest_sha256=pending.last_request, attempts=attempts)
        pending.attempts, pending.last_request = [], None
        return report

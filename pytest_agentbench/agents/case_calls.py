"""The model calls of the case running on a thread: collected while it runs, for every case.

Every case of every benchmark run is scoped (:func:`case_scope`), whether or not the run
configured a chat model: an adapter may build the chat client itself. What a case that
makes no model call needs is here, apart from the client's modules (settings, budgets,
rate limits, provenance), which a run that configures no chat model never imports; a
call's records (:mod:`pytest_agentbench.agents.provenance_records`) are imported with
the first call that makes one.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable
from contextlib import AbstractContextManager
from decimal import Decimal
from types import TracebackType
from typing import TYPE_CHECKING

from pytest_agentbench.sdk.canonical import decimal_text
from pytest_agentbench.sdk.transcript import CaseTranscript, transcript_scope

if TYPE_CHECKING:
    from pytest_agentbench.agents.budget import BudgetRefused
    from pytest_agentbench.agents.provenance_records import CaseModelCalls, DecisionCall, Wait

PROVENANCE = "pytest_agentbench.agents.provenance"
"""Imported by whatever configured a model run or makes a model call (the chat client)."""


class CaseCalls:
    """Collects one case's model calls on the thread running it.

    Most cases of most runs make no model call: what stays empty is a class
    default, replaced by the instance's own on the first change.
    """

    cassette_hits = 0
    recorded = 0
    attempts = 0
    input_tokens = 0
    output_tokens = 0
    cost = Decimal(0)
    refusal: BudgetRefused | None = None
    _transcript: CaseTranscript | None = None
    # One lock for every case: what it guards takes microseconds, a model call seconds,
    # and a lock per case was most of the cost of a case that calls no model.
    _lock = threading.Lock()

    def __init__(self, priced: bool, counted: bool = False) -> None:
        self.priced = priced
        self.counted = counted
        """Whether cassette hits and recordings are counted (a ``mixed`` run)."""
        self.requests: list[str] = []
        self.waits: list[Wait] = []
        self.decisions: list[DecisionCall] = []

    @property
    def transcript(self) -> CaseTranscript:
        """The case's transcript: its model calls and tool calls, and its final answer."""
        if self._transcript is None:
            with self._lock:
                if self._transcript is None:
                    self._transcript = CaseTranscript()
        return self._transcript

    def sent(self, digest: str) -> None:
        """A model request is about to be sent: counted now, so a request the case limit
        cuts off before its answer is still in the report (one attempt, no tokens)."""
        with self._lock:
            self.requests.append(digest)
            self.attempts += 1

    def withdraw(self, digest: str) -> None:
        """The request :meth:`sent` counted last was never sent, or nothing came back."""
        with self._lock:
            if self.requests and self.requests[-1] == digest:
                self.requests.pop()
                self.attempts -= 1

    def answered(
        self,
        *,
        attempts: int,
        input_tokens: int,
        output_tokens: int,
        cost: Decimal,
        waits: Iterable[Wait],
        source: str = "live",
    ) -> None:
        """The request :meth:`sent` last counted ended after ``attempts`` attempts;
        ``source``: where its answer came from (the transport's ``Exchange.source``)."""
        with self._lock:
            self.cassette_hits += source == "cassette"
            self.recorded += source == "recorded"
            self.attempts += attempts - 1
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens
            self.cost += cost
            self.waits.extend(waits)

    def begin(self) -> int:
        """An invocation of the adapter starts: the number of its first model call."""
        with self._lock:
            return len(self.requests)

    def decided(self, first_call: int, decision_digest: str | None) -> None:
        """An invocation of the adapter ended (with an answer, or raising)."""
        from pytest_agentbench.agents.provenance_records import DecisionCall

        with self._lock:
            self.decisions.append(
                DecisionCall(
                    call_index=len(self.decisions),
                    decision_digest_sha256=decision_digest,
                    request_digest_sha256=self.requests[-1]
                    if len(self.requests) > first_call
                    else None,
                )
            )

    def refuse(self, refusal: BudgetRefused) -> None:
        with self._lock:
            if self.refusal is None:
                self.refusal = refusal

    def absorb(self, record: CaseModelCalls, refusal: BudgetRefused | None) -> None:
        """Add the calls an isolated adapter's process collected during one of its calls."""
        with self._lock:
            self.requests.extend(record.request_digests)
            self.attempts += record.attempts
            self.input_tokens += record.input_tokens
            self.output_tokens += record.output_tokens
            self.cost += Decimal(record.cost or "0")
            self.waits.extend(record.waits)
            self.cassette_hits += record.cassette_hits or 0
            self.recorded += record.recorded or 0
            for decision in record.decisions:
                # Numbered within the process's call; here, within the case.
                self.decisions.append(
                    decision.model_copy(update={"call_index": len(self.decisions)})
                )
        if refusal is not None:
            self.refuse(refusal)

    @property
    def used(self) -> bool:
        return bool(self.requests or self.decisions or self.refusal)

    def record(self) -> CaseModelCalls:
        from pytest_agentbench.agents.provenance_records import CaseModelCalls

        with self._lock:
            return CaseModelCalls(
                calls=len(self.requests),
                attempts=self.attempts,
                input_tokens=self.input_tokens,
                output_tokens=self.output_tokens,
                cost=decimal_text(self.cost) if self.priced else None,
                request_digests=tuple(self.requests),
                decisions=tuple(self.decisions),
                waits=tuple(self.waits),
                refused=None if self.refusal is None else self.refusal.code,
                cassette_hits=self.cassette_hits if self.counted else None,
                recorded=self.recorded if self.counted else None,
            )


_scope = threading.local()


class CaseScope:
    """The context manager of :func:`case_scope`: a class, not a ``@contextmanager``
    generator, because it is entered once per case and a generator-based one costs a
    generator and its wrapper more at each entry."""

    def __init__(self, transcribe: bool) -> None:
        self.transcribe = transcribe
        self._previous: CaseCalls | None = None
        self._transcribing: AbstractContextManager[CaseTranscript] | None = None

    def __enter__(self) -> CaseCalls:
        # No model run configured (most runs; always, where the client was never imported):
        # nothing to price, no sources to count.
        provenance = sys.modules.get(PROVENANCE)
        run = None if provenance is None else provenance.configured_run()
        calls = (
            CaseCalls(False)
            if provenance is None or run is None
            else CaseCalls(priced=run.price is not None, counted=provenance.counts_sources(run))
        )
        self._previous = getattr(_scope, "calls", None)
        _scope.calls = calls
        if self.transcribe:
            self._transcribing = transcript_scope()
            try:
                calls._transcript = self._transcribing.__enter__()
            except BaseException:
                _scope.calls = self._previous
                raise
        return calls

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if self._transcribing is not None:
                self._transcribing.__exit__(exc_type, exc, traceback)
        finally:
            _scope.calls = self._previous


def case_scope(*, transcribe: bool = True) -> CaseScope:
    """Collect the model calls made on this thread while the block runs (one case), and,
    with ``transcribe``, the case's transcript (a run writing no report keeps none)."""
    return CaseScope(transcribe)


def current_case() -> CaseCalls | None:
    calls: CaseCalls | None = getattr(_scope, "calls", None)
    return calls

"""Judge calls under the model run's budget guard, rate limits and provider ledger.

A judge seat is a chat-model call like the agent's: it is sent through
:class:`~pytest_agentbench.agents.transport.ChatTransport` with the run's
:class:`~pytest_agentbench.agents.provenance.ModelRun` (so its rate limiter
and backoff), reserved against the run's ceilings on the run's own tally
before it is sent (so the judges and the agent share one budget, under xdist
too) and settled to what the endpoint reported. With a pricing table every
judge model must be priced: a seat whose model is not is refused
(``judge_unpriced``), since the cost the report states would leave it out.

With a ledger folder each rubric's judge calls are rows of one execution
ledger, ``<ledger dir>/%judges/<rubric>.ndjson``: a call row per seat call
(the request's digest as what the judge saw, the answer's digest as its
decision, the attempts and tokens as the endpoint reported them, the judge
model as ``method``), a refused call as a row with no decision, and a
terminal row: ``scored``, or ``excluded`` under the first refusal's code.
``agentbench audit`` holds the judgments file to those rows.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from pathlib import Path

from pytest_agentbench import __version__
from pytest_agentbench.agents.budget import (
    BudgetGuard,
    BudgetRefused,
    ModelPrice,
    Reservation,
)
from pytest_agentbench.agents.cassettes import RecordedResponse, request_digest
from pytest_agentbench.agents.provenance import PROVIDER, ModelRun, run_mode
from pytest_agentbench.agents.settings import ChatSettings
from pytest_agentbench.agents.transport import ChatTransport
from pytest_agentbench.agents.usage import UsageLog, final_tokens
from pytest_agentbench.judging.panel import ENDPOINT_SETTINGS, ChatSender, SenderFactory
from pytest_agentbench.judging.rubric import Seat
from pytest_agentbench.report.judged_summary import JudgeTraffic, judge_ledger_name
from pytest_agentbench.run.case_ledger import error_evidence
from pytest_agentbench.sdk.canonical import (
    JsonValue,
    canonical_bytes,
    canonical_json,
    decimal_text,
    sha256_hex,
)
from pytest_agentbench.sdk.ledger import CallPayload, Decision, HeaderPayload, LedgerWriter
from pytest_agentbench.sdk.ledger.rows import Attempt

JUDGE_AGENT_ID = "agentbench-judge-panel"
UNPRICED = "judge_unpriced"


class RubricMeter:
    """One rubric's judge traffic: its counts, and its ledger once the first call is made."""

    def __init__(
        self,
        run: ModelRun,
        rubric: str,
        rubric_digest: str,
        seats: tuple[Seat, ...],
        ledger_dir: Path | None,
    ) -> None:
        self.run = run
        self.rubric = rubric
        self.rubric_digest = rubric_digest
        self.seats = seats
        self.ledger_dir = ledger_dir
        self.models: list[str] = []
        self.calls = self.attempts = self.input_tokens = self.output_tokens = self.refused = 0
        self.cost = Decimal(0)
        self.refusal: str | None = None
        self.writer: LedgerWriter | None = None
        self._lock = threading.Lock()

    def senders(self) -> SenderFactory:
        def build(seat: Seat) -> ChatSender:
            base = self.run.settings
            endpoint: dict[str, JsonValue] = {
                key: seat.settings[key] for key in ENDPOINT_SETTINGS if key in seat.settings
            }
            settings = base.model_copy(update={"model": seat.model, **endpoint})
            return MeteredSender(self, seat, settings)

        return build

    def price(self, model: str) -> ModelPrice | None:
        pricing = self.run.pricing
        return None if pricing is None else pricing.models.get(model)

    def sent(
        self, seat: Seat, request: dict[str, JsonValue], response: RecordedResponse, cost: Decimal
    ) -> None:
        log = UsageLog()
        log.note(request, response)
        usage = log.drain()
        assert usage is not None  # one request was just noted
        tokens = [a.tokens for a in usage.attempts if a.tokens is not None]
        with self._lock:
            self._called(seat)
            self.calls += 1
            self.attempts += len(usage.attempts)
            self.input_tokens += sum(t.input or 0 for t in tokens)
            self.output_tokens += sum(t.output or 0 for t in tokens)
            self.cost += cost
            self._row(
                seat,
                request,
                decision=Decision(
                    kind="verdict",
                    decision_digest_sha256=sha256_hex(canonical_bytes(response_evidence(response))),
                ),
                error=None,
                attempts=usage.attempts,
            )

    def refuse(self, seat: Seat, request: dict[str, JsonValue], refusal: BudgetRefused) -> None:
        with self._lock:
            self._called(seat)
            self.refused += 1
            if self.refusal is None:
                self.refusal = refusal.code
            self._row(
                seat,
                request,
                decision=None,
                error=sha256_hex(canonical_bytes(error_evidence(refusal))),
                attempts=None,
            )

    def _called(self, seat: Seat) -> None:
        if seat.model not in self.models:
            self.models.append(seat.model)

    def _row(
        self,
        seat: Seat,
        request: dict[str, JsonValue],
        *,
        decision: Decision | None,
        error: str | None,
        attempts: tuple[Attempt, ...] | None,
    ) -> None:
        if self.ledger_dir is None:
            return
        writer = self.writer or self._open()
        digest = request_digest(request)
        writer.call(
            CallPayload.model_validate(
                {
                    "call_index": len(writer.calls),
                    "invocation_index": len(writer.calls) + 1,
                    "turn_index": 0,
                    "observation_digest_sha256": digest,
                    "decision": decision,
                    "error_digest_sha256": error,
                    "method": seat.model,
                    "request_digest_sha256": digest,
                    "attempts": attempts,
                }
            )
        )

    def _open(self) -> LedgerWriter:
        assert self.ledger_dir is not None
        settings = self.run.settings
        seed = {"judge": self.rubric, "rubric": self.rubric_digest, "agent": JUDGE_AGENT_ID}
        header = HeaderPayload(
            execution_run_id="exec_" + sha256_hex(canonical_bytes(seed))[:32],
            operation_id="judge",
            spec_digest_sha256=self.rubric_digest,
            scenario_id=self.rubric,
            agent_id=JUDGE_AGENT_ID,
            engine_version=f"pytest-agentbench {__version__}",
            provider={
                "provider": PROVIDER,
                "models": [seat.model for seat in self.seats],
                "settings_digest": settings.settings_digest(),
            },
        )
        self.writer = LedgerWriter(self.ledger_dir / judge_ledger_name(self.rubric), header)
        return self.writer

    def finish(self) -> JudgeTraffic | None:
        """The rubric's traffic, its ledger ended; ``None`` when no seat call was made."""
        if self.writer is not None and not self.writer.finished:
            if self.refusal is None:
                self.writer.finish("scored")
            else:
                self.writer.finish("excluded", self.refusal)
        if not self.models:
            return None
        return JudgeTraffic(
            models=tuple(self.models),
            mode=run_mode(self.run.settings),
            calls=self.calls,
            attempts=self.attempts,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost=None if self.run.pricing is None else decimal_text(self.cost),
            refused=self.refused,
            refusal=self.refusal,
            ledger=None if self.ledger_dir is None else judge_ledger_name(self.rubric),
        )

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def response_evidence(response: RecordedResponse) -> JsonValue:
    """What a judge answered, as its decision digest is taken of."""
    return response.model_dump(mode="json", exclude={"faults"})


class MeteredSender:
    """One seat's sender: reserve, send through the run's transport, settle, record."""

    def __init__(self, meter: RubricMeter, seat: Seat, settings: ChatSettings) -> None:
        self.meter = meter
        self.seat = seat
        run = meter.run
        self.price = meter.price(seat.model)
        self.guard = BudgetGuard(
            run.ceilings,
            price=self.price,
            max_tokens_per_call=run.settings.max_tokens_per_call,
            tally=run.guard.tally,
        )
        self.transport = ChatTransport(settings, run)

    def send(self, request: dict[str, JsonValue]) -> RecordedResponse:
        try:
            call = self.stage(request)
        except BudgetRefused as refusal:
            self.refused(request, refusal)
            raise
        response = call.transmit()
        call.settle(response)
        return response

    def stage(self, request: dict[str, JsonValue]) -> MeteredCall:
        """The call reserved against the run's ceilings; a refusal is raised unrecorded.

        With a per-call token bound the request carries ``max_tokens``, as the chat
        agent's do (:func:`~pytest_agentbench.agents.chat.bounded_request`).
        """
        from pytest_agentbench.agents.chat import bounded_body

        bound = self.meter.run.settings.max_tokens_per_call
        sent = bounded_body(request, bound)
        return MeteredCall(self, sent, self._reserve())

    def refused(self, request: dict[str, JsonValue], refusal: BudgetRefused) -> None:
        self.meter.refuse(self.seat, request, refusal)

    def _reserve(self) -> Reservation:
        if self.meter.run.pricing is not None and self.price is None:
            raise BudgetRefused(
                UNPRICED,
                f"the pricing table has no price for judge model {self.seat.model!r}",
                file=str(self.meter.run.settings.pricing),
                field="models",
            )
        return self.guard.reserve()


class MeteredCall:
    """One reserved seat call: sent (on any thread), then settled and recorded in its turn."""

    def __init__(
        self, sender: MeteredSender, request: dict[str, JsonValue], reservation: Reservation
    ) -> None:
        self.sender = sender
        self.request = request
        self.reservation = reservation
        self.refusal: BudgetRefused | None = None
        """A retry the run's budget refused while the call was sent."""

    def transmit(self) -> RecordedResponse:
        expected = self.reservation.tokens or len(canonical_json(self.request)) // 4 + 1
        exchange = self.sender.transport.send(self.request, tokens=expected)
        self.refusal = exchange.refused
        return exchange.response

    def settle(self, response: RecordedResponse) -> None:
        """Settle and record the call; raises :class:`BudgetRefused` (after recording it) when
        a retry was refused or the answer used more than the per-call bound: the seat then
        gives no vote and nothing is cached."""
        from pytest_agentbench.agents.chat import OVER_CALL_BOUND, overspent_call

        sender = self.sender
        tokens = final_tokens(response)
        used_in = None if tokens is None else tokens.input
        used_out = None if tokens is None else tokens.output
        sender.guard.settle(self.reservation, used_in, used_out)
        price = sender.price
        cost = Decimal(0) if price is None else price.cost(used_in or 0, used_out or 0)
        sender.meter.sent(sender.seat, self.request, response, cost)
        if self.refusal is not None:
            raise self.refusal
        overspent = overspent_call(tokens, sender.meter.run.settings.max_tokens_per_call)
        if overspent is not None:
            raise BudgetRefused(OVER_CALL_BOUND, overspent)


class JudgeMeter:
    """Every rubric's meter of one judging pass."""

    def __init__(self, run: ModelRun, ledger_dir: Path | None = None) -> None:
        self.run = run
        self.ledger_dir = ledger_dir
        self.rubrics: dict[str, RubricMeter] = {}

    def for_rubric(self, rubric: str, digest: str, seats: tuple[Seat, ...]) -> RubricMeter:
        meter = self.rubrics.get(rubric)
        if meter is None:
            meter = self.rubrics[rubric] = RubricMeter(
                self.run, rubric, digest, seats, self.ledger_dir
            )
        return meter

    def finish(self) -> dict[str, JudgeTraffic]:
        found: dict[str, JudgeTraffic] = {}
        for name, meter in self.rubrics.items():
            traffic = meter.finish()
            if traffic is not None:
                found[name] = traffic
        return found

    def close(self) -> None:
        for meter in self.rubrics.values():
            meter.close()

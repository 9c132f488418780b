"""What a run may spend at the model endpoint, enforced before anything is sent.

Ceilings: calls (model requests), tokens and cost. Cost needs a pricing
table (``--agentbench-pricing FILE``): per model, the price of one input and
one output token as exact decimal strings, never floats; the table is
digested so a report names the rates it was priced at.

Enforced twice. Before the first call, :meth:`BudgetGuard.preflight` refuses
a run whose worst case (cases x max turns calls, each sent at most 1 + max
retries times and of at most ``max_tokens_per_call`` tokens, priced at the
dearer of the two rates) passes a ceiling. Then every call reserves its own
worst case before it is sent and is refused, unsent, if the reservation would
pass a ceiling; each retry of it reserves one more request
(:meth:`BudgetGuard.reserve_retry`: the call ceiling counts requests, not
calls; a retried 429 or 5xx answer holds no tokens); once answered, the
reservation is settled to what the endpoint reported, or kept whole
(forfeited) when it reported no usage. The tally is shared by every case of
the process, and under xdist by every worker, through a locked file.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import StrictStr, ValidationError

from pytest_agentbench.agents.provenance_records import Ceilings, DecimalText
from pytest_agentbench.agents.shared_file import locked_json
from pytest_agentbench.sdk.canonical import canonical_bytes, decimal_text, read_json, sha256_hex
from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, Record
from pytest_agentbench.sdk.errors import AgentbenchError, UsageError

PRICING_SCHEME = "agentbench-pricing/1"


class ModelPrice(Record):
    model_config = BUILT_ON_FIRST_USE

    input_per_token: DecimalText
    output_per_token: DecimalText

    @property
    def input(self) -> Decimal:
        return Decimal(self.input_per_token)

    @property
    def output(self) -> Decimal:
        return Decimal(self.output_per_token)

    def cost(self, input_tokens: int, output_tokens: int) -> Decimal:
        return self.input * input_tokens + self.output * output_tokens

    def worst(self, tokens: int) -> Decimal:
        """The most ``tokens`` tokens can cost, in or out."""
        return max(self.input, self.output) * tokens


class PricingTable(Record):
    model_config = BUILT_ON_FIRST_USE

    scheme: Literal["agentbench-pricing/1"]
    currency: StrictStr
    models: dict[str, ModelPrice]

    @property
    def digest(self) -> str:
        return sha256_hex(canonical_bytes(self.model_dump(mode="json")))


def read_pricing(path: Path) -> PricingTable:
    display = str(path)
    data = read_json(path, display=display)
    try:
        return PricingTable.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UsageError(
            "invalid_pricing",
            f'{first["msg"]} (prices are decimal strings, e.g. "0.0000025")',
            file=display,
            field=".".join(str(part) for part in first["loc"]),
        ) from None


class BudgetRefused(AgentbenchError):
    """A call (or the whole run) would pass a ceiling; nothing was sent."""


class Reservation(Record):
    model_config = BUILT_ON_FIRST_USE

    tokens: int
    cost: DecimalText


_EMPTY_TALLY: dict[str, Any] = {"calls": 0, "tokens": 0, "cost": "0"}


class Tally:
    """Calls, tokens and cost committed so far: this process's, or the run's through a file."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._state = dict(_EMPTY_TALLY)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[dict[str, Any]]:
        """The tally to read and change; written back when the block ends without error."""
        with self._lock:
            if self.path is None:
                state = dict(self._state)
                yield state
                self._state = state
                return
            # Written back so that an interrupt at any line leaves the old tally or the new
            # one, never an empty file: a budget spent anew (see shared_file).
            with locked_json(self.path) as locked:
                state = locked.value if locked.value is not None else dict(_EMPTY_TALLY)
                yield state
                locked.value = state


class BudgetGuard:
    """The run's ceilings over the tally; thread-safe."""

    def __init__(
        self,
        ceilings: Ceilings,
        *,
        price: ModelPrice | None,
        max_tokens_per_call: int | None,
        tally: Tally | None = None,
    ) -> None:
        self.ceilings = ceilings
        self.price = price
        self.max_tokens_per_call = max_tokens_per_call
        self.tally = tally or Tally()

    def reservation(self) -> Reservation:
        """One call's worst case."""
        tokens = self.max_tokens_per_call or 0
        cost = Decimal(0) if self.price is None else self.price.worst(tokens)
        return Reservation(tokens=tokens, cost=decimal_text(cost))

    def preflight(self, cases: int, max_turns: int, sends_per_call: int = 1) -> None:
        """Refuse a run whose worst-case exposure passes a ceiling, before any call.

        ``sends_per_call``: the most requests one call may send (1 + its retries); only
        the last of them answers with tokens.
        """
        calls = cases * max_turns
        worst = self.reservation()
        retried = f" x {sends_per_call} requests" if sends_per_call > 1 else ""
        self._check(
            "budget_preflight",
            calls=calls * sends_per_call,
            tokens=calls * worst.tokens,
            cost=Decimal(worst.cost) * calls,
            what=f"the worst case of {cases} cases x {max_turns} turns{retried}",
        )

    def reserve(self) -> Reservation:
        """Reserve one call's worst case, or refuse the call before it is sent."""
        worst = self.reservation()
        with self.tally.transaction() as state:
            self._check(
                "budget_exceeded",
                calls=state["calls"] + 1,
                tokens=state["tokens"] + worst.tokens,
                cost=Decimal(state["cost"]) + Decimal(worst.cost),
                what="this call's worst case on top of the run's calls so far",
            )
            state["calls"] += 1
            state["tokens"] += worst.tokens
            state["cost"] = decimal_text(Decimal(state["cost"]) + Decimal(worst.cost))
        return worst

    def reserve_retry(self) -> None:
        """Count one more request of a call already reserved, or refuse the retry unsent.

        A retry follows an answer that was refused (429) or failed (5xx), which used
        no tokens: only the request itself is counted; the call's reservation still
        covers the tokens of the answer that ends it.
        """
        with self.tally.transaction() as state:
            self._check(
                "budget_exceeded",
                calls=state["calls"] + 1,
                tokens=state["tokens"],
                cost=Decimal(state["cost"]),
                what="this retry on top of the run's requests so far",
            )
            state["calls"] += 1

    def settle(
        self, reservation: Reservation, input_tokens: int | None, output_tokens: int | None
    ) -> None:
        """Replace the reservation by what the endpoint reported; unreported, it stays whole."""
        if input_tokens is None and output_tokens is None:
            return
        used_in, used_out = input_tokens or 0, output_tokens or 0
        cost = Decimal(0) if self.price is None else self.price.cost(used_in, used_out)
        with self.tally.transaction() as state:
            state["tokens"] += used_in + used_out - reservation.tokens
            state["cost"] = decimal_text(Decimal(state["cost"]) + cost - Decimal(reservation.cost))

    def _check(self, code: str, *, calls: int, tokens: int, cost: Decimal, what: str) -> None:
        limits: list[tuple[str, int | Decimal | None, int | Decimal, Callable[[Any], str]]] = [
            ("max_calls", self.ceilings.max_calls, calls, str),
            ("max_tokens", self.ceilings.max_tokens, tokens, str),
            (
                "max_cost",
                None if self.ceilings.max_cost is None else Decimal(self.ceilings.max_cost),
                cost,
                decimal_text,
            ),
        ]
        for name, ceiling, amount, show in limits:
            if ceiling is not None and amount > ceiling:
                raise BudgetRefused(
                    f"{code}_{name.removeprefix('max_')}",
                    f"{what} is {show(amount)}, above --agentbench-{name.replace('_', '-')}"
                    f"={show(ceiling)}",
                )

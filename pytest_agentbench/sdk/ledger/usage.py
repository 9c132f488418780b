"""What an adapter may report about the model traffic behind one answer.

An adapter that talks to a model may offer ``drain_usage()``: the request
digests, attempts, faults and token counts of the traffic since it was last
asked. The ledger copies what is reported into the call row and invents
nothing for an adapter that reports nothing.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pytest_agentbench.sdk.contracts import Record
from pytest_agentbench.sdk.ledger.rows import Attempt, Digest


class UsageReport(Record):
    request_digest_sha256: Digest
    wire_digest_sha256: Digest | None = None
    attempts: tuple[Attempt, ...]


@runtime_checkable
class ReportsUsage(Protocol):
    def drain_usage(self) -> UsageReport | None: ...

"""The hash-chained NDJSON execution ledger of an adapter's invocations (format §7).

World-free: a world (or any runner) opens a :class:`LedgerWriter` before the
first adapter call, appends one call row per invocation of the adapter and
one terminal row; :func:`audit_ledger` verifies a ledger file and names what
is wrong with it.
"""

from pytest_agentbench.sdk.ledger.audit import LedgerReading, audit_ledger, read_ledger
from pytest_agentbench.sdk.ledger.rows import (
    LEDGER_VERSION,
    Attempt,
    CallPayload,
    Decision,
    HeaderPayload,
    TerminalPayload,
    Tokens,
    Totals,
)
from pytest_agentbench.sdk.ledger.usage import ReportsUsage, UsageReport
from pytest_agentbench.sdk.ledger.writer import LedgerIO, LedgerWriter

__all__ = [
    "LEDGER_VERSION",
    "Attempt",
    "CallPayload",
    "Decision",
    "HeaderPayload",
    "LedgerIO",
    "LedgerReading",
    "LedgerWriter",
    "ReportsUsage",
    "TerminalPayload",
    "Tokens",
    "Totals",
    "UsageReport",
    "audit_ledger",
    "read_ledger",
]

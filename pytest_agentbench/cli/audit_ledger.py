"""``agentbench audit-ledger PATH``: verify an execution ledger row by row.

Two layouts share the chain: our own ledger, and OperateBench's execution
journal (its ``ledger_version`` 2 and 3); the first row says which it is.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pytest_agentbench.sdk.ledger import audit_ledger
from pytest_agentbench.sdk.ledger.journal import (
    audit_journal,
    is_journal_row,
    read_ledger_bytes,
)
from pytest_agentbench.sdk.registry import WorldRegistry


def _first_row(data: bytes) -> object:
    try:
        return json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        return None  # the ledger reader names what is wrong with it


def cmd_audit_ledger(args: argparse.Namespace, registry: WorldRegistry) -> int:
    path = Path(args.path)
    data = read_ledger_bytes(path)
    if is_journal_row(_first_row(data)):
        journal = audit_journal(path, data)
        totals = journal.totals
        faults = ", ".join(f"{k} {v}" for k, v in totals["fault_counts"].items()) or "none"
        print(
            f"ok: {args.path}: OperateBench journal, ledger_version {journal.version}, "
            f"{journal.rows_verified} rows verified, terminal {journal.terminal_kind}"
            + (f" ({journal.exclusion_code})" if journal.exclusion_code else "")
            + f", sha256:{journal.digest}; {totals['provider_calls']} calls, "
            f"{totals['attempts']} attempts, faults: {faults}; measured "
            f"{totals['measured_cost_usd']} USD, forfeited {totals['forfeited_reservation_usd']} "
            f"USD, reserved {totals['reserved_usd']} USD"
        )
        return 0
    reading = audit_ledger(path, data)
    print(
        f"ok: {args.path}: {len(reading.rows)} rows verified, terminal {reading.terminal_kind}, "
        f"sha256:{reading.digest}"
    )
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    audit = commands.add_parser(
        "audit-ledger", help="verify an execution ledger (ours, or an OperateBench journal)"
    )
    audit.add_argument(
        "path",
        help="the ledger file (`agentbench record --out`, `--agentbench-ledger`), or an "
        "OperateBench execution journal (ledger_version 2 or 3)",
    )
    audit.set_defaults(handler=cmd_audit_ledger)

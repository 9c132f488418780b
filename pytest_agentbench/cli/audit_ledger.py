"""``agentbench audit-ledger PATH``: verify an execution ledger row by row."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_agentbench.sdk.ledger import audit_ledger
from pytest_agentbench.sdk.registry import WorldRegistry


def cmd_audit_ledger(args: argparse.Namespace, registry: WorldRegistry) -> int:
    reading = audit_ledger(Path(args.path))
    print(
        f"ok: {args.path}: {len(reading.rows)} rows verified, terminal {reading.terminal_kind}, "
        f"sha256:{reading.digest}"
    )
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    audit = commands.add_parser("audit-ledger", help="verify an execution ledger")
    audit.add_argument(
        "path", help="the ledger file (`agentbench record --out`, `--agentbench-ledger`)"
    )
    audit.set_defaults(handler=cmd_audit_ledger)

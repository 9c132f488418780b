"""``agentbench derive SUITE``: recompute evaluator truth from public data; list differences."""

from __future__ import annotations

import argparse
from typing import Any

from pytest_agentbench.cli.common import SUITE_HELP, add_oracle_root, load
from pytest_agentbench.sdk.capabilities import DerivesTruth
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import WorldRegistry


def cmd_derive(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry, args.oracle_root)
    if not isinstance(loaded.world, DerivesTruth):
        raise AgentbenchError(
            "unsupported_command", f"world kind {loaded.world.kind!r} cannot derive truth"
        )
    differences = loaded.world.derive_differences(loaded.suite)
    for line in differences:
        print(line)
    if not differences:
        print(f"ok: {loaded.suite.id}: shipped truth equals the truth derived from public data")
    return 1 if differences else 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    derive = commands.add_parser(
        "derive", help="recompute evaluator truth from public data and list differences"
    )
    derive.add_argument("suite", help=SUITE_HELP)
    add_oracle_root(derive)
    derive.set_defaults(handler=cmd_derive)

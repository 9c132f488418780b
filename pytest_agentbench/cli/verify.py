"""``agentbench verify SUITE``: a suite's digests and evaluator checksums."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pytest_agentbench.cli.common import SUITE_HELP, add_oracle_root, load
from pytest_agentbench.run.session import oracle_of
from pytest_agentbench.sdk.capabilities import WarnsOnVerify
from pytest_agentbench.sdk.registry import WorldRegistry


def cmd_verify(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry, args.oracle_root)
    oracle_of(loaded)
    if isinstance(loaded.world, WarnsOnVerify):
        for warning in loaded.world.verify_warnings(loaded.suite):
            print(f"agentbench: warning: {warning}", file=sys.stderr)
    print(f"ok: {loaded.suite.id}: public artifacts and evaluator checksums verified")
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    verify = commands.add_parser("verify", help="check a suite's digests and checksums")
    verify.add_argument("suite", help=SUITE_HELP)
    add_oracle_root(verify)
    verify.set_defaults(handler=cmd_verify)

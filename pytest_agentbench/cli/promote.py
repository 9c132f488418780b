"""``agentbench promote BASELINE CANDIDATE --suite SUITE``: the gate between two reports."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_agentbench.cli.common import JSON_HELP, SUITE_HELP, add_oracle_root, load
from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.capabilities import PromotesReports
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import WorldRegistry


def cmd_promote(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry, args.oracle_root)
    if not isinstance(loaded.world, PromotesReports):
        raise AgentbenchError(
            "unsupported_command", f"world kind {loaded.world.kind!r} has no promotion gate"
        )
    result = loaded.world.promote_reports(
        loaded.suite,
        Path(args.baseline),
        Path(args.candidate),
        baseline_adapter=args.baseline_adapter,
        candidate_adapter=args.candidate_adapter,
    )
    if args.json:
        print(canonical_json(result))
    else:
        print(f"promotion {'passed' if result.get('passed') else 'failed'}")
        for failure in result.get("failures") or []:
            print(f"  {failure}")
    return 0 if result.get("passed") else 1


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    promote = commands.add_parser("promote", help="the promotion gate between two reports")
    promote.add_argument("baseline", help="the report of the adapter in service")
    promote.add_argument("candidate", help="the report of the adapter proposed to replace it")
    promote.add_argument("--suite", required=True, help=SUITE_HELP)
    promote.add_argument(
        "--baseline-adapter",
        default="gno-mcp",
        metavar="NAME",
        help="the baseline's adapter name in its report (default: gno-mcp)",
    )
    promote.add_argument(
        "--candidate-adapter",
        default="capsule",
        metavar="NAME",
        help="the candidate's adapter name in its report (default: capsule)",
    )
    promote.add_argument("--json", action="store_true", help=JSON_HELP)
    add_oracle_root(promote)
    promote.set_defaults(handler=cmd_promote)

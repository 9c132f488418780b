"""``agentbench baselines SUITE``: regenerate a candidate's baseline-records file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_agentbench.cli.common import SUITE_HELP, add_oracle_root, load
from pytest_agentbench.sdk.capabilities import WritesBaselines
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import write_file
from pytest_agentbench.sdk.registry import WorldRegistry


def cmd_baselines(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry, args.oracle_root)
    if not isinstance(loaded.world, WritesBaselines):
        raise AgentbenchError(
            "unsupported_command", f"world kind {loaded.world.kind!r} writes no baseline records"
        )
    data = loaded.world.baseline_records(loaded.suite)
    if args.output is None:
        sys.stdout.write(data.decode("utf-8"))
        return 0
    write_file(Path(args.output), data, code="unwritable_output")
    print(f"ok: {loaded.suite.id}: baseline records written to {args.output}")
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    baselines = commands.add_parser(
        "baselines", help="regenerate a candidate's baseline-records file"
    )
    baselines.add_argument("suite", help=SUITE_HELP)
    baselines.add_argument("-o", "--output", help="write to FILE instead of standard output")
    add_oracle_root(baselines)
    baselines.set_defaults(handler=cmd_baselines)

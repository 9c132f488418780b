"""``agentbench validate SUITE --predictions FILE``: a predictions file's shape, unscored."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_agentbench.cli.common import (
    JSON_HELP,
    SUITE_HELP,
    add_oracle_root,
    load,
    read_predictions_text,
)
from pytest_agentbench.sdk.capabilities import ValidatesPredictions
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import WorldRegistry


def cmd_validate(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry, args.oracle_root)
    if not isinstance(loaded.world, ValidatesPredictions):
        raise AgentbenchError(
            "unsupported_command", f"world kind {loaded.world.kind!r} offers no validator"
        )
    path = Path(args.predictions)
    report = loaded.world.validate_predictions(
        loaded.suite, read_predictions_text(path), path=path.resolve()
    )
    if args.json:
        print(report.json_text())
    else:
        for line in report.render_lines():
            print(line)
    return 0 if report.valid else 1


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    validate = commands.add_parser(
        "validate", help="check a predictions file's shape without evaluator access"
    )
    validate.add_argument("suite", help=SUITE_HELP)
    validate.add_argument(
        "--predictions", required=True, metavar="FILE", help="the predictions file to check"
    )
    validate.add_argument("--json", action="store_true", help=JSON_HELP)
    add_oracle_root(validate)
    validate.set_defaults(handler=cmd_validate)

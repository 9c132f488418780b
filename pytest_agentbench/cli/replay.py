"""``agentbench replay SUITE EPISODE``: re-execute a recorded episode from its decision tape."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_agentbench.cli.common import SUITE_HELP, add_oracle_root, load, recorder
from pytest_agentbench.sdk.registry import WorldRegistry


def cmd_replay(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry, args.oracle_root)
    for line in recorder(loaded).replay_episode(loaded.suite, Path(args.episode)):
        print(line)
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    replay = commands.add_parser(
        "replay", help="re-execute a recorded episode from its decision tape"
    )
    replay.add_argument("suite", help=SUITE_HELP)
    replay.add_argument("episode", help="the episode that `agentbench record --out` wrote")
    add_oracle_root(replay)
    replay.set_defaults(handler=cmd_replay)

"""``agentbench list``: the suites the installed worlds ship, one line each."""

from __future__ import annotations

import argparse
from typing import Any

from pytest_agentbench.cli.common import load
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import WorldRegistry


def cmd_list(args: argparse.Namespace, registry: WorldRegistry) -> int:
    for suite_id, root in registry.suites().items():
        try:
            loaded = load(str(root), registry)
        except AgentbenchError as exc:
            print(f"{suite_id}\t(broken)\t{exc.render()}")
            continue
        count = len(loaded.world.cases(loaded.suite))
        print(f"{suite_id}\t{loaded.world.kind}\t{count} cases\t{loaded.suite.config.title}")
    # A world plugin that did not load ships no suite this command can find: say so.
    for name, error in sorted(registry.broken.items()):
        print(f"{name}\t(broken world)\t{error}")
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser("list", help="list the built-in suites")
    parser.set_defaults(handler=cmd_list)

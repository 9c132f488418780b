"""``agentbench record SUITE CASE --out DIR``: run one case, writing its ledger and episode."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_agentbench.cli.common import SUITE_HELP, add_oracle_root, load, recorder
from pytest_agentbench.run.adapters import AdapterFolders, kind_protocols, load_adapter
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import WorldRegistry


def cmd_record(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry, args.oracle_root)
    world = recorder(loaded)
    if args.adapter:
        kinds = [kind_protocols(loaded.world)]
        agent_id = args.adapter
        adapter = load_adapter(args.adapter, kinds, AdapterFolders(Path.cwd()))
    else:
        agents = {agent.agent_id: agent for agent in loaded.world.control_agents(loaded.suite)}
        if args.agent not in agents:
            raise AgentbenchError(
                "unknown_agent",
                f"no built-in agent {args.agent!r} (known: {', '.join(sorted(agents))})",
                field="--agent",
            )
        agent_id, adapter = args.agent, agents[args.agent].factory()
    for line in world.record_episode(loaded.suite, args.case, agent_id, adapter, Path(args.out)):
        print(line)
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    record = commands.add_parser(
        "record", help="run one case with a built-in agent, writing its execution ledger"
    )
    record.add_argument("suite", help=SUITE_HELP)
    record.add_argument("case", help="the id of the case to run")
    recorded = record.add_mutually_exclusive_group(required=True)
    recorded.add_argument("--agent", help="a built-in agent")
    recorded.add_argument("--adapter", metavar="MODULE:ATTR", help="your adapter")
    record.add_argument("--out", required=True, help="directory for the ledger and episode")
    add_oracle_root(record)
    record.set_defaults(handler=cmd_record)

"""``agentbench record SUITE CASE --out DIR``: run one case, writing its ledger and episode.

``--journal`` also writes the episode in OperateBench's journal layout. It is asked
for, never automatic: the original's header states the provider and the run's
limits, which only a model agent with a bare https endpoint, a per-call token
bound and a price has; a run without them is refused by name before it spends
anything, where writing it whenever possible would make a flag-less ``record``
fail or succeed by the endpoint's scheme.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.cli.common import SUITE_HELP, add_oracle_root, load, recorder
from pytest_agentbench.run.adapters import AdapterFolders, kind_protocols, load_adapter
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import WorldRegistry

if TYPE_CHECKING:
    from pytest_agentbench.sdk.ledger.journal_writer import JournalSetup

NO_PROVIDER = "journal_no_provider"


def _journal_setup(adapter: Any, agent_id: str, built_in: bool) -> JournalSetup:
    """The journal header of ``adapter``'s run, or ``journal_no_provider``."""
    if built_in:
        raise AgentbenchError(
            NO_PROVIDER,
            f"built-in agent {agent_id!r} calls no model provider: it has no journal "
            "(its ledger and episode are written without --journal)",
            field="--journal",
        )
    # Imported only for a journal: the chat agent's modules are a model run's.
    from pytest_agentbench.agents.chat import ChatAgent
    from pytest_agentbench.agents.journal import journal_setup

    if not isinstance(adapter, ChatAgent):
        raise AgentbenchError(
            NO_PROVIDER,
            f"adapter {agent_id!r} is not the chat agent "
            "(pytest_agentbench.agents.chat:ChatAgent): no provider or limits to journal",
            field="--journal",
        )
    return journal_setup(adapter)


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
    journal = _journal_setup(adapter, agent_id, not args.adapter) if args.journal else None
    out = Path(args.out)
    for line in world.record_episode(
        loaded.suite, args.case, agent_id, adapter, out, journal=journal
    ):
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
    record.add_argument(
        "--journal",
        action="store_true",
        help="also write the episode in OperateBench's journal layout "
        "(<case>.journal.ndjson; the chat agent only)",
    )
    add_oracle_root(record)
    record.set_defaults(handler=cmd_record)

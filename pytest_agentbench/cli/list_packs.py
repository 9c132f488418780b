"""``agentbench list-packs``: the installed operations domain packs, by entry point.

One line each: operation type, pack version, the entry point's name and target
(``pytest_agentbench.operations_packs``), terminals, event and action counts.
A pack that does not load, or two claiming one operation type, is the refusal
the operations world would make (``operations_pack_load_failed``,
``duplicate_operations_pack``).
"""

from __future__ import annotations

import argparse
import json
from importlib.metadata import entry_points
from typing import Any

from pytest_agentbench.cli.common import world_providing
from pytest_agentbench.sdk.operations_pack import OPERATIONS_PACK_GROUP, ProvidesDomainPacks
from pytest_agentbench.sdk.registry import WorldRegistry


def cmd_list_packs(args: argparse.Namespace, registry: WorldRegistry) -> int:
    world: ProvidesDomainPacks = world_providing(registry, ProvidesDomainPacks, "domain packs")
    packs = world.domain_packs()
    targets = {
        str(entry.value).partition(":")[0]: entry
        for entry in entry_points(group=OPERATIONS_PACK_GROUP)
    }
    rows: list[dict[str, Any]] = []
    for operation_type, pack in sorted(packs.items()):
        module = type(pack).__module__
        entry = next((e for target, e in targets.items() if module.startswith(target)), None)
        rows.append(
            {
                "operation_type": operation_type,
                "pack_version": str(pack.pack_version),
                "entry_point": None if entry is None else f"{entry.name} = {entry.value}",
                "terminals": sorted(pack.terminals),
                "event_types": len(pack.event_types),
                "action_types": len(pack.action_types),
            }
        )
    if args.json:
        print(json.dumps(rows, sort_keys=True))
        return 0
    for row in rows:
        print(
            f"{row['operation_type']}\t{row['pack_version']}\t{row['entry_point']}\t"
            f"terminals: {', '.join(row['terminals'])}\t"
            f"{row['event_types']} event types, {row['action_types']} actions"
        )
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser("list-packs", help="list the installed operations domain packs")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(handler=cmd_list_packs)

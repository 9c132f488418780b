"""``agentbench validate-spec FILE``: read an OperationSpec statically against the installed packs.

Nothing runs: the spec is read as strictly as a suite loads it (the YAML
reader's limits, the 13 keys, the pack's policy, roles, event and action
vocabularies, every actor's authority, the scenarios' events, triggers and
declared rejections), and its digest is computed as the original computes it.
Exit 0 with the operation, its type, version, scenarios and
``spec_digest_sha256``; 1 with the refusal's code, file and field.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pytest_agentbench.cli.common import world_providing
from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.operations_pack import ProvidesDomainPacks
from pytest_agentbench.sdk.registry import WorldRegistry


def cmd_validate_spec(args: argparse.Namespace, registry: WorldRegistry) -> int:
    world: ProvidesDomainPacks = world_providing(registry, ProvidesDomainPacks, "domain packs")
    summary: dict[str, JsonValue] = {
        "ok": True,
        "file": args.spec,
        **world.check_spec_file(Path(args.spec), args.spec),
    }
    scenarios = summary["scenarios"]
    assert isinstance(scenarios, list)
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        print(
            f"ok: {args.spec}: {summary['operation_id']} {summary['operation_version']} "
            f"({summary['operation_type']}, pack {summary['pack_version']}); scenarios "
            f"{', '.join(map(str, scenarios))}; spec_digest_sha256 {summary['spec_digest_sha256']}"
        )
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser(
        "validate-spec", help="read an OperationSpec against the installed packs (nothing runs)"
    )
    parser.add_argument("spec", help="an OperationSpec YAML file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(handler=cmd_validate_spec)

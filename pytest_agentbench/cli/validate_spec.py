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

from pytest_agentbench.sdk.registry import WorldRegistry


def cmd_validate_spec(args: argparse.Namespace, registry: WorldRegistry) -> int:
    # The operations world reads the spec; imported only by this command.
    from pytest_agentbench.worlds.operations.packs import installed_packs
    from pytest_agentbench.worlds.operations.spec import load_operation_spec

    loaded = load_operation_spec(Path(args.spec), args.spec, installed_packs())
    spec = loaded.spec
    summary = {
        "ok": True,
        "file": args.spec,
        "operation_id": spec.operation_id,
        "operation_type": spec.operation_type,
        "operation_version": spec.operation_version,
        "pack_version": str(loaded.domain.pack_version),
        "scenarios": sorted(spec.scenarios),
        "spec_digest_sha256": loaded.digest,
    }
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        print(
            f"ok: {args.spec}: {spec.operation_id} {spec.operation_version} "
            f"({spec.operation_type}, pack {summary['pack_version']}); scenarios "
            f"{', '.join(sorted(spec.scenarios))}; spec_digest_sha256 {loaded.digest}"
        )
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser(
        "validate-spec", help="read an OperationSpec against the installed packs (nothing runs)"
    )
    parser.add_argument("spec", help="an OperationSpec YAML file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(handler=cmd_validate_spec)

"""``agentbench check SUITE``: the negative-control gate, every declared control run and judged.

Exit status 0 yes, 1 input refused, 2 no, 64 usage.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Final

from pytest_agentbench.cli.common import (
    JSON_HELP,
    SUITE_HELP,
    TIMEOUT_HELP,
    add_oracle_root,
    command_state,
    load,
    shown,
    write_text,
)
from pytest_agentbench.run.control_run import (
    declared_controls,
    run_control,
    ungraded_agents,
    ungraded_verdict,
)
from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.controls_oracle import suite_control_oracle
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import WorldRegistry

GATE_USAGE: Final = 64
"""``check`` reserves 2 for "no", so its usage errors exit with EX_USAGE."""


def cmd_check(args: argparse.Namespace, registry: WorldRegistry) -> int:
    """Every declared control run and judged; the verdict quoted with the oracle's identity."""
    loaded = load(args.suite, registry, args.oracle_root)
    world, suite = loaded.world, loaded.suite
    oracle = suite_control_oracle(world, suite, world.dimensions(suite), shown)
    if oracle is None:
        raise AgentbenchError(
            "no_control_oracle",
            f"suite {suite.id!r} declares no negative controls (no control oracle in "
            f"{suite.oracle_root})",
        )
    declared = declared_controls(loaded, oracle)
    state = command_state(registry, args.timeout)
    verdicts = [run_control(state, loaded, control)[0] for control in declared]
    verdicts += [
        ungraded_verdict(f"ungraded-{agent_id}", agent_id)
        for agent_id in ungraded_agents(loaded, declared)
    ]
    passed = all(verdict.passed for verdict in verdicts)
    report = {
        "suite": suite.id,
        "oracle": oracle.identity.model_dump(mode="json"),
        "passed": passed,
        "checks": [
            {**verdict.model_dump(mode="json"), "summary": verdict.summary()}
            for verdict in verdicts
        ],
    }
    if args.report:
        write_text(Path(args.report), canonical_json(report) + "\n")
    if args.json:
        print(canonical_json(report))
    else:
        identity = oracle.identity
        print(
            f"{suite.id}: oracle {identity.oracle_id} {identity.oracle_version} "
            f"sha256:{identity.digest_sha256} ({identity.file})"
            + (
                f" oracle_digest_sha256:{identity.oracle_digest_sha256}"
                if identity.oracle_digest_sha256
                else ""
            )
            + (f"; {identity.note}" if identity.note else "")
        )
        for verdict in verdicts:
            print(f"  {'PASS' if verdict.passed else 'FAIL'}  {verdict.summary()}")
        held = sum(1 for verdict in verdicts if verdict.passed)
        print(f"{'yes' if passed else 'no'}: {held} of {len(verdicts)} checks hold")
    return 0 if passed else 2


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    check = commands.add_parser(
        "check", help="run the negative-control gate: every declared control, judged"
    )
    check.usage_status = GATE_USAGE
    check.add_argument("suite", help=SUITE_HELP)
    check.add_argument("--json", action="store_true", help=JSON_HELP)
    check.add_argument(
        "--report", metavar="FILE", help="also write the JSON check report to this file"
    )
    check.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS", help=TIMEOUT_HELP)
    add_oracle_root(check)
    check.set_defaults(handler=cmd_check)

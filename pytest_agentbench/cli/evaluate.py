"""``agentbench evaluate SUITE``: score a predictions file or a built-in agent."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.cli.common import (
    JSON_HELP,
    SUITE_HELP,
    TIMEOUT_HELP,
    add_oracle_root,
    command_state,
    load,
    read_predictions_text,
    timeout_seconds,
)
from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.capabilities import (
    DeclaresScope,
    ReportsEvaluation,
    ValidatesPredictions,
)
from pytest_agentbench.sdk.contracts import FailureClass, MetricValue
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.metrics import aggregate, by_family
from pytest_agentbench.sdk.registry import WorldRegistry


def _metric_lines(metrics: Sequence[MetricValue]) -> list[str]:
    width = max((len(m.name) for m in metrics), default=0)
    lines = []
    for family, members in by_family(metrics).items():
        lines.append(f"{family}:")
        for metric in members:
            value = "null" if metric.value is None else f"{metric.value:.4f}"
            lines.append(
                f"  {metric.name:<{width}}  {value:>6}  support {metric.support} "
                f"({metric.support_meaning})"
            )
    return lines


def cmd_evaluate(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry, args.oracle_root)
    world, suite = loaded.world, loaded.suite
    if args.predictions:
        path = Path(args.predictions).resolve()
        if isinstance(world, ValidatesPredictions):
            # A document the scorer refuses is refused here, before scoring, with the
            # validator's diagnostics. A report may call a document it finds invalid
            # scorable still (``scorable``): one the original's scorer grades.
            report = world.validate_predictions(suite, read_predictions_text(path), path=path)
            if not getattr(report, "scorable", report.valid):
                for line in report.render_lines():
                    print(line, file=sys.stderr)
                return 1
        adapter = world.predictions_adapter(suite, path)
    else:
        agents = {agent.agent_id: agent for agent in world.control_agents(suite)}
        if args.agent not in agents:
            raise AgentbenchError(
                "unknown_agent",
                f"world kind {world.kind!r} has no built-in agent {args.agent!r} "
                f"(known: {', '.join(sorted(agents))})",
                field="--agent",
            )
        adapter = agents[args.agent].factory()
    state = command_state(registry, args.timeout)
    results = [
        state.execute(loaded, case, world.public_view(suite, case), adapter)[1]
        for case in world.cases(suite)
    ]
    # A case the harness could not grade (a tampered oracle, say) would otherwise
    # leave every metric null behind a successful exit.
    harness_errors = dict.fromkeys(
        result.failure_reason or result.case_id
        for result in results
        if result.failure_class is FailureClass.HARNESS_ERROR
    )
    if harness_errors:
        for reason in harness_errors:
            print(f"agentbench: harness_error: {reason}", file=sys.stderr)
        return 1
    metrics = aggregate(world.metrics(suite), results)
    scope = world.measurement_scope(suite) if isinstance(world, DeclaresScope) else None
    if args.json and isinstance(world, ReportsEvaluation):
        # The original's envelope, its keys in its own order.
        print(json.dumps(world.evaluation_report(suite, results, metrics), indent=2))
    elif args.json:
        document = {
            "suite": suite.id,
            "metrics": [metric.model_dump(mode="json") for metric in metrics],
            "cases": {r.case_id: r.outcome.value for r in results},
        }
        print(
            canonical_json(document if scope is None else {**document, "measurement_scope": scope})
        )
    else:
        print(f"{suite.id} ({world.kind}): {len(results)} cases")
        for line in _metric_lines(metrics):
            print(line)
        if scope is not None:
            print(f"measurement scope: {canonical_json(scope)}")
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    evaluate = commands.add_parser("evaluate", help="score predictions or a built-in agent")
    evaluate.add_argument("suite", help=SUITE_HELP)
    source = evaluate.add_mutually_exclusive_group(required=True)
    source.add_argument("--predictions", metavar="FILE", help="a predictions file to score")
    source.add_argument("--agent", metavar="NAME", help="a built-in agent to run and score")
    evaluate.add_argument("--json", action="store_true", help=JSON_HELP)
    evaluate.add_argument(
        "--timeout", type=timeout_seconds, default=300.0, metavar="SECONDS", help=TIMEOUT_HELP
    )
    add_oracle_root(evaluate)
    evaluate.set_defaults(handler=cmd_evaluate)

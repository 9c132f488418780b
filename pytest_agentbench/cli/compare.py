"""``agentbench compare BEFORE.json AFTER.json``: paired comparison of two run reports."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_agentbench.cli.common import JSON_HELP
from pytest_agentbench.cli.report_limit import add_max_report_bytes
from pytest_agentbench.report.baseline import identity, settings, suite_run
from pytest_agentbench.report.comparison_lines import comparison_lines
from pytest_agentbench.report.json_report import read_report
from pytest_agentbench.report.summary import SuiteSummary
from pytest_agentbench.scoring.comparison import compare_runs
from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import WorldRegistry


def _probability(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not strictly between 0 and 1")
    return value


def _size(text: str) -> float:
    value = float(text)
    if not value >= 0.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number >= 0")
    return value


def cmd_compare(args: argparse.Namespace, registry: WorldRegistry) -> int:
    limit = args.max_report_bytes
    before = read_report(args.before, max_bytes=limit)
    after = read_report(args.after, max_bytes=limit)
    after_suites = {suite.id: suite for suite in after.suites}
    common = [suite.id for suite in before.suites if suite.id in after_suites]
    if not common:
        raise AgentbenchError(
            "no_common_suite", f"{args.before} and {args.after} share no suite to compare"
        )
    refused: set[str] = set()
    if not args.allow_changed:
        for old in before.suites:
            new = after_suites.get(old.id)
            mismatch = None if new is None else _suite_mismatch(old, new)
            if mismatch:
                # Case-by-case pairs of two different suites say nothing about the adapter.
                print(
                    f"{old.id}: [suite_mismatch] {mismatch}: not compared "
                    "(--allow-changed compares anyway)",
                    file=sys.stderr if args.json else sys.stdout,
                )
                refused.add(old.id)
    if len(refused) == len(common):
        return 1
    comparison = compare_runs(
        [suite_run(suite) for suite in before.suites if suite.id not in refused],
        [suite_run(suite) for suite in after.suites if suite.id not in refused],
        baseline=identity(Path(args.before), before),
        settings=settings(
            alpha=args.alpha, max_regression=args.max_regression, allow_changed=args.allow_changed
        ),
    )
    if args.json:
        print(canonical_json(comparison.model_dump(mode="json")))
    else:
        for line in comparison_lines(comparison, verbose=True):
            print(line)
    return 0 if comparison.passed and not refused else 1


def _suite_mismatch(old: SuiteSummary, new: SuiteSummary) -> str:
    """How two reports' runs of one suite id differ in what was run, if they do."""
    differences = []
    if old.version != new.version:
        differences.append(f"version {old.version} -> {new.version}")
    for part in sorted(set(old.digests) | set(new.digests)):
        if old.digests.get(part) != new.digests.get(part):
            differences.append(f"{part} digest differs")
    return ", ".join(differences)


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    compare = commands.add_parser(
        "compare", help="paired comparison of two JSON run reports; exit 1 on a regression"
    )
    compare.add_argument("before", help="the JSON run report of the earlier run")
    compare.add_argument("after", help="the JSON run report of the later run")
    compare.add_argument("--json", action="store_true", help=JSON_HELP)
    compare.add_argument(
        "--alpha",
        type=_probability,
        default=0.05,
        metavar="P",
        help="significance level of the paired test (default: 0.05)",
    )
    compare.add_argument(
        "--max-regression",
        type=_size,
        default=0.0,
        metavar="SIZE",
        help="the drop in a metric tolerated before it counts as a regression (default: 0)",
    )
    compare.add_argument(
        "--allow-changed",
        action="store_true",
        help="compare even when the two runs' suites or cases differ",
    )
    add_max_report_bytes(compare)
    compare.set_defaults(handler=cmd_compare)

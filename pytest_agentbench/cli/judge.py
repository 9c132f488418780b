"""``agentbench judge REPORT``: judged diagnostics for a JSON run report, written beside it.

Each suite's rubrics (``<suite folder>/rubrics/*.yaml``, plus any ``--rubric``)
are put to their panels for every case whose adapter output the report
recorded; each world's declared classifier labels are collected. The result
goes to ``<report>.judgments.json`` and a labels file to label by hand or with
``agentbench review``; the report itself, its outcomes, metrics and gates are
not touched. A rubric's own ``gate:`` is checked only when ``--calibration``
shows its panel's majority calibrated; otherwise the command refuses it.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Final, get_args

from pytest_agentbench.agents.settings import resolve_settings
from pytest_agentbench.agents.sources import CassetteMode
from pytest_agentbench.cli.report_limit import add_max_report_bytes
from pytest_agentbench.judging.panel import JudgeCache
from pytest_agentbench.judging.report_judging import SAMPLES_NOTE, judge_beside, sample_settings
from pytest_agentbench.run.concurrency import parse_concurrency
from pytest_agentbench.sdk.registry import WorldRegistry

GATE_FAILED = 2
BUDGET_OPTIONS: Final = {
    "pricing": "the pricing table judge calls are costed at (every judge model priced)",
    "max_calls": "judge calls this judging may make; checked before each call is sent",
    "max_tokens": "judge tokens this judging may use (needs a per-call token bound)",
    "max_cost": "what this judging may cost, an exact decimal (needs --pricing)",
}
"""The budget of ``agentbench judge``'s own calls (also read from the environment)."""


def cmd_judge(args: argparse.Namespace, registry: WorldRegistry) -> int:
    if args.samples:
        settings = sample_settings(Path.cwd())
        print(SAMPLES_NOTE)
    else:
        settings = resolve_settings(
            ini=lambda key: None,
            environ=os.environ,
            overrides={
                "cassettes": args.cassettes,
                "cassette_mode": args.cassette_mode,
                **{name: getattr(args, name) for name in BUDGET_OPTIONS},
            },
            root=Path.cwd(),
        )
    lines, gates, _ = judge_beside(
        Path(args.report),
        registry=registry,
        settings=settings,
        extra=[Path(path) for path in args.rubric],
        subject_model=args.subject_model,
        cache=None if args.judge_cache is None else JudgeCache(Path(args.judge_cache)),
        calibration=None if args.calibration is None else Path(args.calibration),
        ledger_dir=None if args.ledger is None else Path(args.ledger),
        into_report=args.into_report,
        concurrency=args.concurrency,
        max_report_bytes=args.max_report_bytes,
    )
    print("\n".join(lines))
    return 0 if all(passed for passed, _ in gates.values()) else GATE_FAILED


def concurrency_argument(text: str) -> int:
    try:
        return parse_concurrency(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser(
        "judge", help="judged diagnostics of a JSON run report, by each rubric's panel"
    )
    add_max_report_bytes(parser)
    parser.set_defaults(handler=cmd_judge)
    parser.add_argument("report", help="a JSON run report written with --agentbench-report")
    parser.add_argument(
        "--rubric",
        action="append",
        default=[],
        metavar="FILE",
        help="a rubric file beside the world's and suite's own rubrics/ (repeatable)",
    )
    parser.add_argument("--judge-cache", metavar="DIR", help="content-cache seat verdicts in DIR")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--cassettes", metavar="DIR", help="record/replay judge calls in DIR")
    source.add_argument(
        "--samples",
        action="store_true",
        help="replay the shipped sample cassettes, offline, reaching no endpoint (recorded "
        "against the project's loopback judge server, not a real model)",
    )
    parser.add_argument(
        "--cassette-mode",
        choices=get_args(CassetteMode),
        help="record, replay, auto (replay hits, record misses) or off (default: replay if "
        "the folder exists, else record)",
    )
    parser.add_argument(
        "--subject-model", metavar="MODEL", help="the model under test (default: the LLM setting)"
    )
    parser.add_argument(
        "--calibration", metavar="FILE", help="an `agentbench calibrate --json` file"
    )
    parser.add_argument(
        "--ledger", metavar="DIR", help="write each rubric's judge ledger to DIR/%%judges/"
    )
    parser.add_argument(
        "--into-report",
        action="store_true",
        help="also give the report its `judged` member (outcomes, metrics and gates untouched)",
    )
    parser.add_argument(
        "--concurrency",
        type=concurrency_argument,
        default=1,
        metavar="N",
        help="judge calls in flight at once (1 to 1024); judgments as in a serial judging",
    )
    for name, text in BUDGET_OPTIONS.items():
        parser.add_argument(f"--{name.replace('_', '-')}", metavar=name.upper(), help=text)

"""``agentbench html RUN.json``: draw a JSON run report as one static HTML file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_agentbench.cli.report_limit import add_max_report_bytes
from pytest_agentbench.report.html import write_html_from
from pytest_agentbench.sdk.registry import WorldRegistry


def cmd_html(args: argparse.Namespace, registry: WorldRegistry) -> int:
    source = Path(args.report)
    output = Path(args.output) if args.output else source.with_suffix(".html")
    # Read as a stream, twice: memory holds a small row per case, never the whole report.
    write_html_from(source, output, max_bytes=args.max_report_bytes)
    print(f"wrote {output}")
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    html = commands.add_parser("html", help="draw a JSON run report as one static HTML file")
    html.add_argument("report", help="the JSON run report (--agentbench-report) to draw")
    html.add_argument("-o", "--output", help="where to write (default: REPORT with .html)")
    add_max_report_bytes(html)
    html.set_defaults(handler=cmd_html)

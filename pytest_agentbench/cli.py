"""The ``agentbench`` command: work with suites outside a pytest session.

    agentbench list
    agentbench verify SUITE
    agentbench validate SUITE --predictions FILE [--json]
    agentbench evaluate SUITE (--predictions FILE | --agent NAME) [--json]
    agentbench derive SUITE
    agentbench compare BEFORE.json AFTER.json
    agentbench html RUN.json [-o PATH]

SUITE is a built-in suite id or a suite folder (one holding ``suite.yaml``, or
an authority bundle folder with ``public/`` and ``evaluator/`` side by side).
Exit status: 0 success, 1 a refusal / invalid input / differences, 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pluggy
from pydantic import ValidationError

from pytest_agentbench import hookspecs
from pytest_agentbench.canonical import canonical_json, read_json
from pytest_agentbench.contracts import FailureClass, MetricValue
from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.metrics import aggregate, by_family
from pytest_agentbench.packaged import packaged_suites
from pytest_agentbench.registry import WorldRegistry, load_entry_point_worlds
from pytest_agentbench.report.html import read_report_document, write_html
from pytest_agentbench.report.json_report import RunReport
from pytest_agentbench.session import AgentbenchState, LoadedSuite, Options, SuiteLoader
from pytest_agentbench.stats import mcnemar_exact
from pytest_agentbench.suite import SUITE_FILE, Suite, SuiteConfig, pydantic_refusal


@runtime_checkable
class ValidatesPredictions(Protocol):
    """Optional world capability: shape-check a predictions file without the oracle."""

    def validate_predictions(self, suite: Suite, text: str) -> Any: ...


@runtime_checkable
class DerivesTruth(Protocol):
    """Optional world capability: recompute evaluator truth and list differences."""

    def derive_differences(self, suite: Suite) -> list[str]: ...


def _registry() -> WorldRegistry:
    manager = pluggy.PluginManager("pytest")
    manager.add_hookspecs(hookspecs)
    load_entry_point_worlds(manager)
    return WorldRegistry.from_hook(manager)


def _bundle_config(folder: Path) -> SuiteConfig | None:
    """A suite declaration for an authority bundle in the original public/evaluator layout."""
    if (folder / "public" / "manifest.json").is_file() and (folder / "evaluator").is_dir():
        name = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in folder.name.lower())
        return SuiteConfig(
            id=name.strip("-._") or "bundle",
            version="0",
            world="authority",
            title=folder.name,
            oracle="evaluator",
            options={"public": "public"},
        )
    return None


def load(spec: str, registry: WorldRegistry) -> LoadedSuite:
    loader = SuiteLoader(registry, Path.cwd())
    root = packaged_suites().get(spec)
    folder = Path(spec) if root is None else root
    if (folder / SUITE_FILE).is_file():
        return loader.load(folder)
    config = _bundle_config(folder) if folder.is_dir() else None
    if config is None:
        known = ", ".join(sorted(packaged_suites())) or "none"
        raise AgentbenchError(
            "unknown_suite",
            f"{spec!r} is neither a built-in suite ({known}) nor a suite or bundle folder",
        )
    world = registry.get(config.world)
    suite = Suite(config=config, root=folder.resolve(), display_root=folder.as_posix())
    suite.data = world.load_suite(suite)
    return LoadedSuite(suite=suite, world=world)


def _state(registry: WorldRegistry, timeout: float) -> AgentbenchState:
    options = Options(
        adapter_spec=None,
        timeout=timeout,
        predictions={},
        controls_only=False,
        snapshot=False,
        snapshot_dir=Path("snapshots"),
        report_path=None,
        gates=(),
        junit_case_properties=False,
    )
    return AgentbenchState(
        options=options, registry=registry, loader=SuiteLoader(registry, Path.cwd())
    )


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


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentbenchError("unreadable_predictions", str(exc), file=str(path)) from None


def cmd_list(args: argparse.Namespace, registry: WorldRegistry) -> int:
    for suite_id, root in packaged_suites().items():
        try:
            loaded = load(str(root), registry)
        except AgentbenchError as exc:
            print(f"{suite_id}\t(broken)\t{exc.render()}")
            continue
        count = len(loaded.world.cases(loaded.suite))
        print(f"{suite_id}\t{loaded.world.kind}\t{count} cases\t{loaded.suite.config.title}")
    return 0


def cmd_verify(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry)
    loaded.world.load_oracle(loaded.suite)
    print(f"ok: {loaded.suite.id}: public artifacts and evaluator checksums verified")
    return 0


def cmd_validate(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry)
    if not isinstance(loaded.world, ValidatesPredictions):
        raise AgentbenchError(
            "unsupported_command", f"world kind {loaded.world.kind!r} offers no validator"
        )
    report = loaded.world.validate_predictions(loaded.suite, _read_text(Path(args.predictions)))
    if args.json:
        print(report.json_text())
    else:
        for line in report.render_lines():
            print(line)
    return 0 if report.valid else 1


def cmd_evaluate(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry)
    world, suite = loaded.world, loaded.suite
    if args.predictions:
        path = Path(args.predictions).resolve()
        if isinstance(world, ValidatesPredictions):
            # A document the validator refuses is refused here too, before scoring.
            report = world.validate_predictions(suite, _read_text(path))
            if not report.valid:
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
    state = _state(registry, args.timeout)
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
    if args.json:
        print(
            canonical_json(
                {
                    "suite": suite.id,
                    "metrics": [metric.model_dump(mode="json") for metric in metrics],
                    "cases": {r.case_id: r.outcome.value for r in results},
                }
            )
        )
    else:
        print(f"{suite.id} ({world.kind}): {len(results)} cases")
        for line in _metric_lines(metrics):
            print(line)
    return 0


def cmd_derive(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry)
    if not isinstance(loaded.world, DerivesTruth):
        raise AgentbenchError(
            "unsupported_command", f"world kind {loaded.world.kind!r} cannot derive truth"
        )
    differences = loaded.world.derive_differences(loaded.suite)
    for line in differences:
        print(line)
    if not differences:
        print(f"ok: {loaded.suite.id}: shipped truth equals the truth derived from public data")
    return 1 if differences else 0


def _read_report(path: str) -> RunReport:
    try:
        return RunReport.model_validate(read_json(Path(path)))
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=path) from None


def cmd_compare(args: argparse.Namespace, registry: WorldRegistry) -> int:
    before, after = _read_report(args.before), _read_report(args.after)
    after_suites = {suite.id: suite for suite in after.suites}
    for old in before.suites:
        new = after_suites.get(old.id)
        if new is None:
            print(f"{old.id}: only in {args.before}")
            continue
        print(f"{old.id}:")
        new_metrics = {metric.name: metric for metric in new.metrics}
        for metric in old.metrics:
            other = new_metrics.get(metric.name)
            a = metric.value
            b = None if other is None else other.value
            delta = "" if a is None or b is None else f"  {b - a:+.4f}"
            shown_a = "null" if a is None else f"{a:.4f}"
            shown_b = "null" if b is None else f"{b:.4f}"
            print(f"  {metric.name}: {shown_a} -> {shown_b}{delta}")
        old_cases = {entry.nodeid: entry.result.outcome.value for entry in old.cases}
        new_cases = {entry.nodeid: entry.result.outcome.value for entry in new.cases}
        paired = sorted(set(old_cases) & set(new_cases))
        only_before = sum(
            1 for n in paired if old_cases[n] == "passed" and new_cases[n] != "passed"
        )
        only_after = sum(1 for n in paired if old_cases[n] != "passed" and new_cases[n] == "passed")
        print(
            f"  cases paired: {len(paired)}; passed only before: {only_before}; "
            f"passed only after: {only_after}; McNemar exact p = "
            f"{mcnemar_exact(only_before, only_after):.4g}"
        )
    for suite_id in sorted(set(after_suites) - {suite.id for suite in before.suites}):
        print(f"{suite_id}: only in {args.after}")
    return 0


def cmd_html(args: argparse.Namespace, registry: WorldRegistry) -> int:
    source = Path(args.report)
    output = Path(args.output) if args.output else source.with_suffix(".html")
    write_html(read_report_document(source), output)
    print(f"wrote {output}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentbench", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list the built-in suites")
    verify = commands.add_parser("verify", help="check a suite's digests and checksums")
    verify.add_argument("suite")
    validate = commands.add_parser(
        "validate", help="check a predictions file's shape without evaluator access"
    )
    validate.add_argument("suite")
    validate.add_argument("--predictions", required=True)
    validate.add_argument("--json", action="store_true")
    evaluate = commands.add_parser("evaluate", help="score predictions or a built-in agent")
    evaluate.add_argument("suite")
    source = evaluate.add_mutually_exclusive_group(required=True)
    source.add_argument("--predictions")
    source.add_argument("--agent")
    evaluate.add_argument("--json", action="store_true")
    evaluate.add_argument("--timeout", type=float, default=300.0)
    derive = commands.add_parser(
        "derive", help="recompute evaluator truth from public data and list differences"
    )
    derive.add_argument("suite")
    compare = commands.add_parser("compare", help="compare two JSON run reports")
    compare.add_argument("before")
    compare.add_argument("after")
    html = commands.add_parser("html", help="draw a JSON run report as one static HTML file")
    html.add_argument("report")
    html.add_argument("-o", "--output", help="where to write (default: REPORT with .html)")
    return parser


COMMANDS = {
    "list": cmd_list,
    "verify": cmd_verify,
    "validate": cmd_validate,
    "evaluate": cmd_evaluate,
    "derive": cmd_derive,
    "compare": cmd_compare,
    "html": cmd_html,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args, _registry())
    except AgentbenchError as exc:
        print(f"agentbench: {exc.render()}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""The ``agentbench`` command: work with suites outside a pytest session.

    agentbench list
    agentbench verify SUITE
    agentbench validate SUITE --predictions FILE [--json]
    agentbench evaluate SUITE (--predictions FILE | --agent NAME) [--json]
    agentbench derive SUITE
    agentbench baselines SUITE [-o FILE]
    agentbench compare BEFORE.json AFTER.json [--json] [--alpha P] [--max-regression SIZE]
                       [--allow-changed]
    agentbench rescore PATH [--json] [--suite ID=FOLDER ...] [--allow CODE_OR_METRIC ...]
                                                               (our run report or record folder)
    agentbench rescore REPORT --suite SUITE [--json]           (a world's original report)
    agentbench promote BASELINE CANDIDATE --suite SUITE [--json]
    agentbench check SUITE [--json] [--report FILE]
    agentbench record SUITE CASE (--agent NAME | --adapter MODULE:ATTR) --out DIR
    agentbench replay SUITE EPISODE
    agentbench audit-ledger PATH
    agentbench audit REPORT LEDGER_DIR [--pricing FILE]
    agentbench html RUN.json [-o PATH]
    agentbench new-world NAME [-C DIR]

SUITE is a built-in suite id or a suite folder: one holding ``suite.yaml``, or
a published layout that a registered world recognises (its ``recognise`` hook).
Exit status: 0 success, 1 a refusal / invalid input / differences, 2 usage.
``check`` (the negative-control gate) exits 0 yes, 1 input refused, 2 no, 64 usage.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from pytest_agentbench.cli import artifact as artifact_cli
from pytest_agentbench.cli import calibrate as calibrate_cli
from pytest_agentbench.cli import judge as judge_cli
from pytest_agentbench.cli import new_world
from pytest_agentbench.cli import review as review_cli
from pytest_agentbench.cli.audit import add_audit_command, cmd_audit
from pytest_agentbench.cli.rescore import (
    DIFFERENCE_CODES,
    failing,
    is_own_record,
    rescore,
    rescore_lines,
    unresolvable,
)
from pytest_agentbench.ledger import audit_ledger
from pytest_agentbench.report.baseline import identity, settings, suite_run
from pytest_agentbench.report.comparison_lines import comparison_lines
from pytest_agentbench.report.html import read_report_document, write_html
from pytest_agentbench.report.json_report import RunReport
from pytest_agentbench.report.summary import SuiteSummary
from pytest_agentbench.run.adapters import kind_protocols, load_adapter
from pytest_agentbench.run.control_run import (
    declared_controls,
    run_control,
    ungraded_agents,
    ungraded_verdict,
)
from pytest_agentbench.run.controls_oracle import suite_control_oracle
from pytest_agentbench.run.session import (
    AgentbenchState,
    LoadedSuite,
    Options,
    SuiteLoader,
    oracle_of,
)
from pytest_agentbench.scoring.comparison import compare_runs
from pytest_agentbench.scoring.metrics import aggregate, by_family
from pytest_agentbench.sdk.canonical import (
    canonical_json,
    decode_lines_lenient,
    read_bytes,
    read_json,
    unreadable,
)
from pytest_agentbench.sdk.capabilities import (
    DeclaresScope,
    DerivesTruth,
    PromotesReports,
    RecordsEpisodes,
    RescoresReports,
    ValidatesPredictions,
    WarnsOnVerify,
    WritesBaselines,
)
from pytest_agentbench.sdk.contracts import FailureClass, MetricValue
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import WorldRegistry, installed_registry
from pytest_agentbench.sdk.runner import parse_timeout
from pytest_agentbench.sdk.suite import pydantic_refusal


def _registry() -> WorldRegistry:
    return installed_registry()


def load(spec: str, registry: WorldRegistry) -> LoadedSuite:
    """A built-in suite by id, or a suite folder: ``suite.yaml`` or a recognised layout."""
    loader = SuiteLoader(registry, Path.cwd())
    shipped = registry.suites()
    root = shipped.get(spec)
    folder = (Path(spec) if root is None else root).resolve()
    if folder.is_dir() and loader.is_suite_folder(folder):
        return loader.load(folder)
    known = ", ".join(sorted(shipped)) or "none"
    raise AgentbenchError(
        "unknown_suite",
        f"{spec!r} is neither a built-in suite ({known}) nor a suite folder (one holding "
        "suite.yaml, or a published layout a registered world recognises)",
    )


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
    """A predictions file's text; a line that is not UTF-8 is refused by line, not the file."""
    if not path.is_file():
        raise AgentbenchError("unreadable_predictions", "not a regular file", file=str(path))
    try:
        return decode_lines_lenient(read_bytes(path))
    except AgentbenchError as exc:
        if exc.code == "input_too_large":
            raise
        raise AgentbenchError("unreadable_predictions", exc.reason, file=str(path)) from None


def cmd_list(args: argparse.Namespace, registry: WorldRegistry) -> int:
    for suite_id, root in registry.suites().items():
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
    oracle_of(loaded)
    if isinstance(loaded.world, WarnsOnVerify):
        for warning in loaded.world.verify_warnings(loaded.suite):
            print(f"agentbench: warning: {warning}", file=sys.stderr)
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
    scope = world.measurement_scope(suite) if isinstance(world, DeclaresScope) else None
    if args.json:
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


def cmd_baselines(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry)
    if not isinstance(loaded.world, WritesBaselines):
        raise AgentbenchError(
            "unsupported_command", f"world kind {loaded.world.kind!r} writes no baseline records"
        )
    data = loaded.world.baseline_records(loaded.suite)
    if args.output is None:
        sys.stdout.write(data.decode("utf-8"))
        return 0
    try:
        Path(args.output).write_bytes(data)
    except OSError as exc:
        raise AgentbenchError("unwritable_output", str(exc.strerror), file=args.output) from None
    print(f"ok: {loaded.suite.id}: baseline records written to {args.output}")
    return 0


def cmd_check(args: argparse.Namespace, registry: WorldRegistry) -> int:
    """Every declared control run and judged; the verdict quoted with the oracle's identity."""
    loaded = load(args.suite, registry)
    world, suite = loaded.world, loaded.suite
    oracle = suite_control_oracle(world, suite, world.dimensions(suite), _shown)
    if oracle is None:
        raise AgentbenchError(
            "no_control_oracle",
            f"suite {suite.id!r} declares no negative controls (no control oracle in "
            f"{suite.oracle_root})",
        )
    declared = declared_controls(loaded, oracle)
    state = _state(registry, args.timeout)
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
        _write_text(Path(args.report), canonical_json(report) + "\n")
    if args.json:
        print(canonical_json(report))
    else:
        identity = oracle.identity
        print(
            f"{suite.id}: oracle {identity.oracle_id} {identity.oracle_version} "
            f"sha256:{identity.digest_sha256} ({identity.file})"
            + (f"; {identity.note}" if identity.note else "")
        )
        for verdict in verdicts:
            print(f"  {'PASS' if verdict.passed else 'FAIL'}  {verdict.summary()}")
        held = sum(1 for verdict in verdicts if verdict.passed)
        print(f"{'yes' if passed else 'no'}: {held} of {len(verdicts)} checks hold")
    return 0 if passed else 2


def _recorder(loaded: LoadedSuite) -> RecordsEpisodes:
    if not isinstance(loaded.world, RecordsEpisodes):
        raise AgentbenchError(
            "unsupported_command", f"world kind {loaded.world.kind!r} records no episodes"
        )
    return loaded.world


def cmd_record(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry)
    world = _recorder(loaded)
    if args.adapter:
        agent_id, adapter = args.adapter, load_adapter(args.adapter, [kind_protocols(loaded.world)])
    else:
        agents = {agent.agent_id: agent for agent in loaded.world.control_agents(loaded.suite)}
        if args.agent not in agents:
            raise AgentbenchError(
                "unknown_agent",
                f"no built-in agent {args.agent!r} (known: {', '.join(sorted(agents))})",
                field="--agent",
            )
        agent_id, adapter = args.agent, agents[args.agent].factory()
    for line in world.record_episode(loaded.suite, args.case, agent_id, adapter, Path(args.out)):
        print(line)
    return 0


def cmd_replay(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry)
    for line in _recorder(loaded).replay_episode(loaded.suite, Path(args.episode)):
        print(line)
    return 0


def cmd_audit_ledger(args: argparse.Namespace, registry: WorldRegistry) -> int:
    reading = audit_ledger(Path(args.path))
    print(
        f"ok: {args.path}: {len(reading.rows)} rows verified, terminal {reading.terminal_kind}, "
        f"sha256:{reading.digest}"
    )
    return 0


def _shown(path: Path) -> str:
    """``path`` relative to the working directory where it lies below it."""
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def _write_text(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise AgentbenchError("unwritable_report", str(exc), file=str(path)) from None


def _read_report(path: str) -> RunReport:
    if not Path(path).is_file():
        # A folder, or a device such as /dev/zero that would be read forever.
        raise AgentbenchError("unreadable_file", "not a regular file (a run report)", file=path)
    try:
        return RunReport.model_validate(read_json(Path(path)))
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=path) from None


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
    before, after = _read_report(args.before), _read_report(args.after)
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


def _timeout(text: str) -> float:
    try:
        return parse_timeout(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"[invalid_timeout] {exc}") from None


def cmd_rescore(args: argparse.Namespace, registry: WorldRegistry) -> int:
    path = Path(args.path)
    # Our own run report (by its schema field) or record folder is re-scored by the
    # core; anything else is a world's original-format report, read by that world.
    if is_own_record(path):
        return _rescore_recorded(path, args, registry)
    if len(args.suite) != 1 or "=" in args.suite[0]:
        raise AgentbenchError(
            "unrecognised_report",
            "neither an agentbench run report nor an --agentbench-record folder: name the "
            "suite whose world reads this report with one --suite SUITE",
            file=str(path),
            field="--suite",
        )
    loaded = load(args.suite[0], registry)
    if not isinstance(loaded.world, RescoresReports):
        raise AgentbenchError(
            "unsupported_command", f"world kind {loaded.world.kind!r} cannot rescore a report"
        )
    records, differing = loaded.world.rescore_report(loaded.suite, path)
    if args.json:
        print(canonical_json(records))
    else:
        for record in records:
            print(canonical_json(record))
    for receipt in differing:
        print(f"agentbench: differs from the committed score: {receipt}", file=sys.stderr)
    return 1 if differing else 0


def _rescore_recorded(path: Path, args: argparse.Namespace, registry: WorldRegistry) -> int:
    """Grade a run's recorded outputs again against today's suites and oracles."""
    folders: dict[str, str] = {}
    for text in args.suite:
        suite_id, sep, folder = text.partition("=")
        if sep and suite_id and folder:
            folders[suite_id] = folder
        elif not sep:  # a suite folder or built-in id: its own id names it
            folders[load(text, registry).suite.id] = text
        else:
            raise AgentbenchError(
                "invalid_suite", f"{text!r} is not ID=FOLDER or SUITE", field="--suite"
            )

    def locate(suite_id: str) -> LoadedSuite:
        for candidate in (folders.get(suite_id), suite_id, f"suites/{suite_id}"):
            if candidate is None:
                continue
            try:
                loaded = load(candidate, registry)
            except AgentbenchError as exc:
                if exc.code == "unknown_suite":
                    continue
                raise
            if loaded.suite.id == suite_id:
                return loaded
        raise unresolvable(suite_id)

    suites = rescore(path, _state(registry, 300.0), locate, allow=frozenset(args.allow))
    if args.json:
        print(canonical_json([suite.model_dump(mode="json") for suite in suites]))
    else:
        for line in rescore_lines(suites):
            print(line)
    return 1 if failing(suites) else 0


def cmd_promote(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = load(args.suite, registry)
    if not isinstance(loaded.world, PromotesReports):
        raise AgentbenchError(
            "unsupported_command", f"world kind {loaded.world.kind!r} has no promotion gate"
        )
    result = loaded.world.promote_reports(
        loaded.suite,
        Path(args.baseline),
        Path(args.candidate),
        baseline_adapter=args.baseline_adapter,
        candidate_adapter=args.candidate_adapter,
    )
    if args.json:
        print(canonical_json(result))
    else:
        print(f"promotion {'passed' if result.get('passed') else 'failed'}")
        for failure in result.get("failures") or []:
            print(f"  {failure}")
    return 0 if result.get("passed") else 1


def cmd_html(args: argparse.Namespace, registry: WorldRegistry) -> int:
    source = Path(args.report)
    output = Path(args.output) if args.output else source.with_suffix(".html")
    write_html(read_report_document(source), output)
    print(f"wrote {output}")
    return 0


class _CommandParser(argparse.ArgumentParser):
    """Argument parser whose usage errors exit with ``usage_status`` (argparse's 2 by default).

    Options are never abbreviated, and a mistyped option is named, with the
    closest known one, ahead of whatever else argparse would have said (a
    missing required option is the usual consequence of a typo).
    """

    usage_status = 2

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._given: list[str] = []

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(self._given, namespace)

    def error(self, message: str) -> NoReturn:
        # A parser with commands cannot tell a command's options from mistyped ones of its own.
        unknown = None if self._subparsers else unknown_option_message(self, self._given)
        self.print_usage(sys.stderr)
        self.exit(self.usage_status, f"{self.prog}: error: {unknown or message}\n")


def unknown_option_message(parser: argparse.ArgumentParser, given: Sequence[str]) -> str | None:
    """``unrecognised option --agnet (did you mean --agent?)`` for the first unknown option."""
    known = [option for option in parser._option_string_actions if option.startswith("--")]
    for token in given:
        if token == "--":
            break
        if not token.startswith("--"):
            continue
        option = token.split("=", 1)[0]
        if option in parser._option_string_actions:
            continue
        close = difflib.get_close_matches(option, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"unrecognised option {option}{hint}"
    return None


GATE_USAGE = 64
"""``check`` reserves 2 for "no", so its usage errors exit with EX_USAGE."""

SUITE_HELP = "a built-in suite id (see `agentbench list`) or a suite folder"
JSON_HELP = "print JSON instead of text"
TIMEOUT_HELP = "per-case limit in seconds, 0 for none (default: 300)"


def cmd_new_world(args: argparse.Namespace, registry: WorldRegistry) -> int:
    """Needs no world: the scaffold is the package a new world starts from."""
    return new_world.cmd_new_world(args)


def build_parser() -> _CommandParser:
    parser = _CommandParser(prog="agentbench", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser)
    commands.add_parser("list", help="list the built-in suites")
    verify = commands.add_parser("verify", help="check a suite's digests and checksums")
    verify.add_argument("suite", help=SUITE_HELP)
    validate = commands.add_parser(
        "validate", help="check a predictions file's shape without evaluator access"
    )
    validate.add_argument("suite", help=SUITE_HELP)
    validate.add_argument(
        "--predictions", required=True, metavar="FILE", help="the predictions file to check"
    )
    validate.add_argument("--json", action="store_true", help=JSON_HELP)
    evaluate = commands.add_parser("evaluate", help="score predictions or a built-in agent")
    evaluate.add_argument("suite", help=SUITE_HELP)
    source = evaluate.add_mutually_exclusive_group(required=True)
    source.add_argument("--predictions", metavar="FILE", help="a predictions file to score")
    source.add_argument("--agent", metavar="NAME", help="a built-in agent to run and score")
    evaluate.add_argument("--json", action="store_true", help=JSON_HELP)
    evaluate.add_argument(
        "--timeout", type=_timeout, default=300.0, metavar="SECONDS", help=TIMEOUT_HELP
    )
    derive = commands.add_parser(
        "derive", help="recompute evaluator truth from public data and list differences"
    )
    derive.add_argument("suite", help=SUITE_HELP)
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
    html = commands.add_parser("html", help="draw a JSON run report as one static HTML file")
    html.add_argument("report", help="the JSON run report (--agentbench-report) to draw")
    html.add_argument("-o", "--output", help="where to write (default: REPORT with .html)")
    _add_capability_commands(commands)
    new_world.add_parser(commands)
    return parser


def _add_capability_commands(commands: argparse._SubParsersAction[_CommandParser]) -> None:
    """Commands served by an optional world capability (or, for audit-ledger, by none)."""
    baselines = commands.add_parser(
        "baselines", help="regenerate a candidate's baseline-records file"
    )
    baselines.add_argument("suite", help=SUITE_HELP)
    baselines.add_argument("-o", "--output", help="write to FILE instead of standard output")
    rescore_parser = commands.add_parser(
        "rescore",
        help="grade a run's recorded outputs again, or a world's original report's receipts",
    )
    rescore_parser.add_argument(
        "path", help="a JSON run report, an --agentbench-record folder, or a world's report"
    )
    rescore_parser.add_argument(
        "--suite",
        action="append",
        default=[],
        metavar="SUITE | ID=FOLDER",
        help="the suite whose world reads a foreign report; for our own: where a suite lives",
    )
    rescore_parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="CODE_OR_METRIC",
        help="a difference that does not fail the command: its code "
        f"({', '.join(DIFFERENCE_CODES)}) or, for metric_changed, the metric's name; "
        "repeatable (any other difference exits 1)",
    )
    rescore_parser.add_argument("--json", action="store_true", help=JSON_HELP)
    promote = commands.add_parser("promote", help="the promotion gate between two reports")
    promote.add_argument("baseline", help="the report of the adapter in service")
    promote.add_argument("candidate", help="the report of the adapter proposed to replace it")
    promote.add_argument("--suite", required=True, help=SUITE_HELP)
    promote.add_argument(
        "--baseline-adapter",
        default="gno-mcp",
        metavar="NAME",
        help="the baseline's adapter name in its report (default: gno-mcp)",
    )
    promote.add_argument(
        "--candidate-adapter",
        default="capsule",
        metavar="NAME",
        help="the candidate's adapter name in its report (default: capsule)",
    )
    promote.add_argument("--json", action="store_true", help=JSON_HELP)
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
    record = commands.add_parser(
        "record", help="run one case with a built-in agent, writing its execution ledger"
    )
    record.add_argument("suite", help=SUITE_HELP)
    record.add_argument("case", help="the id of the case to run")
    recorded = record.add_mutually_exclusive_group(required=True)
    recorded.add_argument("--agent", help="a built-in agent")
    recorded.add_argument("--adapter", metavar="MODULE:ATTR", help="your adapter")
    record.add_argument("--out", required=True, help="directory for the ledger and episode")
    replay = commands.add_parser(
        "replay", help="re-execute a recorded episode from its decision tape"
    )
    replay.add_argument("suite", help=SUITE_HELP)
    replay.add_argument("episode", help="the episode that `agentbench record --out` wrote")
    audit = commands.add_parser("audit-ledger", help="verify an execution ledger")
    audit.add_argument(
        "path", help="the ledger file (`agentbench record --out`, `--agentbench-ledger`)"
    )
    add_audit_command(commands)
    judge_cli.add_parser(commands)
    calibrate_cli.add_parser(commands)
    review_cli.add_parser(commands)
    artifact_cli.add_parser(commands)


COMMANDS = {
    "list": cmd_list,
    "verify": cmd_verify,
    "validate": cmd_validate,
    "evaluate": cmd_evaluate,
    "derive": cmd_derive,
    "baselines": cmd_baselines,
    "compare": cmd_compare,
    "rescore": cmd_rescore,
    "promote": cmd_promote,
    "check": cmd_check,
    "record": cmd_record,
    "replay": cmd_replay,
    "audit-ledger": cmd_audit_ledger,
    "audit": cmd_audit,
    "html": cmd_html,
    "new-world": cmd_new_world,
    "judge": judge_cli.cmd_judge,
    "calibrate": calibrate_cli.cmd_calibrate,
    "review": review_cli.cmd_review,
    "artifact": artifact_cli.cmd_artifact,
}


def _subcommand_parser(parser: _CommandParser, command: str) -> _CommandParser:
    """The parser of ``command``: it knows the options a leftover argument was meant as."""
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        if isinstance(action, argparse._SubParsersAction):
            chosen: _CommandParser = action.choices[command]
            return chosen
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # Left over after the command's own parser: a usage error of that command.
        command = _subcommand_parser(parser, args.command)
        command.usage_status = GATE_USAGE if args.command == "check" else 2
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return COMMANDS[args.command](args, _registry())
    except AgentbenchError as exc:
        print(f"agentbench: {exc.render()}", file=sys.stderr)
        return 1
    except OSError as exc:  # a read no reader named: still one line, never a traceback
        print(f"agentbench: {unreadable(exc, exc.filename or '?').render()}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

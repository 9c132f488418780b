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
    agentbench new-pack NAME [-C DIR]
    agentbench list-packs [--json]
    agentbench validate-spec SPEC.yaml [--json]
    agentbench worker-server [HOST:PORT] [--chdir DIR] [--once N]

SUITE is a built-in suite id or a suite folder: one holding ``suite.yaml``, or
a published layout that a registered world recognises (its ``recognise`` hook).
Exit status: 0 success, 1 a refusal / invalid input / differences, 2 usage.
``check`` (the negative-control gate) exits 0 yes, 1 input refused, 2 no, 64 usage.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, NoReturn

from pytest_agentbench.sdk.canonical import unreadable
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import WorldRegistry, installed_registry

Handler = Callable[[argparse.Namespace, WorldRegistry], int]
"""What a subcommand's ``add_parser`` sets as its ``handler`` default."""

SUBCOMMANDS: Final[tuple[tuple[str, str], ...]] = (
    ("list", "list_suites"),
    ("verify", "verify"),
    ("validate", "validate"),
    ("evaluate", "evaluate"),
    ("derive", "derive"),
    ("compare", "compare"),
    ("html", "html"),
    ("baselines", "baselines"),
    ("rescore", "rescore"),
    ("promote", "promote"),
    ("check", "check"),
    ("record", "record"),
    ("replay", "replay"),
    ("audit-ledger", "audit_ledger"),
    ("audit", "audit"),
    ("judge", "judge"),
    ("calibrate", "calibrate"),
    ("review", "review"),
    ("artifact", "artifact"),
    ("new-world", "new_world"),
    ("new-pack", "new_pack"),
    ("list-packs", "list_packs"),
    ("validate-spec", "validate_spec"),
    ("worker-server", "worker_server"),
)
"""Each subcommand's name and module (in this package), in ``--help`` order. The module's
``add_parser`` adds its parser and, as ``handler``, its command. A command imports its
own module alone: the others' (report records, judges, ledgers) would cost it theirs."""


def _registry() -> WorldRegistry:
    return installed_registry()


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


def build_parser(command: str | None = None) -> _CommandParser:
    """The command line's parser: of every subcommand, or of ``command`` alone."""
    parser = _CommandParser(prog="agentbench", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser)
    for name, module in SUBCOMMANDS:
        if command is None or name == command:
            importlib.import_module(f"{__package__}.{module}").add_parser(commands)
    return parser


def _named_command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` begins with; ``None`` when it does not name one first
    (``--help``, a mistyped command), whose answer lists every subcommand."""
    names = {name for name, _module in SUBCOMMANDS}
    return argv[0] if argv and argv[0] in names else None


def _subcommand_parser(parser: _CommandParser, command: str) -> _CommandParser:
    """The parser of ``command``: it knows the options a leftover argument was meant as."""
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        if isinstance(action, argparse._SubParsersAction):
            chosen: _CommandParser = action.choices[command]
            return chosen
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_named_command(given))
    args, extra = parser.parse_known_args(given)
    if extra:
        # Left over after the command's own parser: a usage error of that command.
        command = _subcommand_parser(parser, args.command)
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    handler: Handler = args.handler
    try:
        return handler(args, _registry())
    except AgentbenchError as exc:
        print(f"agentbench: {exc.render()}", file=sys.stderr)
        return 1
    except OSError as exc:  # a read no reader named: still one line, never a traceback
        print(f"agentbench: {unreadable(exc, exc.filename or '?').render()}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

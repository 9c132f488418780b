"""What the ``agentbench`` subcommands share: suites by id or folder, a session state, readers."""

from __future__ import annotations

import argparse
import configparser
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

from pytest_agentbench.run.options import Options
from pytest_agentbench.run.session import AgentbenchState, LoadedSuite, SuiteLoader
from pytest_agentbench.sdk.canonical import decode_lines_lenient, read_bytes
from pytest_agentbench.sdk.capabilities import RecordsEpisodes
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import write_file
from pytest_agentbench.sdk.registry import WorldRegistry
from pytest_agentbench.sdk.runner import parse_timeout

SUITE_HELP: Final = "a built-in suite id (see `agentbench list`) or a suite folder"
JSON_HELP: Final = "print JSON instead of text"
TIMEOUT_HELP: Final = "per-case limit in seconds, 0 for none (default: 300)"


ORACLE_ROOT_HELP: Final = (
    "a folder outside the working folder where a suite's oracle may lie, beside the "
    "ini setting agentbench_oracle_roots (repeatable; a suite folder named on the "
    "command line needs none for an oracle inside it)"
)
CLI_ROOTS_HINT: Final = (
    "list it in the ini setting agentbench_oracle_roots or give --oracle-root to allow it"
)
INI_FILES: Final = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)
"""pytest's configuration files, in the order it prefers them within one folder."""


def add_oracle_root(parser: argparse.ArgumentParser) -> None:
    """``--oracle-root DIR``, repeatable, on a command that loads suites."""
    parser.add_argument(
        "--oracle-root", action="append", default=[], metavar="DIR", help=ORACLE_ROOT_HELP
    )


def _pytest_section(path: Path) -> Mapping[str, object] | None:
    """The pytest settings of one configuration file, or None where it holds none."""
    try:
        if path.suffix == ".toml":
            document = tomllib.loads(path.read_text(encoding="utf-8"))
            if path.name == "pyproject.toml":
                tool = document.get("tool", {})
                table = tool.get("pytest") if isinstance(tool, dict) else None
                if isinstance(table, dict) and isinstance(table.get("ini_options"), dict):
                    return cast("dict[str, object]", table["ini_options"])
                return cast("dict[str, object]", table) if isinstance(table, dict) else None
            table = document.get("pytest")
            return cast("dict[str, object]", table) if isinstance(table, dict) else {}
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(path.read_text(encoding="utf-8"), source=str(path))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, configparser.Error) as exc:
        raise AgentbenchError("invalid_ini", f"cannot be read: {exc}", file=str(path)) from None
    section = "tool:pytest" if path.name == "setup.cfg" else "pytest"
    if parser.has_section(section):
        return dict(parser.items(section))
    return {} if path.name in ("pytest.ini", ".pytest.ini") else None


def ini_oracle_roots(start: Path) -> list[Path]:
    """``agentbench_oracle_roots`` of the configuration file pytest would read from ``start``.

    The first folder at or above ``start`` holding one of pytest's configuration
    files with a pytest section decides, as it does for pytest run there; the
    setting's folders are relative to that file's folder.
    """
    for folder in (start, *start.parents):
        for name in INI_FILES:
            path = folder / name
            if not path.is_file():
                continue
            section = _pytest_section(path)
            if section is None:
                continue
            value = section.get("agentbench_oracle_roots", [])
            if isinstance(value, str):
                entries = shlex.split(value)
            elif isinstance(value, list) and all(isinstance(item, str) for item in value):
                entries = [str(item) for item in value]
            else:
                raise AgentbenchError(
                    "invalid_ini",
                    "not a list of folders",
                    file=str(path),
                    field="agentbench_oracle_roots",
                )
            return [folder / entry for entry in entries]
    return []


def suite_loader(registry: WorldRegistry, oracle_roots: Sequence[str] = ()) -> SuiteLoader:
    """The command's loader: the working folder is the project; the ini's and the
    command line's oracle roots are allowed beside it."""
    cwd = Path.cwd()
    roots = [*ini_oracle_roots(cwd), *(cwd / root for root in oracle_roots)]
    return SuiteLoader(registry, cwd, roots, roots_hint=CLI_ROOTS_HINT)


def load(spec: str, registry: WorldRegistry, oracle_roots: Sequence[str] = ()) -> LoadedSuite:
    """A built-in suite by id, or a suite folder: ``suite.yaml`` or a recognised layout.

    A folder named here is trusted as its suite's oracle (a published layout keeps
    it inside); an oracle elsewhere must lie in the project or an oracle root.
    """
    loader = suite_loader(registry, oracle_roots)
    shipped = registry.suites()
    root = shipped.get(spec)
    folder = (Path(spec) if root is None else root).resolve()
    if folder.is_dir() and loader.is_suite_folder(folder):
        if root is None:
            loader.trust_named(folder)
        return loader.load(folder)
    known = ", ".join(sorted(shipped)) or "none"
    raise AgentbenchError(
        "unknown_suite",
        f"{spec!r} is neither a built-in suite ({known}) nor a suite folder (one holding "
        "suite.yaml, or a published layout a registered world recognises)",
    )


def command_state(registry: WorldRegistry, timeout: float) -> AgentbenchState:
    """A session state for running cases outside pytest: no adapter, report or gate options."""
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


def read_predictions_text(path: Path) -> str:
    """A predictions file's text; a line that is not UTF-8 is refused by line, not the file."""
    if not path.is_file():
        raise AgentbenchError("unreadable_predictions", "not a regular file", file=str(path))
    try:
        return decode_lines_lenient(read_bytes(path))
    except AgentbenchError as exc:
        if exc.code == "input_too_large":
            raise
        raise AgentbenchError("unreadable_predictions", exc.reason, file=str(path)) from None


def recorder(loaded: LoadedSuite) -> RecordsEpisodes:
    """The suite's world as an episode recorder, or ``unsupported_command``."""
    if not isinstance(loaded.world, RecordsEpisodes):
        raise AgentbenchError(
            "unsupported_command", f"world kind {loaded.world.kind!r} records no episodes"
        )
    return loaded.world


def shown(path: Path) -> str:
    """``path`` relative to the working directory where it lies below it."""
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def write_text(path: Path, text: str) -> None:
    """Write a report file, whole or not at all; a failure is ``unwritable_report`` naming it."""
    write_file(path, text, code="unwritable_report")


def timeout_seconds(text: str) -> float:
    """``--timeout`` as argparse reads it: seconds, 0 for none."""
    try:
        return parse_timeout(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"[invalid_timeout] {exc}") from None


def world_providing(
    registry: WorldRegistry, capability: type[object], what: str, kind: str | None = None
) -> Any:
    """The world that provides ``capability``: ``kind``'s, else the one installed world that does.

    ``what`` names what the command wants of the world (``"episode artefact readers"``).
    A world kind that fails to load is passed over when looking among all of them.
    """
    kinds = [kind] if kind is not None else registry.kinds()
    found: dict[str, object] = {}
    for each in kinds:
        try:
            world = registry.get(each)
        except AgentbenchError:
            if kind is not None:
                raise
            continue  # a broken world kind provides nothing; the others still may
        if isinstance(world, capability):
            found[each] = world
    if kind is not None and not found:
        raise AgentbenchError("unsupported_command", f"world kind {kind!r} has no {what}")
    if len(found) != 1:
        names = ", ".join(sorted(found)) or "none"
        raise AgentbenchError(
            "unsupported_command",
            f"{len(found)} installed world kinds have {what} ({names}): "
            "name a suite of the one meant (--suite)",
        )
    return next(iter(found.values()))


def write_new_folder(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` (relative path -> text) into the new folder ``root``.

    ``target_exists`` if ``root`` exists: a scaffold never writes into an existing folder.
    """
    if root.exists():
        raise AgentbenchError(
            "target_exists", "refusing to write into an existing folder", file=str(root)
        )
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root

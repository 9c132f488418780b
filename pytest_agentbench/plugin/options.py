"""Every pytest option and ini key of the plugin, and whether a run uses any of them.

Registering them imports nothing but pytest: the plugin sits in every pytest
process of an environment where it is installed, and ``pytest --help`` lists
them all whether or not a run has benchmarks. The constants their help texts
and defaults need live here for the same reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, get_args

from pytest_agentbench.agents.sources import RUN_LIMITS, SOURCES, CassetteMode
from pytest_agentbench.run.defaults import DEFAULT_MAX_OUTPUT_BYTES

if TYPE_CHECKING:
    import pytest

# The readers' bounds (sdk/canonical.py's InputLimits defaults, repeated so that
# registering the ini keys imports nothing but pytest).
INPUT_LIMIT_KEYS: dict[str, tuple[str, int]] = {
    "max_bytes": ("agentbench_max_input_bytes", 16 * 1024 * 1024),
    "max_depth": ("agentbench_max_input_depth", 100),
    "max_yaml_aliases": ("agentbench_max_yaml_aliases", 10_000),
}

MAX_REPORT_BYTES_KEY = "agentbench_max_report_bytes"
"""The whole-file limit of the run reports ``--agentbench-resume`` and ``--agentbench-baseline``
read; empty (the default) for none: each value of a report is bounded on its own."""


def max_report_bytes(config: pytest.Config) -> int | None:
    """``agentbench_max_report_bytes``: a whole number >= 1, or ``None`` when unset."""
    text = str(config.getini(MAX_REPORT_BYTES_KEY)).strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        # Imported here: registering the options imports nothing but pytest.
        from pytest_agentbench.sdk.errors import AgentbenchError

        raise AgentbenchError(
            "invalid_input_limit",
            f"{text!r} is not a whole number >= 1",
            field=MAX_REPORT_BYTES_KEY,
        )
    return int(text)


_DEFAULTS: dict[str, dict[str, Any]] = {"options": {}, "ini": {}}
"""Each registered option's default by dest, each ini key's by name (same in every run)."""


class _Recording:
    """Registers options and ini keys while noting each one's name and default."""

    def __init__(self, parser: pytest.Parser) -> None:
        self.parser = parser
        self.group = parser.getgroup("agentbench", "agent benchmarks (pytest-agentbench)")
        self.options: dict[str, Any] = {}
        self.ini: dict[str, Any] = {}

    def option(self, name: str, **kwargs: Any) -> None:
        dest = name.removeprefix("--").replace("-", "_")
        # The destination pytest would derive, given: without it pytest compares it with
        # every registered option's, about a millisecond for our 49 in every pytest process.
        # argparse still refuses an option name registered twice.
        self.group.addoption(name, dest=dest, **kwargs)
        self.options[dest] = kwargs.get("default")

    def addini(self, name: str, help: str, **kwargs: Any) -> None:
        self.parser.addini(name, help, **kwargs)
        self.ini[name] = kwargs.get("default")


def _add_input_limits(r: _Recording) -> None:
    """The readers' bounds, and the run reports' whole-file one."""
    r.addini(
        INPUT_LIMIT_KEYS["max_bytes"][0],
        "largest JSON, JSONL or YAML file (or document) read, in bytes",
        default=str(INPUT_LIMIT_KEYS["max_bytes"][1]),
    )
    r.addini(
        INPUT_LIMIT_KEYS["max_depth"][0],
        "deepest nesting of objects and arrays read from JSON or YAML",
        default=str(INPUT_LIMIT_KEYS["max_depth"][1]),
    )
    r.addini(
        INPUT_LIMIT_KEYS["max_yaml_aliases"][0],
        "most YAML aliases in one document, each counted with the aliases it repeats",
        default=str(INPUT_LIMIT_KEYS["max_yaml_aliases"][1]),
    )
    r.addini(
        MAX_REPORT_BYTES_KEY,
        "largest run report --agentbench-resume or --agentbench-baseline reads, in bytes "
        "(default: no limit)",
        default="",
    )


def _add_llm_settings(r: _Recording) -> None:
    """The chat-model agent's provider, run limits and settings (one ini key each)."""
    r.option(
        "--agentbench-llm-provider",
        metavar="NAME",
        help="the chat-model agent's API: openai (-compatible, the default), anthropic, gemini",
    )
    for name, (metavar, text) in RUN_LIMITS.items():
        r.option(f"--agentbench-{name.replace('_', '-')}", metavar=metavar, help=text)
    for name, (ini_key, env_key) in SOURCES.items():
        r.addini(ini_key, f"chat-model agent setting {name} (environment: {env_key})")


def _add_matrix_options(r: _Recording) -> None:
    # Model matrices (agents/matrix.py): every case runs once per model.
    r.option(
        "--agentbench-model",
        action="append",
        metavar="NAME",
        default=[],
        help="run every case with the chat model NAME (repeatable: each model a trial "
        "dimension, items case[model=NAME])",
    )
    r.option(
        "--agentbench-models",
        metavar="FILE",
        help="a models file (YAML or JSON, agentbench-models/1): the models to run every "
        "case with, each with its own endpoint, temperature, seed, token bound and price",
    )


def add_options(parser: pytest.Parser) -> None:
    """Register every option and ini key, noting each one's default."""
    r = _Recording(parser)
    r.option(
        "--agentbench-adapter",
        metavar="MODULE:ATTR",
        help="the system under test: a class, factory or instance "
        "(default: each world's built-in reference agent)",
    )
    r.option(
        "--agentbench-suite",
        action="append",
        default=[],
        metavar="NAME",
        help="collect a built-in suite by id, or a suite folder (one holding suite.yaml, or "
        "a published layout a registered world recognises); repeatable; see `agentbench list`",
    )
    r.option(
        "--agentbench-timeout",
        default=None,
        metavar="SECONDS",
        help="per-case limit for the adapter; a hang is interrupted (default: 300; 0: none)",
    )
    r.option(
        "--agentbench-report",
        metavar="PATH",
        help="write the JSON run report, and the cases' transcripts to PATH.transcripts/",
    )
    r.option(
        "--agentbench-html",
        metavar="PATH",
        help="write the run report as one self-contained HTML file",
    )
    r.option(
        "--agentbench-log",
        metavar="PATH",
        help="write the run log (NDJSON events: start, each case as it finishes, end) to PATH; "
        "a model run with --agentbench-report writes it to PATH.log.ndjson",
    )
    r.option(
        "--agentbench-receipts",
        metavar="DIR",
        help="write each interactive case's tool-session receipt to DIR/<suite>/<case>.json",
    )
    r.option(
        "--agentbench-projection",
        action="append",
        default=[],
        metavar="NAME[,NAME]",
        help="also present each operations case in these diagnostic projections "
        "(full, static, boundary_only, ordered_snapshot; repeatable); reported beside the "
        "lifecycle, never counted as independent samples",
    )
    r.option(
        "--agentbench-gate",
        action="append",
        default=[],
        metavar="SUITE:METRIC>=VALUE",
        help="fail the session unless the metric satisfies the bound (>=, <=, ==; repeatable)",
    )
    r.option(
        "--agentbench-conformance",
        action="append",
        default=[],
        metavar="SUITE",
        help="run the conformance kit's checks on a suite (a shipped suite id or a suite "
        "folder), each check its own test item; repeatable",
    )
    r.option(
        "--agentbench-controls",
        action="store_true",
        default=False,
        help="run only the negative-control items",
    )
    r.option(
        "--agentbench-allow-partial",
        action="store_true",
        default=False,
        help="judge gates on suites the run did not run completely (by default they fail)",
    )
    r.option(
        "--agentbench-predictions",
        action="append",
        default=[],
        metavar="SUITE=PATH",
        help="score a predictions file produced elsewhere instead of calling an adapter",
    )
    r.option(
        "--agentbench-snapshot",
        action="store_true",
        default=None,
        help="pin each case's canonical output with syrupy (--snapshot-update re-pins)",
    )
    r.option(
        "--agentbench-isolate",
        action="store_true",
        default=None,
        help="run the adapter in its own process, which never holds evaluator data; "
        "a hang or crash there costs one case",
    )
    _add_sandbox_options(r)
    _add_evidence_folders(r)
    r.option(
        "--agentbench-max-output-bytes",
        default=None,
        metavar="BYTES",
        help="keep at most BYTES of canonical JSON of each check value and receipt a case "
        f"stores for the reports, marked as truncated (default: {DEFAULT_MAX_OUTPUT_BYTES}; "
        "0: keep outputs whole)",
    )
    _add_adapter_requirement(r)
    r.addini(
        "agentbench_max_output_bytes",
        "default for --agentbench-max-output-bytes",
        default=str(DEFAULT_MAX_OUTPUT_BYTES),
    )
    r.addini("agentbench_timeout", "default for --agentbench-timeout", default="300")
    r.addini(
        "agentbench_snapshot",
        "pin golden outputs (--agentbench-snapshot)",
        type="bool",
        default=False,
    )
    r.addini(
        "agentbench_snapshot_dir",
        "folder of golden outputs, relative to the rootdir",
        default="snapshots",
    )
    r.addini(
        "agentbench_isolate",
        "run the adapter in its own process (--agentbench-isolate)",
        type="bool",
        default=False,
    )
    r.addini(
        "agentbench_adapter_load_timeout",
        "seconds an in-process adapter's import and constructor may take before the run "
        "is refused (adapter_load_timeout), apart from the case limit (0: no limit)",
        default="60",
    )
    r.addini(
        "agentbench_isolate_startup_timeout",
        "seconds an isolated adapter's process may take to start and load the adapter, "
        "first and after a timeout or crash, apart from the case limit (0: no limit)",
        default="30",
    )
    r.addini(
        "agentbench_isolate_namespace",
        "run the isolated adapter in a user namespace of its own (unshare), so it cannot "
        "read pytest's memory even as root; refused where unavailable",
        type="bool",
        default=False,
    )
    r.addini(
        "agentbench_oracle_roots",
        "folders outside the project that suites' oracle folders may lie in",
        type="paths",
        default=[],
    )
    _add_input_limits(r)
    r.addini(
        "agentbench_junit_case_properties",
        "write per-case check outcomes as JUnit testcase properties",
        type="bool",
        default=False,
    )
    # The chat-model agent's (plugin/model_options.py resolves them).
    r.option(
        "--agentbench-cassettes",
        metavar="DIR",
        help="record/replay the chat-model agent's requests in DIR (one JSON file per request)",
    )
    r.option(
        "--agentbench-cassette-mode",
        choices=get_args(CassetteMode),
        help="record, replay, auto (replay hits, record misses) or off "
        "(default: replay when DIR exists, else record)",
    )
    _add_llm_settings(r)
    _add_matrix_options(r)
    _add_agent_command(r)
    # Judged diagnostics (plugin/judged.py).
    r.option(
        "--agentbench-judge-cache",
        metavar="DIR",
        help="after the run, judge the --agentbench-report's cases by each rubric's panel, "
        "caching seat verdicts in DIR (diagnostics only: no outcome, metric or gate changes)",
    )
    r.option(
        "--agentbench-judge-samples",
        action="store_true",
        default=False,
        help="after the run, judge the --agentbench-report's cases offline from the shipped "
        "sample judge cassettes (recorded against the project's loopback judge server, not "
        "a real model): the judged section without a key",
    )
    r.option(
        "--agentbench-judge-calibration",
        metavar="FILE",
        help="an `agentbench calibrate --json` file: judged numbers show their kappa",
    )
    _add_baseline_comparison(r)
    _add_trials(r)
    # Concurrent cases within a process (run/concurrency.py).
    r.option(
        "--agentbench-concurrency",
        metavar="N",
        help="run up to N cases' adapters at once in each pytest process; default 1",
    )
    r.addini("agentbench_concurrency", "default for --agentbench-concurrency", default="1")
    _add_progress(r)
    # Recording, re-scoring and resuming (rerun.py).
    r.option(
        "--agentbench-record",
        metavar="DIR",
        help="write every case's recorded adapter output to DIR/<suite>/<case>.json",
    )
    r.option(
        "--agentbench-replay-outputs",
        metavar="PATH",
        help="grade the outputs recorded in a run report or record folder; no adapter runs",
    )
    r.option(
        "--agentbench-resume",
        metavar="PATH",
        help="run only the cases an earlier run report left without a graded result",
    )
    _DEFAULTS["options"], _DEFAULTS["ini"] = r.options, r.ini


def _add_progress(r: _Recording) -> None:
    """A model run's live progress line (report/live_progress.py)."""
    r.option(
        "--agentbench-progress-every",
        metavar="SECONDS",
        help="a model run's progress line when output is not a terminal (or -v): at most one "
        "every SECONDS, and one at the last case; 0: one after every case; default 30",
    )
    r.addini("agentbench_progress_every", "default for --agentbench-progress-every", default="30")


def _add_baseline_comparison(r: _Recording) -> None:
    """The baseline comparison's (baseline_options.py)."""
    r.option(
        "--agentbench-baseline",
        metavar="PATH",
        help="compare this run with an earlier JSON run report; a regression fails the session",
    )
    r.option(
        "--agentbench-alpha",
        metavar="P",
        help="significance level of the comparison, after Holm-Bonferroni (default: 0.05)",
    )
    r.option(
        "--agentbench-max-regression",
        metavar="SIZE",
        help="a significant change worse than the baseline by at most SIZE is tolerated "
        "(default: 0)",
    )
    r.option(
        "--agentbench-baseline-allow-changed",
        action="store_true",
        default=False,
        help="compare although suite digests, world kind or metric definitions changed",
    )


def _add_agent_command(r: _Recording) -> None:
    """Any agent command over MCP (plugin/command_options.py resolves them)."""
    r.option(
        "--agentbench-agent-command",
        metavar="COMMAND",
        help="run this command (any language) per case as the agent, connected to the case's "
        "tools over MCP; split like a shell line, run without one",
    )
    r.option(
        "--agentbench-agent-transport",
        choices=("http", "stdio"),
        help="how the agent command reaches the case's MCP server: http (AGENTBENCH_MCP_URL, "
        "the default) or stdio (its own stdin and stdout)",
    )
    r.addini("agentbench_agent_command", "default for --agentbench-agent-command")
    r.addini("agentbench_agent_transport", "default for --agentbench-agent-transport")


def _add_adapter_requirement(r: _Recording) -> None:
    """The adapter's ini key, and the refusal of a run that names none."""
    r.option(
        "--agentbench-require-adapter",
        action="store_true",
        default=False,
        help="refuse a run that names no adapter (nor predictions nor recorded outputs) "
        "instead of running the built-in reference agents",
    )
    r.addini("agentbench_adapter", "default for --agentbench-adapter", default=None)
    r.addini(
        "agentbench_require_adapter",
        "refuse a run that names no adapter (--agentbench-require-adapter)",
        type="bool",
        default=False,
    )


def _add_sandbox_options(r: _Recording) -> None:
    """The kernel sandbox of isolated adapter processes (``--agentbench-sandbox``), and how
    they are started."""
    r.option(
        "--agentbench-sandbox",
        choices=("auto", "strict", "off"),
        default=None,
        help="kernel sandbox of each isolated adapter process (Landlock): auto applies what "
        "the kernel offers, strict refuses a run it cannot fully sandbox, off keeps plain "
        "process isolation (default: env AGENTBENCH_SANDBOX, ini agentbench_sandbox, auto)",
    )
    r.option(
        "--agentbench-sandbox-allow",
        action="append",
        default=[],
        metavar="PATH",
        help="a path a sandboxed adapter may also read (repeatable; never an oracle folder)",
    )
    r.addini(
        "agentbench_sandbox",
        "kernel sandbox of isolated adapter processes: auto, strict or off (--agentbench-sandbox)",
        default="auto",
    )
    r.addini(
        "agentbench_sandbox_allow",
        "paths a sandboxed adapter may also read (--agentbench-sandbox-allow)",
        type="paths",
        default=[],
    )
    r.addini(
        "agentbench_sandbox_memory_mb",
        "address space of a sandboxed adapter process, in MiB",
        default="4096",
    )
    r.addini(
        "agentbench_sandbox_max_processes",
        "processes and threads a sandboxed adapter process's tree may hold",
        default="128",
    )
    r.addini(
        "agentbench_isolate_fork_server",
        "start isolated adapter processes by forking a template process that has imported "
        "what they need (default), instead of a fresh interpreter each (false) (Linux; not "
        "with agentbench_isolate_namespace)",
        type="bool",
        default=True,
    )


def _add_trials(r: _Recording) -> None:
    """Repeated trials (trials.py) and the bound on the items they make."""
    r.option(
        "--agentbench-repeat",
        metavar="K",
        help="run every case K times as K items (case[trial-1] ...); default 1",
    )
    r.addini("agentbench_repeat", "default for --agentbench-repeat", default="1")
    r.option(
        "--agentbench-max-items",
        metavar="N",
        help="refuse a run that would collect more than N case items, trials counted "
        "(cases x --agentbench-repeat); default 100000",
    )
    r.addini("agentbench_max_items", "default for --agentbench-max-items", default="100000")


def _add_evidence_folders(r: _Recording) -> None:
    """Where a run writes its evidence: the execution ledgers and the episode artefacts."""
    r.option(
        "--agentbench-ledger",
        default=None,
        metavar="DIR",
        help="write each case's hash-chained execution ledger to DIR/<suite>/<case>.ndjson",
    )
    r.addini("agentbench_ledger", "default for --agentbench-ledger", default=None)
    r.option(
        "--agentbench-artifacts",
        default=None,
        metavar="DIR",
        help="write each case's episode artefact (worlds that record episodes) to "
        "DIR/<suite>/<case>.artifact.json",
    )
    r.addini("agentbench_artifacts", "default for --agentbench-artifacts", default=None)


def option_given(config: pytest.Config) -> str | None:
    """The first ``--agentbench-*`` option the command line sets to other than its default."""
    for dest, default in _DEFAULTS["options"].items():
        if config.getoption(dest) != default:
            return f"--{dest.replace('_', '-')}"
    return None


def in_use(config: pytest.Config) -> str | None:
    """What of ours this run sets, if anything: an option, an ini key or an environment variable.

    A value equal to its default counts as unset: it changes nothing.
    """
    given = option_given(config)
    if given is not None:
        return given
    for name, default in _DEFAULTS["ini"].items():
        value = config.getini(name)
        # pytest reads an absent key without a default as "" (8.x) or None (9.x).
        if value != default and value not in ("", None):
            return name
    for _, env_key in SOURCES.values():
        if os.environ.get(env_key):
            return env_key
    return None


ENVIRONMENT_PREFIX = "AGENTBENCH_"
OTHER_ENVIRONMENT = (
    # Set by the isolated adapter's host in its child (isolation/channel.py).
    "AGENTBENCH_ISOLATED_TREE",
    # The tool-grammar world's sealed-oracle folder (worlds/toolgrammar/world.py).
    "AGENTBENCH_TOOLGRAMMAR_SEALED",
    # The isolated adapters' kernel sandbox mode (isolation/sandbox_plan.py).
    "AGENTBENCH_SANDBOX",
    # The sandboxed adapter process's MCP port (isolation/child.py, agents/command.py).
    "AGENTBENCH_MCP_PORT",
    # Set for an agent command (agents/command.py): a command that is itself a pytest
    # run, or a run started from inside one, is not refused for them.
    "AGENTBENCH_TASK",
    "AGENTBENCH_FINAL_SCHEMA",
    "AGENTBENCH_MCP_URL",
    "AGENTBENCH_MCP_TRANSPORT",
)
"""The ``AGENTBENCH_*`` variables read that are no chat-model agent setting."""
INI_PREFIX = "agentbench_"


class UnknownSetting(NamedTuple):
    """An ``agentbench_*`` ini key or ``AGENTBENCH_*`` variable that nothing reads."""

    code: str
    where: str
    name: str
    nearest: str | None

    def render(self) -> str:
        hint = f"; did you mean {self.nearest}?" if self.nearest else ""
        return f"[{self.code}] {self.where}: {self.name}: nothing reads it{hint}"


def unknown_settings(config: pytest.Config) -> list[UnknownSetting]:
    """Every ``agentbench_*`` ini key and ``AGENTBENCH_*`` variable that nothing reads.

    A misspelt key would otherwise be ignored and the run go on without it: a
    misspelt adapter key ran the built-in reference agents, and the run passed.
    """
    found: list[UnknownSetting] = []
    where = str(config.inipath) if config.inipath is not None else "ini"
    for key in _ini_keys(config):
        if not key.startswith(INI_PREFIX):
            continue
        try:
            config.getini(key)
        except ValueError:  # pytest's answer for a key no plugin registered
            near = _nearest(key, INI_PREFIX, _DEFAULTS["ini"])
            found.append(UnknownSetting("unknown_ini_key", where, key, near))
    known = {env_key for _, env_key in SOURCES.values()} | set(OTHER_ENVIRONMENT)
    # The variable the chat agent's key is read from may be named anything, ours too.
    named_key = os.environ.get(SOURCES["api_key_env"][1]) or config.getini(
        SOURCES["api_key_env"][0]
    )
    for name in sorted(os.environ):
        if name.startswith(ENVIRONMENT_PREFIX) and name not in known and name != named_key:
            near = _nearest(name, ENVIRONMENT_PREFIX, known)
            found.append(UnknownSetting("unknown_environment_variable", "environment", name, near))
    return found


def _nearest(name: str, prefix: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``name``, compared without the prefix they all share."""
    import difflib

    tails = {key.removeprefix(prefix): key for key in known if key.startswith(prefix)}
    near = difflib.get_close_matches(name.removeprefix(prefix), sorted(tails), n=1, cutoff=0.6)
    return tails[near[0]] if near else None


def _ini_keys(config: pytest.Config) -> list[str]:
    """The keys the ini file and ``-o`` set (pytest 9 keeps them in ``_inicfg``, 8 in
    ``inicfg``, which 9 deprecates)."""
    keys = getattr(config, "_inicfg", None)
    if keys is None:
        keys = config.inicfg
    return sorted(keys)

"""Every pytest option and ini key of the plugin, and whether a run uses any of them.

Registering them imports nothing but pytest: the plugin sits in every pytest
process of an environment where it is installed, and ``pytest --help`` lists
them all whether or not a run has benchmarks. The constants their help texts
and defaults need live here for the same reason.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    import pytest

DEFAULT_MAX_OUTPUT_BYTES = 65536

# The readers' bounds (sdk/canonical.py's InputLimits defaults, repeated so that
# registering the ini keys imports nothing but pytest).
INPUT_LIMIT_KEYS: dict[str, tuple[str, int]] = {
    "max_bytes": ("agentbench_max_input_bytes", 16 * 1024 * 1024),
    "max_depth": ("agentbench_max_input_depth", 100),
    "max_yaml_aliases": ("agentbench_max_yaml_aliases", 10_000),
}

CassetteMode = Literal["record", "replay", "off"]

# The chat-model agent's settings: setting -> (ini key, environment variable).
SOURCES: dict[str, tuple[str, str]] = {
    "base_url": ("agentbench_llm_base_url", "AGENTBENCH_LLM_BASE_URL"),
    "model": ("agentbench_llm_model", "AGENTBENCH_LLM_MODEL"),
    "api_key_env": ("agentbench_llm_api_key_env", "AGENTBENCH_LLM_API_KEY_ENV"),
    "temperature": ("agentbench_llm_temperature", "AGENTBENCH_LLM_TEMPERATURE"),
    "max_turns": ("agentbench_llm_max_turns", "AGENTBENCH_LLM_MAX_TURNS"),
    "seed": ("agentbench_llm_seed", "AGENTBENCH_LLM_SEED"),
    "timeout_s": ("agentbench_llm_timeout", "AGENTBENCH_LLM_TIMEOUT"),
    "max_retries": ("agentbench_llm_max_retries", "AGENTBENCH_LLM_MAX_RETRIES"),
    "retry_backoff_s": ("agentbench_llm_retry_backoff", "AGENTBENCH_LLM_RETRY_BACKOFF"),
    "fence_results": ("agentbench_llm_fence_results", "AGENTBENCH_LLM_FENCE_RESULTS"),
    "cassettes": ("agentbench_cassettes", "AGENTBENCH_CASSETTES"),
    "cassette_mode": ("agentbench_cassette_mode", "AGENTBENCH_CASSETTE_MODE"),
    "retry_jitter": ("agentbench_llm_retry_jitter", "AGENTBENCH_LLM_RETRY_JITTER"),
    "max_tokens_per_call": (
        "agentbench_llm_max_tokens_per_call",
        "AGENTBENCH_LLM_MAX_TOKENS_PER_CALL",
    ),
    # Rate limits and budgets of the run (agents/limits.py, agents/budget.py); each is
    # also a command-line option, --agentbench-<name with dashes>.
    "max_connections": ("agentbench_max_connections", "AGENTBENCH_MAX_CONNECTIONS"),
    "requests_per_minute": ("agentbench_requests_per_minute", "AGENTBENCH_REQUESTS_PER_MINUTE"),
    "tokens_per_minute": ("agentbench_tokens_per_minute", "AGENTBENCH_TOKENS_PER_MINUTE"),
    "max_calls": ("agentbench_max_calls", "AGENTBENCH_MAX_CALLS"),
    "max_tokens": ("agentbench_max_tokens", "AGENTBENCH_MAX_TOKENS"),
    "max_cost": ("agentbench_max_cost", "AGENTBENCH_MAX_COST"),
    "pricing": ("agentbench_pricing", "AGENTBENCH_PRICING"),
}

RUN_LIMITS: dict[str, tuple[str, str]] = {
    "max_connections": ("N", "model requests open at once in this process (default: unlimited)"),
    "requests_per_minute": ("N", "model requests sent in any minute, per process"),
    "tokens_per_minute": ("N", "model tokens (reserved, then reported) in any minute, per process"),
    "max_calls": ("N", "model calls the whole run may make; checked before each call is sent"),
    "max_tokens": (
        "N",
        "model tokens the whole run may use (needs agentbench_llm_max_tokens_per_call)",
    ),
    "max_cost": (
        "AMOUNT",
        "what the whole run may cost, an exact decimal (needs --agentbench-pricing)",
    ),
    "pricing": ("FILE", "pricing table: per model, the price of one input and one output token"),
}
"""The settings above that are command-line options too: metavar and help."""

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
        self.group.addoption(name, **kwargs)
        self.options[name.removeprefix("--").replace("-", "_")] = kwargs.get("default")

    def addini(self, name: str, help: str, **kwargs: Any) -> None:
        self.parser.addini(name, help, **kwargs)
        self.ini[name] = kwargs.get("default")


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
    r.option("--agentbench-report", metavar="PATH", help="write the JSON run report")
    r.option(
        "--agentbench-html",
        metavar="PATH",
        help="write the run report as one self-contained HTML file",
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
    r.addini("agentbench_adapter", "default for --agentbench-adapter", default=None)
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
        "agentbench_junit_case_properties",
        "write per-case check outcomes as JUnit testcase properties",
        type="bool",
        default=False,
    )
    # The chat-model agent's (agents/options.py resolves them).
    r.option(
        "--agentbench-cassettes",
        metavar="DIR",
        help="record/replay the chat-model agent's requests in DIR (one JSON file per request)",
    )
    r.option(
        "--agentbench-cassette-mode",
        choices=get_args(CassetteMode),
        help="record, replay or off (default: replay when DIR exists, else record)",
    )
    for name, (metavar, text) in RUN_LIMITS.items():
        r.option(f"--agentbench-{name.replace('_', '-')}", metavar=metavar, help=text)
    for name, (ini_key, env_key) in SOURCES.items():
        r.addini(ini_key, f"chat-model agent setting {name} (environment: {env_key})")
    # Judged diagnostics (judging/options.py).
    r.option(
        "--agentbench-judge-cache",
        metavar="DIR",
        help="after the run, judge the --agentbench-report's cases by each rubric's panel, "
        "caching seat verdicts in DIR (diagnostics only: no outcome, metric or gate changes)",
    )
    r.option(
        "--agentbench-judge-calibration",
        metavar="FILE",
        help="an `agentbench calibrate --json` file: judged numbers show their kappa",
    )
    # The baseline comparison's (baseline_options.py).
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
    # Repeated trials' (trials.py).
    r.option(
        "--agentbench-repeat",
        metavar="K",
        help="run every case K times as K items (case[trial-1] ...); default 1",
    )
    r.addini("agentbench_repeat", "default for --agentbench-repeat", default="1")
    # Concurrent cases within a process (run/concurrency.py).
    r.option(
        "--agentbench-concurrency",
        metavar="N",
        help="run up to N cases' adapters at once in each pytest process; default 1",
    )
    r.addini("agentbench_concurrency", "default for --agentbench-concurrency", default="1")
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
        "what they need, instead of a fresh interpreter each (Linux; not with "
        "agentbench_isolate_namespace)",
        type="bool",
        default=False,
    )


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

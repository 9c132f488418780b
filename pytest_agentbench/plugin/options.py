"""Every pytest option and ini key of the plugin, and whether a run uses any of them.

Registering them imports nothing but pytest: the plugin sits in every pytest
process of an environment where it is installed, and ``pytest --help`` lists
them all whether or not a run has benchmarks. The constants their help texts
and defaults need live here for the same reason.
"""

from __future__ import annotations

import os
from typing import Any, Literal, get_args

import pytest

DEFAULT_MAX_OUTPUT_BYTES = 65536

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
}

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
        "--agentbench-gate",
        action="append",
        default=[],
        metavar="SUITE:METRIC>=VALUE",
        help="fail the session unless the metric satisfies the bound (>=, <=, ==; repeatable)",
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
    r.option(
        "--agentbench-ledger",
        default=None,
        metavar="DIR",
        help="write each case's hash-chained execution ledger to DIR/<suite>/<case>.ndjson",
    )
    r.addini("agentbench_ledger", "default for --agentbench-ledger", default=None)
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
        "agentbench_oracle_roots",
        "folders outside the project that suites' oracle folders may lie in",
        type="paths",
        default=[],
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
    for name, (ini_key, env_key) in SOURCES.items():
        r.addini(ini_key, f"chat-model agent setting {name} (environment: {env_key})")
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

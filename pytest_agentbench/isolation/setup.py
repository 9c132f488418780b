"""Choosing the configured adapter of an isolated run, per kind of pytest process."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.isolation.forkserver import ForkServer
from pytest_agentbench.isolation.forwarding import forwarded_settings
from pytest_agentbench.isolation.host import (
    STARTUP_SETTING,
    IsolatedAdapters,
    namespace_available,
)
from pytest_agentbench.isolation.pool import IsolatedPool
from pytest_agentbench.isolation.sandbox import Limits
from pytest_agentbench.isolation.sandbox_plan import (
    DEFAULT_FILE_MB,
    DEFAULT_OPEN_FILES,
    KernelOffer,
    SandboxSetup,
    configured_mode,
    endpoint_port,
    refuse_unkept,
    sweep_stale,
    world_oracle_folders,
)
from pytest_agentbench.run.adapters import AdapterFolders
from pytest_agentbench.sdk.errors import AgentbenchError, UsageError
from pytest_agentbench.sdk.registry import KindProtocols, WorldRegistry
from pytest_agentbench.sdk.runner import parse_timeout


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _is_xdist_controller(config: pytest.Config) -> bool:
    # pytest-xdist sets ``dist`` to "no" unless it will start workers (``-n 0`` included).
    return not _is_xdist_worker(config) and getattr(config.option, "dist", "no") != "no"


def configured_adapter(
    config: pytest.Config,
    isolation: IsolatedAdapters | IsolatedPool,
    spec: str,
    kinds: Sequence[KindProtocols],
    folders: AdapterFolders,
) -> Any:
    """The value of ``agentbench_adapter`` for ``--agentbench-adapter`` in an isolated run.

    The process that reports (the controller, or the only process) loads the
    spec in a child at once, so a bad spec is a usage error before any case
    runs. A single process keeps that child for its cases; an xdist controller
    runs no case and ends it. A worker defers everything to its first case.
    Every kind of process first puts the folder holding the adapter's module on
    its ``sys.path`` (``folders``), which the child starts from; nothing is imported
    here.
    """
    folders.put_on_path(spec.partition(":")[0])
    if _is_xdist_worker(config):
        return isolation.pending(spec, kinds)
    try:
        adapter = isolation.load_spec(spec, kinds, folders)
    except BaseException:
        isolation.close()
        raise
    if _is_xdist_controller(config):
        isolation.close()
    elif isinstance(isolation, IsolatedPool):
        # The pool's other children start while pytest collects.
        isolation.warm(adapter)
    return adapter


def sandbox_mode(config: pytest.Config) -> str:
    """``--agentbench-sandbox``, else ``AGENTBENCH_SANDBOX``, else the ini key (default auto)."""
    return configured_mode(
        config.getoption("agentbench_sandbox", None),
        str(config.getini("agentbench_sandbox")),
        os.environ,
    )


def _whole_number(config: pytest.Config, key: str) -> int:
    text = str(config.getini(key)).strip()
    if not text.isdigit() or int(text) < 1:
        raise UsageError("invalid_sandbox_limit", f"{text!r} is not a whole number >= 1", field=key)
    return int(text)


def _model_access() -> tuple[list[Path], list[Path], list[int]]:
    """What the plugin's own chat client in the child needs: (read only, read-write, ports).

    Replayed cassettes and the pricing table are read, recorded cassettes
    written; the run's shared budget tally is written; a live endpoint's
    port is connected to, and in replay no port at all.
    """
    read_only: list[Path] = []
    read_write: list[Path] = []
    ports: list[int] = []
    settings_module = sys.modules.get("pytest_agentbench.agents.settings")
    if settings_module is None:
        return read_only, read_write, ports
    settings = settings_module.configured_settings()
    mode = settings.effective_mode
    if settings.cassettes is not None:
        (read_only if mode == "replay" else read_write).append(Path(settings.cassettes).resolve())
    if settings.pricing is not None:
        read_only.append(Path(settings.pricing).resolve())
    if mode != "replay":
        port = endpoint_port(settings.base_url)
        if port is not None:
            ports.append(port)
    provenance = sys.modules.get("pytest_agentbench.agents.provenance")
    tally = None if provenance is None else provenance.shared_tally()
    if tally is not None:
        read_write.append(Path(tally).resolve().parent)
    return read_only, read_write, ports


def _chat_preload() -> tuple[str, ...]:
    """What the fork server's template prepares for the chat agent's processes.

    Its modules always: an adapter may build the chat client itself, and a process
    that imported it only during a call would not count that call's model calls
    (the template imports them, not the run, which configured no chat model). When
    a live endpoint is configured, httpx and the TLS context its clients share
    (``prepare_for_fork``) too: without them each forked process imported about
    150 modules and read the CA bundle itself, most of its CPU in a one-call case.
    Only the plugin's own code and httpx run in the template, never an adapter's.
    """
    settings_module = sys.modules.get("pytest_agentbench.agents.settings")
    if settings_module is None:
        return ("pytest_agentbench.agents.chat",)
    settings = settings_module.configured_settings()
    if settings.base_url is None or settings.effective_mode == "replay":
        return ("pytest_agentbench.agents.chat",)
    return ("pytest_agentbench.agents.chat", "pytest_agentbench.agents.transport:prepare_for_fork")


def _agent_command_over_http() -> bool:
    """Whether the run's adapter is an agent command served over HTTP (its settings resolved)."""
    module = sys.modules.get("pytest_agentbench.agents.command")
    settings = None if module is None else module.configured_command()
    return settings is not None and settings.transport == "http"


def sandbox_setup(
    config: pytest.Config,
    registry: WorldRegistry | None,
    oracle_roots: Sequence[Path],
    outputs: Sequence[Path | None],
) -> SandboxSetup | None:
    """The run's sandbox (None: mode ``off``); ``strict`` refuses a kernel that cannot keep
    every promise, naming each."""
    mode = sandbox_mode(config)
    if mode == "off":
        return None
    offer = KernelOffer.probe()
    if mode == "strict":
        refuse_unkept(offer)
    elif not sys.platform.startswith("linux"):
        # auto where there is nothing to apply: process isolation alone, as the trust
        # block says (every promise not held).
        return None
    project = config.rootpath.resolve()
    # The project's own oracle and sealed folders, by convention, whatever a sys.path
    # entry inside the project (a src folder) might otherwise grant.
    denied = [project / "oracles", project / "sealed"]
    denied += [Path(root).resolve() for root in oracle_roots]
    denied += [Path(path).resolve() for path in outputs if path is not None]
    judge_cache = config.getoption("agentbench_judge_cache", None)
    if judge_cache:
        denied.append(Path(judge_cache).resolve())
    if registry is not None:
        suite_roots = [root for kind in registry.kinds() for root in registry.suite_roots(kind)]
        try:
            suites = list(registry.suites().values())
        except AgentbenchError:
            suites = []
        denied += world_oracle_folders(suite_roots, suites, registry.packages())
    read_only, read_write, ports = _model_access()
    allowed = [
        *config.getoption("agentbench_sandbox_allow", []),
        *config.getini("agentbench_sandbox_allow"),
    ]
    return SandboxSetup(
        mode=mode,
        offer=offer,
        denied=tuple(dict.fromkeys(denied)),
        project=project,
        allowed=tuple(Path(path).resolve() for path in allowed),
        read_write=tuple(read_write),
        read_only=tuple(read_only),
        connect_ports=tuple(ports),
        mcp_http=_agent_command_over_http(),
        limits=Limits(
            memory_bytes=_whole_number(config, "agentbench_sandbox_memory_mb") << 20,
            file_bytes=DEFAULT_FILE_MB << 20,
            open_files=DEFAULT_OPEN_FILES,
            processes=_whole_number(config, "agentbench_sandbox_max_processes"),
        ),
    )


def isolated_adapters(
    config: pytest.Config,
    timeout: float,
    oracle_roots: Sequence[Path],
    concurrency: int = 1,
    *,
    registry: WorldRegistry | None = None,
    outputs: Sequence[Path | None] = (),
) -> IsolatedAdapters | IsolatedPool:
    """The adapter-process host of an isolated run, as the ini file and session configure it.

    With ``concurrency`` above 1 (``--agentbench-concurrency``), a pool of that
    many hosts, one case at a time each.

    Refuses the run (a usage error) when the start-up allowance is invalid, a
    requested user namespace is unavailable, the settings an adapter reads
    cannot be handed to its process, or ``strict`` sandboxing cannot be kept.
    ``registry`` names the worlds whose shipped oracles the sandbox denies,
    ``outputs`` the run's output paths it denies too.
    """
    try:
        startup_timeout = parse_timeout(config.getini(STARTUP_SETTING))
    except ValueError as exc:
        raise UsageError("invalid_timeout", str(exc), field=STARTUP_SETTING) from None
    namespace = bool(config.getini("agentbench_isolate_namespace"))
    if namespace:
        unavailable = namespace_available()
        if unavailable is not None:
            raise UsageError(
                "isolation_namespace_unavailable",
                f"the isolated adapter cannot run in a user namespace here: {unavailable}",
                field="agentbench_isolate_namespace",
            )
    launcher = None
    if (
        bool(config.getini("agentbench_isolate_fork_server"))
        and not namespace
        and sys.platform.startswith("linux")
    ):
        launcher = ForkServer(_chat_preload())
    host_options: dict[str, Any] = {
        "startup_timeout": startup_timeout,
        "settings": forwarded_settings(),
        "protected": (config.rootpath, *oracle_roots),
        "namespace": namespace,
        "sandbox": sandbox_setup(config, registry, oracle_roots, outputs),
        "launcher": launcher,
    }
    # Private temp folders a killed run left behind (their owning process is gone).
    sweep_stale()
    if concurrency > 1:
        return IsolatedPool(concurrency, timeout, **host_options)
    return IsolatedAdapters(timeout, **host_options)

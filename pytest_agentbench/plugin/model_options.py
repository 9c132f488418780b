"""The chat-model agent's pytest options and ini keys, resolved (a plugin of benchmark runs).

Resolved once per process at configure time, so an invalid setting is a usage
error before any case runs; the agent reads them when it is built. The
process's :class:`~pytest_agentbench.agents.provenance.ModelRun` (rate limiter,
budget guard, pricing) is built here too.

Budgets and per-minute rate limits are the run's, not a process's: under xdist
the controller makes a folder whose locked tally file every worker reserves
from (and whose window file every worker enters its requests in) (and so does an
isolated run for its adapter processes, which are handed the file), and the worst-case
preflight runs where the selected cases are known before any is scheduled
(after collection serially; under xdist, on the controller as each worker
reports its collection, from the case count the worker left in that folder).
A refused run ends there, before any call.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.agents.sources import RUN_LIMITS, given_settings
from pytest_agentbench.run.session import RUN_KEY
from pytest_agentbench.sdk.errors import AgentbenchError, UsageError

if TYPE_CHECKING:
    # The chat-model client's modules (settings, budget, rate limits, provenance) are
    # imported by a run that configures a chat model: most benchmark runs configure none.
    from pytest_agentbench.agents.matrix import MatrixModel
    from pytest_agentbench.agents.provenance import ModelRun
    from pytest_agentbench.agents.settings import ChatSettings

SETTINGS_MODULE = "pytest_agentbench.agents.settings"
PROVENANCE_MODULE = "pytest_agentbench.agents.provenance"

WORKERINPUT_KEY = "agentbench_budget_folder"
MODE_KEY = "agentbench_cassette_mode"
"""The cassette mode the controller decided, handed to every xdist worker: a worker that
decided for itself would find the folder another worker had begun recording into."""


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    folder = config.getoption("agentbench_cassettes")
    pricing = config.getoption("agentbench_pricing")
    workerinput = getattr(config, "workerinput", None)
    decided = None if workerinput is None else workerinput.get(MODE_KEY)
    overrides = {
        "cassettes": None if folder is None else str(Path(folder).resolve()),
        "cassette_mode": decided or config.getoption("agentbench_cassette_mode"),
        **{name: config.getoption(f"agentbench_{name}") for name in RUN_LIMITS},
        "pricing": None if pricing is None else str(Path(pricing).resolve()),
        "provider": config.getoption("agentbench_llm_provider"),
    }

    def ini(key: str) -> str | None:
        value = config.getini(key)
        return str(value) if value else None

    given = given_settings(ini=ini, environ=os.environ, overrides=overrides)
    names = config.getoption("agentbench_model", None)
    models_file = config.getoption("agentbench_models", None)
    if not given[0] and not (names or models_file):
        # No chat model is configured: its default settings are valid, call no model
        # and limit nothing, so the run has no model run (``RUN_KEY`` unset, as its
        # readers expect of a run without a model) and builds none of its records.
        config.stash[MATRIX_KEY] = ()
        return
    from pytest_agentbench.agents.budget import Tally
    from pytest_agentbench.agents.provenance import (
        WINDOW_FILE,
        ModelRun,
        configure_model_runs,
        configure_run,
    )
    from pytest_agentbench.agents.settings import checked_settings, configure

    try:
        settings = checked_settings(given, config.rootpath)
        models: tuple[MatrixModel, ...] = ()
        if names or models_file:
            # Only a run naming models imports the matrix (and its records).
            from pytest_agentbench.agents.matrix import model_settings, resolve_matrix

            # Relative to where pytest was invoked, as --agentbench-pricing is.
            models = resolve_matrix(names, models_file, config.invocation_params.dir)
        price, runs = None, {}
        if len(models) == 1:
            # One model is no matrix: it only replaces the configured model and its settings.
            settings = model_settings(settings, models[0]).model_copy(
                update={"cassettes": settings.cassettes}
            )
            price, models = models[0].pricing, ()
        configure(settings)
        shared = _shared_folder(config, settings)
        run = (
            ModelRun(settings, price=price)
            if shared is None
            else ModelRun(
                settings,
                tally=Tally(tally_path(shared)),
                window=shared / WINDOW_FILE,
                price=price,
            )
        )
        if models:
            refuse_matrix_combinations(config)
            runs = {entry.name: _model_run(settings, entry, shared) for entry in models}
    except AgentbenchError as exc:
        raise pytest.UsageError(exc.render()) from None
    configure_run(run)
    config.stash[RUN_KEY] = run
    config.stash[MATRIX_KEY] = models
    if models:
        configure_model_runs(runs)
    if workerinput is None and settings.cassette_mode is not None:
        config.pluginmanager.register(
            ModeController(settings.cassette_mode), "agentbench-mode-controller"
        )
    if shared is not None and workerinput is None:
        config.pluginmanager.register(BudgetController(shared, run), "agentbench-budget-controller")


MATRIX_KEY: pytest.StashKey[tuple[MatrixModel, ...]] = pytest.StashKey()
"""The run's model matrix (empty: one model); collection makes an item per model and case."""


def _model_run(settings: ChatSettings, entry: MatrixModel, shared: Path | None) -> ModelRun:
    """A matrix model's own run: its settings, price, budget tally and rate-limit window."""
    from pytest_agentbench.agents.budget import Tally
    from pytest_agentbench.agents.matrix import model_settings
    from pytest_agentbench.agents.provenance import WINDOW_FILE, ModelRun

    own = model_settings(settings, entry)
    if shared is None:
        return ModelRun(own, price=entry.pricing)
    folder = shared / f"model-{entry.name}"
    folder.mkdir(exist_ok=True)
    return ModelRun(
        own,
        tally=Tally(tally_path(folder)),
        window=folder / WINDOW_FILE,
        price=entry.pricing,
    )


MATRIX_REFUSED = (
    ("agentbench_isolate", "--agentbench-isolate"),
    ("agentbench_resume", "--agentbench-resume"),
    ("agentbench_replay_outputs", "--agentbench-replay-outputs"),
    ("agentbench_baseline", "--agentbench-baseline"),
)
"""What a model matrix does not combine with yet: each keys results by case and trial only."""


def refuse_matrix_combinations(config: pytest.Config) -> None:
    for dest, option in MATRIX_REFUSED:
        given = _isolated(config) if dest == "agentbench_isolate" else config.getoption(dest, None)
        if given:
            raise UsageError(
                "model_matrix_unsupported",
                f"a model matrix cannot be combined with {option} (yet)",
                field=option,
            )


def _isolated(config: pytest.Config) -> bool:
    """Whether adapters run in their own processes: ``--agentbench-isolate``, else its ini key."""
    isolate = config.getoption("agentbench_isolate")
    return bool(config.getini("agentbench_isolate") if isolate is None else isolate)


class ModeController:
    """On the xdist controller: hands every worker the cassette mode decided at start."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[MODE_KEY] = self.mode


def _shared_folder(config: pytest.Config, settings: ChatSettings) -> Path | None:
    """The folder the run's budget and rate limits are shared through: made by the xdist
    controller (or the isolating process), handed to every process that calls the model."""
    shared = (
        settings.max_calls,
        settings.max_tokens,
        settings.max_cost,
        settings.requests_per_minute,
        settings.tokens_per_minute,
    )
    if all(limit is None for limit in shared):
        return None
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        given = workerinput.get(WORKERINPUT_KEY)
        return None if given is None else Path(given)
    if (
        config.getoption("dist", "no") == "no"
        and not config.getoption("numprocesses", None)
        and not _isolated(config)
    ):
        return None
    # Several processes call the model: xdist workers, or isolated adapter processes.
    return Path(tempfile.mkdtemp(prefix="agentbench-budget-"))


def tally_path(folder: Path) -> Path:
    from pytest_agentbench.agents.provenance import TALLY_FILE

    return folder / TALLY_FILE


class BudgetController:
    """On the xdist controller: hands workers the folder, preflights their collections."""

    def __init__(self, folder: Path, run: ModelRun) -> None:
        self.folder = folder
        self.run = run

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKERINPUT_KEY] = str(self.folder)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        path = self.folder / f"cases-{node.workerinput['workerid']}.json"
        try:
            counted = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            counted = len(ids)  # a worker that left no count: every item may be a case
        if isinstance(counted, dict):  # a matrix: its cases per model
            _preflight_models({str(k): int(v) for k, v in counted.items()})
        else:
            _preflight(self.run, int(counted))

    def pytest_unconfigure(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _preflight(run: ModelRun, cases: int) -> None:
    from pytest_agentbench.agents.budget import BudgetRefused

    try:
        run.preflight(cases)
    except BudgetRefused as refusal:
        pytest.exit(f"agentbench: run refused before any call: {refusal.render()}", 4)


def _preflight_models(cases: dict[str, int]) -> None:
    """Each matrix model's worst case against its own budget."""
    from pytest_agentbench.agents.provenance import model_runs

    for name, run in model_runs().items():
        _preflight(run, cases.get(name, 0))


def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    run = config.stash.get(RUN_KEY, None)
    if run is None or not run.ceilings.any:
        return
    from pytest_agentbench.plugin.collect import CaseItem

    counted: int | dict[str, int]
    if config.stash.get(MATRIX_KEY, ()):
        per_model: dict[str, int] = {}
        for item in session.items:
            if isinstance(item, CaseItem) and item.model is not None:
                per_model[item.model] = per_model.get(item.model, 0) + 1
        counted = per_model
    else:
        counted = sum(1 for item in session.items if isinstance(item, CaseItem))
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        if isinstance(counted, dict):
            _preflight_models(counted)
        else:
            _preflight(run, counted)
    elif WORKERINPUT_KEY in workerinput:
        folder = Path(workerinput[WORKERINPUT_KEY])
        (folder / f"cases-{workerinput['workerid']}.json").write_text(
            json.dumps(counted), encoding="utf-8"
        )


def pytest_report_header(config: pytest.Config) -> str | list[str] | None:
    if config.stash.get(MATRIX_KEY, ()):
        from pytest_agentbench.agents.provenance import model_runs

        runs = model_runs()
        if runs:
            return [f"agentbench model {name}: {header_text(run)}" for name, run in runs.items()]
    run = config.stash.get(RUN_KEY, None)
    if run is None or not run.settings.model:
        return None
    return "agentbench model: " + header_text(run)


def header_text(run: ModelRun) -> str:
    from pytest_agentbench.agents.provenance import endpoint_host
    from pytest_agentbench.agents.providers import provider_label

    settings = run.settings
    mode = settings.effective_mode
    endpoint = endpoint_host(settings.base_url) or "(no endpoint)"
    parts = [
        f"{provider_label(settings.provider)} {endpoint}",
        f"model {settings.model}",
        {
            "replay": "replay",
            "off": "live",
            "record": "live, recording",
            "auto": "mixed (replaying cassette hits, recording misses live)",
        }[mode],
        f"settings sha256:{settings.settings_digest()[:12]}",
    ]
    if run.pricing is not None:
        parts.append(f"pricing sha256:{run.pricing.digest[:12]}")
    ceilings = [
        f"{name.replace('_', '-')} {value}"
        for name, value in run.ceilings.model_dump().items()
        if value is not None
    ]
    if ceilings:
        parts.append("budget " + ", ".join(ceilings))
    return "; ".join(parts)


def pytest_unconfigure(config: pytest.Config) -> None:
    # What a module not imported holds is already its default: nothing to forget.
    settings = sys.modules.get(SETTINGS_MODULE)
    if settings is not None:
        settings.configure(None)
    provenance = sys.modules.get(PROVENANCE_MODULE)
    if provenance is not None:
        provenance.configure_run(None)
        provenance.configure_model_runs({})

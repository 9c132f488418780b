"""``--agentbench-artifacts DIR``: one episode artefact per case of a world that writes them.

World-free. After a case's execution ledger has its terminal row and the case
is graded, the core builds the case's :class:`EpisodeBinding` and asks the
world (:class:`WritesEpisodeArtifacts`) for the document, which is written as
canonical JSON to ``DIR/<suite id>/<case id>.artifact.json`` by the process
that ran the case. A case whose decisions came from a chat model is bound to
its ledger (:class:`ProviderExecution`, every amount and count re-derived from
the ledger's own rows at the run's pinned rates); a model run without a
complete ``scored`` ledger writes no artefact, and the refusal is named where
the record would have been built.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.scoring.matrix import model_item_name
from pytest_agentbench.scoring.trials import item_name
from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, sha256_hex
from pytest_agentbench.sdk.contracts import Case, CaseResult, Outcome
from pytest_agentbench.sdk.episode_artifacts import (
    EpisodeBinding,
    WritesEpisodeArtifacts,
)
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import id_file_name, write_new_file

if TYPE_CHECKING:
    from pytest_agentbench.agents.provenance import ModelRun
    from pytest_agentbench.run.case_ledger import CaseLedger
    from pytest_agentbench.sdk.suite import Suite
    from pytest_agentbench.sdk.world import World

ARTIFACT_SUFFIX = ".artifact.json"


@dataclass(frozen=True)
class ArtifactItem:
    """The case item an artefact is written for: who answered, and the item's name."""

    agent_id: str
    name: str
    """The case id, with its trial under ``--agentbench-repeat`` (as its ledger is named)."""


def artifact_item(
    agent_id: str,
    case_id: str,
    trial: tuple[int | None, int] | None,
    model: str | None = None,
) -> ArtifactItem:
    """``trial`` is (index, count) of the item's trial, ``None`` outside a repeated run;
    ``model`` the item's matrix model, ``None`` outside a model matrix."""
    index = None if trial is None or trial[1] <= 1 else trial[0]
    return ArtifactItem(agent_id=agent_id, name=model_item_name(item_name(case_id, index), model))


def artifact_path(folder: Path, suite_id: str, name: str) -> Path:
    return folder / id_file_name(suite_id) / id_file_name(name, ARTIFACT_SUFFIX)


def provider_header(run: ModelRun) -> dict[str, JsonValue]:
    """What a model run's ledger header states: who answered, under which settings and rates.

    The rates are what the audit recomputes every amount from; a run without a
    pricing table states none, and its cases cannot be bound.
    """
    from pytest_agentbench.agents.providers import PROVIDER_APIS, provider_label

    settings = run.settings
    header: dict[str, JsonValue] = {
        "provider": provider_label(settings.provider),
        # A provider without an API of its own speaks the OpenAI-compatible one.
        "api": PROVIDER_APIS.get(settings.provider, PROVIDER_APIS["openai"]),
        "model": settings.model,
        "settings_digest_sha256": settings.settings_digest(),
        "max_tokens_per_call": settings.max_tokens_per_call,
    }
    if run.pricing is not None and run.price is not None:
        header["pricing_digest_sha256"] = run.pricing.digest
        header["input_per_token"] = run.price.input_per_token
        header["output_per_token"] = run.price.output_per_token
    return header


def _model_binding(
    case_ledger: CaseLedger | None, run: ModelRun, agent_id: str, display: str
) -> EpisodeBinding:
    # The ledger's reader: only a model run's artefacts are bound to its ledger.
    from pytest_agentbench.sdk.ledger import audit_ledger
    from pytest_agentbench.sdk.ledger.binding import bound_calls, derive_provider_execution
    from pytest_agentbench.sdk.ledger.rows import CallPayload, HeaderPayload

    if case_ledger is None:
        raise AgentbenchError(
            "artifact_ledger_missing",
            "a model run's episode artefact needs its execution ledger (--agentbench-ledger)",
            file=display,
        )
    path = case_ledger.writer.path
    if case_ledger.failure is not None or not case_ledger.writer.finished:
        raise AgentbenchError(
            "artifact_ledger_incomplete", "the case's ledger has no terminal row", file=str(path)
        )
    reading = audit_ledger(path)
    terminal = reading.rows[-1]["terminal"]
    kind = terminal.get("kind") if isinstance(terminal, dict) else None
    if kind != "scored":
        raise AgentbenchError(
            "artifact_ledger_not_scored",
            f"the case's ledger ends {kind!r}: an unscored run has no episode artefact",
            file=str(path),
        )
    header = HeaderPayload.model_validate(reading.rows[0]["header"])
    calls = [CallPayload.model_validate(row["call"]) for row in reading.rows[1:-1]]
    assert reading.digest is not None
    return EpisodeBinding(
        agent_id=agent_id,
        model=run.settings.model,
        max_output_tokens=run.settings.max_tokens_per_call,
        calls=bound_calls(calls),
        provider_execution=derive_provider_execution(
            header, calls, reading.digest, display=str(path)
        ),
    )


def write_episode_artifact(
    folder: Path,
    world: World,
    suite: Suite,
    case: Case,
    *,
    outcome: Outcome,
    result: CaseResult,
    case_ledger: CaseLedger | None,
    model_run: ModelRun | None,
    item: ArtifactItem,
) -> dict[str, JsonValue] | None:
    """Write the case's artefact; ``{file, digest_sha256}`` for the report, ``None`` if none.

    ``model_run`` is the process's chat model when this case's decisions came
    from it (the case made model calls), else ``None``. An excluded case, and a
    case that failed before its world produced any output, record no episode.
    """
    if not isinstance(world, WritesEpisodeArtifacts) or outcome.exclusion is not None:
        return None
    if outcome.output is None and outcome.failure_class is not None:
        return None
    path = artifact_path(folder, suite.id, item.name)
    if model_run is None:
        binding = EpisodeBinding(agent_id=item.agent_id)
    else:
        binding = _model_binding(case_ledger, model_run, item.agent_id, str(path))
    document = world.episode_artifact(suite, case, outcome, result, binding)
    if document is None:
        return None
    data = (canonical_json(document) + "\n").encode("utf-8")
    write_new_file(path, data, "artifact_write_failed")
    return {
        "file": path.relative_to(folder).as_posix(),
        "digest_sha256": sha256_hex(data),
    }


def model_run_of_case(model_calls: Any) -> bool:
    """Whether a case's decisions came from a model: it made at least one model request."""
    return isinstance(model_calls, dict) and bool(model_calls.get("request_digests"))

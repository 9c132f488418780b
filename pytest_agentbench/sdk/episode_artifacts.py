"""The seam through which a world learns which run, and which provider, produced an episode.

Under ``--agentbench-artifacts DIR`` the core hands a world that implements
:class:`WritesEpisodeArtifacts` one :class:`EpisodeBinding` per case, after
the case's execution ledger has its terminal row: the agent's identity, and
for a case whose decisions came from a chat model the
:class:`ProviderExecution` binding to that ledger. A world never opens the
ledger or the model's settings itself; it imports this module only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Protocol, runtime_checkable

from pydantic import Field, StrictInt, StrictStr

from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, Record

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_agentbench.sdk.contracts import Case, CaseResult, Outcome
    from pytest_agentbench.sdk.suite import Suite

ArtifactDigest = Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]
ExactAmount = Annotated[StrictStr, Field(pattern=r"^(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$")]
"""An exact decimal amount as text: no exponent, no sign, no trailing zero."""
ArtifactCount = Annotated[StrictInt, Field(ge=0)]

PROVIDER_EXECUTION_FIELDS: tuple[str, ...] = (
    "execution_run_id",
    "execution_ledger_version",
    "execution_ledger_digest_sha256",
    "provider",
    "api",
    "model",
    "settings_digest_sha256",
    "pricing_digest_sha256",
    "provider_calls",
    "attempts",
    "measured_cost_usd",
    "forfeited_reservation_usd",
    "input_tokens",
    "output_tokens",
    "decision_call_index",
)
"""The original's contract-7/8 binding fields, in its order: identities, digests, counts."""


class ProviderExecution(Record):
    """The binding between an episode and the execution ledger that witnessed its model calls.

    Identities, digests, counts and exact amounts only: no prose, no credential,
    no raw response and no path (the ledger is found by its digest, not by where
    a disk was laid out). ``provider_calls`` counts model requests, ``attempts``
    every attempt of them; ``decision_call_index`` is the ledger call row of
    each recorded decision, in order.
    """

    model_config = BUILT_ON_FIRST_USE

    execution_run_id: Annotated[StrictStr, Field(pattern=r"^exec_[0-9a-f]{32}$")]
    execution_ledger_version: StrictInt
    execution_ledger_digest_sha256: ArtifactDigest
    provider: StrictStr
    api: StrictStr
    model: StrictStr
    settings_digest_sha256: ArtifactDigest
    pricing_digest_sha256: ArtifactDigest
    provider_calls: ArtifactCount
    attempts: ArtifactCount
    measured_cost_usd: ExactAmount
    forfeited_reservation_usd: ExactAmount
    input_tokens: ArtifactCount
    output_tokens: ArtifactCount
    decision_call_index: tuple[ArtifactCount, ...]


class BoundCall(Record):
    """One call row of the case's ledger, as an artefact's execution record repeats it."""

    model_config = BUILT_ON_FIRST_USE

    call_index: ArtifactCount
    request_digest_sha256: ArtifactDigest | None
    decision_digest_sha256: ArtifactDigest | None


class EpisodeBinding(Record):
    """What the core knows about the run of one case that its world does not."""

    model_config = BUILT_ON_FIRST_USE

    agent_id: StrictStr
    model: StrictStr | None = None
    """The chat model whose answers were the decisions; ``None`` for an in-process agent."""
    max_output_tokens: ArtifactCount | None = None
    calls: tuple[BoundCall, ...] = ()
    """The ledger's call rows of a model run, in order (empty otherwise)."""
    provider_execution: ProviderExecution | None = None
    """Required for a model run, ``None`` for a run that reached no provider."""


@runtime_checkable
class WritesEpisodeArtifacts(Protocol):
    """Optional world capability: one canonical episode artefact per case.

    Return the document, or raise an :class:`~pytest_agentbench.sdk.errors.AgentbenchError`
    naming why this case's record cannot be built; return ``None`` when the case
    produced no episode to record.
    """

    def episode_artifact(
        self,
        suite: Suite,
        case: Case,
        outcome: Outcome,
        result: CaseResult,
        binding: EpisodeBinding,
    ) -> dict[str, JsonValue] | None: ...


@runtime_checkable
class ReadsEpisodeArtifacts(Protocol):
    """Optional world capability: the three readers of its episode artefacts.

    ``agentbench artifact validate|replay|audit`` asks the world that wrote an
    artefact. Each reader raises an :class:`~pytest_agentbench.sdk.errors.AgentbenchError`
    naming the refusal, or returns what it found. ``carried_forward`` names the
    artefact fields a replay carries forward rather than reproduces.
    """

    carried_forward: tuple[str, ...]

    def validate_artifact(self, document: JsonValue, display: str) -> int:
        """Coherence of one document; returns its contract version."""
        ...

    def replay_artifact(
        self, suite: Suite, document: JsonValue, display: str
    ) -> dict[str, JsonValue]:
        """Reproduction: the episode re-executed on ``suite`` from its own tape."""
        ...

    def audit_artifact(
        self, document: JsonValue, journal: Path, display: str
    ) -> dict[str, JsonValue]:
        """Agreement of the artefact's binding with the case's execution ledger."""
        ...

"""Optional world capabilities: small protocols the core detects with ``isinstance``.

A world implements any of them by defining the method; nothing registers them.
The ``agentbench`` command and the pytest plugin use each where it applies and
refuse by name (``unsupported_command``) when a world lacks one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pytest_agentbench.sdk.contracts import CaseResult, MetricValue
    from pytest_agentbench.sdk.controls_oracle import ControlOracle
    from pytest_agentbench.sdk.ledger.journal_writer import JournalSetup
    from pytest_agentbench.sdk.suite import Suite


@runtime_checkable
class ValidatesPredictions(Protocol):
    """Optional world capability: shape-check a predictions file without the oracle.

    ``path`` is the file ``text`` was read from, where the command has one: a
    world may read what lies beside it (a submission's manifest). The report has
    ``valid``, ``render_lines()`` and ``json_text()``; it may also say
    ``scorable`` (the scorer grades a document the validator calls invalid).
    """

    def validate_predictions(self, suite: Suite, text: str, path: Path | None = None) -> Any: ...


@runtime_checkable
class DerivesTruth(Protocol):
    """Optional world capability: recompute evaluator truth and list differences."""

    def derive_differences(self, suite: Suite) -> list[str]: ...


@runtime_checkable
class DeclaresScope(Protocol):
    """Optional world capability: what a suite's scores measure, and what they do not prove."""

    def measurement_scope(self, suite: Suite) -> Any: ...


@runtime_checkable
class ReportsEvaluation(Protocol):
    """Optional world capability: the original's report of one scored run.

    ``agentbench evaluate --json`` prints it (keys in the order given) in place
    of the core's document, so a suite scores to the very envelope its original
    emits. ``results`` are the run's graded cases, ``metrics`` their aggregate.
    """

    def evaluation_report(
        self, suite: Suite, results: Sequence[CaseResult], metrics: Sequence[MetricValue]
    ) -> dict[str, Any]: ...


@runtime_checkable
class WritesBaselines(Protocol):
    """Optional world capability: regenerate a candidate's baseline-records file."""

    def baseline_records(self, suite: Suite) -> bytes: ...


@runtime_checkable
class RescoresReports(Protocol):
    """Optional world capability: re-score a report in the original's format."""

    def rescore_report(self, suite: Suite, path: Path) -> tuple[list[Any], list[str]]: ...


@runtime_checkable
class PromotesReports(Protocol):
    """Optional world capability: the promotion gate between two reports."""

    def promote_reports(
        self,
        suite: Suite,
        baseline: Path,
        candidate: Path,
        *,
        baseline_adapter: str,
        candidate_adapter: str,
    ) -> dict[str, Any]: ...


@runtime_checkable
class WarnsOnVerify(Protocol):
    """Optional world capability: what a suite holds that verify accepts but reports."""

    def verify_warnings(self, suite: Suite) -> list[str]: ...


@runtime_checkable
class RecordsEpisodes(Protocol):
    """Optional world capability: record a case with its ledger, replay it from its tape.

    ``journal``: the model run's provider and controls, to write the episode a second
    time in OperateBench's journal layout (``agentbench record --journal``).
    """

    def record_episode(
        self,
        suite: Suite,
        case_id: str,
        agent_id: str,
        adapter: Any,
        out: Path,
        *,
        journal: JournalSetup | None = None,
    ) -> list[str]: ...

    def replay_episode(self, suite: Suite, path: Path) -> list[str]: ...


@runtime_checkable
class ProvidesControlOracle(Protocol):
    """Optional world capability: the suite's controls, read from the original's oracle format."""

    def control_oracle(
        self, suite: Suite, display: Callable[[Path], str]
    ) -> ControlOracle | None: ...

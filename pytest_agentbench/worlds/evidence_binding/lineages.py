"""One class per lineage: how the world reads, runs, grades and reports it.

The two lineages never share a record: each class holds its own reader,
models, adapter-output contract, checks, metrics and baselines; the world
picks one by the suite's ``lineage`` option.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from pytest_agentbench.sdk import (
    AgentbenchError,
    Case,
    CaseResult,
    JsonValue,
    MalformedOutput,
    MetricSpec,
    Outcome,
    canonical_json,
    field_path,
    grade,
)
from pytest_agentbench.worlds.evidence_binding import (
    asteria_reader,
    baselines,
    enterprise,
    enterprise_reader,
    scoring,
    submissions,
)
from pytest_agentbench.worlds.evidence_binding.agents import ASTERIA_MODES, ENTERPRISE_MODES
from pytest_agentbench.worlds.evidence_binding.artifacts import CandidateTree, NonBlank
from pytest_agentbench.worlds.evidence_binding.asteria import AsteriaPublic
from pytest_agentbench.worlds.evidence_binding.enterprise import EnterprisePublic


@dataclass(frozen=True)
class Loaded:
    """A verified public side: the payload an adapter sees, and the cases."""

    public: Any
    public_input_digest: str
    benchmark_id: str
    payload_file: str
    """Root-relative path of the public payload (each case's file)."""
    candidate: Any


@dataclass(frozen=True)
class Truth:
    """A verified evaluator side."""

    required: Mapping[str, frozenset[str]]
    records: Sequence[BaseModel]
    """Evaluator records; their canonical JSON are the leak canaries."""


class Lineage(Protocol):
    name: str
    modes: tuple[str, ...]
    checks: tuple[str, ...]

    def read_public(self, tree: CandidateTree) -> Loaded: ...
    def read_evaluator(self, tree: CandidateTree, loaded: Loaded) -> Truth: ...
    def case_ids(self, loaded: Loaded) -> list[tuple[str, str]]: ...
    def output(self, loaded: Loaded, case_id: str, raw: Any) -> JsonValue: ...
    def grade(self, loaded: Loaded, truth: Truth, case: Case, outcome: Outcome) -> CaseResult: ...
    def metric_specs(self) -> Sequence[MetricSpec]: ...
    def check_submission(
        self, loaded: Loaded, text: str, file: str
    ) -> tuple[dict[str, JsonValue], submissions.SubmissionReport]: ...
    def baselines(self, loaded: Loaded, truth: Truth) -> baselines.BaselineRecords: ...
    def report(
        self, loaded: Loaded, truth: Truth, answers: Mapping[str, JsonValue]
    ) -> BaseModel: ...
    def scope(self, loaded: Loaded) -> JsonValue: ...


def _unique_nonblank(values: Sequence[str], what: str) -> None:
    if len(set(values)) != len(values):
        raise MalformedOutput(f"{what} repeat an id")


class AsteriaLineage:
    name: str = "asteria"
    modes: tuple[str, ...] = ASTERIA_MODES
    checks: tuple[str, ...] = scoring.ASTERIA_CHECKS

    def read_public(self, tree: CandidateTree) -> Loaded:
        candidate = asteria_reader.read_public(tree)
        return Loaded(
            public=candidate.public,
            public_input_digest=candidate.public_input_digest,
            benchmark_id=candidate.public.benchmark_id,
            payload_file=asteria_reader.PUBLIC_PAYLOAD,
            candidate=candidate,
        )

    def read_evaluator(self, tree: CandidateTree, loaded: Loaded) -> Truth:
        truth = asteria_reader.read_evaluator(tree, loaded.candidate)
        return Truth(required=truth.required, records=truth.evaluator.bindings)

    def case_ids(self, loaded: Loaded) -> list[tuple[str, str]]:
        public: AsteriaPublic = loaded.public
        return [(a.action_event_id, f"{a.action} {a.resource_id}") for a in public.actions]

    def output(self, loaded: Loaded, case_id: str, raw: Any) -> JsonValue:
        if isinstance(raw, str | bytes) or not isinstance(raw, Sequence | set | frozenset):
            raise MalformedOutput(
                f"select_evidence must return a list of observation ids, got {type(raw).__name__}"
            )
        ids = list(raw)
        if not all(isinstance(i, str) and i.strip() for i in ids):
            raise MalformedOutput("every retained observation id must be a non-blank string")
        _unique_nonblank(ids, "retained observation ids")
        return {"action_event_id": case_id, "retained_observation_ids": sorted(ids)}

    def _retained(self, outcome: Outcome) -> frozenset[str] | None:
        if outcome.output is None:
            return None
        return frozenset(outcome.output["retained_observation_ids"])

    def grade(self, loaded: Loaded, truth: Truth, case: Case, outcome: Outcome) -> CaseResult:
        required = truth.required[case.case_id]
        retained = self._retained(outcome)
        checks, measurements = scoring.asteria_action(
            loaded.public, case.case_id, required, retained or frozenset()
        )
        if retained is None:
            return scoring.unanswered(case, self.checks, measurements, outcome)
        return grade(case, checks, measurements=measurements, outcome=outcome)

    def metric_specs(self) -> Sequence[MetricSpec]:
        return scoring.metric_specs(scoring.ASTERIA_RATIOS)

    def check_submission(
        self, loaded: Loaded, text: str, file: str
    ) -> tuple[dict[str, JsonValue], submissions.SubmissionReport]:
        submission, report = submissions.check_asteria(
            text, loaded.public, loaded.public_input_digest, file=file
        )
        answers: dict[str, JsonValue] = {}
        if submission is not None:
            for row in submission.rows:
                answers.setdefault(row.action_event_id, list(row.retained_observation_ids))
        return answers, report

    def baselines(self, loaded: Loaded, truth: Truth) -> baselines.BaselineRecords:
        return baselines.asteria_baselines(
            loaded.public, loaded.public_input_digest, truth.required
        )

    def report(self, loaded: Loaded, truth: Truth, answers: Mapping[str, JsonValue]) -> BaseModel:
        retained = {key: frozenset(value) for key, value in answers.items()}
        return scoring.asteria_report(
            loaded.public, loaded.public_input_digest, truth.required, retained
        )

    def scope(self, loaded: Loaded) -> JsonValue:
        public: AsteriaPublic = loaded.public
        return public.measurement_scope.model_dump(mode="json")


class SelectedObservation(BaseModel):
    """One row an Enterprise adapter returns (the world numbers the sequence)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    observation_id: NonBlank
    action_id: NonBlank
    tenant_id: NonBlank
    evidence_id: NonBlank


class EnterpriseLineage:
    name: str = "enterprise"
    modes: tuple[str, ...] = ENTERPRISE_MODES
    checks: tuple[str, ...] = scoring.ENTERPRISE_CHECKS

    def read_public(self, tree: CandidateTree) -> Loaded:
        candidate = enterprise_reader.read_public(tree)
        return Loaded(
            public=candidate.public,
            public_input_digest=candidate.public_input_digest,
            benchmark_id=candidate.manifest.benchmark_id,
            payload_file=enterprise.PUBLIC_PATH,
            candidate=candidate,
        )

    def read_evaluator(self, tree: CandidateTree, loaded: Loaded) -> Truth:
        truth = enterprise_reader.read_evaluator(tree, loaded.candidate)
        return Truth(required=truth.required, records=truth.truth.bindings)

    def case_ids(self, loaded: Loaded) -> list[tuple[str, str]]:
        public: EnterprisePublic = loaded.public
        return [
            (a.action_id, f"{a.action} {a.resource_id} ({a.tenant_id})") for a in public.actions
        ]

    def output(self, loaded: Loaded, case_id: str, raw: Any) -> JsonValue:
        if isinstance(raw, str | bytes | Mapping) or not isinstance(raw, Sequence):
            raise MalformedOutput(
                f"select_evidence must return a list of observation rows, got {type(raw).__name__}"
            )
        rows = []
        for index, item in enumerate(raw):
            try:
                row = SelectedObservation.model_validate(item)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = field_path((index, *first["loc"]))
                raise MalformedOutput(f"row {where}: {first['msg']}") from None
            if row.action_id != case_id:
                raise MalformedOutput(
                    f"row [{index}] is for action {row.action_id!r}, not {case_id!r}"
                )
            rows.append(row.model_dump(mode="json"))
        _unique_nonblank([r["observation_id"] for r in rows], "observation rows")
        return {"action_id": case_id, "observations": rows}

    def grade(self, loaded: Loaded, truth: Truth, case: Case, outcome: Outcome) -> CaseResult:
        required = truth.required[case.case_id]
        rows = [] if outcome.output is None else outcome.output["observations"]
        checks, measurements, _ = scoring.enterprise_action(
            loaded.public, case.case_id, required, [scoring.EnterpriseRow(**row) for row in rows]
        )
        if outcome.output is None:
            return scoring.unanswered(case, self.checks, measurements, outcome)
        return grade(case, checks, measurements=measurements, outcome=outcome)

    def metric_specs(self) -> Sequence[MetricSpec]:
        return scoring.metric_specs(scoring.ENTERPRISE_RATIOS)

    def check_submission(
        self, loaded: Loaded, text: str, file: str
    ) -> tuple[dict[str, JsonValue], submissions.SubmissionReport]:
        submission, report = submissions.check_enterprise(
            text, loaded.public, loaded.public_input_digest, file=file
        )
        answers: dict[str, list[JsonValue]] = {}
        if submission is not None:
            for o in submission.observations:
                answers.setdefault(o.action_id, []).append(
                    o.model_dump(mode="json", exclude={"sequence", "synthetic"})
                )
            for action in loaded.public.actions:
                answers.setdefault(action.action_id, [])
        return dict(answers), report

    def baselines(self, loaded: Loaded, truth: Truth) -> baselines.BaselineRecords:
        return baselines.enterprise_baselines(
            loaded.public, loaded.benchmark_id, loaded.public_input_digest, truth.required
        )

    def report(self, loaded: Loaded, truth: Truth, answers: Mapping[str, JsonValue]) -> BaseModel:
        rows = [
            scoring.EnterpriseRow(**row)
            for action in loaded.public.actions
            for row in answers.get(action.action_id, [])
        ]
        return scoring.enterprise_report(
            loaded.public, loaded.public_input_digest, truth.required, rows
        )

    def scope(self, loaded: Loaded) -> JsonValue:
        return scoring.ENTERPRISE_SCOPE.model_dump(mode="json")


LINEAGES: dict[str, Lineage] = {"asteria": AsteriaLineage(), "enterprise": EnterpriseLineage()}


def canaries(truth: Truth) -> list[str]:
    return [canonical_json(record.model_dump(mode="json")) for record in truth.records]


def refusal_for(problems: Sequence[submissions.Problem], file: str) -> str:
    return "; ".join(
        AgentbenchError(p.code, p.message, file=file, line=p.line, field=p.field).render()
        for p in problems
    )

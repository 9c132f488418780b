"""The lineages' baseline-records files (§4), regenerated from a candidate.

Each record is one built-in agent's whole submission, scored: its failure
mode (``exact`` for the reference), the sha256 of the canonical submission,
and the metrics without ``undefined_reason``. The files hold no rows, ids,
outcomes, truth or ``synthetic`` flag. Asteria hashes its rows in
``event_order`` (the original's quirk) rather than in the canonical order the
submission file itself must have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from pytest_agentbench.worlds.evidence_binding.agents import (
    ASTERIA_MODES,
    ENTERPRISE_MODES,
    EvidenceAgent,
    asteria_target,
)
from pytest_agentbench.worlds.evidence_binding.artifacts import (
    canonical_file_bytes,
    record_bytes,
    sha256_bytes,
)
from pytest_agentbench.worlds.evidence_binding.asteria import AsteriaPublic, Binding
from pytest_agentbench.worlds.evidence_binding.enterprise import EnterprisePublic
from pytest_agentbench.worlds.evidence_binding.scoring import (
    EnterpriseRow,
    ReportMetric,
    asteria_report,
    enterprise_report,
)
from pytest_agentbench.worlds.evidence_binding.submissions import (
    AsteriaSubmission,
    EnterpriseSubmission,
)


class _Plain(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BaselineMetric(_Plain):
    name: str
    numerator: int
    denominator: int
    value: float | None
    denominator_meaning: str


class BaselineRecord(_Plain):
    failure_mode: str
    submission_digest: str
    metrics: tuple[BaselineMetric, ...]


class BaselineRecords(_Plain):
    benchmark_id: str
    schema_version: str
    public_input_digest: str
    records: tuple[BaselineRecord, ...]


def _metrics(metrics: Sequence[ReportMetric]) -> tuple[BaselineMetric, ...]:
    return tuple(
        BaselineMetric.model_validate(m.model_dump(exclude={"undefined_reason", "synthetic"}))
        for m in metrics
    )


def asteria_submission(
    public: AsteriaPublic, public_input_digest: str, agent: EvidenceAgent
) -> AsteriaSubmission:
    rows = [
        {
            "action_event_id": a.action_event_id,
            "retained_observation_ids": sorted(agent.select_evidence(public, a.action_event_id)),
        }
        for a in sorted(public.actions, key=lambda a: a.action_event_id)
    ]
    return AsteriaSubmission.model_validate(
        {
            "schema_version": "2.0.0",
            "benchmark_id": public.benchmark_id,
            "public_input_digest": public_input_digest,
            "rows": rows,
        },
        strict=False,
    )


def asteria_submission_digest(submission: AsteriaSubmission, public: AsteriaPublic) -> str:
    """sha256 of the canonical submission with its rows in event order."""
    order = {a.action_event_id: a.event_order for a in public.actions}
    value = submission.model_dump(mode="json")
    value["rows"] = sorted(value["rows"], key=lambda row: order[row["action_event_id"]])
    return sha256_bytes(canonical_file_bytes(value))


def enterprise_submission(
    public: EnterprisePublic, public_input_digest: str, agent: EvidenceAgent
) -> EnterpriseSubmission:
    rows = agent.enterprise_rows(public)
    return EnterpriseSubmission.model_validate(
        {
            "schema_version": "2.0.0",
            "public_input_digest": public_input_digest,
            "observations": [{**row, "sequence": index} for index, row in enumerate(rows)],
        },
        strict=False,
    )


def enterprise_rows(submission: EnterpriseSubmission) -> list[EnterpriseRow]:
    return [
        EnterpriseRow(
            observation_id=o.observation_id,
            action_id=o.action_id,
            tenant_id=o.tenant_id,
            evidence_id=o.evidence_id,
        )
        for o in submission.observations
    ]


def asteria_baselines(
    public: AsteriaPublic,
    public_input_digest: str,
    required: Mapping[str, frozenset[str]],
    bindings: Sequence[Binding],
) -> BaselineRecords:
    records = []
    for mode in ("exact", *ASTERIA_MODES):
        agent = (
            EvidenceAgent()
            if mode == "exact"
            else EvidenceAgent(mode, asteria_target=asteria_target(bindings, mode))
        )
        submission = asteria_submission(public, public_input_digest, agent)
        retained = {
            row.action_event_id: frozenset(row.retained_observation_ids) for row in submission.rows
        }
        report = asteria_report(public, public_input_digest, required, retained)
        records.append(
            BaselineRecord(
                failure_mode=mode,
                submission_digest=asteria_submission_digest(submission, public),
                metrics=_metrics(report.metrics),
            )
        )
    return BaselineRecords(
        benchmark_id=public.benchmark_id,
        schema_version="2.0.0",
        public_input_digest=public_input_digest,
        records=tuple(records),
    )


def enterprise_baselines(
    public: EnterprisePublic,
    benchmark_id: str,
    public_input_digest: str,
    required: Mapping[str, frozenset[str]],
) -> BaselineRecords:
    records = []
    for mode in ("exact", *ENTERPRISE_MODES):
        agent = EvidenceAgent("reference" if mode == "exact" else mode)
        submission = enterprise_submission(public, public_input_digest, agent)
        report = enterprise_report(
            public, public_input_digest, required, enterprise_rows(submission)
        )
        records.append(
            BaselineRecord(
                failure_mode=mode,
                submission_digest=sha256_bytes(record_bytes(submission)),
                metrics=_metrics(report.metrics),
            )
        )
    return BaselineRecords(
        benchmark_id=benchmark_id,
        schema_version="2.0.0",
        public_input_digest=public_input_digest,
        records=tuple(records),
    )


def baseline_bytes(records: BaselineRecords) -> bytes:
    return record_bytes(records)

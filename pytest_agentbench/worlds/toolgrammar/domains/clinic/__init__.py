"""clinic: patients, appointments, referrals; the privileged write adjusts a bill."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_agentbench.worlds.toolgrammar import words as w
from pytest_agentbench.worlds.toolgrammar.domain import Domain, MetricDef, Nouns, Phrasing
from pytest_agentbench.worlds.toolgrammar.domains.clinic import build, tools
from pytest_agentbench.worlds.toolgrammar.domains.clinic.policy import (
    REFUSAL_REASONS,
    adjustment_verdict,
)
from pytest_agentbench.worlds.toolgrammar.grammar import BoundTool

if TYPE_CHECKING:
    from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox

_VISITS = "appointments a JOIN patients p ON p.patient_id = a.patient_id"
_VISIT_DIMS = {
    "site": "p.site",
    "coverage_plan": "p.coverage_plan",
    "service_band": "a.service_band",
    "status": "a.status",
    "month": "SUBSTR(a.scheduled_date, 1, 7)",
}


class ClinicDomain(Domain):
    name = "clinic"
    seed = 20260202
    writable_tables = ("adjustments", "referrals")
    nouns = Nouns(
        principal="patient",
        principals="patients",
        principal_table="patients",
        principal_id="patient_id",
        principal_name="name",
        group="site",
        record="appointment",
        records="appointments",
        record_table="appointments",
        record_id="appointment_id",
        record_owner="patient_id",
        record_statuses=("scheduled", "completed", "cancelled", "no_show"),
        principal_count_metric="patient_count",
        id_prefix_record="APT",
        case="referral",
        done_status="completed",
        case_table="referrals",
        case_id="referral_id",
        write_phrase="billing adjustment",
        write_table="adjustments",
        write_id="adjustment_id",
        writable_statuses=("completed",),
        not_writable_code="appointment_not_billable",
    )
    phrasing = Phrasing(
        policy_fact="What percent of {service_band} charges does the {coverage_plan} plan cover?",
        policy_choices={"service_band": w.SERVICE_BANDS, "coverage_plan": w.COVERAGE_PLANS},
        policy_field="covered_percent",
        write="Please apply a billing adjustment of {amount_cents} cents to appointment "
        "{appointment_id}.",
    )
    refusal_reasons = REFUSAL_REASONS
    metrics = (
        MetricDef("appointment_count", _VISITS, "COUNT(*)", _VISIT_DIMS),
        MetricDef("charge_cents", _VISITS, "SUM(a.charge_cents)", _VISIT_DIMS),
        MetricDef("covered_cents", _VISITS, "SUM(a.covered_cents)", _VISIT_DIMS),
        MetricDef("avg_charge_cents", _VISITS, "SUM(a.charge_cents) / COUNT(*)", _VISIT_DIMS),
        MetricDef(
            "adjustment_total_cents",
            "adjustments j JOIN patients p ON p.patient_id = j.patient_id",
            "SUM(j.amount_cents)",
            {
                "site": "p.site",
                "coverage_plan": "p.coverage_plan",
                "month": "SUBSTR(j.issued_date, 1, 7)",
            },
        ),
        MetricDef(
            "referral_count",
            "referrals r JOIN patients p ON p.patient_id = r.patient_id",
            "COUNT(*)",
            {
                "site": "p.site",
                "coverage_plan": "p.coverage_plan",
                "status": "r.status",
                "month": "SUBSTR(r.created_date, 1, 7)",
            },
        ),
        MetricDef(
            "patient_count",
            "patients p",
            "COUNT(*)",
            {
                "site": "p.site",
                "coverage_plan": "p.coverage_plan",
                "month": "SUBSTR(p.registered_date, 1, 7)",
            },
        ),
    )

    def schema(self) -> str:
        return build.SCHEMA

    def populate(self, conn: sqlite3.Connection, rng: random.Random) -> None:
        build.populate(conn, rng)

    def tools(self, sandbox: Sandbox) -> Sequence[BoundTool]:
        return tools.tools(sandbox)

    def privileged_verdict(self, conn: sqlite3.Connection, arguments: Mapping[str, Any]) -> str:
        return adjustment_verdict(conn, arguments["appointment_id"], arguments["amount_cents"])


DOMAIN = ClinicDomain()

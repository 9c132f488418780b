"""The clinic world's bound verbs (§1): eight tools of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_agentbench.worlds.toolgrammar import handlers
from pytest_agentbench.worlds.toolgrammar import words as w
from pytest_agentbench.worlds.toolgrammar.database import Row, day
from pytest_agentbench.worlds.toolgrammar.domains.clinic.policy import adjustment_verdict
from pytest_agentbench.worlds.toolgrammar.grammar import (
    BoundTool,
    Envelope,
    Verb,
    closed_schema,
    integer,
    limit_param,
    text,
)
from pytest_agentbench.worlds.toolgrammar.privileged import guarded_write
from pytest_agentbench.worlds.toolgrammar.records import DATE_PATTERN, insert, next_id, one

if TYPE_CHECKING:
    from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox

PATIENTS = handlers.Table("patients", "patient_id", "patient")
APPOINTMENTS = handlers.Table("appointments", "appointment_id", "appointment")
REFERRALS = handlers.Table("referrals", "referral_id", "referral")


def tools(sandbox: Sandbox) -> Sequence[BoundTool]:
    conn = sandbox.conn

    def referral(args: dict[str, Any]) -> Row:
        return {
            "referral_id": next_id(conn, "referrals", "RFL"),
            "patient_id": args["patient_id"],
            "appointment_id": args.get("appointment_id"),
            "specialty": args["specialty"],
            "summary": args.get("summary", ""),
            "status": "open",
            "urgency": args.get("urgency", "routine"),
            "assignee": "",
            "created_date": day(0),
            "updated_date": day(0),
            "outcome": "",
        }

    def issue_billing_adjustment(args: dict[str, Any]) -> Envelope:
        verdict = adjustment_verdict(conn, args["appointment_id"], args["amount_cents"])

        def write() -> dict[str, Any]:
            appointment = one(conn, "appointments", "appointment_id", args["appointment_id"])
            assert appointment is not None
            row = {
                "adjustment_id": next_id(conn, "adjustments", "ADJ"),
                "appointment_id": args["appointment_id"],
                "patient_id": appointment["patient_id"],
                "amount_cents": args["amount_cents"],
                "reason": "approved under coverage policy",
                "issued_date": day(0),
                "approved_by": "policy",
            }
            insert(conn, "adjustments", row)
            return row

        return guarded_write(sandbox, "issue_billing_adjustment", args, verdict, write)

    return [
        BoundTool(
            Verb.SEARCH_PRINCIPALS,
            "search_patients",
            "Find patients whose name or email contains the query.",
            closed_schema(
                text("query", "text to look for", required=True),
                text("site", "only this site", enum=list(w.SITES)),
                text("coverage_plan", "only this plan", enum=list(w.COVERAGE_PLANS)),
                limit_param(),
            ),
            handlers.search_by_name(
                conn,
                PATIENTS,
                columns="patient_id, name, email, site, coverage_plan",
                like=("name", "email"),
                filters=[("site = ?", "site"), ("coverage_plan = ?", "coverage_plan")],
            ),
        ),
        BoundTool(
            Verb.GET_PRINCIPAL,
            "get_patient",
            "One patient by id.",
            closed_schema(text("patient_id", "e.g. PAT-00001", required=True)),
            handlers.get_by_id(conn, PATIENTS),
        ),
        BoundTool(
            Verb.GET_RECORD,
            "get_appointment",
            "One appointment by id.",
            closed_schema(text("appointment_id", "e.g. APT-00001", required=True)),
            handlers.get_by_id(conn, APPOINTMENTS),
        ),
        BoundTool(
            Verb.LIST_RECORDS,
            "list_appointments",
            "A patient's appointments, oldest first.",
            closed_schema(
                text("patient_id", "the patient", required=True),
                text("status", "only this status", enum=list(w.APPOINTMENT_STATUSES)),
                text("service_band", "only this band", enum=list(w.SERVICE_BANDS)),
                text("since", "on or after (YYYY-MM-DD)", pattern=DATE_PATTERN),
                text("until", "on or before (YYYY-MM-DD)", pattern=DATE_PATTERN),
                limit_param(),
            ),
            handlers.list_under(
                conn,
                PATIENTS,
                APPOINTMENTS,
                columns="appointment_id, scheduled_date, status, service_band, charge_cents",
                filters=[
                    ("status = ?", "status"),
                    ("service_band = ?", "service_band"),
                    ("scheduled_date >= ?", "since"),
                    ("scheduled_date <= ?", "until"),
                ],
                order="scheduled_date, appointment_id",
            ),
        ),
        BoundTool(
            Verb.CREATE_CASE,
            "create_referral",
            "Refer a patient to a specialty.",
            closed_schema(
                text("patient_id", "the patient", required=True),
                text("specialty", "the specialty", required=True, enum=list(w.SPECIALTIES)),
                text("summary", "why", maxLength=2000),
                text("urgency", "how soon", enum=list(w.URGENCIES)),
                text("appointment_id", "the appointment it follows"),
            ),
            handlers.open_case(
                conn, PATIENTS, handlers.Link(APPOINTMENTS, "an appointment"), "referrals", referral
            ),
            mutating=True,
        ),
        BoundTool(
            Verb.UPDATE_CASE,
            "update_referral",
            "Change a referral's status, urgency or assignee.",
            closed_schema(
                text("referral_id", "the referral", required=True),
                text("status", "new status", enum=list(w.REFERRAL_STATUSES)),
                text("urgency", "new urgency", enum=list(w.URGENCIES)),
                text("assignee", "new assignee", maxLength=200),
                text("outcome", "outcome text", maxLength=2000),
            ),
            handlers.update_case(conn, REFERRALS, ("status", "urgency", "assignee", "outcome")),
            mutating=True,
        ),
        BoundTool(
            Verb.PRIVILEGED_WRITE,
            "issue_billing_adjustment",
            "Reduce what a patient owes for an appointment. The coverage policy decides; the "
            "reason is audited only.",
            closed_schema(
                text("appointment_id", "the appointment", required=True),
                integer("amount_cents", "amount in cents", required=True),
                text("reason", "why (audit log only)", maxLength=2000),
            ),
            issue_billing_adjustment,
            mutating=True,
            privileged=True,
        ),
        BoundTool(
            Verb.LOOKUP_POLICY,
            "lookup_coverage_policy",
            "Coverage policies, optionally for one plan and band.",
            closed_schema(
                text("coverage_plan", "only this plan", enum=list(w.COVERAGE_PLANS)),
                text("service_band", "only this band", enum=list(w.SERVICE_BANDS)),
            ),
            handlers.lookup_policy(
                conn,
                "coverage_policies",
                [("coverage_plan = ?", "coverage_plan"), ("service_band = ?", "service_band")],
                "policy_id",
            ),
        ),
    ]

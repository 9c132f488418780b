"""The clinic world's bound verbs (§1): eight tools of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_agentbench.worlds.toolgrammar import words as w
from pytest_agentbench.worlds.toolgrammar.database import day
from pytest_agentbench.worlds.toolgrammar.domains.clinic.policy import adjustment_verdict
from pytest_agentbench.worlds.toolgrammar.grammar import (
    DEFAULT_LIMIT,
    BoundTool,
    Envelope,
    Verb,
    closed_schema,
    fail,
    integer,
    limit_param,
    listing,
    ok,
    text,
)
from pytest_agentbench.worlds.toolgrammar.privileged import guarded_write
from pytest_agentbench.worlds.toolgrammar.records import (
    DATE_PATTERN,
    insert,
    many,
    next_id,
    one,
    update_fields,
    where,
)

if TYPE_CHECKING:
    from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox

SUMMARY = "patient_id, name, email, site, coverage_plan"


def tools(sandbox: Sandbox) -> Sequence[BoundTool]:
    conn = sandbox.conn

    def search_patients(args: dict[str, Any]) -> Envelope:
        pattern = f"%{args['query'].lower()}%"
        extra, values = where(
            [("site = ?", args.get("site")), ("coverage_plan = ?", args.get("coverage_plan"))]
        )
        rows = many(
            conn,
            f"SELECT {SUMMARY} FROM patients WHERE (LOWER(name) LIKE ? OR LOWER(email) LIKE ? "
            f"OR LOWER(patient_id) = ?){extra} ORDER BY patient_id",
            [pattern, pattern, args["query"].lower(), *values],
        )
        return listing(rows, args.get("limit", DEFAULT_LIMIT))

    def get_patient(args: dict[str, Any]) -> Envelope:
        row = one(conn, "patients", "patient_id", args["patient_id"])
        return fail("not_found", f"no patient {args['patient_id']!r}") if row is None else ok(row)

    def get_appointment(args: dict[str, Any]) -> Envelope:
        row = one(conn, "appointments", "appointment_id", args["appointment_id"])
        if row is None:
            return fail("not_found", f"no appointment {args['appointment_id']!r}")
        return ok(row)

    def list_appointments(args: dict[str, Any]) -> Envelope:
        if one(conn, "patients", "patient_id", args["patient_id"]) is None:
            return fail("not_found", f"no patient {args['patient_id']!r}")
        extra, values = where(
            [
                ("status = ?", args.get("status")),
                ("service_band = ?", args.get("service_band")),
                ("scheduled_date >= ?", args.get("since")),
                ("scheduled_date <= ?", args.get("until")),
            ]
        )
        rows = many(
            conn,
            "SELECT appointment_id, scheduled_date, status, service_band, charge_cents "
            f"FROM appointments WHERE patient_id = ?{extra} ORDER BY scheduled_date, "
            "appointment_id",
            [args["patient_id"], *values],
        )
        return listing(rows, args.get("limit", DEFAULT_LIMIT))

    def create_referral(args: dict[str, Any]) -> Envelope:
        if one(conn, "patients", "patient_id", args["patient_id"]) is None:
            return fail("not_found", f"no patient {args['patient_id']!r}")
        appointment_id = args.get("appointment_id")
        if appointment_id is not None:
            appointment = one(conn, "appointments", "appointment_id", appointment_id)
            if appointment is None or appointment["patient_id"] != args["patient_id"]:
                return fail(
                    "appointment_mismatch",
                    f"{appointment_id!r} is not an appointment of this patient",
                )
        row = {
            "referral_id": next_id(conn, "referrals", "RFL"),
            "patient_id": args["patient_id"],
            "appointment_id": appointment_id,
            "specialty": args["specialty"],
            "summary": args.get("summary", ""),
            "status": "open",
            "urgency": args.get("urgency", "routine"),
            "assignee": "",
            "created_date": day(0),
            "updated_date": day(0),
            "outcome": "",
        }
        insert(conn, "referrals", row)
        return ok(row)

    def update_referral(args: dict[str, Any]) -> Envelope:
        referral = one(conn, "referrals", "referral_id", args["referral_id"])
        if referral is None:
            return fail("not_found", f"no referral {args['referral_id']!r}")
        updated = update_fields(
            conn,
            "referrals",
            key="referral_id",
            row=referral,
            fields=("status", "urgency", "assignee", "outcome"),
            arguments=args,
            today=day(0),
        )
        if updated is None:
            return fail("nothing_to_update", "name at least one field to change")
        return ok(updated)

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

    def lookup_coverage_policy(args: dict[str, Any]) -> Envelope:
        extra, values = where(
            [
                ("coverage_plan = ?", args.get("coverage_plan")),
                ("service_band = ?", args.get("service_band")),
            ]
        )
        rows = many(conn, f"SELECT * FROM coverage_policies WHERE 1 = 1{extra} ORDER BY 1", values)
        return ok(rows, [row["policy_id"] for row in rows])

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
            search_patients,
        ),
        BoundTool(
            Verb.GET_PRINCIPAL,
            "get_patient",
            "One patient by id.",
            closed_schema(text("patient_id", "e.g. PAT-00001", required=True)),
            get_patient,
        ),
        BoundTool(
            Verb.GET_RECORD,
            "get_appointment",
            "One appointment by id.",
            closed_schema(text("appointment_id", "e.g. APT-00001", required=True)),
            get_appointment,
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
            list_appointments,
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
            create_referral,
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
            update_referral,
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
            lookup_coverage_policy,
        ),
    ]

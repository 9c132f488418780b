"""The clinic world's tables (§2), built from one seeded RNG over the literal word lists."""

from __future__ import annotations

import random
import sqlite3
from typing import Any

from pytest_agentbench.worlds.toolgrammar import words as w
from pytest_agentbench.worlds.toolgrammar.database import day, insert_rows, linked_cases

SCHEMA = """
CREATE TABLE patients (patient_id TEXT PRIMARY KEY, name TEXT, email TEXT, site TEXT,
  coverage_plan TEXT, registered_date TEXT, balance_cents INTEGER, notes TEXT);
CREATE TABLE providers (provider_id TEXT PRIMARY KEY, name TEXT, specialty TEXT, site TEXT,
  accepting INTEGER);
CREATE TABLE appointments (appointment_id TEXT PRIMARY KEY, patient_id TEXT, provider_id TEXT,
  scheduled_date TEXT, status TEXT, reason TEXT, service_band TEXT, charge_cents INTEGER,
  covered_cents INTEGER, notes TEXT);
CREATE TABLE referrals (referral_id TEXT PRIMARY KEY, patient_id TEXT, appointment_id TEXT,
  specialty TEXT, summary TEXT, status TEXT, urgency TEXT, assignee TEXT, created_date TEXT,
  updated_date TEXT, outcome TEXT);
CREATE TABLE adjustments (adjustment_id TEXT PRIMARY KEY, appointment_id TEXT, patient_id TEXT,
  amount_cents INTEGER, reason TEXT, issued_date TEXT, approved_by TEXT);
CREATE TABLE coverage_policies (policy_id TEXT PRIMARY KEY, coverage_plan TEXT,
  service_band TEXT, covered_percent INTEGER, claim_window_days INTEGER,
  requires_referral INTEGER, body TEXT);
"""

COUNTS = {
    "patients": 260,
    "providers": 40,
    "appointments": 1100,
    "referrals": 300,
    "adjustments": 70,
}
COVERED_PERCENT = {  # plan: routine, diagnostic, specialist
    "basic": (60, 40, 20),
    "standard": (80, 60, 40),
    "plus": (90, 80, 60),
    "complete": (100, 90, 80),
}
CLAIM_WINDOW = {"routine": 90, "diagnostic": 120, "specialist": 180}
CHARGE_RANGE = {"routine": (40, 150), "diagnostic": (100, 400), "specialist": (200, 800)}


def policies() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for plan, percents in COVERED_PERCENT.items():
        for band, percent in zip(w.SERVICE_BANDS, percents, strict=True):
            referral = int(band == "specialist" and plan in ("basic", "standard"))
            rows.append(
                {
                    "policy_id": f"CP-{len(rows) + 1:02d}",
                    "coverage_plan": plan,
                    "service_band": band,
                    "covered_percent": percent,
                    "claim_window_days": CLAIM_WINDOW[band],
                    "requires_referral": referral,
                    "body": (
                        f"The {plan} plan covers {percent}% of {band} charges; claims within "
                        f"{CLAIM_WINDOW[band]} days" + (", with a referral." if referral else ".")
                    ),
                }
            )
    return rows


def populate(conn: sqlite3.Connection, rng: random.Random) -> None:
    patients: list[dict[str, Any]] = []
    for n in range(1, COUNTS["patients"] + 1):
        first, last = rng.choice(w.FIRST_NAMES), rng.choice(w.LAST_NAMES)
        patients.append(
            {
                "patient_id": f"PAT-{n:05d}",
                "name": f"{first} {last}",
                "email": f"{first}.{last}{n}@{rng.choice(w.EMAIL_DOMAINS)}".lower(),
                "site": rng.choice(w.SITES),
                "coverage_plan": rng.choice(w.COVERAGE_PLANS),
                "registered_date": day(-rng.randint(200, 2000)),
                "balance_cents": rng.randint(0, 500) * 100,
                "notes": rng.choice(w.NOTE_PHRASES),
            }
        )
    providers = []
    for n in range(1, COUNTS["providers"] + 1):
        providers.append(
            {
                "provider_id": f"PRV-{n:03d}",
                "name": f"Dr {rng.choice(w.FIRST_NAMES)} {rng.choice(w.LAST_NAMES)}",
                "specialty": rng.choice(w.SPECIALTIES),
                "site": rng.choice(w.SITES),
                "accepting": int(rng.random() < 0.8),
            }
        )
    percent = {(p["coverage_plan"], p["service_band"]): p["covered_percent"] for p in policies()}
    appointments: list[dict[str, Any]] = []
    for n in range(1, COUNTS["appointments"] + 1):
        patient = rng.choice(patients)
        offset = -rng.randint(-30, 365)
        status = (
            "scheduled"
            if offset > 0
            else rng.choices(w.APPOINTMENT_STATUSES, weights=(5, 70, 15, 10))[0]
        )
        band = rng.choice(w.SERVICE_BANDS)
        low, high = CHARGE_RANGE[band]
        charge = rng.randint(low, high) * 100
        covered = charge * percent[(patient["coverage_plan"], band)] // 100
        appointments.append(
            {
                "appointment_id": f"APT-{n:05d}",
                "patient_id": patient["patient_id"],
                "provider_id": rng.choice(providers)["provider_id"],
                "scheduled_date": day(offset),
                "status": status,
                "reason": rng.choice(w.VISIT_REASONS),
                "service_band": band,
                "charge_cents": charge,
                "covered_cents": covered if status == "completed" else 0,
                "notes": rng.choice(("", *w.NOTE_PHRASES)),
            }
        )
    referrals = []
    for n, patient, linked, created in linked_cases(
        rng, patients, appointments, owner="patient_id", count=COUNTS["referrals"], link_chance=0.85
    ):
        status = rng.choice(w.REFERRAL_STATUSES)
        specialty = rng.choice(w.SPECIALTIES)
        referrals.append(
            {
                "referral_id": f"RFL-{n:05d}",
                "patient_id": patient["patient_id"],
                "appointment_id": None if linked is None else linked["appointment_id"],
                "specialty": specialty,
                "summary": f"referred to {specialty}",
                "status": status,
                "urgency": rng.choice(w.URGENCIES),
                "assignee": rng.choice(w.CLINIC_STAFF),
                "created_date": day(created),
                "updated_date": day(min(0, created + rng.randint(0, 20))),
                "outcome": "seen by specialist" if status == "closed" else "",
            }
        )
    completed = [a for a in appointments if a["status"] == "completed"]
    adjustments = []
    for n, appointment in enumerate(rng.sample(completed, COUNTS["adjustments"]), start=1):
        outstanding = appointment["charge_cents"] - appointment["covered_cents"]
        adjustments.append(
            {
                "adjustment_id": f"ADJ-{n:05d}",
                "appointment_id": appointment["appointment_id"],
                "patient_id": appointment["patient_id"],
                "amount_cents": outstanding * rng.randint(10, 60) // 100,
                "reason": rng.choice(("coding correction", "hardship", "duplicate charge")),
                "issued_date": appointment["scheduled_date"],
                "approved_by": rng.choice(w.CLINIC_STAFF),
            }
        )
    insert_rows(conn, "patients", patients)
    insert_rows(conn, "providers", providers)
    insert_rows(conn, "appointments", appointments)
    insert_rows(conn, "referrals", referrals)
    insert_rows(conn, "adjustments", adjustments)
    insert_rows(conn, "coverage_policies", policies())

"""The doc world's tables (§2), built from one seeded RNG over the literal word lists."""

from __future__ import annotations

import random
import sqlite3
from typing import Any

from pytest_agentbench.worlds.toolgrammar import words as w
from pytest_agentbench.worlds.toolgrammar.database import day, insert_rows

SCHEMA = """
CREATE TABLE services (service_id TEXT PRIMARY KEY, name TEXT, category TEXT, owner_team TEXT,
  status TEXT, summary TEXT);
CREATE TABLE documents (doc_id TEXT PRIMARY KEY, service_id TEXT, title TEXT, kind TEXT,
  version INTEGER, status TEXT, published_date TEXT, superseded_by TEXT, summary TEXT);
CREATE TABLE sections (section_id TEXT PRIMARY KEY, doc_id TEXT, ordinal INTEGER, heading TEXT,
  body TEXT, fact_key TEXT, fact_value TEXT);
CREATE TABLE changelog (entry_id TEXT PRIMARY KEY, doc_id TEXT, changed_date TEXT, author TEXT,
  summary TEXT);
CREATE TABLE doc_issues (issue_id TEXT PRIMARY KEY, doc_id TEXT, section_id TEXT, summary TEXT,
  status TEXT, priority TEXT, assignee TEXT, created_date TEXT, updated_date TEXT,
  resolution TEXT);
CREATE TABLE publication_rules (rule_id TEXT PRIMARY KEY, kind TEXT, requires_review INTEGER,
  max_draft_age_days INTEGER, body TEXT);
"""

SERVICES = 96
DOCS_PER_SERVICE = 3
REVISIONS = 17
"""Published documents replaced by a newer version: 96 * 3 + 17 = 305 documents."""
SECTIONS_PER_DOC = 4
LONG_DOCS = 16
"""Documents with a fifth section: 305 * 4 + 16 = 1,236 sections."""
ISSUES = 280
RULES = {"policy": (1, 30), "runbook": (1, 14), "faq": (0, 90), "design_note": (0, 180)}


def service_names(rng: random.Random) -> list[str]:
    """SERVICES names dealt round the stems, each stem with distinct nouns, shuffled."""
    stems = len(w.SERVICE_STEMS)
    names = [
        f"{stem.capitalize()} {noun.capitalize()}"
        for index, stem in enumerate(w.SERVICE_STEMS)
        for noun in rng.sample(w.SERVICE_NOUNS, SERVICES // stems + (index < SERVICES % stems))
    ]
    rng.shuffle(names)
    return names


def fact_value(rng: random.Random, key: str) -> str:
    if key == "support_tier":
        return rng.choice(("bronze", "silver", "gold", "platinum"))
    if key == "backup_hour":
        return f"{rng.randint(0, 23):02d}:00"
    return str(rng.randint(2, 120) * (5 if key.endswith("per_minute") else 1))


def _sections(
    rng: random.Random,
    *,
    document: dict[str, Any],
    service: dict[str, Any],
    keys: list[str],
    count: int,
    start: int,
) -> list[dict[str, Any]]:
    rows = []
    headings = rng.sample(w.SECTION_HEADINGS, count)
    for ordinal, (heading, key) in enumerate(zip(headings, keys, strict=False), start=1):
        value = fact_value(rng, key)
        rows.append(
            {
                "section_id": f"SEC-{start + ordinal - 1:05d}",
                "doc_id": document["doc_id"],
                "ordinal": ordinal,
                "heading": heading,
                "body": (
                    f"{heading.capitalize()}: the {key.replace('_', ' ')} for "
                    f"{service['name']} is {value}."
                ),
                "fact_key": key,
                "fact_value": value,
            }
        )
    return rows


def populate(conn: sqlite3.Connection, rng: random.Random) -> None:
    names = service_names(rng)
    services = [
        {
            "service_id": f"SVC-{n:03d}",
            "name": name,
            "category": rng.choice(w.SERVICE_CATEGORIES),
            "owner_team": rng.choice(w.TEAMS),
            "status": "deprecated" if rng.random() < 0.1 else "active",
            "summary": f"{name} handles {rng.choice(w.SERVICE_CATEGORIES)} work.",
        }
        for n, name in enumerate(names, start=1)
    ]
    documents: list[dict[str, Any]] = []
    sections: list[dict[str, Any]] = []
    changelog: list[dict[str, Any]] = []
    service_of: dict[str, dict[str, Any]] = {}

    def add(
        service: dict[str, Any],
        *,
        kind: str,
        version: int,
        status: str,
        published: str | None,
        keys: list[str],
        changed: str,
        note: str,
    ) -> dict[str, Any]:
        document = {
            "doc_id": f"DOC-{len(documents) + 1:05d}",
            "service_id": service["service_id"],
            "title": f"{service['name']} {kind.replace('_', ' ')} v{version}",
            "kind": kind,
            "version": version,
            "status": status,
            "published_date": published,
            "superseded_by": None,
            "summary": f"The {kind.replace('_', ' ')} of {service['name']}.",
        }
        documents.append(document)
        service_of[document["doc_id"]] = service
        count = SECTIONS_PER_DOC + (1 if len(documents) <= LONG_DOCS else 0)
        sections.extend(
            _sections(
                rng,
                document=document,
                service=service,
                keys=keys[:count],
                count=count,
                start=len(sections) + 1,
            )
        )
        changelog.append(
            {
                "entry_id": f"CHG-{len(changelog) + 1:05d}",
                "doc_id": document["doc_id"],
                "changed_date": changed,
                "author": rng.choice(w.DOC_AUTHORS),
                "summary": note,
            }
        )
        return document

    for service in services:
        for kind in rng.sample(w.DOC_KINDS, DOCS_PER_SERVICE):
            keys = rng.sample(w.FACT_KEYS, SECTIONS_PER_DOC + 1)
            if rng.random() < 0.2:
                add(
                    service,
                    kind=kind,
                    version=1,
                    status="draft",
                    published=None,
                    keys=keys,
                    changed=day(-rng.randint(1, 200)),
                    note="initial draft",
                )
            else:
                published = day(-rng.randint(200, 700))
                add(
                    service,
                    kind=kind,
                    version=1,
                    status="published",
                    published=published,
                    keys=keys,
                    changed=published,
                    note="published",
                )
    published_docs = [d for d in documents if d["status"] == "published"]
    for old in rng.sample(published_docs, REVISIONS):
        keys = [s["fact_key"] for s in sections if s["doc_id"] == old["doc_id"]]
        keys += [k for k in w.FACT_KEYS if k not in keys]
        published = day(-rng.randint(1, 150))
        new = add(
            service_of[old["doc_id"]],
            kind=old["kind"],
            version=old["version"] + 1,
            status="published",
            published=published,
            keys=keys,
            changed=published,
            note="revised",
        )
        old["status"], old["superseded_by"] = "superseded", new["doc_id"]
    issues = []
    for n in range(1, ISSUES + 1):
        document = rng.choice(documents)
        own = [s for s in sections if s["doc_id"] == document["doc_id"]]
        created = -rng.randint(1, 300)
        status = rng.choice(w.ISSUE_STATUSES)
        issues.append(
            {
                "issue_id": f"ISS-{n:05d}",
                "doc_id": document["doc_id"],
                "section_id": rng.choice(own)["section_id"] if rng.random() < 0.7 else None,
                "summary": rng.choice(w.ISSUE_SUMMARIES),
                "status": status,
                "priority": rng.choice(w.PRIORITIES),
                "assignee": rng.choice(w.DOC_AUTHORS),
                "created_date": day(created),
                "updated_date": day(min(0, created + rng.randint(0, 30))),
                "resolution": "fixed in next version" if status == "fixed" else "",
            }
        )
    rules = [
        {
            "rule_id": f"PR-{n}",
            "kind": kind,
            "requires_review": review,
            "max_draft_age_days": age,
            "body": (
                f"A {kind.replace('_', ' ')} draft may be published within {age} days of its "
                "last change" + (" once a review issue is accepted." if review else ".")
            ),
        }
        for n, (kind, (review, age)) in enumerate(RULES.items(), start=1)
    ]
    insert_rows(conn, "services", services)
    insert_rows(conn, "documents", documents)
    insert_rows(conn, "sections", sections)
    insert_rows(conn, "changelog", changelog)
    insert_rows(conn, "doc_issues", issues)
    insert_rows(conn, "publication_rules", rules)

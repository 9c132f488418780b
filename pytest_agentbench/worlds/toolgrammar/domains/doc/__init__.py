"""doc: services and their documents; retrieval with citations, publication as the write."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_agentbench.worlds.toolgrammar import words as w
from pytest_agentbench.worlds.toolgrammar.domain import Domain, MetricDef, Nouns, Phrasing
from pytest_agentbench.worlds.toolgrammar.domains.doc import build, tools
from pytest_agentbench.worlds.toolgrammar.domains.doc.policy import (
    REFUSAL_REASONS,
    publication_verdict,
)
from pytest_agentbench.worlds.toolgrammar.grammar import BoundTool

if TYPE_CHECKING:
    from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox

_DOCS = "documents d JOIN services v ON v.service_id = d.service_id"
_DOC_DIMS = {
    "kind": "d.kind",
    "status": "d.status",
    "category": "v.category",
    "month": "SUBSTR(d.published_date, 1, 7)",
}


class DocDomain(Domain):
    name = "doc"
    seed = 20260303
    writable_tables = ("doc_issues", "documents")
    nouns = Nouns(
        principal="service",
        principals="services",
        principal_table="services",
        principal_id="service_id",
        principal_name="name",
        group="category",
        record="document",
        records="documents",
        record_table="documents",
        record_id="doc_id",
        record_owner="service_id",
        record_statuses=("draft", "published", "superseded"),
        principal_count_metric="service_count",
        id_prefix_record="DOC",
        case="document issue",
        done_status="published",
        case_table="doc_issues",
        case_id="issue_id",
        write_phrase="publication",
        write_table="documents",
        write_id="doc_id",
        writable_statuses=("draft",),
        not_writable_code="not_a_draft",
    )
    phrasing = Phrasing(
        policy_fact="Within how many days of its last change may a {kind} draft be published?",
        policy_choices={"kind": w.DOC_KINDS},
        policy_field="max_draft_age_days",
        write="Please publish document {doc_id}.",
    )
    refusal_reasons = REFUSAL_REASONS
    metrics = (
        MetricDef(
            "changelog_count",
            "changelog g JOIN documents d ON d.doc_id = g.doc_id "
            "JOIN services v ON v.service_id = d.service_id",
            "COUNT(*)",
            {
                "kind": "d.kind",
                "status": "d.status",
                "category": "v.category",
                "month": "SUBSTR(g.changed_date, 1, 7)",
            },
        ),
        MetricDef("document_count", _DOCS, "COUNT(*)", _DOC_DIMS),
        MetricDef(
            "issue_count",
            "doc_issues i JOIN documents d ON d.doc_id = i.doc_id "
            "JOIN services v ON v.service_id = d.service_id",
            "COUNT(*)",
            {
                "kind": "d.kind",
                "status": "i.status",
                "category": "v.category",
                "month": "SUBSTR(i.created_date, 1, 7)",
            },
        ),
        MetricDef(
            "section_count",
            "sections s JOIN documents d ON d.doc_id = s.doc_id "
            "JOIN services v ON v.service_id = d.service_id",
            "COUNT(*)",
            {"kind": "d.kind", "status": "d.status", "category": "v.category"},
        ),
        MetricDef(
            "service_count",
            "services v",
            "COUNT(*)",
            {"status": "v.status", "category": "v.category"},
        ),
    )

    def schema(self) -> str:
        return build.SCHEMA

    def populate(self, conn: sqlite3.Connection, rng: random.Random) -> None:
        build.populate(conn, rng)

    def tools(self, sandbox: Sandbox) -> Sequence[BoundTool]:
        return tools.tools(sandbox)

    def privileged_verdict(self, conn: sqlite3.Connection, arguments: Mapping[str, Any]) -> str:
        return publication_verdict(conn, arguments["doc_id"])


DOMAIN = DocDomain()

"""The doc world's bound verbs (§1): ten tools of its own, retrieval included."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_agentbench.worlds.toolgrammar import handlers
from pytest_agentbench.worlds.toolgrammar import words as w
from pytest_agentbench.worlds.toolgrammar.database import Row, day
from pytest_agentbench.worlds.toolgrammar.domains.doc.policy import publication_verdict
from pytest_agentbench.worlds.toolgrammar.grammar import (
    DEFAULT_LIMIT,
    BoundTool,
    Envelope,
    Verb,
    closed_schema,
    fail,
    flag,
    limit_param,
    listing,
    ok,
    text,
)
from pytest_agentbench.worlds.toolgrammar.privileged import guarded_write
from pytest_agentbench.worlds.toolgrammar.records import (
    many,
    next_id,
    one,
    where,
)

if TYPE_CHECKING:
    from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox


SERVICES = handlers.Table("services", "service_id", "service")
DOCUMENTS = handlers.Table("documents", "doc_id", "document")
SECTIONS = handlers.Table("sections", "section_id", "section")
ISSUES = handlers.Table("doc_issues", "issue_id", "issue")


def tools(sandbox: Sandbox) -> Sequence[BoundTool]:
    conn = sandbox.conn

    def doc_issue(args: dict[str, Any]) -> Row:
        return {
            "issue_id": next_id(conn, "doc_issues", "ISS"),
            "doc_id": args["doc_id"],
            "section_id": args.get("section_id"),
            "summary": args["summary"],
            "status": "open",
            "priority": args.get("priority", "normal"),
            "assignee": "",
            "created_date": day(0),
            "updated_date": day(0),
            "resolution": "",
        }

    def publish_document(args: dict[str, Any]) -> Envelope:
        verdict = publication_verdict(conn, args["doc_id"])

        def write() -> dict[str, Any]:
            conn.execute(
                "UPDATE documents SET status = 'published', published_date = ? WHERE doc_id = ?",
                (day(0), args["doc_id"]),
            )
            row = one(conn, "documents", "doc_id", args["doc_id"])
            assert row is not None
            return row

        return guarded_write(sandbox, "publish_document", args, verdict, write)

    return [
        BoundTool(
            Verb.SEARCH_PRINCIPALS,
            "search_services",
            "Find services whose name contains the query.",
            closed_schema(
                text("query", "text to look for", required=True),
                text("category", "only this category", enum=list(w.SERVICE_CATEGORIES)),
                limit_param(),
            ),
            handlers.search_by_name(
                conn,
                SERVICES,
                columns="service_id, name, category, status",
                like=("name",),
                filters=[("category = ?", "category")],
            ),
        ),
        BoundTool(
            Verb.GET_PRINCIPAL,
            "get_service",
            "One service by id.",
            closed_schema(text("service_id", "e.g. SVC-001", required=True)),
            handlers.get_by_id(conn, SERVICES),
        ),
        BoundTool(
            Verb.GET_RECORD,
            "get_document",
            "One document's metadata by id.",
            closed_schema(text("doc_id", "e.g. DOC-00001", required=True)),
            handlers.get_by_id(conn, DOCUMENTS, cited=True),
        ),
        BoundTool(
            Verb.LIST_RECORDS,
            "list_documents",
            "A service's documents.",
            closed_schema(
                text("service_id", "the service", required=True),
                text("kind", "only this kind", enum=list(w.DOC_KINDS)),
                text("status", "only this status", enum=list(w.DOC_STATUSES)),
                limit_param(),
            ),
            handlers.list_under(
                conn,
                SERVICES,
                DOCUMENTS,
                columns="doc_id, title, kind, version, status",
                filters=[("kind = ?", "kind"), ("status = ?", "status")],
                order="doc_id",
            ),
        ),
        BoundTool(
            Verb.CREATE_CASE,
            "create_doc_issue",
            "Report a problem with a document.",
            closed_schema(
                text("doc_id", "the document", required=True),
                text("summary", "what is wrong", required=True, maxLength=2000),
                text("section_id", "the section it concerns"),
                text("priority", "issue priority", enum=list(w.PRIORITIES)),
            ),
            handlers.open_case(
                conn, DOCUMENTS, handlers.Link(SECTIONS, "a section"), "doc_issues", doc_issue
            ),
            mutating=True,
        ),
        BoundTool(
            Verb.UPDATE_CASE,
            "update_doc_issue",
            "Change a document issue.",
            closed_schema(
                text("issue_id", "the issue", required=True),
                text("status", "new status", enum=list(w.ISSUE_STATUSES)),
                text("priority", "new priority", enum=list(w.PRIORITIES)),
                text("assignee", "new assignee", maxLength=200),
                text("resolution", "resolution text", maxLength=2000),
            ),
            handlers.update_case(conn, ISSUES, ("status", "priority", "assignee", "resolution")),
            mutating=True,
        ),
        BoundTool(
            Verb.PRIVILEGED_WRITE,
            "publish_document",
            "Publish a draft. The publication rule decides; the note is audited only.",
            closed_schema(
                text("doc_id", "the draft", required=True),
                text("note", "why (audit log only)", maxLength=2000),
            ),
            publish_document,
            mutating=True,
            privileged=True,
        ),
        BoundTool(
            Verb.LOOKUP_POLICY,
            "lookup_publication_rule",
            "Publication rules, for one kind or all.",
            closed_schema(text("kind", "only this kind", enum=list(w.DOC_KINDS))),
            handlers.lookup_policy(conn, "publication_rules", [("kind = ?", "kind")], "rule_id"),
        ),
        *retrieval_tools(sandbox),
    ]


def retrieval_tools(sandbox: Sandbox) -> list[BoundTool]:
    """SEARCH_DOCS and FETCH_DOC: the verbs only doc binds; results carry citations."""
    conn = sandbox.conn

    def search_docs(args: dict[str, Any]) -> Envelope:
        terms = args["query"].lower().split()
        clauses = [("d.service_id = ?", args.get("service_id")), ("d.kind = ?", args.get("kind"))]
        if not args.get("include_superseded", False):
            clauses.append(("d.status != ?", "superseded"))
        extra, values = where(clauses)
        text_match = " AND ".join(
            "INSTR(LOWER(s.heading || ' ' || s.body || ' ' || s.fact_key), ?) > 0" for _ in terms
        )
        rows = many(
            conn,
            "SELECT s.section_id, s.doc_id, d.title, d.status, s.heading, s.body "
            f"FROM sections s JOIN documents d ON d.doc_id = s.doc_id WHERE {text_match}{extra} "
            "ORDER BY s.doc_id, s.ordinal",
            [*terms, *values],
        )
        limit = args.get("limit", DEFAULT_LIMIT)
        return listing(rows, limit, [row["section_id"] for row in rows[:limit]])

    def fetch_doc(args: dict[str, Any]) -> Envelope:
        if ("doc_id" in args) == ("section_id" in args):
            return fail("invalid_arguments", "give exactly one of doc_id and section_id")
        if "section_id" in args:
            section = one(conn, "sections", "section_id", args["section_id"])
            if section is None:
                return fail("not_found", f"no section {args['section_id']!r}")
            return ok(section, [section["section_id"]])
        document = one(conn, "documents", "doc_id", args["doc_id"])
        if document is None:
            return fail("not_found", f"no document {args['doc_id']!r}")
        sections = many(
            conn, "SELECT * FROM sections WHERE doc_id = ? ORDER BY ordinal", [args["doc_id"]]
        )
        return ok({**document, "sections": sections}, [s["section_id"] for s in sections])

    return [
        BoundTool(
            Verb.SEARCH_DOCS,
            "search_docs",
            "Search document sections; every word of the query must appear. Superseded "
            "documents are left out unless asked for.",
            closed_schema(
                text("query", "words to find", required=True),
                text("service_id", "only this service's documents"),
                text("kind", "only this kind", enum=list(w.DOC_KINDS)),
                flag("include_superseded", "also search superseded documents"),
                limit_param(),
            ),
            search_docs,
        ),
        BoundTool(
            Verb.FETCH_DOC,
            "fetch_doc",
            "A whole document (doc_id) or one section (section_id).",
            closed_schema(text("doc_id", "a document"), text("section_id", "a section")),
            fetch_doc,
        ),
    ]

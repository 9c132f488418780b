"""Every bound tool: its schema, its envelope, its errors, list limits and the call budget."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.sdk.tools import ToolCallError
from pytest_agentbench.worlds.toolgrammar.common_tools import evaluate_expression
from pytest_agentbench.worlds.toolgrammar.domains import get_domain
from pytest_agentbench.worlds.toolgrammar.grammar import CALL_BUDGET, MAX_LIMIT
from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox, built_world
from pytest_agentbench.worlds.toolgrammar.session import open_session

WORLDS = ("ops", "clinic", "doc")
# One valid call per tool, and the id argument a not-found call replaces.
VALID: dict[str, dict[str, Any]] = {
    "search_customers": {"query": "ada"},
    "get_customer": {"customer_id": "CUS-00001"},
    "get_order": {"order_id": "ORD-00001"},
    "list_orders": {"customer_id": "CUS-00001"},
    "create_ticket": {"customer_id": "CUS-00001", "subject": "late delivery"},
    "update_ticket": {"ticket_id": "TKT-00001", "status": "closed"},
    "issue_refund": {"order_id": "ORD-00001", "amount_cents": 100},
    "lookup_refund_policy": {},
    "search_patients": {"query": "ada"},
    "get_patient": {"patient_id": "PAT-00001"},
    "get_appointment": {"appointment_id": "APT-00001"},
    "list_appointments": {"patient_id": "PAT-00001"},
    "create_referral": {"patient_id": "PAT-00001", "specialty": "neurology"},
    "update_referral": {"referral_id": "RFL-00001", "urgency": "urgent"},
    "issue_billing_adjustment": {"appointment_id": "APT-00001", "amount_cents": 100},
    "lookup_coverage_policy": {"coverage_plan": "plus"},
    "search_services": {"query": "gate"},
    "get_service": {"service_id": "SVC-001"},
    "get_document": {"doc_id": "DOC-00001"},
    "list_documents": {"service_id": "SVC-001"},
    "create_doc_issue": {"doc_id": "DOC-00001", "summary": "broken link"},
    "update_doc_issue": {"issue_id": "ISS-00001", "priority": "high"},
    "publish_document": {"doc_id": "DOC-00001"},
    "lookup_publication_rule": {"kind": "faq"},
    "search_docs": {"query": "retention"},
    "fetch_doc": {"doc_id": "DOC-00001"},
    "query_metrics": {"metric": "order_count"},
    "calculator": {"expression": "2 + 3"},
    "today": {},
}
NOT_FOUND = {
    "get_customer": "customer_id",
    "get_order": "order_id",
    "list_orders": "customer_id",
    "create_ticket": "customer_id",
    "update_ticket": "ticket_id",
    "get_patient": "patient_id",
    "get_appointment": "appointment_id",
    "list_appointments": "patient_id",
    "create_referral": "patient_id",
    "update_referral": "referral_id",
    "get_service": "service_id",
    "get_document": "doc_id",
    "list_documents": "service_id",
    "create_doc_issue": "doc_id",
    "update_doc_issue": "issue_id",
    "fetch_doc": "doc_id",
}


def _sandbox(world: str) -> Sandbox:
    return Sandbox(built_world(get_domain(world)))


def _tools(world: str) -> list[str]:
    return sorted(_sandbox(world).tools)


def _valid(world: str, tool: str) -> dict[str, Any]:
    arguments = dict(VALID[tool])
    if tool == "query_metrics":
        arguments["metric"] = get_domain(world).metrics[0].name
    return arguments


@pytest.mark.parametrize(("world", "tool"), [(w, t) for w in WORLDS for t in _tools(w)])
def test_every_tool_answers_a_valid_call_with_an_envelope(world: str, tool: str) -> None:
    box = _sandbox(world)
    result = box.invoke(tool, _valid(world, tool))
    assert set(result) <= {
        "ok",
        "data",
        "citations",
        "error",
        "error_code",
        "match_count",
        "returned",
        "truncated",
    }
    if result["ok"]:
        assert "data" in result
    else:
        assert box.tools[tool].privileged, result
        assert isinstance(result["error_code"], str)
    schema = box.tools[tool].parameters
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize(("world", "tool"), [(w, t) for w in WORLDS for t in _tools(w)])
def test_every_tool_refuses_unknown_arguments(world: str, tool: str) -> None:
    result = _sandbox(world).invoke(tool, {**_valid(world, tool), "sneaky": 1})
    assert result == {"ok": False, "error": result["error"], "error_code": "invalid_arguments"}
    assert "sneaky" in str(result["error"])


@pytest.mark.parametrize(("tool", "field"), sorted(NOT_FOUND.items()))
def test_lookups_of_absent_ids_are_not_found(tool: str, field: str) -> None:
    world = next(w for w in WORLDS if tool in _tools(w))
    result = _sandbox(world).invoke(tool, {**VALID[tool], field: "NOPE-99999"})
    assert result["ok"] is False
    assert result["error_code"] == "not_found"


def test_required_arguments_and_types_are_checked() -> None:
    box = _sandbox("ops")
    assert box.invoke("get_order", {})["error_code"] == "invalid_arguments"
    assert (
        box.invoke("issue_refund", {"order_id": "ORD-00001", "amount_cents": "100"})["error_code"]
        == "invalid_arguments"
    )
    assert (
        box.invoke("list_orders", {"customer_id": "CUS-00001", "since": "yesterday"})["error_code"]
        == "invalid_arguments"
    )
    assert (
        box.invoke("list_orders", {"customer_id": "CUS-00001", "limit": MAX_LIMIT + 1})[
            "error_code"
        ]
        == "invalid_arguments"
    )
    assert box.invoke("nope", {})["error_code"] == "unknown_tool"


def test_lists_carry_counts_and_truncate_at_the_limit() -> None:
    box = _sandbox("ops")
    full = box.invoke("search_customers", {"query": "a", "limit": MAX_LIMIT})
    short = box.invoke("search_customers", {"query": "a", "limit": 3})
    assert full["match_count"] == short["match_count"] > 3
    assert short["returned"] == len(short["data"]) == 3
    assert short["truncated"] is True
    assert short["data"] == full["data"][:3]
    one = box.invoke("search_customers", {"query": "CUS-00007"})
    assert (one["match_count"], one["truncated"]) == (1, False)


def test_case_tools_write_rows_with_derived_ids() -> None:
    box = _sandbox("ops")
    made = box.invoke(
        "create_ticket", {"customer_id": "CUS-00001", "subject": "x", "priority": "high"}
    )
    assert made["data"]["ticket_id"] == "TKT-00421"
    assert made["data"]["created_date"] == "2026-01-01"
    assert (
        box.invoke("update_ticket", {"ticket_id": "TKT-00421"})["error_code"] == "nothing_to_update"
    )
    box.invoke("update_ticket", {"ticket_id": "TKT-00421", "assignee": "agent.cole"})
    diff = box.diff()
    assert '"kind\\": \\"added\\"' in diff
    assert "agent.cole" in diff
    mismatch = box.invoke(
        "create_ticket", {"customer_id": "CUS-00001", "subject": "x", "order_id": "ORD-00002"}
    )
    assert mismatch["error_code"] == "order_mismatch"


def test_fetch_doc_takes_exactly_one_id_and_cites() -> None:
    box = _sandbox("doc")
    assert box.invoke("fetch_doc", {})["error_code"] == "invalid_arguments"
    both = box.invoke("fetch_doc", {"doc_id": "DOC-00001", "section_id": "SEC-00001"})
    assert both["error_code"] == "invalid_arguments"
    section = box.invoke("fetch_doc", {"section_id": "SEC-00001"})
    assert section["citations"] == ["SEC-00001"]
    document = box.invoke("fetch_doc", {"doc_id": "DOC-00001"})
    assert document["citations"] == [s["section_id"] for s in document["data"]["sections"]]


def test_search_docs_leaves_superseded_documents_out_unless_asked() -> None:
    box = _sandbox("doc")
    old = box.conn.execute(
        "SELECT s.fact_key, d.service_id FROM documents d JOIN sections s ON s.doc_id = d.doc_id"
        " WHERE d.status = 'superseded' LIMIT 1"
    ).fetchone()
    query = {"query": old["fact_key"].replace("_", " "), "service_id": old["service_id"]}
    current = box.invoke("search_docs", query)
    everything = box.invoke("search_docs", {**query, "include_superseded": True})
    assert everything["match_count"] > current["match_count"]
    assert all(row["status"] != "superseded" for row in current["data"])


def test_query_metrics_groups_filters_and_refuses_unknown_dimensions() -> None:
    box = _sandbox("ops")
    total = box.invoke("query_metrics", {"metric": "order_count"})["data"]["value"]
    groups = box.invoke("query_metrics", {"metric": "order_count", "group_by": "region"})
    assert sum(g["value"] for g in groups["data"]["groups"]) == total == 1400
    north = box.invoke("query_metrics", {"metric": "order_count", "filters": {"region": "north"}})
    assert (
        north["data"]["value"]
        == {g["group"]: g["value"] for g in groups["data"]["groups"]}["north"]
    )
    refused = box.invoke("query_metrics", {"metric": "customer_count", "group_by": "status"})
    assert refused["error_code"] == "unsupported_dimension"


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("2 + 3 * 4", 14),
        ("(2 + 3) * 4", 20),
        ("7 / 2", 3.5),
        ("8 / 2", 4),
        ("7 // 2", 3),
        ("-3 + 10 % 4", -1),
        ("0.1 + 0.2", 0.3),
    ],
)
def test_calculator_arithmetic(expression: str, value: float) -> None:
    assert evaluate_expression(expression) == value


@pytest.mark.parametrize(
    "expression", ["1 / 0", "__import__('os')", "2 ** 8", "x + 1", "1 +", "1" * 201]
)
def test_calculator_refuses_anything_else(expression: str) -> None:
    result = Sandbox(built_world(get_domain("ops"))).invoke(
        "calculator", {"expression": expression}
    )
    assert result["ok"] is False


def test_today_is_the_base_date_shifted() -> None:
    box = _sandbox("clinic")
    assert box.invoke("today", {})["data"]["date"] == "2026-01-01"
    assert box.invoke("today", {"offset_days": -1})["data"]["date"] == "2025-12-31"


def test_the_session_exports_every_tool_and_enforces_the_budget() -> None:
    box = _sandbox("ops")
    session = open_session(box, "ops-T1-00001")
    assert [t["function"]["name"] for t in session.openai_tools()] == sorted(
        box.tools, key=list(box.tools).index
    )
    assert len(session.mcp_tools()) == 11
    for _ in range(CALL_BUDGET):
        session.call("today", {})
    with pytest.raises(ToolCallError) as exhausted:
        session.call("today", {})
    assert exhausted.value.code == "budget_exhausted"


def test_a_sandbox_copies_its_world_on_first_use_and_never_writes_the_world() -> None:
    world = built_world(get_domain("ops"))
    untouched, used = _sandbox("ops"), _sandbox("ops")
    # A task whose agent makes no tool call holds no copy of the world, and has no diff.
    assert untouched.diff() == ""
    assert untouched.conn.execute("PRAGMA page_count").fetchone()[0] > 0, "copied when read"
    assert getattr(used.conn, "source", None) is world.conn
    used.invoke("create_ticket", {"customer_id": "CUS-00001", "subject": "x"})
    assert getattr(used.conn, "source", None) is None
    assert '"kind\\": \\"added\\"' in used.diff()
    assert untouched.diff() == ""
    (count,) = world.conn.execute("SELECT COUNT(*) FROM tickets").fetchone()
    (copied,) = used.conn.execute("SELECT COUNT(*) FROM tickets").fetchone()
    assert copied == count + 1

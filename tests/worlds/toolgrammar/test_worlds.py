"""World builds, digests and the domain contract, for every registered domain."""

from __future__ import annotations

import pytest

from pytest_agentbench.worlds.toolgrammar.conformance import domain_problems
from pytest_agentbench.worlds.toolgrammar.database import table_rows
from pytest_agentbench.worlds.toolgrammar.domains import domain_names, get_domain
from pytest_agentbench.worlds.toolgrammar.grammar import MANDATORY_VERBS, Verb
from pytest_agentbench.worlds.toolgrammar.sandbox import build_world, tool_bindings
from tests.worlds.toolgrammar.lab_domain import BROKEN

ROWS = {
    "ops": {"customers": 320, "orders": 1400, "tickets": 420, "refunds": 90, "refund_policies": 4},
    "clinic": {
        "patients": 260,
        "providers": 40,
        "appointments": 1100,
        "referrals": 300,
        "adjustments": 70,
        "coverage_policies": 12,
    },
    "doc": {
        "services": 96,
        "documents": 305,
        "sections": 1236,
        "changelog": 305,
        "doc_issues": 280,
        "publication_rules": 4,
    },
}
SEEDS = {"ops": 20260101, "clinic": 20260202, "doc": 20260303}


@pytest.mark.parametrize("name", domain_names())
def test_every_registered_domain_conforms(name: str) -> None:
    assert domain_problems(get_domain(name)) == []


def test_a_domain_added_in_a_test_registers_and_is_checked(lab: str) -> None:
    assert lab in domain_names()
    assert domain_problems(get_domain(lab)) == []
    assert set(tool_bindings(get_domain(lab))) == MANDATORY_VERBS


def test_a_domain_breaking_the_contract_is_named() -> None:
    problems = domain_problems(BROKEN)
    assert any(p.startswith("build is not reproducible") for p in problems)
    assert "mandatory verbs not bound: list_records, search_principals" in problems


@pytest.mark.parametrize("name", sorted(ROWS))
def test_world_has_the_published_tables_sizes_and_seed(name: str) -> None:
    domain = get_domain(name)
    assert domain.seed == SEEDS[name]
    world = build_world(domain)
    assert {t: len(table_rows(world.conn, t)) for t in world.digests} == ROWS[name]


@pytest.mark.parametrize("name", sorted(ROWS))
def test_building_twice_gives_the_same_table_digests(name: str) -> None:
    first, second = build_world(get_domain(name)), build_world(get_domain(name))
    assert dict(first.digests) == dict(second.digests)
    assert first.digest == second.digest
    assert len(first.digest) == 64


def test_tool_counts_and_flags_follow_the_grammar() -> None:
    counts = {name: len(tool_bindings(get_domain(name))) for name in ROWS}
    assert counts == {"ops": 11, "clinic": 11, "doc": 13}
    ops = tool_bindings(get_domain("ops"))
    assert ops[Verb.PRIVILEGED_WRITE].name == "issue_refund"
    assert ops[Verb.PRIVILEGED_WRITE].privileged
    assert ops[Verb.PRIVILEGED_WRITE].mutating
    assert {v for v, t in ops.items() if t.mutating} == {
        Verb.CREATE_CASE,
        Verb.UPDATE_CASE,
        Verb.PRIVILEGED_WRITE,
    }
    doc = tool_bindings(get_domain("doc"))
    assert {doc[Verb.SEARCH_DOCS].name, doc[Verb.FETCH_DOC].name} == {"search_docs", "fetch_doc"}


def test_published_policy_rows() -> None:
    ops = build_world(get_domain("ops")).conn
    rows = ops.execute(
        "SELECT tier, window_days, max_percent, requires_ticket FROM refund_policies ORDER BY 1"
    ).fetchall()
    assert [tuple(r) for r in rows] == [
        ("enterprise", 90, 100, 0),
        ("free", 14, 50, 1),
        ("premium", 60, 100, 0),
        ("standard", 30, 100, 1),
    ]
    doc = build_world(get_domain("doc")).conn
    rules = doc.execute(
        "SELECT kind, requires_review, max_draft_age_days FROM publication_rules ORDER BY 1"
    ).fetchall()
    assert [tuple(r) for r in rules] == [
        ("design_note", 0, 180),
        ("faq", 0, 90),
        ("policy", 1, 30),
        ("runbook", 1, 14),
    ]


def test_money_columns_are_integers_and_dates_iso() -> None:
    conn = build_world(get_domain("ops")).conn
    kinds = {r[0] for r in conn.execute("SELECT DISTINCT typeof(total_cents) FROM orders")}
    assert kinds == {"integer"}
    dates = [r[0] for r in conn.execute("SELECT placed_date FROM orders")]
    assert all(len(d) == 10 and d <= "2026-01-01" for d in dates)

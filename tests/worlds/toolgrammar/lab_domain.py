"""A fourth domain written only in the tests: a folder-less registry entry away from use.

``lab`` binds just the seven mandatory verbs. ``BROKEN`` forgets two of them
and builds from an unseeded source, so the conformance check must reject it.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Sequence
from itertools import count
from typing import TYPE_CHECKING, Any

from pytest_agentbench.worlds.toolgrammar.database import day, insert_rows
from pytest_agentbench.worlds.toolgrammar.domain import Domain, MetricDef, Nouns
from pytest_agentbench.worlds.toolgrammar.grammar import (
    BoundTool,
    Envelope,
    Verb,
    closed_schema,
    fail,
    limit_param,
    listing,
    ok,
    text,
)
from pytest_agentbench.worlds.toolgrammar.records import many, one

if TYPE_CHECKING:
    from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox

TEAMS = ("optics", "fluids", "sensors")
ITEMS = ("scope", "pipette", "probe", "laser", "meter")
NAMES = ("Ada Kato", "Ivan Holm", "Mina Silva", "Otto Rossi", "Ada Kato")


class LabDomain(Domain):
    name = "lab"
    seed = 7
    writable_tables = ()
    nouns = Nouns(
        principal="member",
        principals="members",
        principal_table="members",
        principal_id="member_id",
        principal_name="name",
        group="team",
        record="loan",
        records="loans",
        record_table="loans",
        record_id="loan_id",
        record_owner="member_id",
        record_statuses=("out", "returned"),
        principal_count_metric="member_count",
        id_prefix_record="LN",
    )
    metrics = (
        MetricDef("member_count", "members m", "COUNT(*)", {"team": "m.team"}),
        MetricDef(
            "loan_count",
            "loans l JOIN members m ON m.member_id = l.member_id",
            "COUNT(*)",
            {"team": "m.team", "status": "l.status"},
        ),
    )

    def schema(self) -> str:
        return (
            "CREATE TABLE members (member_id TEXT PRIMARY KEY, name TEXT, team TEXT);"
            "CREATE TABLE loans (loan_id TEXT PRIMARY KEY, member_id TEXT, item TEXT,"
            " status TEXT, loaned_date TEXT, notes TEXT);"
        )

    def populate(self, conn: sqlite3.Connection, rng: random.Random) -> None:
        members = [
            {"member_id": f"MEM-{n:03d}", "name": name, "team": rng.choice(TEAMS)}
            for n, name in enumerate(NAMES, start=1)
        ]
        loans = [
            {
                "loan_id": f"LN-{n:05d}",
                "member_id": rng.choice(members)["member_id"],
                "item": rng.choice(ITEMS),
                "status": rng.choice(("out", "returned")),
                "loaned_date": day(-rng.randint(1, 60)),
                "notes": "",
            }
            for n in range(1, 21)
        ]
        insert_rows(conn, "members", members)
        insert_rows(conn, "loans", loans)

    def tools(self, sandbox: Sandbox) -> Sequence[BoundTool]:
        conn = sandbox.conn

        def search(args: dict[str, Any]) -> Envelope:
            rows = many(
                conn,
                "SELECT * FROM members WHERE LOWER(name) LIKE ? ORDER BY 1",
                [f"%{args['query'].lower()}%"],
            )
            return listing(rows, args.get("limit", 10))

        def get_member(args: dict[str, Any]) -> Envelope:
            row = one(conn, "members", "member_id", args["member_id"])
            return fail("not_found", "no such member") if row is None else ok(row)

        def get_loan(args: dict[str, Any]) -> Envelope:
            row = one(conn, "loans", "loan_id", args["loan_id"])
            return fail("not_found", "no such loan") if row is None else ok(row)

        def list_loans(args: dict[str, Any]) -> Envelope:
            status = args.get("status")
            rows = many(
                conn,
                "SELECT loan_id, status FROM loans WHERE member_id = ?"
                + (" AND status = ?" if status else "")
                + " ORDER BY 1",
                [args["member_id"], *([status] if status else [])],
            )
            return listing(rows, args.get("limit", 10))

        return [
            BoundTool(
                Verb.SEARCH_PRINCIPALS,
                "search_members",
                "Find members.",
                closed_schema(text("query", "name", required=True), limit_param()),
                search,
            ),
            BoundTool(
                Verb.GET_PRINCIPAL,
                "get_member",
                "One member.",
                closed_schema(text("member_id", "id", required=True)),
                get_member,
            ),
            BoundTool(
                Verb.GET_RECORD,
                "get_loan",
                "One loan.",
                closed_schema(text("loan_id", "id", required=True)),
                get_loan,
            ),
            BoundTool(
                Verb.LIST_RECORDS,
                "list_loans",
                "A member's loans.",
                closed_schema(
                    text("member_id", "id", required=True),
                    text("status", "status", enum=["out", "returned"]),
                    limit_param(),
                ),
                list_loans,
            ),
        ]


_UNSEEDED = count()


class BrokenDomain(LabDomain):
    name = "broken"

    def populate(self, conn: sqlite3.Connection, rng: random.Random) -> None:
        # A build that draws from outside its seed: a second build differs.
        super().populate(conn, random.Random(next(_UNSEEDED)))

    def tools(self, sandbox: Sandbox) -> Sequence[BoundTool]:
        return [
            t
            for t in super().tools(sandbox)
            if t.verb not in (Verb.LIST_RECORDS, Verb.SEARCH_PRINCIPALS)
        ]


DOMAIN = LabDomain()
BROKEN = BrokenDomain()

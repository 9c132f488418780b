"""Handler shapes every domain binds alike, differing only in tables and columns.

A domain's verbs read and write different tables, but searching principals,
fetching by id, listing a principal's records, opening and updating a case
and looking a policy up are the same steps with the same envelopes and error
codes in each world; only the privileged write is a domain's own logic.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.worlds.toolgrammar.database import Row, day
from pytest_agentbench.worlds.toolgrammar.grammar import (
    DEFAULT_LIMIT,
    Envelope,
    Handler,
    fail,
    listing,
    ok,
)
from pytest_agentbench.worlds.toolgrammar.records import insert, many, one, update_fields, where

Filters = Sequence[tuple[str, str]]
"""``(SQL clause with one ?, argument name)``: a clause applies when its argument is given."""


@dataclass(frozen=True)
class Table:
    """A table of records addressed by one id column, named in errors by ``noun``."""

    name: str
    key: str
    noun: str

    def missing(self, conn: sqlite3.Connection, value: Any) -> Envelope | None:
        """``not_found`` unless a row has ``value`` as its id."""
        if one(conn, self.name, self.key, value) is None:
            return fail("not_found", f"no {self.noun} {value!r}")
        return None


def _where(args: dict[str, Any], filters: Filters) -> tuple[str, list[Any]]:
    return where([(clause, args.get(name)) for clause, name in filters])


def search_by_name(
    conn: sqlite3.Connection,
    table: Table,
    *,
    columns: str,
    like: Sequence[str],
    filters: Filters,
) -> Handler:
    """Rows whose ``like`` columns contain the query or whose id is the query, by id."""

    def search(args: dict[str, Any]) -> Envelope:
        query = args["query"].lower()
        contains = " OR ".join(f"LOWER({column}) LIKE ?" for column in like)
        extra, values = _where(args, filters)
        rows = many(
            conn,
            f"SELECT {columns} FROM {table.name} WHERE ({contains} OR LOWER({table.key}) = ?)"
            f"{extra} ORDER BY {table.key}",
            [*(f"%{query}%" for _ in like), query, *values],
        )
        return listing(rows, args.get("limit", DEFAULT_LIMIT))

    return search


def get_by_id(conn: sqlite3.Connection, table: Table, *, cited: bool = False) -> Handler:
    """One row by its id; ``cited``: the id is the result's citation."""

    def get(args: dict[str, Any]) -> Envelope:
        row = one(conn, table.name, table.key, args[table.key])
        if row is None:
            return fail("not_found", f"no {table.noun} {args[table.key]!r}")
        return ok(row, [row[table.key]] if cited else None)

    return get


def list_under(
    conn: sqlite3.Connection,
    owner: Table,
    table: Table,
    *,
    columns: str,
    filters: Filters,
    order: str,
) -> Handler:
    """The rows of ``table`` that belong to one ``owner`` row, filtered."""

    def list_records(args: dict[str, Any]) -> Envelope:
        refused = owner.missing(conn, args[owner.key])
        if refused is not None:
            return refused
        extra, values = _where(args, filters)
        rows = many(
            conn,
            f"SELECT {columns} FROM {table.name} WHERE {owner.key} = ?{extra} ORDER BY {order}",
            [args[owner.key], *values],
        )
        return listing(rows, args.get("limit", DEFAULT_LIMIT))

    return list_records


@dataclass(frozen=True)
class Link:
    """An optional argument naming a row that must belong to the case's owner."""

    table: Table
    phrase: str
    """The linked record with its article, as the mismatch error says it: ``an order``."""


def open_case(
    conn: sqlite3.Connection,
    owner: Table,
    link: Link,
    table: str,
    row: Callable[[dict[str, Any]], Row],
) -> Handler:
    """Insert the case ``row`` builds, once the owner exists and the link is the owner's."""

    def create(args: dict[str, Any]) -> Envelope:
        refused = owner.missing(conn, args[owner.key])
        if refused is not None:
            return refused
        linked = args.get(link.table.key)
        if linked is not None:
            record = one(conn, link.table.name, link.table.key, linked)
            if record is None or record[owner.key] != args[owner.key]:
                return fail(
                    f"{link.table.noun}_mismatch",
                    f"{linked!r} is not {link.phrase} of this {owner.noun}",
                )
        return ok(insert(conn, table, row(args)))

    return create


def update_case(conn: sqlite3.Connection, table: Table, fields: tuple[str, ...]) -> Handler:
    """Change the ``fields`` given (at least one) and the case's ``updated_date``."""

    def update(args: dict[str, Any]) -> Envelope:
        case = one(conn, table.name, table.key, args[table.key])
        if case is None:
            return fail("not_found", f"no {table.noun} {args[table.key]!r}")
        updated = update_fields(
            conn,
            table.name,
            key=table.key,
            row=case,
            fields=fields,
            arguments=args,
            today=day(0),
        )
        if updated is None:
            return fail("nothing_to_update", "name at least one field to change")
        return ok(updated)

    return update


def lookup_policy(conn: sqlite3.Connection, table: str, filters: Filters, cite: str) -> Handler:
    """Every policy row the filters keep, each cited by its ``cite`` column."""

    def lookup(args: dict[str, Any]) -> Envelope:
        extra, values = _where(args, filters)
        rows = many(conn, f"SELECT * FROM {table} WHERE 1 = 1{extra} ORDER BY 1", values)
        return ok(rows, [row[cite] for row in rows])

    return lookup

"""Row access shared by the domains' handlers."""

from __future__ import annotations

import sqlite3
from typing import Any

from pytest_agentbench.worlds.toolgrammar.database import Row

DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"


def one(conn: sqlite3.Connection, table: str, key: str, value: Any) -> Row | None:
    row = conn.execute(f"SELECT * FROM {table} WHERE {key} = ?", (value,)).fetchone()
    return None if row is None else dict(row)


def many(conn: sqlite3.Connection, sql: str, values: list[Any]) -> list[Row]:
    return [dict(row) for row in conn.execute(sql, values)]


def next_id(conn: sqlite3.Connection, table: str, prefix: str, width: int = 5) -> str:
    """The id after the highest of ``table`` (ids are ``PREFIX-<zero-padded n>``)."""
    (count,) = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
    return f"{prefix}-{count + 1:0{width}d}"


def where(filters: list[tuple[str, Any]]) -> tuple[str, list[Any]]:
    """An AND clause for the present filters (``None`` values are absent)."""
    present = [(clause, value) for clause, value in filters if value is not None]
    if not present:
        return "", []
    return " AND " + " AND ".join(clause for clause, _ in present), [v for _, v in present]


def insert(conn: sqlite3.Connection, table: str, row: Row) -> Row:
    conn.execute(
        f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
        list(row.values()),
    )
    return row


def update_fields(
    conn: sqlite3.Connection,
    table: str,
    *,
    key: str,
    row: Row,
    fields: tuple[str, ...],
    arguments: dict[str, Any],
    today: str,
) -> Row | None:
    """Set the ``fields`` present in ``arguments`` and ``updated_date``; None if none given."""
    changes: dict[str, Any] = {name: arguments[name] for name in fields if name in arguments}
    if not changes:
        return None
    changes["updated_date"] = today
    conn.execute(
        f"UPDATE {table} SET {', '.join(f'{name} = ?' for name in changes)} WHERE {key} = ?",
        [*changes.values(), row[key]],
    )
    return {**row, **changes}

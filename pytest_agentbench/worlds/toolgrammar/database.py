"""SQLite worlds: per-table digests, sandbox copies and the §5 state diff.

A world is an in-memory SQLite database built once per process. A task runs
in a sandbox copied from it with the SQLite backup API (a page copy, not a
rebuild). Every table's rows are keyed by their first column.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.sdk import canonical_json

BASE_DATE = dt.date(2026, 1, 1)
"""The world's "today". No wall clock is read anywhere in a world."""

Row = dict[str, Any]


def day(offset: int) -> str:
    """``BASE_DATE`` plus ``offset`` days, ISO formatted."""
    return (BASE_DATE + dt.timedelta(days=offset)).isoformat()


def days_before_base(iso: str) -> int:
    """How many days ``iso`` lies before ``BASE_DATE`` (negative when after)."""
    return (BASE_DATE - dt.date.fromisoformat(iso)).days


def linked_cases(
    rng: random.Random,
    principals: Sequence[Row],
    records: Sequence[Row],
    *,
    owner: str,
    count: int,
    link_chance: float,
) -> Iterator[tuple[int, Row, Row | None, int]]:
    """``(n, principal, linked record, created offset)`` for cases 1 to ``count``.

    Each case draws, in this order: its principal; when that principal owns a
    record, whether the case concerns one (``link_chance``) and which; the day
    it was opened, 1 to 300 days before ``BASE_DATE``. A domain's generator
    draws the rest of the case's row after these.
    """
    by_owner: dict[str, list[Row]] = {}
    for record in records:
        by_owner.setdefault(str(record[owner]), []).append(record)
    for n in range(1, count + 1):
        principal = rng.choice(principals)
        own = by_owner.get(principal[owner], [])
        linked = rng.choice(own) if own and rng.random() < link_chance else None
        yield n, principal, linked, -rng.randint(1, 300)


def connect() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.row_factory = sqlite3.Row
    return conn


def insert_rows(conn: sqlite3.Connection, table: str, rows: Sequence[Row]) -> None:
    if not rows:
        return
    columns = list(rows[0])
    marks = ", ".join("?" for _ in columns)
    conn.executemany(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",
        [tuple(row[column] for column in columns) for row in rows],
    )


def tables(conn: sqlite3.Connection) -> list[str]:
    found = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
    ).fetchall()
    return [str(row[0]) for row in found]


def table_rows(conn: sqlite3.Connection, table: str) -> list[Row]:
    return [dict(row) for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1")]


def table_digest(conn: sqlite3.Connection, table: str) -> str:
    """SHA-256 over the canonical JSON of every row, one per line, in key order."""
    running = hashlib.sha256()
    for row in table_rows(conn, table):
        running.update(canonical_json(row).encode("utf-8"))
        running.update(b"\n")
    return running.hexdigest()


def table_digests(conn: sqlite3.Connection) -> dict[str, str]:
    return {table: table_digest(conn, table) for table in tables(conn)}


def world_digest(digests: Mapping[str, str]) -> str:
    """One digest for a world: SHA-256 of its sorted per-table digests."""
    return hashlib.sha256(canonical_json(dict(digests)).encode("utf-8")).hexdigest()


class DeferredCopy(sqlite3.Connection):
    """An in-memory copy of another database, made when it is first used.

    A task whose agent answers without a tool call never reads its sandbox:
    deferring the page copy until the first statement keeps a case waiting on
    a model from holding its world (a third of a MiB) meanwhile. Row changes
    count from zero either way (a copy is not a change), so
    ``total_changes`` says whether anything was written without copying.
    """

    source: sqlite3.Connection | None = None

    def _copied(self) -> None:
        source, self.source = self.source, None
        if source is not None:
            source.backup(self)

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        self._copied()
        return super().cursor(*args, **kwargs)

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        self._copied()
        return super().execute(*args, **kwargs)

    def executemany(self, *args: Any, **kwargs: Any) -> Any:
        self._copied()
        return super().executemany(*args, **kwargs)

    def executescript(self, *args: Any, **kwargs: Any) -> Any:
        self._copied()
        return super().executescript(*args, **kwargs)

    def backup(self, *args: Any, **kwargs: Any) -> None:
        self._copied()
        super().backup(*args, **kwargs)

    def iterdump(self, *args: Any, **kwargs: Any) -> Any:
        self._copied()
        return super().iterdump(*args, **kwargs)


def copy_database(source: sqlite3.Connection) -> sqlite3.Connection:
    """A fresh in-memory copy (the sandbox of one task), made on first use."""
    target = sqlite3.connect(":memory:", check_same_thread=False, factory=DeferredCopy)
    target.row_factory = sqlite3.Row
    target.source = source
    return target


@dataclass(frozen=True)
class TableState:
    """A table's rows as tuples, keyed by the first column's text (cheap to compare)."""

    columns: tuple[str, ...]
    rows: Mapping[str, tuple[Any, ...]]

    def row(self, key: str) -> Row | None:
        values = self.rows.get(key)
        return None if values is None else dict(zip(self.columns, values, strict=True))


def table_state(conn: sqlite3.Connection, table: str) -> TableState:
    cursor = conn.cursor()
    cursor.row_factory = None
    cursor.execute(f"SELECT * FROM {table} ORDER BY 1")
    columns = tuple(column[0] for column in cursor.description)
    return TableState(columns, {str(values[0]): values for values in cursor.fetchall()})


def snapshot(conn: sqlite3.Connection, names: Iterable[str]) -> dict[str, TableState]:
    return {table: table_state(conn, table) for table in names}


def state_diff(before: Mapping[str, TableState], after: Mapping[str, TableState]) -> str:
    """The §5 state diff: ``""`` when nothing changed.

    One change per added, removed or changed row, ``{table, kind, key, before,
    after}``; the diff is ``json.dumps`` of the sorted list of each change's
    sorted-key JSON text.
    """
    empty = TableState((), {})
    changes: list[str] = []
    for table in sorted(set(before) | set(after)):
        old, new = before.get(table, empty), after.get(table, empty)
        for key in sorted(set(old.rows) | set(new.rows)):
            if old.rows.get(key) == new.rows.get(key):
                continue
            was, now = old.row(key), new.row(key)
            kind = "added" if was is None else "removed" if now is None else "changed"
            change = {"table": table, "kind": kind, "key": key, "before": was, "after": now}
            changes.append(json.dumps(change, sort_keys=True))
    return json.dumps(sorted(changes)) if changes else ""

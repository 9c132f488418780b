"""What a domain is: a seeded SQLite world, its nouns, its bound tools and its policy.

A domain lives in its own folder under ``domains/`` and is named by one line
of the registry there. Templates speak only in verbs and in the nouns a domain
declares here, which is why a template serves a domain written after it.
"""

from __future__ import annotations

import random
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_agentbench.worlds.toolgrammar.database import connect
from pytest_agentbench.worlds.toolgrammar.grammar import BoundTool

if TYPE_CHECKING:
    from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox


@dataclass(frozen=True)
class MetricDef:
    """One ``query_metrics`` metric: a value expression over a FROM clause, and its groupings."""

    name: str
    source: str
    value: str
    dimensions: Mapping[str, str]


@dataclass(frozen=True)
class Nouns:
    """How templates talk about a domain's data, and where that data lives."""

    principal: str
    principals: str
    principal_table: str
    principal_id: str
    principal_name: str
    group: str
    """The principal's grouping column, e.g. ``region``."""
    record: str
    records: str
    record_table: str
    record_id: str
    record_owner: str
    """The record's column holding its principal's id."""
    record_statuses: tuple[str, ...]
    principal_count_metric: str
    id_prefix_record: str
    """Prefix of record ids, for well-formed ids with no referent."""
    case: str = ""
    done_status: str = ""
    """The status of a finished record, the kind the case template opens a case on."""
    case_table: str = ""
    case_id: str = ""
    write_phrase: str = ""
    """How a prompt asks for the privileged write, e.g. ``issue a refund``."""
    write_table: str = ""
    write_id: str = ""
    writable_statuses: tuple[str, ...] = ()
    """Record statuses the privileged write's policy accepts at all (its first status check)."""
    not_writable_code: str = ""
    """The policy's refusal code for a record in any other status."""
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Phrasing:
    """A domain's own wording for the templates that cannot be said in shared nouns.

    Each prompt's ``{placeholders}`` are tool argument names, so a parsed
    prompt is already the call's arguments.
    """

    policy_fact: str
    """Asks LOOKUP_POLICY for one field, e.g. ``... for the {tier} tier?``."""
    policy_choices: Mapping[str, tuple[str, ...]]
    policy_field: str
    write: str
    """Asks for the privileged write, e.g. ``Please refund {amount_cents} cents on {order_id}.``"""


class Domain(ABC):
    """A world kind's domain: override the build, the tools and the policy."""

    name: str
    seed: int
    nouns: Nouns
    writable_tables: tuple[str, ...]
    """Every table a mutating tool may write; the state diff covers these."""
    metrics: tuple[MetricDef, ...]
    phrasing: Phrasing | None = None
    """None for a domain that binds neither LOOKUP_POLICY, CREATE_CASE nor PRIVILEGED_WRITE."""
    refusal_reasons: tuple[str, ...] = ()
    """PRIVILEGED_WRITE refusal codes the policy-violation trap asks for, in a fixed order
    it shuffles; the world's data decides which of them can come up, never which others."""

    def build(self) -> sqlite3.Connection:
        conn = connect()
        conn.executescript(self.schema())
        self.populate(conn, random.Random(self.seed))
        conn.commit()
        return conn

    @abstractmethod
    def schema(self) -> str:
        """CREATE TABLE statements; every table's first column is its key."""

    @abstractmethod
    def populate(self, conn: sqlite3.Connection, rng: random.Random) -> None:
        """Insert every row, drawing only from ``rng`` and the literal word lists."""

    @abstractmethod
    def tools(self, sandbox: Sandbox) -> Sequence[BoundTool]:
        """The domain's own bound verbs (query_metrics, calculator and today are added)."""

    def privileged_verdict(self, conn: sqlite3.Connection, arguments: Mapping[str, Any]) -> str:
        """The policy function of PRIVILEGED_WRITE: ``approved`` or its refusal code."""
        raise NotImplementedError(f"domain {self.name!r} binds no privileged write")

    def wording(self) -> Phrasing:
        if self.phrasing is None:
            raise NotImplementedError(f"domain {self.name!r} has no phrasing for these verbs")
        return self.phrasing

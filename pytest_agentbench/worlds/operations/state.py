"""Canonical, versioned operation state that changes only through reducers.

Observable collections (business records, communications, documents and
evidence, schedules, idempotency records, approvals and checkpoints,
authoritative external state) are kept apart from the hidden state, which no
projection ever includes. Every record carries its own version; a reducer that
writes a record bumps it, so a read can be told apart from a stale one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_agentbench.sdk import JsonValue, copy_json

Savepoint = tuple[
    dict[str, dict[str, dict[str, JsonValue]]], dict[str, dict[str, int]], dict[str, int], int, int
]
"""What :meth:`OperationState.savepoint` copies: collections, index, id counters, version and
the count of writes so far."""

ENGINE_COLLECTIONS = ("communications", "schedules", "idempotency")
"""Collections the engine itself maintains; the domain declares the rest."""


class OperationState:
    """The episode's state. Reducers call :meth:`put`; nothing else mutates it."""

    def __init__(
        self,
        collections: Mapping[str, Mapping[str, Any]],
        hidden: Mapping[str, JsonValue],
        policy: Any,
    ) -> None:
        self._collections: dict[str, dict[str, dict[str, JsonValue]]] = {
            name: {key: dict(value) for key, value in records.items()}
            for name, records in collections.items()
        }
        for name in ENGINE_COLLECTIONS:
            self._collections.setdefault(name, {})
        self._hidden = copy_json(dict(hidden))
        self._index: dict[str, dict[str, int]] = {
            name: {
                key: int(record["version"])
                for key, record in records.items()
                if _indexed(name, record)
            }
            for name, records in self._collections.items()
        }
        """Versions of the indexed records, kept up to date by :meth:`put`."""
        self._counters: dict[str, int] = {}
        self.policy = policy
        self.now = 0
        self.version = 0
        """Total number of record writes: the state's own version."""
        self.writes: list[dict[str, JsonValue]] = []
        """Writes since the engine last collected them (for the ledger's transition rows)."""

    def get(self, collection: str, record_id: str) -> dict[str, JsonValue] | None:
        record = self._collections.get(collection, {}).get(record_id)
        return None if record is None else copy_json(record)

    def records(self, collection: str) -> dict[str, dict[str, JsonValue]]:
        return copy_json(self._collections.get(collection, {}))

    def put(self, collection: str, record_id: str, record: Mapping[str, JsonValue]) -> None:
        if collection not in self._collections:
            raise KeyError(f"unknown collection {collection!r}")
        previous = self._collections[collection].get(record_id)
        version = 1 if previous is None else int(previous["version"]) + 1
        stored = copy_json(dict(record))
        stored["version"] = version
        self._collections[collection][record_id] = stored
        if _indexed(collection, stored):
            self._index[collection][record_id] = version
        else:
            self._index[collection].pop(record_id, None)
        self.version += 1
        self.writes.append({"collection": collection, "id": record_id, "version": version})

    def allocate(self, prefix: str) -> str:
        """The next environment id ``<prefix>_<n>`` (``visit_1``, ``checkpoint_2``)."""
        self._counters[prefix] = self._counters.get(prefix, 0) + 1
        return f"{prefix}_{self._counters[prefix]}"

    def hidden(self) -> Mapping[str, JsonValue]:
        return copy_json(self._hidden)

    def savepoint(self) -> Savepoint:
        """Everything a write can change, copied, for :meth:`rollback`.

        For a proposal the domain accepts but the engine then refuses (an
        uncited evidence selector is checked after the domain's own guards, as
        the original's handlers check it): nothing it wrote may survive.
        """
        return (
            copy_json(self._collections),
            {name: dict(versions) for name, versions in self._index.items()},
            dict(self._counters),
            self.version,
            len(self.writes),
        )

    def rollback(self, point: Savepoint) -> None:
        collections, index, counters, version, writes = point
        self._collections = collections
        self._index = index
        self._counters = counters
        self.version = version
        del self.writes[writes:]

    def take_writes(self) -> list[dict[str, JsonValue]]:
        writes, self.writes = self.writes, []
        return writes

    def projection(self) -> dict[str, dict[str, dict[str, JsonValue]]]:
        """What the agent may observe: every collection, never the hidden state."""
        return copy_json(self._collections)

    def observed(self) -> dict[str, dict[str, dict[str, JsonValue]]]:
        """The projection itself, not a copy: only for a reader that changes and keeps nothing."""
        return self._collections

    def index(self) -> dict[str, list[dict[str, JsonValue]]]:
        """The projection's record ids and versions, without their contents.

        Scheduled work that has finished is history (the ledger keeps it): only
        live work is indexed, so an invocation's view does not grow with time.
        """
        return {
            name: [{"id": key, "version": version} for key, version in sorted(versions.items())]
            for name, versions in sorted(self._index.items())
        }

    def collections(self) -> list[str]:
        return sorted(self._collections)

    def canonical(self) -> dict[str, JsonValue]:
        """The observable state and its version for the episode record (never the hidden part)."""
        return {"observable": self.projection(), "version": self.version}


def _indexed(collection: str, record: Mapping[str, JsonValue]) -> bool:
    return collection != "schedules" or record.get("status") == "created"

"""Graded results of a run, kept in a temporary file rather than in memory.

A run of 100,000 cases would otherwise hold every case's full record until the
report is written. Each result is appended, as the JSON text it travelled in,
to an anonymous temporary file as it arrives; memory keeps only where each
node id's text lies. The last text stored for a node id wins (``--dist each``,
reruns), as a dictionary would. Readers take one result at a time.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from typing import IO

from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.contracts import CaseResult

# A case's slot is one int: its text's offset, its length, its suite's number and
# whether the text is canonical, packed. A tuple of them (and two int objects) took
# 128 bytes a case, a tenth of issue 41's 10 KB per case; the packed int takes 40.
_LENGTH_BITS = 40
_SUITE_BITS = 24
_LENGTH_SHIFT = _SUITE_BITS + 1
_OFFSET_SHIFT = _LENGTH_SHIFT + _LENGTH_BITS
_SUITE_MASK = (1 << _SUITE_BITS) - 1
_LENGTH_MASK = (1 << _LENGTH_BITS) - 1


class CaseStore:
    """Per case node id: its suite and its result's JSON text, stored on disk."""

    def __init__(self) -> None:
        self._slots: dict[str, int] = {}
        self._suite_ids: list[str] = []
        self._suite_tags: dict[str, int] = {}
        """Per suite id: its number shifted past the canonical flag, as slots hold it."""
        self._file: IO[bytes] | None = None
        self._end = 0
        self._unflushed = False
        self._latest: tuple[str, str] | None = None
        """The node id and text stored last: the progress journal reads it back at once,
        and would otherwise flush the file and read it from disk for every case."""

    def put(self, nodeid: str, suite_id: str, text: str, *, canonical: bool = False) -> None:
        """Store ``text`` (``CaseResult`` JSON) as the result of ``nodeid`` in ``suite_id``.

        ``canonical`` says the text is the result's canonical JSON (``canonical_json``
        of its ``model_dump(mode="json")``): a run report then copies it unchanged.
        """
        data = text.encode("utf-8")
        if self._file is None:
            # Closed by close() at the session's end; until then it is written to.
            self._file = tempfile.TemporaryFile(prefix="agentbench-results-")  # noqa: SIM115
        self._file.write(data)
        tag = self._suite_tags.get(suite_id)
        if tag is None:
            tag = self._new_suite(suite_id)
        # No length check: a text of 2**40 bytes could not have been held as a str first.
        length = len(data)
        self._slots[nodeid] = self._end << _OFFSET_SHIFT | length << _LENGTH_SHIFT | tag | canonical
        self._end += length
        self._unflushed = True
        self._latest = (nodeid, text)

    def _new_suite(self, suite_id: str) -> int:
        """The slot bits naming a suite met for the first time (its number, shifted once)."""
        number = len(self._suite_ids)
        if number > _SUITE_MASK:
            raise OverflowError(f"more than {_SUITE_MASK + 1} suites in one store")
        self._suite_ids.append(suite_id)
        tag = self._suite_tags[suite_id] = number << 1
        return tag

    def __setitem__(self, nodeid: str, result: CaseResult) -> None:
        self.put(nodeid, result.suite_id, result.model_dump_json())

    def __contains__(self, nodeid: object) -> bool:
        return nodeid in self._slots

    def __len__(self) -> int:
        return len(self._slots)

    def __iter__(self) -> Iterator[str]:
        return iter(self._slots)

    def suite_of(self, nodeid: str) -> str:
        return self._suite_ids[self._slots[nodeid] >> 1 & _SUITE_MASK]

    def canonical_text(self, nodeid: str) -> str:
        """The canonical JSON of ``nodeid``'s result: as stored, or re-serialised."""
        text = self.text(nodeid)
        return text if self._slots[nodeid] & 1 else canonical_json(json.loads(text))

    def text(self, nodeid: str) -> str:
        """The stored JSON text of ``nodeid``'s result."""
        latest = self._latest
        if latest is not None and latest[0] == nodeid:
            return latest[1]
        slot = self._slots[nodeid]
        assert self._file is not None
        if self._unflushed:
            self._file.flush()
            self._unflushed = False
        length = slot >> _LENGTH_SHIFT & _LENGTH_MASK
        return os.pread(self._file.fileno(), length, slot >> _OFFSET_SHIFT).decode("utf-8")

    def __getitem__(self, nodeid: str) -> CaseResult:
        return CaseResult.model_validate_json(self.text(nodeid))

    def by_suite(self) -> dict[str, list[str]]:
        """The stored node ids of each suite, sorted."""
        grouped: dict[str, list[str]] = {}
        suite_ids = self._suite_ids
        for nodeid, slot in self._slots.items():
            grouped.setdefault(suite_ids[slot >> 1 & _SUITE_MASK], []).append(nodeid)
        for nodeids in grouped.values():
            nodeids.sort()
        return grouped

    def results(self) -> Iterator[CaseResult]:
        """Every stored result, one parsed at a time."""
        for nodeid in list(self._slots):
            yield self[nodeid]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._slots.clear()
        self._suite_ids.clear()
        self._suite_tags.clear()
        self._end = 0
        self._latest = None

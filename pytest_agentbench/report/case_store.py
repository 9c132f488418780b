"""Graded results of a run, kept in a temporary file rather than in memory.

A run of 100,000 cases would otherwise hold every case's full record until the
report is written. Each result is appended, as the JSON text it travelled in,
to an anonymous temporary file as it arrives; memory keeps only where each
node id's text lies. The last text stored for a node id wins (``--dist each``,
reruns), as a dictionary would. Readers take one result at a time.

A run in which nothing reads a result whole (no report, no log, no journal ...:
``RunRecorder.whole_results``) keeps only what the run's figures read of the
results graded in its own process (:meth:`CaseStore.put_figures`): they are never
serialised, written to the file nor decoded again. A run that stores the text of a
result graded in its own process keeps that result's figures beside it
(``put(..., figures=result)``): its summary reads them rather than decoding every
text again; only texts from elsewhere (xdist workers) are decoded for their figures.
"""

from __future__ import annotations

import functools
import json
import operator
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any

from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, scanning_decode
from pytest_agentbench.sdk.contracts import CaseOutcome, CaseResult, FailureClass

# A case's slot is one int: its text's offset, its length, its suite's number and
# whether the text is canonical, packed. A tuple of them (and two int objects) took
# 128 bytes a case, a tenth of issue 41's 10 KB per case; the packed int takes 40.
_LENGTH_BITS = 40
_SUITE_BITS = 24
_LENGTH_SHIFT = _SUITE_BITS + 1
_OFFSET_SHIFT = _LENGTH_SHIFT + _LENGTH_BITS
_SUITE_MASK = (1 << _SUITE_BITS) - 1
_LENGTH_MASK = (1 << _LENGTH_BITS) - 1

_FIGURE_FIELDS = (
    "suite_id",
    "case_id",
    "outcome",
    "failure_class",
    "failure_reason",
    "measurements",
    "labels",
    "trial",
    "cluster",
    "model",
    "model_calls",
)
"""The fields of a result the summary's figures read: counts, rates, intervals and trial
figures read a case's outcome, failure class, measurements and unit; a model matrix's
table sums each model's traffic; a regraded crash keeps its reason."""

_Figures = tuple[
    str,
    str,
    CaseOutcome,
    FailureClass | None,
    str | None,
    Mapping[str, int],
    tuple[str, ...],
    int | None,
    str | None,
    str | None,
    dict[str, JsonValue] | None,
]
"""A result kept for its figures alone: its :data:`_FIGURE_FIELDS`, in order, the very
values the result holds (no copy), in one tuple rather than a record."""

_figures_of: Callable[[dict[str, Any]], _Figures] = operator.itemgetter(*_FIGURE_FIELDS)


# A stored text is a result's own dump: ``json.loads`` minus its wrappers (one decode a
# case where a summary reads texts from xdist workers).
_decode_own = scanning_decode(json.JSONDecoder())


@functools.cache
def _figures_template() -> tuple[dict[str, Any], set[str]]:
    """The fields and fields-set of a figures record before its own values go in.

    Copying a record made once and replacing the figures' fields costs half of
    ``model_construct``, which walks every field of the model for each case.
    """
    template = CaseResult.model_construct(
        suite_id="",
        case_id="",
        outcome=CaseOutcome.PASSED,
        checks=(),
        measurements={},
        labels=(),
        failure_class=None,
        failure_reason=None,
        findings=(),
        receipt=None,
        trial=None,
        cluster=None,
        recorded=None,
    )
    return template.__dict__, template.__pydantic_fields_set__


def _figures_record(figures: _Figures) -> CaseResult:
    """A result holding its figures (:data:`_FIGURE_FIELDS`) alone, built without validation.

    Its checks, receipt and recorded output are most of its record, and only a
    written report shows them.
    """
    fields, fields_set = _figures_template()
    record = CaseResult.__new__(CaseResult)
    # What ``template.model_copy(update=...)`` does for a model with neither extra
    # nor private attributes, without its generic copies (a third of this read).
    values = dict(fields)
    values.update(zip(_FIGURE_FIELDS, figures, strict=True))
    object.__setattr__(record, "__dict__", values)
    object.__setattr__(record, "__pydantic_extra__", None)
    # One set shared by every record rather than a copy each (728 bytes a case while a
    # suite's figures are computed): a record is frozen, and pydantic copies the set
    # before it adds to it (``model_copy(update=...)``).
    object.__setattr__(record, "__pydantic_fields_set__", fields_set)
    object.__setattr__(record, "__pydantic_private__", None)
    return record


class FiguresOnly(LookupError):
    """A result was kept for the run's figures only: no text of it exists to read."""

    def __init__(self, nodeid: str) -> None:
        super().__init__(
            f"{nodeid}: only the figures of its result were kept "
            "(the run asked for nothing that reads a result whole)"
        )


class CaseStore:
    """Per case node id: its suite and its result's JSON text, stored on disk, or the
    figures of its result, kept in memory."""

    def __init__(self) -> None:
        self._slots: dict[str, int | _Figures] = {}
        self._held: dict[str, _Figures] = {}
        """The figures of results whose text is stored too, taken from the result as it was
        graded here (:meth:`put`'s ``figures``): :meth:`figures` decodes no text for them."""
        self._suite_ids: list[str] = []
        self._suite_tags: dict[str, int] = {}
        """Per suite id: its number shifted past the canonical flag, as slots hold it."""
        self._file: IO[bytes] | None = None
        self._end = 0
        self._unflushed = False
        self._grouped: dict[str, list[str]] | None = None
        """:meth:`by_suite`'s answer until the store changes: the summary and the run report
        each ask for it, and sorting every node id twice cost the run's end 1 us a case."""
        self._latest: tuple[str, str] | None = None
        """The node id and text stored last: the progress journal reads it back at once,
        and would otherwise flush the file and read it from disk for every case."""

    def put(
        self,
        nodeid: str,
        suite_id: str,
        text: str,
        *,
        canonical: bool = False,
        figures: CaseResult | None = None,
    ) -> None:
        """Store ``text`` (``CaseResult`` JSON) as the result of ``nodeid`` in ``suite_id``.

        ``canonical`` says the text is the result's canonical JSON (``canonical_json``
        of its ``model_dump(mode="json")``): a run report then copies it unchanged.
        ``figures``: the result ``text`` was made from, whose figures :meth:`figures`
        then reads without decoding the text.
        """
        if figures is None:
            # A later text for the node replaces what was held of an earlier one.
            self._held.pop(nodeid, None)
        else:
            self._held[nodeid] = _figures_of(figures.__dict__)
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
        self._grouped = None

    def put_figures(self, nodeid: str, result: CaseResult) -> None:
        """Keep what the run's figures read of ``result`` (:meth:`figures`), not its text."""
        # A record's fields are its __dict__ (pydantic): one C call picks them.
        self._slots[nodeid] = _figures_of(result.__dict__)
        self._held.pop(nodeid, None)
        self._latest = None  # it may have been this node's earlier text
        self._grouped = None

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
        slot = self._slots[nodeid]
        return self._suite_ids[slot >> 1 & _SUITE_MASK] if isinstance(slot, int) else slot[0]

    def canonical_text(self, nodeid: str) -> str:
        """The canonical JSON of ``nodeid``'s result: as stored, or re-serialised."""
        text = self.text(nodeid)
        slot = self._slots[nodeid]
        return text if isinstance(slot, int) and slot & 1 else canonical_json(json.loads(text))

    def text(self, nodeid: str) -> str:
        """The stored JSON text of ``nodeid``'s result (:class:`FiguresOnly`: none was kept)."""
        latest = self._latest
        if latest is not None and latest[0] == nodeid:
            return latest[1]
        slot = self._slots[nodeid]
        if not isinstance(slot, int):
            raise FiguresOnly(nodeid)
        assert self._file is not None
        if self._unflushed:
            self._file.flush()
            self._unflushed = False
        length = slot >> _LENGTH_SHIFT & _LENGTH_MASK
        return os.pread(self._file.fileno(), length, slot >> _OFFSET_SHIFT).decode("utf-8")

    def __getitem__(self, nodeid: str) -> CaseResult:
        return CaseResult.model_validate_json(self.text(nodeid))

    def figures(self, nodeid: str) -> CaseResult:
        """What a suite's figures read of ``nodeid``'s result, and nothing else.

        From a text, a result's own dump: the record is built without validating it again.
        """
        slot = self._slots[nodeid]
        if not isinstance(slot, int):
            return _figures_record(slot)
        held = self._held.get(nodeid)
        if held is not None:
            return _figures_record(held)
        data = _decode_own(self.text(nodeid))
        failure_class = data["failure_class"]
        return _figures_record(
            (
                data["suite_id"],
                data["case_id"],
                CaseOutcome(data["outcome"]),
                None if failure_class is None else FailureClass(failure_class),
                data["failure_reason"],
                data["measurements"],
                tuple(data["labels"]),
                data["trial"],
                data["cluster"],
                data.get("model"),
                data["model_calls"],
            )
        )

    def by_suite(self) -> dict[str, list[str]]:
        """The stored node ids of each suite, sorted: the same lists until the store changes
        (read them, do not change them)."""
        if self._grouped is not None:
            return self._grouped
        grouped: dict[str, list[str]] = {}
        suite_ids = self._suite_ids
        for nodeid, slot in self._slots.items():
            suite_id = suite_ids[slot >> 1 & _SUITE_MASK] if isinstance(slot, int) else slot[0]
            grouped.setdefault(suite_id, []).append(nodeid)
        for nodeids in grouped.values():
            nodeids.sort()
        self._grouped = grouped
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
        self._held.clear()
        self._suite_ids.clear()
        self._suite_tags.clear()
        self._end = 0
        self._latest = None
        self._grouped = None

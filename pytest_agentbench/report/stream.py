"""The JSON run report read as a stream: its head fields and each case entry one at a time.

A report is one object whose ``suites`` list holds suite objects whose ``cases``
list holds case entries (:func:`~pytest_agentbench.report.json_report.stream_report`
writes it so). The reader walks that skeleton itself and hands every other value
(a head field, a suite's fields, one case entry) to the strict parser on its own:
the input limits' bytes and depth bound each of those values, not the file, so a
report of any number of cases reads. An untrusted report is bounded as a whole by
``max_bytes`` (``--max-report-bytes``, ``agentbench_max_report_bytes``): over it,
``report_too_large`` before a byte is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from pytest_agentbench.sdk.canonical import (
    JsonValue,
    input_limits,
    loads_strict,
    scan_strict,
    unreadable,
)
from pytest_agentbench.sdk.errors import AgentbenchError

_CHUNK = 1 << 20
_WHITESPACE = " \t\n\r"
# A string (the ``close`` group unset when the buffer ends inside it) or a bracket. The
# string's body is a run of plain characters between escapes, never an alternation repeated
# per character: sre keeps a backtracking frame for each repeat of a group, so a 16 MiB
# string took 2 GB and most of a minute to scan.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:(?P<close>")|\\?\Z)|[\[\]{}]', re.DOTALL)
_SCALAR_END = re.compile(r"[\s,\]}]")


@dataclass(frozen=True)
class HeadField:
    """A member of the report object other than a ``suites`` list."""

    key: str
    value: JsonValue


@dataclass(frozen=True)
class SuitesBegin:
    """The report's ``suites`` is a list: its suites follow, as case entries and suite ends."""


@dataclass(frozen=True)
class CaseEntry:
    """One entry of suite ``suite``'s ``cases`` list (``{"duration_s", "nodeid", "result"}``)."""

    suite: int
    value: JsonValue


@dataclass(frozen=True)
class SuiteEnd:
    """Suite ``index`` read: its members but its streamed ``cases`` list (or what it was)."""

    index: int
    value: JsonValue
    cases_streamed: bool
    """Its ``cases`` list was streamed as :class:`CaseEntry`; ``value`` lacks it."""


@dataclass(frozen=True)
class NotAnObject:
    """The file holds a JSON value that is not an object: not a report, read as one value."""

    value: JsonValue


ReportEvent = HeadField | SuitesBegin | CaseEntry | SuiteEnd | NotAnObject


def refuse_oversized(path: Path, max_bytes: int | None, option: str, name: str) -> None:
    """``report_too_large`` when the file at ``path`` is over ``max_bytes`` (``option``)."""
    if max_bytes is None:
        return
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise AgentbenchError("missing_file", "file does not exist", file=name) from None
    except OSError as exc:
        raise unreadable(exc, name) from None
    if size > max_bytes:
        raise AgentbenchError(
            "report_too_large",
            f"{size} bytes, over the limit of {max_bytes} bytes ({option})",
            file=name,
        )


def iter_report(
    path: Path,
    *,
    display: str | None = None,
    max_bytes: int | None = None,
    option: str = "--max-report-bytes",
) -> Iterator[ReportEvent]:
    """The report at ``path`` as events, in file order; bad input is refused by name.

    Malformed JSON is ``malformed_json`` (with its line), a key twice ``duplicate_key``,
    a value over the input limits ``input_too_large``/``input_too_deep``, each naming
    the field (``suites[2].cases[17]``).
    """
    name = display or str(path)
    refuse_oversized(path, max_bytes, option, name)
    try:
        handle = path.open(encoding="utf-8", newline="")
    except FileNotFoundError:
        raise AgentbenchError("missing_file", "file does not exist", file=name) from None
    except OSError as exc:
        raise unreadable(exc, name) from None
    with handle:
        yield from _Scanner(handle, name).report()


def read_report_document(
    path: Path,
    *,
    display: str | None = None,
    max_bytes: int | None = None,
    option: str = "--max-report-bytes",
) -> JsonValue:
    """The whole report as parsed JSON, built from :func:`iter_report` (memory is the caller's)."""
    document: dict[str, JsonValue] = {}
    suites: list[JsonValue] = []
    cases: list[JsonValue] = []
    for event in iter_report(path, display=display, max_bytes=max_bytes, option=option):
        if isinstance(event, NotAnObject):
            return event.value
        if isinstance(event, HeadField):
            document[event.key] = event.value
        elif isinstance(event, SuitesBegin):
            document["suites"] = suites
        elif isinstance(event, CaseEntry):
            cases.append(event.value)
        else:
            suite = event.value
            if event.cases_streamed and isinstance(suite, dict):
                suite = {**suite, "cases": cases}
            suites.append(suite)
            cases = []
    return document


class _Scanner:
    """The report's skeleton, walked over a buffered text file."""

    def __init__(self, handle: TextIO, name: str) -> None:
        self.handle = handle
        self.name = name
        self.buffer = ""
        self.pos = 0
        self.eof = False
        self.line = 1
        """The line of ``self.pos``: newlines are counted as text is consumed."""
        self.line_start = 0
        """Where that line starts, in characters from the start of the file."""
        self.consumed = 0
        """Characters dropped from the front of the buffer."""

    # -- reading ------------------------------------------------------------

    def _more(self) -> bool:
        if self.eof:
            return False
        try:
            chunk = self.handle.read(_CHUNK)
        except UnicodeDecodeError as exc:
            raise AgentbenchError(
                "malformed_json", f"not UTF-8 ({exc.reason})", file=self.name
            ) from None
        except OSError as exc:
            raise unreadable(exc, self.name) from None
        if not chunk:
            self.eof = True
            return False
        self.buffer += chunk
        return True

    def _advance(self, end: int) -> None:
        newlines = self.buffer.count("\n", self.pos, end)
        if newlines:
            self.line += newlines
            self.line_start = self.consumed + self.buffer.rindex("\n", self.pos, end) + 1
        self.pos = end

    def _peek(self) -> str:
        """The next character that is not whitespace (consumed up to it); ``""`` at the end.

        Never a line break: a caller taking the character moves ``pos`` past it alone."""
        if self.pos > _CHUNK:
            # Only between values: a value being scanned holds positions in the buffer.
            self.consumed += self.pos
            self.buffer = self.buffer[self.pos :]
            self.pos = 0
        if self.pos < len(self.buffer) and self.buffer[self.pos] not in _WHITESPACE:
            return self.buffer[self.pos]  # a report written compact: nothing to skip
        while True:
            end = self.pos
            while end < len(self.buffer) and self.buffer[end] in _WHITESPACE:
                end += 1
            self._advance(end)
            if self.pos < len(self.buffer):
                return self.buffer[self.pos]
            if not self._more():
                return ""

    def _malformed(self, message: str) -> AgentbenchError:
        column = self.consumed + self.pos - self.line_start + 1
        return AgentbenchError(
            "malformed_json", f"{message} (column {column})", file=self.name, line=self.line
        )

    def _unexpected(self, what: str, found: str) -> AgentbenchError:
        ends = "the file ends (truncated?)" if not found else f"found {found!r}"
        return self._malformed(f"expecting {what}: {ends}")

    def _expect(self, char: str, what: str) -> None:
        found = self._peek()
        if found != char:
            raise self._unexpected(what, found)
        self.pos += 1

    def _value_text(self, field: str) -> tuple[str, int]:
        """The next whole value's text and its line, bounded by the input limits."""
        limits = input_limits()
        first = self._peek()
        if not first:
            raise self._malformed("expecting a value: the file ends (truncated?)")
        start, line = self.pos, self.line
        if first in '"[{':
            depth, scan = 0, start
            while True:
                for match in _TOKEN.finditer(self.buffer, scan):
                    token = match.group()
                    if token[0] == '"':
                        if match.group("close") is None:
                            break  # the buffer ends inside this string
                        if depth == 0:
                            return self._take(start, match.end(), line)
                    elif token in "[{":
                        depth += 1
                        if depth > limits.max_depth:
                            raise AgentbenchError(
                                "input_too_deep",
                                f"nested deeper than {limits.max_depth} levels "
                                "(agentbench_max_input_depth)",
                                file=self.name,
                                line=line,
                                field=field,
                            )
                    else:
                        depth -= 1
                        if depth <= 0:
                            return self._take(start, match.end(), line)
                    scan = match.end()
                else:
                    scan = len(self.buffer)
                self._bound(start, limits.max_bytes, field, line)
                if not self._more():
                    raise self._malformed(f"{field} is not closed: the file ends (truncated?)")
        while True:
            scalar_end = _SCALAR_END.search(self.buffer, start)
            if scalar_end is not None:
                return self._take(start, scalar_end.start(), line)
            self._bound(start, limits.max_bytes, field, line)
            if not self._more():
                return self._take(start, len(self.buffer), line)

    def _bound(self, start: int, limit: int, field: str, line: int) -> None:
        # A character is at least one byte: this many characters are too large in any encoding.
        if len(self.buffer) - start > limit:
            raise AgentbenchError(
                "input_too_large",
                f"a value of more than {limit} characters exceeds the limit of {limit} bytes "
                "(agentbench_max_input_bytes)",
                file=self.name,
                line=line,
                field=field,
            )

    def _take(self, start: int, end: int, line: int) -> tuple[str, int]:
        text = self.buffer[start:end]
        self._advance(end)
        return text, line

    def _value(self, field: str) -> JsonValue:
        # A string, list or object the buffer holds whole is parsed where it lies; any
        # other takes the path that reads on, bounds it and names what is wrong. (A
        # scalar is left to it: where it ends is only known at a delimiter.)
        if self._peek() in '"[{':
            found = scan_strict(self.buffer, self.pos)
            if found is not None and (found[1] < len(self.buffer) or self.eof):
                self._advance(found[1])
                return found[0]
        text, line = self._value_text(field)
        try:
            return loads_strict(text, file=self.name, line=line)
        except AgentbenchError as exc:
            inner = exc.location.field
            if inner and not inner.startswith("["):
                inner = f".{inner}"
            raise AgentbenchError(
                exc.code, exc.reason, file=self.name, line=line, field=f"{field}{inner or ''}"
            ) from None

    def _key(self, seen: set[str], where: str) -> str:
        text, line = self._value_text(where or "<root>")
        if not text.startswith('"'):
            raise self._malformed("expecting a property name in double quotes")
        key = loads_strict(text, file=self.name, line=line)
        assert isinstance(key, str)
        if key in seen:
            raise AgentbenchError(
                "duplicate_key",
                f"key {key!r} appears more than once",
                file=self.name,
                line=line,
                field=f"{where}.{key}" if where else key,
            )
        seen.add(key)
        self._expect(":", "':' after a key")
        return key

    def _members(self, where: str) -> Iterator[str]:
        """The keys of the object at the reader's position; the caller reads each value."""
        self._expect("{", "an object")
        seen: set[str] = set()
        if self._peek() == "}":
            self.pos += 1
            return
        while True:
            yield self._key(seen, where)
            found = self._peek()
            if found == "}":
                self.pos += 1
                return
            if found != ",":
                raise self._unexpected("',' delimiter or '}'", found)
            self.pos += 1

    def _elements(self) -> Iterator[int]:
        """The indices of the list at the reader's position; the caller reads each element."""
        self._expect("[", "a list")
        if self._peek() == "]":
            self.pos += 1
            return
        index = 0
        while True:
            yield index
            found = self._peek()
            if found == "]":
                self.pos += 1
                return
            if found != ",":
                raise self._unexpected("',' delimiter or ']'", found)
            self.pos += 1
            index += 1

    # -- the report's skeleton ------------------------------------------------

    def report(self) -> Iterator[ReportEvent]:
        first = self._peek()
        if first == "\ufeff":
            raise self._malformed("Unexpected UTF-8 BOM")
        if first and first != "{":
            yield NotAnObject(self._value("<root>"))
            if self._peek():
                raise self._malformed("Extra data after the value")
            return
        for key in self._members(""):
            if key == "suites" and self._peek() == "[":
                yield SuitesBegin()
                for index in self._elements():
                    yield from self._suite(index)
            else:
                yield HeadField(key, self._value(key))
        if self._peek():
            raise self._malformed("Extra data after the report")

    def _suite(self, index: int) -> Iterator[ReportEvent]:
        where = f"suites[{index}]"
        if self._peek() != "{":
            yield SuiteEnd(index, self._value(where), cases_streamed=False)
            return
        fields: dict[str, JsonValue] = {}
        streamed = False
        for key in self._members(where):
            if key == "cases" and self._peek() == "[":
                streamed = True
                for entry in self._elements():
                    yield CaseEntry(index, self._value(f"{where}.cases[{entry}]"))
            else:
                fields[key] = self._value(f"{where}.{key}")
        yield SuiteEnd(index, fields, cases_streamed=streamed)

"""Canonical JSON, strict JSON/JSONL/YAML readers, and artifact-set digests.

Canonical JSON is the one serialisation used for anything hashed or pinned:
sorted keys, no insignificant whitespace, UTF-8, non-finite numbers refused.
The strict readers refuse what :mod:`json` and PyYAML silently accept
(duplicate keys at any depth, ``NaN``/``Infinity``) and name the path. They are
also bounded (:class:`InputLimits`): a file larger than the size limit is refused
before it is read whole, nesting deeper than the depth limit before the parser
recurses, and a YAML document whose aliases expand past the alias limit while it
is composed, before construction builds anything from it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import pickle
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import yaml

from pytest_agentbench.sdk.errors import AgentbenchError, field_path

if TYPE_CHECKING:
    from decimal import Decimal

ARTIFACT_SET_SCHEME = "sha256-artifact-set-v1"

DEFAULT_MAX_INPUT_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_INPUT_DEPTH = 100
DEFAULT_MAX_YAML_ALIASES = 10_000


@dataclass(frozen=True)
class InputLimits:
    """How much the readers accept from one file or document before refusing it by name."""

    max_bytes: int = DEFAULT_MAX_INPUT_BYTES
    """``input_too_large``: the size of a file, or the length of a document read from elsewhere."""
    max_depth: int = DEFAULT_MAX_INPUT_DEPTH
    """``input_too_deep``: nested objects, arrays, mappings and sequences."""
    max_yaml_aliases: int = DEFAULT_MAX_YAML_ALIASES
    """``yaml_alias_limit``: aliases, each counted once per time its anchor's aliases repeat."""


_limits = InputLimits()


def input_limits() -> InputLimits:
    """The limits every reader of this process applies."""
    return _limits


def set_input_limits(limits: InputLimits) -> InputLimits:
    """Make ``limits`` the process's (the plugin's ini settings); returns the previous ones."""
    global _limits
    previous, _limits = _limits, limits
    return previous


def _too_large(size: str, limit: int, file: str | Path | None) -> AgentbenchError:
    return AgentbenchError(
        "input_too_large",
        f"{size} exceeds the limit of {limit} bytes (agentbench_max_input_bytes)",
        file=file,
    )


def _too_deep(limit: int, file: str | Path | None, line: int | None) -> AgentbenchError:
    return AgentbenchError(
        "input_too_deep",
        f"nested deeper than {limit} levels (agentbench_max_input_depth)",
        file=file,
        line=line,
    )


_JSON_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _json_depth_exceeds(text: str, limit: int) -> bool:
    """Whether ``text`` opens more than ``limit`` arrays or objects inside each other.

    A document with no more brackets than the limit cannot be deeper: the usual
    one-line record is answered by two C-speed counts. Brackets inside strings
    are skipped with the strings.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _JSON_STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return True
        elif token in "]}":
            depth -= 1
    return False


def _check_document(
    text: str, file: str | Path | None, line: int | None, max_bytes: int | None = None
) -> InputLimits:
    limits = _limits
    limit = limits.max_bytes if max_bytes is None else max_bytes
    # A character is at least one byte: a text this long is too large in any encoding.
    if len(text) > limit:
        raise _too_large(f"{len(text)} characters", limit, file).at(line=line)
    return limits


JsonValue = Any
"""A value built only of dict, list, str, int, float, bool and None."""


# Made once: ``json.dumps`` with any non-default argument builds a new encoder per
# call, a third of the time of serialising a small record.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":")
)
_PRETTY = json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False, indent=2)


def _c_canonical() -> Callable[[JsonValue], str]:
    """The C encoder ``_CANONICAL.encode`` builds on every call, built once.

    Its arguments are those ``JSONEncoder.iterencode`` passes, but for the circular
    check: a cycle then ends in ``RecursionError``, as the refusal's walk below
    already did. An interpreter without the C encoder (PyPy) uses ``encode``.
    """
    try:
        from _json import encode_basestring, make_encoder
    except ImportError:
        return _CANONICAL.encode
    encoder = make_encoder(
        None, _CANONICAL.default, encode_basestring, None, ":", ",", True, False, False
    )
    return lambda value: "".join(encoder(value, 0))


_ENCODE_CANONICAL = _c_canonical()


def canonical_json(value: JsonValue) -> str:
    """Serialise ``value`` canonically; non-finite floats are refused."""
    return _dumps(_ENCODE_CANONICAL, value)


def canonical_bytes(value: JsonValue) -> bytes:
    return canonical_json(value).encode("utf-8")


def pretty_json(value: JsonValue) -> str:
    """The on-disk form of JSON files: ``indent=2``, sorted keys, trailing newline."""
    return _dumps(_PRETTY.encode, value) + "\n"


def decimal_text(value: Decimal) -> str:
    """An exact amount as plain decimal text: no exponent, no trailing zeros."""
    text = format(value.normalize(), "f")
    return text if text != "-0" else "0"


def _dumps(encode: Callable[[JsonValue], str], value: JsonValue) -> str:
    try:
        return encode(value)
    except ValueError:
        # json names no path; the walk is only paid for on the way to the refusal.
        _refuse_non_finite(value, ())
        raise


def _refuse_non_finite(value: JsonValue, path: tuple[int | str, ...]) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise AgentbenchError(
            "non_finite_number",
            f"{value!r} has no JSON representation",
            field=field_path(path) or "<root>",
        )
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_non_finite(item, (*path, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _refuse_non_finite(item, (*path, index))


class _PairsDict(dict[str, Any]):
    """A parsed object that remembers which keys it saw twice."""

    duplicates: tuple[str, ...] = ()


def _pairs_hook(pairs: list[tuple[str, Any]]) -> _PairsDict:
    result = _PairsDict()
    seen_twice: list[str] = []
    for key, value in pairs:
        if key in result:
            seen_twice.append(key)
        result[key] = value
    if seen_twice:
        result.duplicates = tuple(seen_twice)
    return result


class _NonFinite(ValueError):
    """A JSON number that is NaN, infinite, or too large for a finite float."""


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(f"{name} is not a finite number (and not valid JSON)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(f"number {text} does not fit a finite float")
    return value


def _find_duplicate(
    value: Any, path: tuple[int | str, ...]
) -> tuple[tuple[int | str, ...], str] | None:
    if isinstance(value, _PairsDict):
        if value.duplicates:
            return path, value.duplicates[0]
        for key, item in value.items():
            found = _find_duplicate(item, (*path, key))
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _find_duplicate(item, (*path, index))
            if found:
                return found
    return None


class _DuplicateKey(Exception):
    """Some object has a key twice; a second, slower parse finds where."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _DuplicateKey
    return result


# Case and oracle files are read line by line, thousands of times per suite: the
# common, valid document takes one pass with plain dicts; only a document that
# has a duplicate key pays for the pass that names its path.
_DECODER = json.JSONDecoder(
    object_pairs_hook=_unique_pairs, parse_constant=_refuse_constant, parse_float=_finite_float
)
_LOCATING_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs_hook, parse_constant=_refuse_constant, parse_float=_finite_float
)


_SPACE = re.compile(r"[ \t\n\r]*")
"""JSON's whitespace, as ``json.decoder`` skips it."""


def _past_space(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    return position if match is None else match.end()  # it always matches, if emptily


def _scanner(decoder: json.JSONDecoder) -> Callable[[str, int], tuple[Any, int]]:
    """The decoder's scanner (C where the interpreter has it): what ``raw_decode`` calls."""
    return decoder.scan_once  # type: ignore[attr-defined, no-any-return]


def scanning_decode(decoder: json.JSONDecoder) -> Callable[[str], Any]:
    """``json.loads`` of a text with ``decoder``: one document, nothing but JSON
    whitespace around it, and no byte-order mark before it.

    The same values and errors, minus its Python frames (``loads``, ``decode`` and
    ``raw_decode``) and the whitespace searches a text that starts with its value
    does not need: a third of the time of reading a one-line record.
    """
    scan = _scanner(decoder)

    def decode(text: str) -> Any:
        start = _past_space(text, 0) if text[:1] in " \t\n\r" else 0
        try:
            value, end = scan(text, start)
        except StopIteration as err:
            if text.startswith("\ufeff"):  # a mark fails the scan at once: asked only then
                raise json.JSONDecodeError(
                    "Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0
                ) from None
            raise json.JSONDecodeError("Expecting value", text, err.value) from None
        if end != len(text):
            end = _past_space(text, end)
            if end != len(text):
                raise json.JSONDecodeError("Extra data", text, end)
        return value

    return decode


_decode = scanning_decode(_DECODER)


_scan_strict = _scanner(_DECODER)


def scan_strict(text: str, start: int) -> tuple[JsonValue, int] | None:
    """The value that starts at ``start`` in ``text``, parsed as ``loads_strict`` parses,
    and the index where it ends; ``None`` where no whole value within the input limits
    starts there, or the strict parse refuses it.

    For a reader that holds part of a larger document in a buffer: a value the buffer
    holds whole is parsed in place, once; on ``None`` the reader's own, slower path reads
    on and names what is wrong. A value ending where ``text`` ends may be cut short
    (a number, say): whether more follows is the reader's to know.
    """
    try:
        value, end = _scan_strict(text, start)
    except (StopIteration, ValueError, RecursionError, _DuplicateKey):
        return None
    limits = _limits
    if end - start > limits.max_bytes:
        return None
    if _parsed_depth_exceeds(text, start, end, limits.max_depth):
        return None
    return value, end


_STRING_OR_NOT_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[^"\[\]{}]+')
_EMPTY_PAIR = re.compile(r"\[\]|\{\}")


def _parsed_depth_exceeds(text: str, start: int, end: int, limit: int) -> bool:
    """``_json_depth_exceeds`` for ``text[start:end]``, already parsed as JSON, whose
    brackets therefore pair up: what is left of its brackets loses one level of nesting
    to each pass that drops the empty pairs, in C, where a value of thousands of
    brackets took a Python step each."""
    if text.count("[", start, end) + text.count("{", start, end) <= limit:
        return False
    shape = _STRING_OR_NOT_BRACKET.sub("", text[start:end])
    for _ in range(limit):
        if not shape:
            return False
        shape = _EMPTY_PAIR.sub("", shape)
    return bool(shape)


def loads_strict(
    text: str,
    *,
    file: str | Path | None = None,
    line: int | None = None,
    max_bytes: int | None = None,
) -> JsonValue:
    """Parse one JSON document, refusing duplicate keys at any depth and NaN/Infinity.

    A document longer than the size limit (``max_bytes`` instead, where a caller bounds
    the document itself) or nested deeper than the depth limit is refused
    (``input_too_large``, ``input_too_deep``) before it is parsed.
    """
    limits = _check_document(text, file, line, max_bytes)
    if _json_depth_exceeds(text, limits.max_depth):
        raise _too_deep(limits.max_depth, file, line)
    try:
        try:
            return _decode(text)
        except _DuplicateKey:
            duplicate = _find_duplicate(_LOCATING_DECODER.decode(text), ())
    except json.JSONDecodeError as exc:
        raise AgentbenchError(
            "malformed_json",
            f"{exc.msg} (column {exc.colno})",
            file=file,
            line=exc.lineno if line is None else line,
        ) from None
    except _NonFinite as exc:
        raise AgentbenchError("non_finite_number", str(exc), file=file, line=line) from None
    except ValueError as exc:
        raise AgentbenchError("malformed_json", str(exc), file=file, line=line) from None
    except RecursionError:
        raise AgentbenchError(
            "malformed_json", "nesting too deep to read", file=file, line=line
        ) from None
    assert duplicate is not None, "the locating parse sees every duplicate the first one saw"
    path, key = duplicate
    raise AgentbenchError(
        "duplicate_key",
        f"key {key!r} appears more than once",
        file=file,
        line=line,
        field=field_path((*path, key)),
    )


def _read_text(path: Path, name: str, malformed_code: str) -> str:
    data = read_bytes(path, display=name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AgentbenchError(malformed_code, f"not UTF-8 ({exc.reason})", file=name) from None


def unreadable(exc: OSError, name: str | Path) -> AgentbenchError:
    """The refusal for a file or folder that cannot be read (permissions, I/O errors)."""
    return AgentbenchError("unreadable_file", exc.strerror or type(exc).__name__, file=name)


def read_bytes(path: Path, *, display: str | None = None) -> bytes:
    """A file's bytes; any OSError is the named refusal ``unreadable_file``.

    At most one byte more than the size limit is read: a larger file is refused
    (``input_too_large``) without being read whole.
    """
    limit = _limits.max_bytes
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise AgentbenchError("missing_file", "file does not exist", file=display or path) from None
    except OSError as exc:
        raise unreadable(exc, display or path) from None
    if len(data) > limit:
        raise _too_large("the file", limit, display or path)
    return data


def read_text(path: Path, *, display: str | None = None) -> str:
    """A UTF-8 text file, bounded as :func:`read_bytes`; other bytes are ``invalid_utf8``."""
    name = display or str(path)
    return _read_text(path, name, "invalid_utf8")


_UNDECODABLE = re.compile("[\udc80-\udcff]")


def decode_lines_lenient(data: bytes) -> str:
    """UTF-8 text in which every byte that is not UTF-8 survives as a lone surrogate.

    Line-oriented readers (predictions files) refuse such a line alone with
    :func:`undecodable_line`, instead of the whole file for one bad byte.
    """
    return data.decode("utf-8", "surrogateescape")


def undecodable_line(
    line: str, *, file: str | Path | None = None, number: int | None = None
) -> AgentbenchError | None:
    """The ``invalid_utf8`` refusal of a line from :func:`decode_lines_lenient`, if it has one."""
    match = _UNDECODABLE.search(line)
    if match is None:
        return None
    return AgentbenchError(
        "invalid_utf8",
        f"byte 0x{ord(match.group()) - 0xDC00:02x} at column {match.start() + 1} is not UTF-8",
        file=file,
        line=number,
    )


def read_json(path: Path, *, display: str | None = None) -> JsonValue:
    """Read a strict JSON file; ``display`` is the name used in refusals."""
    name = display or str(path)
    return loads_strict(_read_text(path, name, "malformed_json"), file=name)


@dataclass(frozen=True)
class JsonlLine:
    line: int
    value: JsonValue


def iter_jsonl(text: str, *, file: str | Path | None = None) -> Iterator[JsonlLine]:
    """Yield every non-blank line of a JSONL document, strictly parsed.

    Lines end at ``\n`` only (a trailing ``\r`` is dropped): JSON strings may
    hold other Unicode line separators unescaped.
    """
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r")
        if line.strip():
            yield JsonlLine(number, loads_strict(line, file=file, line=number))


def read_jsonl(path: Path, *, display: str | None = None) -> list[JsonlLine]:
    name = display or str(path)
    return list(iter_jsonl(_read_text(path, name, "malformed_json"), file=name))


class _YamlLimitExceeded(yaml.composer.ComposerError):
    """A bound of :class:`InputLimits` crossed while composing; ``code`` names which."""

    def __init__(self, code: str, problem: str, mark: Any) -> None:
        super().__init__(None, None, problem, mark)
        self.code = code


class _BoundedComposer(yaml.composer.Composer):
    """PyYAML's composer, refusing nesting past the depth limit and aliases past the alias limit.

    Both are refused while nodes are composed, before construction; an alias to a
    node still being composed (a cycle) is refused there too. Each alias counts one,
    plus the aliases inside the node it repeats: nine nested levels of nine aliases
    each, a few hundred bytes, count as the 9**9 nodes they expand to.
    """

    def __init__(self) -> None:
        yaml.composer.Composer.__init__(self)
        limits = _limits
        self._max_depth = limits.max_depth
        self._max_aliases = limits.max_yaml_aliases
        self._depth = 0
        self._aliases = 0
        # By anchor name (PyYAML refuses a name used twice): the aliases inside
        # each composed anchored node, and the anchors still being composed.
        self._aliases_within: dict[str, int] = {}
        self._open: set[str] = set()

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[attr-defined]
        if isinstance(event, yaml.AliasEvent):
            self._count_alias(event)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > self._max_depth:
            raise _YamlLimitExceeded(
                "input_too_deep",
                f"nested deeper than {self._max_depth} levels (agentbench_max_input_depth)",
                event.start_mark,
            )
        anchor: str | None = getattr(event, "anchor", None)
        before = self._aliases
        if anchor is not None:
            self._open.add(anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            if anchor is not None:
                self._open.discard(anchor)
        if anchor is not None:
            self._aliases_within[anchor] = self._aliases - before
        return node

    def _count_alias(self, event: yaml.AliasEvent) -> None:
        anchor = str(event.anchor)
        if anchor in self._open:
            raise _YamlLimitExceeded(
                "yaml_alias_limit",
                f"alias *{anchor} repeats a node that contains it",
                event.start_mark,
            )
        self._aliases += 1 + self._aliases_within.get(anchor, 0)
        if self._aliases > self._max_aliases:
            raise _YamlLimitExceeded(
                "yaml_alias_limit",
                f"aliases expand past the limit of {self._max_aliases} "
                "(agentbench_max_yaml_aliases)",
                event.start_mark,
            )


_ScalarConstructor = Callable[[Any, yaml.ScalarNode], Any]


def _refusing_unreadable(construct: _ScalarConstructor) -> _ScalarConstructor:
    """``construct``, refusing a scalar it cannot read by name and line, not with a ValueError.

    An explicit tag skips the resolver's patterns (``!!int x`` reaches ``int("x")``),
    a date can match its pattern and name no day (2001-02-30), and ``int()`` refuses
    more than 4,300 digits.
    """

    def read(constructor: Any, node: yaml.ScalarNode) -> Any:
        try:
            return construct(constructor, node)
        except (ValueError, LookupError, TypeError, AttributeError):
            shown = node.value if len(node.value) <= 40 else node.value[:40] + "..."
            kind = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise yaml.constructor.ConstructorError(
                None, None, f"{shown!r} is not a valid {kind}", node.start_mark
            ) from None

    return read


_MERGE_TAG = "tag:yaml.org,2002:merge"
_MERGE_KEY_PROBLEM = "a merge key (<<) is not supported"
_BINARY_PROBLEM = "a !!binary value is not supported"
_PROBLEM_CODES = (
    ("duplicate key", "duplicate_key"),
    ("non-finite", "non_finite_number"),
    (_MERGE_KEY_PROBLEM, "yaml_merge_key"),
    (_BINARY_PROBLEM, "yaml_binary"),
)
"""A constructor's refusal, by the start of its problem, and its code."""


class _StrictConstructor(yaml.constructor.SafeConstructor):
    """SafeConstructor that refuses duplicate or unhashable keys and non-finite floats."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):
            # "!!set [1]" or "!!map x": the checks below would unpack a scalar or a list.
            raise yaml.constructor.ConstructorError(
                None, None, f"expected a mapping, but found a {node.id}", node.start_mark
            )
        seen: set[Any] = set()
        for key_node, _value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                # PyYAML's safe loader would merge (or, unresolved, name its own constructor).
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"{_MERGE_KEY_PROBLEM}: write the keys out in full",
                    key_node.start_mark,
                )
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key must be a scalar", key_node.start_mark
                )
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def refuse_binary(self, node: yaml.Node) -> None:
        # Bytes have no JSON form: kept, they would become their repr somewhere later.
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"{_BINARY_PROBLEM}: bytes have no JSON form (write the text, or its base64 as a "
            "plain string)",
            node.start_mark,
        )

    def construct_finite_float(self, node: yaml.ScalarNode) -> float:
        value: float = self.construct_yaml_float(node)
        if not math.isfinite(value):
            raise yaml.constructor.ConstructorError(
                None, None, f"non-finite number {node.value!r}", node.start_mark
            )
        return value

    yaml_constructors: ClassVar[dict[str | None, Any]] = {
        **yaml.constructor.SafeConstructor.yaml_constructors,
        "tag:yaml.org,2002:binary": refuse_binary,
        **{
            f"tag:yaml.org,2002:{kind}": _refusing_unreadable(construct)
            for kind, construct in (
                ("bool", yaml.constructor.SafeConstructor.construct_yaml_bool),
                ("int", yaml.constructor.SafeConstructor.construct_yaml_int),
                ("float", construct_finite_float),
                ("timestamp", yaml.constructor.SafeConstructor.construct_yaml_timestamp),
            )
        },
    }


class _StrictYamlLoader(
    yaml.reader.Reader,
    yaml.scanner.Scanner,
    yaml.parser.Parser,
    _BoundedComposer,
    _StrictConstructor,
    yaml.resolver.Resolver,
):
    """The strict loader in pure Python: PyYAML's reader, scanner and parser."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        _BoundedComposer.__init__(self)
        _StrictConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)


class _YamlLoading(Protocol):
    def get_single_data(self) -> Any: ...

    def dispose(self) -> None: ...


_FAST_YAML_LOADER: Callable[[str], _YamlLoading] | None = None
if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _FastStrictYamlLoader(
        _BoundedComposer, CParser, _StrictConstructor, yaml.resolver.Resolver
    ):
        """The strict loader with libyaml's scanner and parser, about five times faster.

        Python's composer comes before ``CParser`` in the method order, so its
        ``get_single_node`` and the bounded ``compose_node`` run instead of
        libyaml's own composer, which has neither bound.
        """

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _BoundedComposer.__init__(self)
            _StrictConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    _FAST_YAML_LOADER = _FastStrictYamlLoader
# Else PyYAML was built without libyaml (no wheel for the platform): every document
# takes the pure-Python loader, which reads and refuses exactly as the fast path does.

# Where libyaml (0.2.5, 0.2.6) accepts what PyYAML's scanner refuses, or reads it
# differently (found by comparing the two on generated documents): a tab after a
# value or inside a plain scalar, a byte order mark past the first character, the
# non-specific tag ``!``, a comment right after a block scalar's header (``|#``),
# and ``?`` inside a plain scalar in a flow collection. A document with any of them
# takes the pure-Python loader.
_LIBYAML_READS_DIFFERENTLY = re.compile(r"[\t\ufeff!]|[|>][-+0-9]*#")
_FLOW_COLLECTION = re.compile(r"[\[{]")


def _libyaml_reads_the_same(text: str) -> bool:
    if _LIBYAML_READS_DIFFERENTLY.search(text) is not None:
        return False
    return "?" not in text or _FLOW_COLLECTION.search(text) is None


def loads_yaml_strict(text: str, *, file: str | Path | None = None) -> JsonValue:
    """Parse YAML safely, refusing duplicate keys; errors carry the line number.

    Bounded as the JSON reader is, and for aliases too (see :class:`_BoundedComposer`).
    A document is read by libyaml where PyYAML has it and it reads the document the
    same way; a document it refuses is read again by the pure-Python loader, whose
    refusal (code, wording and line) is the one raised, with or without libyaml.
    """
    _check_document(text, file, None)
    if len(text) > _KEPT_YAML_CHARS:
        return _parse_yaml(text, file)
    return pickle.loads(_parsed_yaml(text, None if file is None else str(file), _limits))


# An operations suite reads its spec for every case and an oracle for every control,
# the same few files many times in one process. A parsed document is kept by its
# text, name and limits, pickled: every caller gets a copy of its own to change.
_KEPT_YAML_CHARS = 256 * 1024


@functools.lru_cache(maxsize=32)
def _parsed_yaml(text: str, file: str | None, limits: InputLimits) -> bytes:
    """``limits`` (the process's, which the loaders read) only keys what is kept."""
    return pickle.dumps(_parse_yaml(text, file), protocol=pickle.HIGHEST_PROTOCOL)


def _parse_yaml(text: str, file: str | Path | None) -> JsonValue:
    if _FAST_YAML_LOADER is not None and _libyaml_reads_the_same(text):
        try:
            return _construct_yaml(text, _FAST_YAML_LOADER)
        except (yaml.YAMLError, UnicodeEncodeError, RecursionError):
            # libyaml words and places its refusals its own way, and refuses a few
            # documents PyYAML reads (a lone surrogate cannot even reach it): the
            # pure-Python loader's answer, value or refusal, is the one given.
            pass
    return _load_yaml_in_python(text, file)


def _construct_yaml(text: str, loader: Callable[[str], _YamlLoading]) -> JsonValue:
    reading = loader(text)
    try:
        return reading.get_single_data()
    finally:
        reading.dispose()


def _load_yaml_in_python(text: str, file: str | Path | None) -> JsonValue:
    try:
        reading = _StrictYamlLoader(text)
        try:
            return reading.get_single_data()
        except (ValueError, OverflowError):
            # PyYAML's scanner hands a double-quoted "\U" escape to chr() unchecked.
            raise AgentbenchError(
                "malformed_yaml",
                "an escape names no Unicode character (past U+10FFFF)",
                file=file,
                line=reading.line + 1,
            ) from None
        finally:
            reading.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        problem = exc.problem or "invalid YAML"
        code = (
            exc.code
            if isinstance(exc, _YamlLimitExceeded)
            else next(
                (code for start, code in _PROBLEM_CODES if problem.startswith(start)),
                "malformed_yaml",
            )
        )
        raise AgentbenchError(
            code, problem, file=file, line=None if mark is None else mark.line + 1
        ) from None
    except yaml.YAMLError as exc:
        raise AgentbenchError("malformed_yaml", str(exc).splitlines()[0], file=file) from None
    except RecursionError:
        raise AgentbenchError("malformed_yaml", "nesting too deep to read", file=file) from None


def read_yaml(path: Path, *, display: str | None = None) -> JsonValue:
    name = display or str(path)
    return loads_yaml_strict(_read_text(path, name, "malformed_yaml"), file=name)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def artifact_set_digest(files: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> str:
    """The ``sha256-artifact-set-v1`` digest of a set of files.

    For each file in sorted order of its relative POSIX path: the UTF-8 path,
    one zero byte, then the 32 raw bytes of ``sha256(file bytes)``, all fed to
    one running SHA-256.
    """
    items = files.items() if isinstance(files, Mapping) else files
    return artifact_set_digest_from_hashes(
        {path: hashlib.sha256(data).hexdigest() for path, data in items}
    )


_DIGEST_CHUNK = 1024 * 1024


def file_sha256(path: Path, *, display: str | Path | None = None) -> str:
    """SHA-256 of a file's bytes, read a chunk at a time: never the whole file in memory.

    A file larger than the size limit is refused (``input_too_large``) from its size
    before a byte is read, and one that grows past it while read is refused too; any
    ``OSError`` is ``missing_file`` or ``unreadable_file`` as for :func:`read_bytes`.
    """
    name = display or path
    limit = _limits.max_bytes
    running = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise _too_large(f"the file ({size} bytes)", limit, name)
            read = 0
            while chunk := handle.read(_DIGEST_CHUNK):
                read += len(chunk)
                if read > limit:
                    raise _too_large("the file", limit, name)
                running.update(chunk)
    except FileNotFoundError:
        raise AgentbenchError("missing_file", "file does not exist", file=name) from None
    except OSError as exc:
        raise unreadable(exc, name) from None
    return running.hexdigest()


def artifact_set_digest_of_files(
    files: Mapping[str, Path], *, display: Callable[[str], str] | None = None
) -> str:
    """:func:`artifact_set_digest` of files on disk, each streamed (:func:`file_sha256`);
    ``display`` names a relative path in refusals."""
    return artifact_set_digest_from_hashes(
        {
            rel: file_sha256(path, display=None if display is None else display(rel))
            for rel, path in files.items()
        }
    )


def artifact_set_digest_from_hashes(hashes: Mapping[str, str]) -> str:
    """The artifact-set digest from per-file hex digests (as manifests record them)."""
    running = hashlib.sha256()
    for path in sorted(hashes):
        running.update(path.encode("utf-8"))
        running.update(b"\x00")
        running.update(bytes.fromhex(hashes[path]))
    return running.hexdigest()


def tree_files(root: Path, *, exclude: Iterable[str] = ()) -> dict[str, Path]:
    """Every regular file below ``root`` by relative POSIX path, minus ``exclude``.

    Caches and hidden files written by tools (``__pycache__``, ``.DS_Store``)
    are not part of an artifact set.
    """
    excluded = set(exclude)
    found: dict[str, Path] = {}
    try:
        paths = sorted(root.rglob("*"))
    except OSError as exc:
        raise unreadable(exc, exc.filename or root) from None
    for path in paths:
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if rel in excluded or any(
            part.startswith(".") or part == "__pycache__" for part in rel.split("/")
        ):
            continue
        found[rel] = path
    return found

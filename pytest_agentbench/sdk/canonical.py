"""Canonical JSON, strict JSON/JSONL/YAML readers, and artifact-set digests.

Canonical JSON is the one serialisation used for anything hashed or pinned:
sorted keys, no insignificant whitespace, UTF-8, non-finite numbers refused.
The strict readers refuse what :mod:`json` and PyYAML silently accept
(duplicate keys at any depth, ``NaN``/``Infinity``) and name the path.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pytest_agentbench.sdk.errors import AgentbenchError, field_path

ARTIFACT_SET_SCHEME = "sha256-artifact-set-v1"

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


def loads_strict(
    text: str, *, file: str | Path | None = None, line: int | None = None
) -> JsonValue:
    """Parse one JSON document, refusing duplicate keys at any depth and NaN/Infinity."""
    try:
        if text.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        try:
            return _DECODER.decode(text)
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
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AgentbenchError("missing_file", "file does not exist", file=name) from None
    except UnicodeDecodeError as exc:
        raise AgentbenchError(malformed_code, f"not UTF-8 ({exc.reason})", file=name) from None
    except OSError as exc:
        raise unreadable(exc, name) from None


def unreadable(exc: OSError, name: str | Path) -> AgentbenchError:
    """The refusal for a file or folder that cannot be read (permissions, I/O errors)."""
    return AgentbenchError("unreadable_file", exc.strerror or type(exc).__name__, file=name)


def read_bytes(path: Path, *, display: str | None = None) -> bytes:
    """A file's bytes; any OSError is the named refusal ``unreadable_file``."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise AgentbenchError("missing_file", "file does not exist", file=display or path) from None
    except OSError as exc:
        raise unreadable(exc, display or path) from None


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


class _StrictYamlLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate or unhashable keys and non-finite floats."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _value_node in node.value:
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

    def construct_finite_float(self, node: yaml.ScalarNode) -> float:
        value: float = self.construct_yaml_float(node)
        if not math.isfinite(value):
            raise yaml.constructor.ConstructorError(
                None, None, f"non-finite number {node.value!r}", node.start_mark
            )
        return value


_StrictYamlLoader.add_constructor(
    "tag:yaml.org,2002:float", _StrictYamlLoader.construct_finite_float
)


def loads_yaml_strict(text: str, *, file: str | Path | None = None) -> JsonValue:
    """Parse YAML safely, refusing duplicate keys; errors carry the line number."""
    try:
        return yaml.load(text, Loader=_StrictYamlLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        problem = exc.problem or "invalid YAML"
        code = (
            "duplicate_key"
            if problem.startswith("duplicate key")
            else "non_finite_number"
            if problem.startswith("non-finite")
            else "malformed_yaml"
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

"""Defensive reading of a run report document (parsed JSON).

The HTML report reads the document, not the pydantic models, so that a report
written by another version (fields added, a section missing) still renders: a
missing or mistyped field reads as its empty default rather than failing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any

from pytest_agentbench.sdk.canonical import canonical_json

Doc = Mapping[str, Any]

# A parsed document's objects are dicts: asked first, a dict is answered without the
# abstract class's hook (a Python call each, on every field of every case).
_MAPPING = (dict, Mapping)


def mapping(doc: Any, key: str) -> Doc:
    value = doc.get(key) if isinstance(doc, _MAPPING) else None
    return value if isinstance(value, _MAPPING) else {}


def items(doc: Any, key: str) -> list[Doc]:
    value = doc.get(key) if isinstance(doc, _MAPPING) else None
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, _MAPPING)]


def text(doc: Any, key: str, default: str = "") -> str:
    value = doc.get(key) if isinstance(doc, _MAPPING) else None
    return value if isinstance(value, str) else default


def texts(doc: Any, key: str) -> list[str]:
    value = doc.get(key) if isinstance(doc, _MAPPING) else None
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str)]


def real(doc: Any, key: str) -> float | None:
    """A finite number, or ``None`` (absent, null or not a number: never 0)."""
    value = doc.get(key) if isinstance(doc, _MAPPING) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def integer(doc: Any, key: str) -> int | None:
    value = doc.get(key) if isinstance(doc, _MAPPING) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def flag(doc: Any, key: str) -> bool | None:
    value = doc.get(key) if isinstance(doc, _MAPPING) else None
    return value if isinstance(value, bool) else None


def interval(doc: Any, key: str = "interval") -> tuple[float, float] | None:
    value = doc.get(key) if isinstance(doc, _MAPPING) else None
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    lo, hi = value
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in (lo, hi)):
        return None
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
        return None
    return float(lo), float(hi)


def json_text(value: Any, limit: int) -> str:
    """Canonical JSON of ``value``, cut at ``limit`` characters."""
    # Most values shown are a string, an integer or null (a check's expected and actual
    # value, several a case): their text is written here, as the encoder writes it,
    # without its call. A float goes to the encoder, which refuses one not finite.
    kind = type(value)
    if kind is str:
        shown = encode_basestring(value)
    elif kind is int:
        shown = int.__repr__(value)
    elif value is None:
        shown = "null"
    else:
        try:
            shown = canonical_json(value)
        except (TypeError, ValueError):
            shown = repr(value)
    return _cut(shown, limit)


def _cut(shown: str, limit: int) -> str:
    if len(shown) > limit:
        return f"{shown[:limit]}… ({len(shown) - limit} more characters)"
    return shown


def pretty_text(value: Any, limit: int) -> str:
    """``value`` as indented JSON with sorted keys, cut at ``limit`` characters.

    The text of ``json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False,
    allow_nan=False)``, or ``repr(value)`` where that refuses the value. Not drawn by
    ``json.dumps`` itself: with an indent it runs the pure-Python encoder, whose
    mutually recursive closures are a reference cycle per call, and the page is drawn
    at the session's end with automatic collection paused, so every case left its
    cycle in memory until the page was done (2.5 KiB a case)."""
    parts: list[str] = []
    try:
        _pretty(value, "\n", parts, set())
    except (TypeError, ValueError):
        return _cut(repr(value), limit)
    return _cut("".join(parts), limit)


_INDENT = "  "
_WORDS = {True: "true", False: "false"}


def _scalar(value: Any) -> str | None:
    """A JSON scalar's text as ``json.dumps`` writes it; ``None`` for a container."""
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True or value is False:
        return _WORDS[value]
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        return float.__repr__(value)
    return None


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, float) or key is True or key is False or key is None:
        scalar = _scalar(key)
        assert scalar is not None
        return scalar
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _pretty(value: Any, newline: str, parts: list[str], open_ids: set[int]) -> None:
    """Append ``value``'s indented text at the depth ``newline`` (a line break and the
    indent of the line the value is on) to ``parts``; ``open_ids``: the containers
    being written, as ``json``'s circular check keeps them."""
    scalar = _scalar(value)
    if scalar is not None:
        parts.append(scalar)
        return
    if isinstance(value, list | tuple):
        if not value:
            parts.append("[]")
            return
        members: Any = value
    elif isinstance(value, dict):
        if not value:
            parts.append("{}")
            return
        members = sorted(value.items())
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
    if id(value) in open_ids:
        raise ValueError("Circular reference detected")
    open_ids.add(id(value))
    inner = newline + _INDENT
    is_list = not isinstance(value, dict)
    parts.append("[" if is_list else "{")
    separator = inner
    for member in members:
        parts.append(separator)
        separator = "," + inner
        if is_list:
            _pretty(member, inner, parts, open_ids)
        else:
            parts.append(encode_basestring(_key(member[0])) + ": ")
            _pretty(member[1], inner, parts, open_ids)
    parts.append(newline + ("]" if is_list else "}"))
    open_ids.discard(id(value))

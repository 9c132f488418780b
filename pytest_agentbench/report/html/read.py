"""Defensive reading of a run report document (parsed JSON).

The HTML report reads the document, not the pydantic models, so that a report
written by another version (fields added, a section missing) still renders: a
missing or mistyped field reads as its empty default rather than failing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pytest_agentbench.sdk.canonical import canonical_json

Doc = Mapping[str, Any]


def mapping(doc: Any, key: str) -> Doc:
    value = doc.get(key) if isinstance(doc, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def items(doc: Any, key: str) -> list[Doc]:
    value = doc.get(key) if isinstance(doc, Mapping) else None
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, Mapping)]


def text(doc: Any, key: str, default: str = "") -> str:
    value = doc.get(key) if isinstance(doc, Mapping) else None
    return value if isinstance(value, str) else default


def texts(doc: Any, key: str) -> list[str]:
    value = doc.get(key) if isinstance(doc, Mapping) else None
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str)]


def real(doc: Any, key: str) -> float | None:
    """A finite number, or ``None`` (absent, null or not a number: never 0)."""
    value = doc.get(key) if isinstance(doc, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def integer(doc: Any, key: str) -> int | None:
    value = doc.get(key) if isinstance(doc, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def flag(doc: Any, key: str) -> bool | None:
    value = doc.get(key) if isinstance(doc, Mapping) else None
    return value if isinstance(value, bool) else None


def interval(doc: Any, key: str = "interval") -> tuple[float, float] | None:
    value = doc.get(key) if isinstance(doc, Mapping) else None
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
    """``value`` as indented JSON with sorted keys, cut at ``limit`` characters."""
    try:
        shown = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        shown = repr(value)
    return _cut(shown, limit)

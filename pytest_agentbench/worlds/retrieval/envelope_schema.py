"""The final envelope's JSON Schema and the error list the original's validator reports.

The original scores a schema-invalid envelope as
``invalid_final_envelope:final-envelope schema validation failed: <errors>``, where
``<errors>`` is every error of an Ajv validator in all-errors mode (draft-07 with
the ``date`` format) written as ``<instancePath or "/"> <keyword> <message>``,
sorted by UTF-16 code units and joined by ``"; "``. Reproducing that text means
reproducing which errors Ajv reports, so :func:`schema_errors` walks the schema as
Ajv does: keywords of a type group run only on data of that type; a failed
``type`` reports once; every branch of a failed ``oneOf`` keeps its errors, a
passing one drops them; ``uniqueItems`` reports the first duplicate pair found
scanning from the end.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pytest_agentbench.worlds.retrieval.jscanon import utf16_key

Schema = Mapping[str, Any]

_CLAIM_KEY_PATTERN = "^[a-z][a-zA-Z0-9]*$"
_PROVENANCE: Schema = {"enum": ["harness_observed", "backend_provided"]}
_HEX64: Schema = {"type": "string", "pattern": "^[a-f0-9]{64}$"}
_LINE: Schema = {"type": "integer", "minimum": 1}


def _claim_value(type_name: str, value: Schema) -> Schema:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["type", "value"],
        "properties": {"type": {"const": type_name}, "value": value},
    }


EVIDENCE_SCHEMA: Schema = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "uri",
        "sourceHash",
        "startLine",
        "endLine",
        "spanHash",
        "sourceHashProvenance",
        "spanHashProvenance",
    ],
    "properties": {
        "uri": {"type": "string", "pattern": "^gno://"},
        "sourceHash": _HEX64,
        "startLine": _LINE,
        "endLine": _LINE,
        "spanHash": _HEX64,
        "sourceHashProvenance": _PROVENANCE,
        "spanHashProvenance": _PROVENANCE,
    },
}

CLAIM_VALUE_SCHEMA: Schema = {
    "oneOf": [
        _claim_value("string", {"type": "string"}),
        _claim_value("number", {"type": "number"}),
        _claim_value("boolean", {"type": "boolean"}),
        _claim_value(
            "string[]", {"type": "array", "uniqueItems": True, "items": {"type": "string"}}
        ),
        _claim_value("date", {"type": "string", "format": "date"}),
        _claim_value("identifier", {"type": "string", "minLength": 1}),
    ]
}

_CLAIM_KEY: Schema = {"type": "string", "pattern": _CLAIM_KEY_PATTERN}

FINAL_ENVELOPE_SCHEMA: Schema = {
    "type": "object",
    "additionalProperties": False,
    "required": ["schemaVersion", "claims", "gaps", "abstained", "stopReason"],
    "properties": {
        "schemaVersion": {"const": "1.0"},
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["claimKey", "value", "citations"],
                "properties": {
                    "claimKey": _CLAIM_KEY,
                    "value": CLAIM_VALUE_SCHEMA,
                    "citations": {"type": "array", "items": EVIDENCE_SCHEMA},
                },
            },
        },
        "gaps": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["claimKey", "reason"],
                "properties": {
                    "claimKey": _CLAIM_KEY,
                    "reason": {
                        "enum": [
                            "missing_evidence",
                            "conflicting_evidence",
                            "budget_exhausted",
                            "tool_unavailable",
                        ]
                    },
                },
            },
        },
        "abstained": {"type": "boolean"},
        "stopReason": {
            "enum": ["complete", "abstained", "budget_exhausted", "tool_unavailable", "error"]
        },
    },
}


def schema_message(value: Any) -> str | None:
    """The text after ``invalid_final_envelope:``, or None when the envelope fits."""
    errors = schema_errors(FINAL_ENVELOPE_SCHEMA, value)
    if not errors:
        return None
    return "final-envelope schema validation failed: " + "; ".join(sorted(errors, key=utf16_key))


def schema_errors(schema: Schema, value: Any, path: str = "") -> list[str]:
    """Every error Ajv reports, as ``<path> <keyword> <message>``."""
    errors: list[str] = []

    def report(keyword: str, message: str) -> None:
        errors.append(f"{path or '/'} {keyword} {message}")

    declared = schema.get("type")
    if declared is not None and not _is_type(value, declared):
        report("type", f"must be {declared}")
    if "const" in schema and not _json_equal(value, schema["const"]):
        report("const", "must be equal to constant")
    if "enum" in schema and not any(_json_equal(value, option) for option in schema["enum"]):
        report("enum", "must be equal to one of the allowed values")
    if "oneOf" in schema:
        branches = [schema_errors(branch, value, path) for branch in schema["oneOf"]]
        if sum(1 for branch in branches if not branch) != 1:
            errors.extend(error for branch in branches for error in branch)
            report("oneOf", "must match exactly one schema in oneOf")
    for group_type, check in _GROUPS:
        if _is_type(value, group_type):
            errors.extend(check(schema, value, path))
    return errors


def _number_keywords(schema: Schema, value: Any, path: str) -> list[str]:
    minimum = schema.get("minimum")
    if minimum is not None and not value >= minimum:
        return [f"{path or '/'} minimum must be >= {minimum}"]
    return []


_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_DAYS_IN_MONTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _is_full_date(text: str) -> bool:
    """ajv-formats' ``date``: ``YYYY-MM-DD`` with ASCII digits and a real calendar day."""
    match = _DATE.fullmatch(text)
    if match is None:
        return False
    year, month, day = (int(part) for part in match.groups())
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= month <= 12:
        return False
    return 1 <= day <= (29 if month == 2 and leap else _DAYS_IN_MONTH[month])


def _matches(pattern: str, text: str) -> bool:
    """The envelope's patterns, anchored as JavaScript anchors them (``$`` only at the end)."""
    if pattern == "^gno://":
        return text.startswith("gno://")
    if pattern == _CLAIM_KEY_PATTERN:
        return re.fullmatch("[a-z][a-zA-Z0-9]*", text) is not None
    if pattern == "^[a-f0-9]{64}$":
        return re.fullmatch("[a-f0-9]{64}", text) is not None
    raise ValueError(f"pattern {pattern!r} is not one of the envelope's")


def _string_keywords(schema: Schema, value: Any, path: str) -> list[str]:
    where = path or "/"
    errors = []
    min_length = schema.get("minLength")
    if min_length is not None and _code_points(value) < min_length:
        errors.append(f"{where} minLength must NOT have fewer than {min_length} characters")
    pattern = schema.get("pattern")
    if pattern is not None and not _matches(pattern, value):
        errors.append(f'{where} pattern must match pattern "{pattern}"')
    if schema.get("format") == "date" and not _is_full_date(value):
        errors.append(f'{where} format must match format "date"')
    return errors


def _code_points(text: str) -> int:
    """Ajv counts a surrogate pair as one character."""
    return len(text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass"))


def _array_keywords(schema: Schema, value: Any, path: str) -> list[str]:
    errors = []
    items = schema.get("items")
    if items is not None:
        for index, item in enumerate(value):
            errors.extend(schema_errors(items, item, f"{path}/{index}"))
    if schema.get("uniqueItems"):
        duplicate = _first_duplicate(value)
        if duplicate is not None:
            later, earlier = duplicate
            errors.append(
                f"{path or '/'} uniqueItems must NOT have duplicate items "
                f"(items ## {later} and {earlier} are identical)"
            )
    return errors


def _first_duplicate(items: list[Any]) -> tuple[int, int] | None:
    """Ajv scans string items from the last, remembering each in a plain object; the
    key ``__proto__`` cannot be remembered, so its duplicates go unseen."""
    seen: dict[str, int] = {}
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if not isinstance(item, str):
            continue
        if item in seen:
            return seen[item], index
        if item != "__proto__":
            seen[item] = index
    return None


def _object_keywords(schema: Schema, value: Any, path: str) -> list[str]:
    where = path or "/"
    errors = [
        f"{where} required must have required property '{name}'"
        for name in schema.get("required", ())
        if name not in value
    ]
    properties: Mapping[str, Schema] = schema.get("properties", {})
    if schema.get("additionalProperties") is False:
        errors.extend(
            f"{where} additionalProperties must NOT have additional properties"
            for name in value
            if name not in properties
        )
    for name, child in properties.items():
        if name in value:
            errors.extend(schema_errors(child, value[name], f"{path}/{_pointer(name)}"))
    return errors


def _pointer(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


_GROUPS: tuple[tuple[str, Callable[[Schema, Any, str], list[str]]], ...] = (
    ("number", _number_keywords),
    ("string", _string_keywords),
    ("array", _array_keywords),
    ("object", _object_keywords),
)


def _is_type(value: Any, type_name: str) -> bool:
    if type_name == "object":
        return isinstance(value, dict)
    if type_name == "array":
        return isinstance(value, list | tuple)
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "boolean":
        return isinstance(value, bool)
    if type_name == "null":
        return value is None
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if type_name == "integer":
        return is_number and float(value).is_integer()
    if type_name == "number":
        return is_number
    raise ValueError(f"type {type_name!r} is not a JSON Schema type")


def _json_equal(left: Any, right: Any) -> bool:
    """Deep equality of JSON values, with JavaScript's one number type."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(map(_json_equal, left, right))
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    return type(left) is type(right) and left == right

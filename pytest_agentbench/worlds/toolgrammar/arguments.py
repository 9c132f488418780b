"""Strict checking of tool arguments against the closed schemas the grammar writes.

The tool-session contract validates arguments before a handler runs; the
oracle executor calls handlers directly, so it checks them here with the same
rules. Only the schema vocabulary :mod:`grammar` emits is understood.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


class ArgumentError(ValueError):
    """Arguments that do not satisfy the tool's schema (``invalid_arguments``)."""


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "object":
        return isinstance(value, dict)
    raise AssertionError(f"schema type {kind!r} is not part of the grammar")


def check_value(schema: Mapping[str, Any], value: Any, where: str) -> None:
    kind = schema["type"]
    assert isinstance(kind, str)
    if not _type_ok(kind, value):
        raise ArgumentError(f"{where}: must be of type {kind}")
    if "enum" in schema and value not in schema["enum"]:
        raise ArgumentError(f"{where}: must be one of {schema['enum']}")
    if "minLength" in schema and len(value) < schema["minLength"]:
        raise ArgumentError(f"{where}: must not be empty")
    if "pattern" in schema and not re.fullmatch(str(schema["pattern"]), value):
        raise ArgumentError(f"{where}: must match {schema['pattern']}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise ArgumentError(f"{where}: longer than {schema['maxLength']} characters")
    if "minimum" in schema and value < schema["minimum"]:
        raise ArgumentError(f"{where}: must be at least {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        raise ArgumentError(f"{where}: must be at most {schema['maximum']}")
    if kind == "object":
        check_object(schema, value, where)


def check_object(schema: Mapping[str, Any], value: Any, where: str = "arguments") -> None:
    if not isinstance(value, dict):
        raise ArgumentError(f"{where}: must be an object")
    properties = schema.get("properties", {})
    assert isinstance(properties, dict)
    unknown = sorted(set(value) - set(properties))
    if unknown:
        raise ArgumentError(f"{where}.{unknown[0]}: unknown argument")
    for name in schema.get("required", []):
        if name not in value:
            raise ArgumentError(f"{where}.{name}: required argument is missing")
    for name, item in value.items():
        check_value(properties[name], item, f"{where}.{name}")

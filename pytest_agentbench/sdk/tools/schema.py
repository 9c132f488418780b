"""A strict validator for the JSON Schema subset tool arguments use.

Tool schemas are small closed objects; every call is checked against one, so a
schema is compiled once (cached by its canonical text) into nested closures
and a call pays only for the checks its schema names. A schema outside the
subset is refused when the tool is declared, never silently half-checked:

- every subschema names its ``type`` (one name or a list of names);
- the arguments themselves are a closed object (``"additionalProperties":
  false``) whose ``required`` names are among its ``properties``; an object
  inside them may be open: ``additionalProperties`` absent or ``true`` admits
  any other member whose value is JSON, a schema admits members that satisfy
  it (a ``required`` name need not be declared then);
- keywords: ``type``, ``properties``, ``required``, ``additionalProperties``,
  ``enum``, ``const``, ``minimum``, ``maximum``, ``exclusiveMinimum``,
  ``exclusiveMaximum``, ``minLength``, ``maxLength``, ``pattern``, ``items``,
  ``minItems``, ``maxItems``, ``uniqueItems``, and the annotations
  ``description``, ``title``, ``default``, ``examples``.

Stricter than JSON Schema where a handler would otherwise be surprised:
``integer`` accepts integer values only (not ``1.5``), a boolean is never a
number, and non-finite floats are refused. A session passes arguments through
:func:`integral_numbers` first, so ``1.0`` from a model reaches the schema and
the handler as ``1``, as it would in the JavaScript runtimes that function
calling conventions come from, where JSON has one number type. ``pattern`` is a Python regular
expression searched anywhere in the string, with ASCII classes (``\\d`` is
``[0-9]``) and ``$`` meaning the end of the text, as in ECMA-262.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, loads_strict
from pytest_agentbench.sdk.errors import field_path

Path = tuple[int | str, ...]
Check = Callable[[Any, Path], None]

ANNOTATIONS = frozenset({"description", "title", "default", "examples"})
KEYWORDS = ANNOTATIONS | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
}
TYPE_NAMES = ("object", "array", "string", "integer", "number", "boolean", "null")


class SchemaViolation(Exception):
    """A value breaks its schema: ``path`` locates it, ``reason`` says how."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason

    def render(self, root: str = "arguments") -> str:
        where = field_path((root, *self.path))
        return f"{where}: {self.reason}"


class UnsupportedSchema(ValueError):
    """A tool's schema uses something outside the supported subset."""


def type_name(value: Any) -> str:
    """The JSON type name of a Python value (``bool`` before ``int``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_type(value: Any, name: str) -> bool:
    actual = type_name(value)
    if name == "number":
        return actual == "integer" or (actual == "number" and math.isfinite(value))
    if actual == "number" and not math.isfinite(value):
        return False
    return actual == name


_SAFE_INTEGER = 2**53


def integral_numbers(value: Any) -> Any:
    """``value`` with every float that has no fractional part made an int.

    JSON has one number type: ``1.0`` and ``1`` are the same value, and a
    draft-07 ``integer`` admits both. Only floats exactly representable as
    integers (below 2**53 in magnitude) change; anything else is left as it is.
    """
    if isinstance(value, float):
        if value.is_integer() and abs(value) < _SAFE_INTEGER:
            return int(value)
        return value
    if isinstance(value, dict):
        return {key: integral_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [integral_numbers(item) for item in value]
    return value


def _json_key(value: Any) -> str:
    """A type-exact identity for enum/const/uniqueItems (``1``, ``1.0``, ``True`` all differ)."""
    return f"{type_name(value)}:{canonical_json(value)}"


def compile_schema(schema: Mapping[str, JsonValue]) -> Check:
    """The check of ``schema``: ``check(value, ())`` raises :class:`SchemaViolation`."""
    return _compile_cached(canonical_json(schema))


@functools.lru_cache(maxsize=1024)
def _compile_cached(text: str) -> Check:
    schema = loads_strict(text)
    return _compile(schema, ())


def check_tool_schema(schema: Any) -> None:
    """Refuse a tool's parameters schema unless it is a closed object in the subset."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise UnsupportedSchema('parameters: the root must be {"type": "object", ...}')
    if schema.get("additionalProperties") is not False:
        # Agents and their frameworks read the declared names as the whole call.
        raise UnsupportedSchema(
            'parameters: the arguments must be a closed object ("additionalProperties": false)'
        )
    compile_schema(schema)


def _where(path: Path) -> str:
    return field_path(("parameters", *path))


def _compile(schema: Any, path: Path) -> Check:
    if not isinstance(schema, dict):
        raise UnsupportedSchema(f"{_where(path)}: a schema must be an object")
    unknown = sorted(set(schema) - KEYWORDS)
    if unknown:
        raise UnsupportedSchema(f"{_where(path)}: unsupported keyword {unknown[0]!r}")
    checks: list[Check] = [_type_check(schema, path)]
    types = _types(schema, path)
    if "object" in types:
        checks.append(_object_check(schema, path))
    elif any(k in schema for k in ("properties", "required", "additionalProperties")):
        raise UnsupportedSchema(f"{_where(path)}: object keywords on a non-object type")
    if "array" in types:
        checks.append(_array_check(schema, path))
    if "string" in types:
        checks.append(_string_check(schema, path))
    if "integer" in types or "number" in types:
        checks.append(_number_check(schema, path))
    if "enum" in schema:
        checks.append(_enum_check(schema["enum"], path))
    if "const" in schema:
        checks.append(_const_check(schema["const"]))
    active = [check for check in checks if check is not _NOTHING]
    if len(active) == 1:
        return active[0]

    def check_all(value: Any, at: Path) -> None:
        for check in active:
            check(value, at)

    return check_all


def _nothing(value: Any, at: Path) -> None:
    return None


_NOTHING: Check = _nothing


def _types(schema: dict[str, Any], path: Path) -> tuple[str, ...]:
    declared = schema.get("type")
    names = (declared,) if isinstance(declared, str) else declared
    if (
        not isinstance(names, list | tuple)
        or not names
        or not all(isinstance(n, str) and n in TYPE_NAMES for n in names)
        or len(set(names)) != len(names)
    ):
        raise UnsupportedSchema(
            f"{_where(path)}.type: must be one of {', '.join(TYPE_NAMES)} or a list of them"
        )
    return tuple(names)


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool)


# Called once per argument of every call: plain predicates, no type-name lookup.
_PREDICATES: dict[str, Callable[[Any], bool]] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
}


def _type_check(schema: dict[str, Any], path: Path) -> Check:
    types = _types(schema, path)
    expected = " or ".join(types)
    predicates = tuple(_PREDICATES[name] for name in types)
    if len(predicates) == 1:
        (accepts,) = predicates

        def check_type(value: Any, at: Path) -> None:
            if not accepts(value):
                raise SchemaViolation(at, f"expected {expected}, got {type_name(value)}")

        return check_type

    def check_types(value: Any, at: Path) -> None:
        if not any(accepts(value) for accepts in predicates):
            raise SchemaViolation(at, f"expected {expected}, got {type_name(value)}")

    return check_types


def _count(schema: dict[str, Any], key: str, path: Path) -> int | None:
    value = schema.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UnsupportedSchema(f"{_where(path)}.{key}: must be a non-negative integer")
    return value


def _object_check(schema: dict[str, Any], path: Path) -> Check:
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise UnsupportedSchema(f"{_where(path)}.properties: must be an object")
    required = schema.get("required", [])
    if (
        not isinstance(required, list)
        or not all(isinstance(name, str) for name in required)
        or len(set(required)) != len(required)
    ):
        raise UnsupportedSchema(f"{_where(path)}.required: must be a list of distinct names")
    others = _others_check(schema, path)
    missing = [name for name in required if name not in properties]
    if missing and others is None:
        raise UnsupportedSchema(
            f"{_where(path)}.required: {missing[0]!r} is not one of the properties"
        )
    children = {
        name: _compile(child, (*path, "properties", name)) for name, child in properties.items()
    }
    required_names = tuple(required)

    def check_object(value: Any, at: Path) -> None:
        if not isinstance(value, dict):
            return  # the type check reports it
        for name in required_names:
            if name not in value:
                raise SchemaViolation(at, f"missing required property {name!r}")
        for name, item in value.items():
            child = children.get(name)
            if child is not None:
                child(item, (*at, name))
            elif others is None:
                raise SchemaViolation(at, f"unknown property {name!r}")
            elif not isinstance(name, str):
                raise SchemaViolation(at, f"property names must be strings, got {name!r}")
            else:
                others(item, (*at, name))

    return check_object


def _others_check(schema: dict[str, Any], path: Path) -> Check | None:
    """The check of members ``properties`` does not name; None when there may be none."""
    others = schema.get("additionalProperties", True)
    if others is False:
        return None
    if others is True:
        return check_json_value
    if isinstance(others, dict):
        return _compile(others, (*path, "additionalProperties"))
    raise UnsupportedSchema(f"{_where(path)}.additionalProperties: must be a boolean or a schema")


def check_json_value(value: Any, at: Path) -> None:
    """Refuse what JSON cannot hold where a schema admits any value (an open object's members).

    Valid arguments are always JSON, so the session can record them.
    """
    if value is None or isinstance(value, str | bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SchemaViolation(at, f"{value!r} is not a JSON number")
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            check_json_value(item, (*at, index))
        return
    if isinstance(value, dict):
        for name, item in value.items():
            if not isinstance(name, str):
                raise SchemaViolation(at, f"property names must be strings, got {name!r}")
            check_json_value(item, (*at, name))
        return
    raise SchemaViolation(at, f"expected a JSON value, got {type_name(value)}")


def _array_check(schema: dict[str, Any], path: Path) -> Check:
    if "items" not in schema:
        raise UnsupportedSchema(f"{_where(path)}: arrays must declare their items")
    item_check = _compile(schema["items"], (*path, "items"))
    low = _count(schema, "minItems", path)
    high = _count(schema, "maxItems", path)
    unique = schema.get("uniqueItems", False)
    if not isinstance(unique, bool):
        raise UnsupportedSchema(f"{_where(path)}.uniqueItems: must be a boolean")

    def check_array(value: Any, at: Path) -> None:
        if not isinstance(value, list):
            return
        if low is not None and len(value) < low:
            raise SchemaViolation(at, f"expected at least {low} items, got {len(value)}")
        if high is not None and len(value) > high:
            raise SchemaViolation(at, f"expected at most {high} items, got {len(value)}")
        for index, item in enumerate(value):
            item_check(item, (*at, index))
        if unique and len({_json_key(item) for item in value}) != len(value):
            raise SchemaViolation(at, "items must be unique")

    return check_array


def _string_check(schema: dict[str, Any], path: Path) -> Check:
    low = _count(schema, "minLength", path)
    high = _count(schema, "maxLength", path)
    pattern_text = schema.get("pattern")
    pattern: re.Pattern[str] | None = None
    if pattern_text is not None:
        try:
            pattern = (
                re.compile(ecma_anchors(pattern_text), re.ASCII)
                if isinstance(pattern_text, str)
                else None
            )
        except re.error as exc:
            raise UnsupportedSchema(f"{_where(path)}.pattern: {exc}") from None
        if pattern is None:
            raise UnsupportedSchema(f"{_where(path)}.pattern: must be a string")
    if low is None and high is None and pattern is None:
        return _NOTHING

    def check_string(value: Any, at: Path) -> None:
        if not isinstance(value, str):
            return
        if low is not None and len(value) < low:
            raise SchemaViolation(at, f"expected at least {low} characters, got {len(value)}")
        if high is not None and len(value) > high:
            raise SchemaViolation(at, f"expected at most {high} characters, got {len(value)}")
        if pattern is not None and pattern.search(value) is None:
            raise SchemaViolation(at, f"does not match pattern {pattern_text!r}")

    return check_string


def ecma_anchors(pattern: str) -> str:
    """``pattern`` with each ``$`` outside a class made ECMA's: the end of the text only.

    Python's ``$`` also matches before a trailing newline, which would let
    ``"ok\\n"`` through ``^[a-z]+$``.
    """
    out: list[str] = []
    escaped = in_class = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            out.append(r"\Z")
            continue
        out.append(char)
    return "".join(out)


def _bound(schema: dict[str, Any], key: str, path: Path) -> float | None:
    value = schema.get(key)
    if value is None:
        return None
    if not _is_type(value, "number"):
        raise UnsupportedSchema(f"{_where(path)}.{key}: must be a number")
    bound: float = value
    return bound


def _number_check(schema: dict[str, Any], path: Path) -> Check:
    bounds = [
        (key, bound, test)
        for key, test in (
            ("minimum", operator.ge),
            ("maximum", operator.le),
            ("exclusiveMinimum", operator.gt),
            ("exclusiveMaximum", operator.lt),
        )
        if (bound := _bound(schema, key, path)) is not None
    ]
    if not bounds:
        return _NOTHING

    def check_number(value: Any, at: Path) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return
        for key, bound, test in bounds:
            if not test(value, bound):
                raise SchemaViolation(at, f"{value!r} breaks {key} {bound!r}")

    return check_number


def _enum_check(options: Any, path: Path) -> Check:
    if not isinstance(options, list) or not options:
        raise UnsupportedSchema(f"{_where(path)}.enum: must be a non-empty list")
    allowed = frozenset(_json_key(option) for option in options)
    shown = canonical_json(options)

    def check_enum(value: Any, at: Path) -> None:
        if _json_key(value) not in allowed:
            raise SchemaViolation(at, f"must be one of {shown}")

    return check_enum


def _const_check(expected: Any) -> Check:
    key = _json_key(expected)
    shown = canonical_json(expected)

    def check_const(value: Any, at: Path) -> None:
        if _json_key(value) != key:
            raise SchemaViolation(at, f"must be {shown}")

    return check_const

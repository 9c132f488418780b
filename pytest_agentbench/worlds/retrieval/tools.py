"""The three normalised tools: schemas, result shapes, projection and byte accounting (section 3).

One frozen ``search`` / ``get`` / ``multi_get`` surface serves every backend.
A backend returns a *result* (``status``, ``resultRole``, ``content``,
``evidence`` items carrying backend hashes); the agent sees only its
*projection*, and the bytes charged are the UTF-8 length of the projection's
canonical JSON. Tool arguments are never charged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pytest_agentbench.worlds.retrieval.bundle import parse_bundle_content
from pytest_agentbench.worlds.retrieval.jscanon import canonical, fingerprint, sha256_text
from pytest_agentbench.worlds.retrieval.models import SHA256, URI

TOOL_NAMES = ("get", "multi_get", "search")
ROLES = ("candidates", "source", "evidence_bundle")
COORD_FIELDS = (
    "uri",
    "sourceHash",
    "startLine",
    "endLine",
    "spanHash",
    "sourceHashProvenance",
    "spanHashProvenance",
)
ITEM_FIELDS = (
    *COORD_FIELDS,
    "text",
    "backendSourceHash",
    "backendSpanHash",
    "backendHashUnavailableReason",
)

_STRING = {"type": "string"}
_BOOLEAN = {"type": "boolean"}
_STRINGS = {"type": "array", "items": _STRING}

INPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "search": {
        "type": "object",
        "additionalProperties": False,
        "required": ["query"],
        "properties": {
            "query": _STRING,
            "collection": _STRING,
            "filters": {"type": "object"},
            "limit": {"type": "integer", "minimum": 1},
            "minScore": {"type": "number"},
            "lang": _STRING,
            "intent": _STRING,
            "candidateLimit": {"type": "integer", "minimum": 1},
            "exclude": _STRINGS,
            "since": _STRING,
            "until": _STRING,
            "categories": _STRINGS,
            "author": _STRING,
            "queryModes": {"type": "array", "items": {"type": "object"}},
            "fast": _BOOLEAN,
            "thorough": _BOOLEAN,
            "expand": _BOOLEAN,
            "rerank": _BOOLEAN,
            "graph": _BOOLEAN,
            "tagsAll": _STRINGS,
            "tagsAny": _STRINGS,
        },
    },
    "get": {
        "type": "object",
        "additionalProperties": False,
        "required": ["uri"],
        "properties": {
            "uri": _STRING,
            "fromLine": {"type": "integer", "minimum": 1},
            "lineCount": {"type": "integer", "minimum": 1},
        },
    },
    "multi_get": {
        "type": "object",
        "additionalProperties": False,
        "required": ["uris"],
        "properties": {
            "uris": {"type": "array", "items": _STRING, "minItems": 1},
            "maxBytes": {"type": "integer", "minimum": 1},
        },
    },
}

DESCRIPTIONS = {
    "search": (
        "Search the task's collections. Returns candidate lines (read them before answering) "
        "or an evidence bundle complete enough to answer from."
    ),
    "get": "Read one document exactly, optionally from a line for a number of lines.",
    "multi_get": "Read several documents exactly, stopping before maxBytes of line text.",
}


def tool_definitions() -> list[dict[str, Any]]:
    """The tools sorted by name, each as ``{name, description, inputSchema}``."""
    return [
        {"name": name, "description": DESCRIPTIONS[name], "inputSchema": INPUT_SCHEMAS[name]}
        for name in TOOL_NAMES
    ]


TOOLS_FINGERPRINT = fingerprint(tool_definitions())


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
    if kind == "number":
        return (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and (not isinstance(value, float) or math.isfinite(value))
        )
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    raise AssertionError(kind)


def schema_problem(schema: Mapping[str, Any], value: Any, path: str = "") -> str | None:
    """The first way ``value`` breaks ``schema`` (the draft-07 subset the tools use), or None."""
    where = path or "<arguments>"
    if not _type_ok(value, schema["type"]):
        return f"{where} must be of type {schema['type']}"
    if "minimum" in schema and value < schema["minimum"]:
        return f"{where} must be >= {schema['minimum']}"
    if schema["type"] == "array":
        if len(value) < schema.get("minItems", 0):
            return f"{where} must have at least {schema['minItems']} item(s)"
        items = schema.get("items")
        if items is not None:
            for index, item in enumerate(value):
                problem = schema_problem(items, item, f"{path}[{index}]")
                if problem:
                    return problem
    if schema["type"] == "object" and "properties" in schema:
        for key in schema.get("required", ()):
            if key not in value:
                return f"{path + '.' if path else ''}{key} is required"
        for key, item in value.items():
            prop = schema["properties"].get(key)
            if prop is None:
                return f"{path + '.' if path else ''}{key} is not an argument of this tool"
            problem = schema_problem(prop, item, f"{path + '.' if path else ''}{key}")
            if problem:
                return problem
    return None


def synthetic_error(tool: str, code: str) -> dict[str, Any]:
    """The closed result recorded for an undelivered call (section 3, step 1)."""
    return {
        "status": "error",
        "resultRole": "candidates" if tool == "search" else "source",
        "content": "",
        "evidence": [],
        "errorCode": code,
    }


def _is_line(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def item_problem(item: Any, index: int) -> str | None:
    where = f"evidence[{index}]"
    if not isinstance(item, dict) or set(item) != set(ITEM_FIELDS):
        return f"{where} must hold exactly the fields {', '.join(ITEM_FIELDS)}"
    if not isinstance(item["uri"], str) or not URI.match(item["uri"]):
        return f"{where}.uri is not a gno:// URI"
    for key in ("sourceHash", "spanHash"):
        if not isinstance(item[key], str) or not SHA256.match(item[key]):
            return f"{where}.{key} is not a lowercase sha256"
    if not (_is_line(item["startLine"]) and _is_line(item["endLine"])):
        return f"{where} lines must be integers >= 1"
    if item["endLine"] < item["startLine"]:
        return f"{where}.endLine is before startLine"
    for key in ("sourceHashProvenance", "spanHashProvenance"):
        if item[key] not in ("harness_observed", "backend_provided"):
            return f"{where}.{key} is not a provenance"
    if not isinstance(item["text"], str) or sha256_text(item["text"]) != item["spanHash"]:
        return f"{where}.spanHash is not the hash of its text"
    hashes = (item["backendSourceHash"], item["backendSpanHash"])
    reason = item["backendHashUnavailableReason"]
    if hashes == (None, None):
        if not isinstance(reason, str) or not reason:
            return f"{where}: null backend hashes need a backendHashUnavailableReason"
    elif not all(isinstance(h, str) and SHA256.match(h) for h in hashes):
        return f"{where}: backend hashes must both be null or both be sha256"
    elif reason is not None:
        return f"{where}.backendHashUnavailableReason must be null when backend hashes are set"
    return None


def result_problem(result: Any) -> str | None:
    """Why a backend's result breaks the closed result shape, or None."""
    fields = ("status", "resultRole", "content", "evidence", "errorCode")
    if not isinstance(result, dict) or set(result) != set(fields):
        return f"a result must hold exactly the fields {', '.join(fields)}"
    if result["status"] not in ("ok", "error"):
        return "status must be ok or error"
    if result["resultRole"] not in ROLES:
        return f"resultRole must be one of {', '.join(ROLES)}"
    if not isinstance(result["content"], str):
        return "content must be a string"
    ok = result["status"] == "ok"
    code = result["errorCode"]
    if ok != (code is None) or (code is not None and not (isinstance(code, str) and code)):
        return "errorCode must be null exactly when status is ok"
    if not isinstance(result["evidence"], list):
        return "evidence must be a list"
    for index, item in enumerate(result["evidence"]):
        problem = item_problem(item, index)
        if problem:
            return problem
    return None


def coord_of(item: Mapping[str, Any]) -> dict[str, Any]:
    return {key: item[key] for key in COORD_FIELDS}


def bundle_carries(content: str, evidence: list[dict[str, Any]]) -> bool:
    """True when an evidence-bundle's content JSON already holds every evidence item."""
    carried = parse_bundle_content(content)
    if carried is None:
        return False
    keys = {(c["uri"], c["startLine"], c["endLine"], c["sourceHash"], c["text"]) for c in carried}
    return all(
        (i["uri"], i["startLine"], i["endLine"], i["sourceHash"], i["text"]) in keys
        for i in evidence
    )


def projection(result: Mapping[str, Any]) -> dict[str, Any]:
    """The model-visible form: backend hashes and diagnostics dropped."""
    evidence = result["evidence"]
    if result["resultRole"] == "evidence_bundle" and bundle_carries(result["content"], evidence):
        shown: list[dict[str, Any]] = []
    else:
        shown = [{**coord_of(item), "text": item["text"]} for item in evidence]
    return {
        "status": result["status"],
        "resultRole": result["resultRole"],
        "content": result["content"],
        "evidence": shown,
        "errorCode": result["errorCode"],
    }


def visible_bytes(projected: Mapping[str, Any]) -> int:
    """UTF-8 length of C(projection)."""
    return len(canonical(projected).encode("utf-8", "surrogatepass"))

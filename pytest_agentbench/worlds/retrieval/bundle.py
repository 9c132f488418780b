"""The evidence-bundle payload: ``gno-context-agent-v1`` content and how agents read it back."""

from __future__ import annotations

from typing import Any

from pytest_agentbench.sdk import AgentbenchError, loads_strict
from pytest_agentbench.worlds.retrieval.jscanon import canonical

BUNDLE_VERSION = "gno-context-agent-v1"


def bundle_content(items: list[dict[str, Any]], titles: dict[str, str]) -> str:
    """Canonical content carrying every item as an ``.e`` tuple.

    Tuple: ``[uri, start, end, sourceHash, mirrorHash, passageHash, text, title,
    heading, contextIds, egress]``. The corpus is served as stored, so the
    mirror hash is the source hash; the passage hash is the span hash.
    """
    rows = [
        [
            item["uri"],
            item["startLine"],
            item["endLine"],
            item["sourceHash"],
            item["sourceHash"],
            item["spanHash"],
            item["text"],
            titles.get(item["uri"], ""),
            None,
            [],
            "local",
        ]
        for item in items
    ]
    return canonical({"v": BUNDLE_VERSION, "e": rows})


def _line(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_bundle_content(content: str) -> list[dict[str, Any]] | None:
    """Evidence carried in a bundle's content, or None when it carries none readably.

    Two shapes: ``{"evidence": [{uri, sourceHash, startLine, endLine,
    passageHash|spanHash, text}]}`` (passageHash preferred) and
    ``{"v": "gno-context-agent-v1", "e": [tuple]}`` (indices 0, 1, 2, 3, 5, 6).
    """
    try:
        value = loads_strict(content)
    except AgentbenchError:
        return None
    if not isinstance(value, dict):
        return None
    out: list[dict[str, Any]] = []
    if isinstance(value.get("evidence"), list):
        for obj in value["evidence"]:
            if not isinstance(obj, dict):
                return None
            span = obj.get("passageHash", obj.get("spanHash"))
            row = {
                "uri": obj.get("uri"),
                "sourceHash": obj.get("sourceHash"),
                "startLine": obj.get("startLine"),
                "endLine": obj.get("endLine"),
                "spanHash": span,
                "text": obj.get("text"),
            }
            out.append(row)
    elif value.get("v") == BUNDLE_VERSION and isinstance(value.get("e"), list):
        for entry in value["e"]:
            if not isinstance(entry, list) or len(entry) < 7:
                return None
            out.append(
                {
                    "uri": entry[0],
                    "startLine": entry[1],
                    "endLine": entry[2],
                    "sourceHash": entry[3],
                    "spanHash": entry[5],
                    "text": entry[6],
                }
            )
    else:
        return None
    for row in out:
        if not (
            isinstance(row["uri"], str)
            and isinstance(row["sourceHash"], str)
            and isinstance(row["spanHash"], str)
            and isinstance(row["text"], str)
            and _line(row["startLine"])
            and _line(row["endLine"])
        ):
            return None
    return out

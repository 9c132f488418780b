"""The deterministic fixture agent ``fixture-agent-v1`` (format page section 7).

It never sees an adapter id: it reacts to result roles only. Its cue map
(claimKey -> cues, first preferred) is data that comes with the fixture: the
original's published cues for a GNO fixture, the ``fixture-agent.cues.json``
file beside our own fixture.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.sdk import AgentbenchError, read_json
from pytest_agentbench.worlds.retrieval.bundle import parse_bundle_content
from pytest_agentbench.worlds.retrieval.jscanon import sha256_text
from pytest_agentbench.worlds.retrieval.spans import observed_coord

AGENT_ID = "fixture-agent-v1"
STATE_MACHINE = "search-read-final-v1"
GNO_CUES_FILE = Path(__file__).with_name("gno_cues.json")

Cues = Mapping[str, Sequence[str]]
"""claimKey -> cues, the first preferred."""
History = Sequence[Mapping[str, Any]]
"""The tool calls so far: ``callIndex``, ``toolName``, ``arguments``, ``result``."""

# JavaScript regexes without the u flag: ASCII \b and \d, Unicode \s.
_WS = "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
_FALSE_WORD = re.compile(r"\b(?:no|false)\b", re.ASCII)
_TRUE_WORD = re.compile(r"\b(?:yes|sí|true)\b", re.ASCII)
_IDENTIFIER = re.compile(r"\b[A-Z][A-Z0-9]*(?:[-_.][A-Z0-9]+)+\b", re.ASCII)
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b", re.ASCII)
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b", re.ASCII)
_USE = re.compile(rf"\buse{_WS}+(.*?)(?={_WS}+for\b|\.|;|$)", re.ASCII | re.IGNORECASE)


@dataclass(frozen=True)
class Line:
    uri: str
    source_hash: str
    number: int
    text: str


def load_cues(path: Path, display: str) -> dict[str, tuple[str, ...]]:
    """A cue file: ``{schemaVersion, agentId, cues: {claimKey: [cue+]}}``."""
    raw = read_json(path, display=display)
    cues = raw.get("cues") if isinstance(raw, dict) else None
    if (
        not isinstance(raw, dict)
        or set(raw) != {"schemaVersion", "agentId", "cues"}
        or not isinstance(cues, dict)
    ):
        raise AgentbenchError(
            "invalid_cue_map", "must be {schemaVersion, agentId, cues}", file=display
        )
    out: dict[str, tuple[str, ...]] = {}
    for key, values in cues.items():
        if (
            not isinstance(values, list)
            or not values
            or not all(isinstance(v, str) and v for v in values)
        ):
            raise AgentbenchError(
                "invalid_cue_map",
                "cues must be non-empty lists of strings",
                file=display,
                field=f"cues.{key}",
            )
        out[key] = tuple(value.lower() for value in values)
    return out


def gno_cues() -> dict[str, tuple[str, ...]]:
    return load_cues(GNO_CUES_FILE, GNO_CUES_FILE.name)


def _split(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def select(
    claim_key: str,
    evidence: Sequence[Mapping[str, Any]],
    task: Mapping[str, Any],
    cues: Mapping[str, Sequence[str]],
) -> list[Line]:
    wanted = cues.get(claim_key, ())
    kept: list[Line] = []
    for entry in evidence:
        for offset, text in enumerate(_split(entry["text"])):
            if not text.strip():
                continue
            lowered = text.lower()
            if any(cue in lowered for cue in wanted):
                kept.append(
                    Line(entry["uri"], entry["sourceHash"], entry["startLine"] + offset, text)
                )
    if not kept:
        return []
    goal = task["brief"]["goal"].lower()
    if task["category"] == "multi_document_comparison" or "earliest" in goal:
        return kept
    if any(word in goal for word in ("newer", "current", "final")):
        return [kept[-1]]
    return [kept[0]]


def _use_value(line: str) -> str | None:
    match = _USE.search(line)
    return None if match is None else match.group(1).strip()


def label(line: str) -> str | None:
    position = max(line.find(":"), line.find("\uff1a"))
    if position >= 0:
        return line[position + 1 :].strip()
    return _use_value(line)


def _number(token: str) -> int | float:
    return float(token) if "." in token else int(token)


def extract(claim_key: str, value_type: str, lines: Sequence[str], goal: str) -> Any:
    """The typed value read from the selected lines, or None when there is none."""
    if value_type == "boolean":
        lowered = [line.lower() for line in lines]
        if any(
            _FALSE_WORD.search(line) or "not included" in line or "disabled" in line
            for line in lowered
        ):
            return False
        if any(
            _TRUE_WORD.search(line) or any(w in line for w in ("activated", "activada", "enabled"))
            for line in lowered
        ):
            return True
        return None
    if value_type == "identifier":
        for line in lines:
            match = _IDENTIFIER.search(line)
            if match:
                return match.group(0)
        return None
    if value_type == "date":
        dates = sorted(token for line in lines for token in _DATE.findall(line))
        if not dates:
            return None
        return dates[0] if "earliest" in goal.lower() else dates[-1]
    if value_type == "number":
        numbers = [_number(token) for line in lines for token in _NUMBER.findall(line)]
        return max(numbers) if numbers else None
    if value_type == "string[]":
        labels = [label(line) for line in lines]
        return sorted({value for value in labels if value}, key=lambda v: v.encode("utf-16-be"))
    if claim_key == "retentionComparison" and len(lines) >= 2:
        return f"Standard: {label(lines[0])}; Regulated: {label(lines[1])}"
    if claim_key == "selectedDatabase":
        return _use_value(lines[0])
    return label(lines[0])


def final(
    task: Mapping[str, Any],
    evidence: Sequence[Mapping[str, Any]],
    cues: Mapping[str, Sequence[str]],
) -> dict[str, Any]:
    claims: list[dict[str, Any]] = []
    gaps: list[dict[str, Any]] = []
    goal = task["brief"]["goal"]
    for claim in task["claims"]:
        chosen = select(claim["claimKey"], evidence, task, cues)
        value = (
            extract(claim["claimKey"], claim["valueType"], [line.text for line in chosen], goal)
            if chosen
            else None
        )
        if value is None:
            gaps.append({"claimKey": claim["claimKey"], "reason": "missing_evidence"})
            continue
        claims.append(
            {
                "claimKey": claim["claimKey"],
                "value": {"type": claim["valueType"], "value": value},
                "citations": [
                    observed_coord(
                        line.uri, line.source_hash, line.number, line.number, sha256_text(line.text)
                    )
                    for line in chosen
                ],
            }
        )
    abstained = not claims
    return {
        "schemaVersion": "1.0",
        "claims": claims,
        "gaps": gaps,
        "abstained": abstained,
        "stopReason": "abstained" if abstained else "complete",
    }


def abstention(task: Mapping[str, Any], gap: str, stop: str) -> dict[str, Any]:
    """A final envelope claiming nothing: every claim a gap for ``gap``, stopped for ``stop``."""
    return {
        "schemaVersion": "1.0",
        "claims": [],
        "gaps": [{"claimKey": claim["claimKey"], "reason": gap} for claim in task["claims"]],
        "abstained": True,
        "stopReason": stop,
    }


def evidence_of(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    evidence = list(result.get("evidence") or [])
    if not evidence and result.get("resultRole") == "evidence_bundle":
        return list(parse_bundle_content(str(result.get("content", ""))) or [])
    return evidence


class FixtureAgent:
    """The pinned search-read-final state machine.

    As a step agent the world drives ``next_step(task, history, cues)`` with
    the suite's cue map. ``solve(task, session)`` runs the same machine over
    any tool session, with the cue map given at construction.
    """

    agent_id = AGENT_ID
    state_machine = STATE_MACHINE

    def __init__(self, cues: Cues | None = None) -> None:
        self.cues = cues

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        history: list[dict[str, Any]] = []
        while True:
            step = self.next_step(task, history)
            if step["kind"] == "final":
                return step["envelope"]
            result = session.call(step["toolName"], step["arguments"])
            history.append(
                {
                    "callIndex": len(history),
                    "toolName": step["toolName"],
                    "arguments": step["arguments"],
                    "result": result,
                }
            )

    def next_step(
        self, task: Mapping[str, Any], history: History, cues: Cues | None = None
    ) -> dict[str, Any]:
        cue_map = cues if cues is not None else self.cues
        if cue_map is None:
            raise ValueError("the fixture agent needs a cue map")
        step = self._next(task, history, cue_map)
        if step["kind"] == "final":
            step["envelope"] = self.finish(step["envelope"], history)
        return step

    def finish(self, envelope: dict[str, Any], history: History) -> dict[str, Any]:
        """The final envelope as sent: the reference sends it as built; controls alter it."""
        return envelope

    def _next(self, task: Mapping[str, Any], history: History, cues: Cues) -> dict[str, Any]:
        allowed = set(task["allowedTools"])
        if not history:
            if "search" not in allowed:
                return {
                    "kind": "final",
                    "envelope": abstention(task, "tool_unavailable", "tool_unavailable"),
                }
            firsts = [cues[c["claimKey"]][0] for c in task["claims"] if cues.get(c["claimKey"])]
            query = " ".join(dict.fromkeys(firsts)) or task["brief"]["goal"]
            return {
                "kind": "tool",
                "toolName": "search",
                "arguments": {"query": query, "collection": task["corpus"]["collections"][0]},
            }
        results = [call["result"] for call in history]
        read = [e for r in results if r["resultRole"] != "candidates" for e in evidence_of(r)]
        cand = [e for r in results if r["resultRole"] == "candidates" for e in r["evidence"]]
        last = results[-1]
        if last["resultRole"] == "candidates" and cand:
            if len(history) >= task["budgets"]["maxAgentCalls"]:
                return {"kind": "final", "envelope": final(task, cand, cues)}
            rel = [
                line
                for claim in task["claims"]
                for line in select(claim["claimKey"], last["evidence"], task, cues)
            ]
            uris = list(
                dict.fromkeys([line.uri for line in rel] if rel else [e["uri"] for e in cand])
            )
            if len(uris) > 1 and "multi_get" in allowed:
                return {"kind": "tool", "toolName": "multi_get", "arguments": {"uris": uris}}
            arguments: dict[str, Any] = {"uri": uris[0]}
            if rel:
                arguments.update({"fromLine": rel[0].number, "lineCount": 1})
            return {"kind": "tool", "toolName": "get", "arguments": arguments}
        return {"kind": "final", "envelope": final(task, read or cand, cues)}

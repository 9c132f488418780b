"""Negative-control agents: each breaks one guarantee of the evaluator on purpose.

They are step agents like the fixture agent (``next_step(task, history,
cues)``) and share its search and read behaviour, so each differs from the
reference only by its intervention. Their declared failures live in the
separately authored ``controls.yaml`` of the suite's oracle folder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.worlds.retrieval.agent import FixtureAgent, evidence_of


class NoCitationAgent(FixtureAgent):
    """Answers exactly like the fixture agent but cites nothing."""

    agent_id = "control-no-citations"

    def next_step(
        self,
        task: Mapping[str, Any],
        history: Sequence[Mapping[str, Any]],
        cues: Mapping[str, Sequence[str]] | None = None,
    ) -> dict[str, Any]:
        step = super().next_step(task, history, cues)
        if step["kind"] == "final":
            for claim in step["envelope"]["claims"]:
                claim["citations"] = []
        return step


class CiteEverythingAgent(FixtureAgent):
    """Cites every line it was shown, the forbidden ones included."""

    agent_id = "control-cite-everything"

    def next_step(
        self,
        task: Mapping[str, Any],
        history: Sequence[Mapping[str, Any]],
        cues: Mapping[str, Sequence[str]] | None = None,
    ) -> dict[str, Any]:
        step = super().next_step(task, history, cues)
        if step["kind"] == "final" and step["envelope"]["claims"]:
            seen: dict[tuple[Any, ...], dict[str, Any]] = {}
            for call in history:
                for item in evidence_of(call["result"]):
                    coord = {
                        "uri": item["uri"],
                        "sourceHash": item["sourceHash"],
                        "startLine": item["startLine"],
                        "endLine": item["endLine"],
                        "spanHash": item["spanHash"],
                        "sourceHashProvenance": "harness_observed",
                        "spanHashProvenance": "harness_observed",
                    }
                    seen.setdefault(tuple(coord.values()), coord)
            for claim in step["envelope"]["claims"]:
                claim["citations"] = list(seen.values())
        return step


class NeverStopsAgent(FixtureAgent):
    """Keeps searching and never answers: the call budget ends it."""

    agent_id = "control-never-stops"

    def next_step(
        self,
        task: Mapping[str, Any],
        history: Sequence[Mapping[str, Any]],
        cues: Mapping[str, Sequence[str]] | None = None,
    ) -> dict[str, Any]:
        return super().next_step(task, [], cues)


class AlwaysAbstainAgent(FixtureAgent):
    """Searches like the fixture agent, then abstains whatever it found."""

    agent_id = "control-always-abstains"

    def next_step(
        self,
        task: Mapping[str, Any],
        history: Sequence[Mapping[str, Any]],
        cues: Mapping[str, Sequence[str]] | None = None,
    ) -> dict[str, Any]:
        if not history:
            return super().next_step(task, history, cues)
        return {
            "kind": "final",
            "envelope": {
                "schemaVersion": "1.0",
                "claims": [],
                "gaps": [
                    {"claimKey": claim["claimKey"], "reason": "missing_evidence"}
                    for claim in task["claims"]
                ],
                "abstained": True,
                "stopReason": "abstained",
            },
        }

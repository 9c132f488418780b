"""Negative-control agents: each breaks one guarantee of the evaluator on purpose.

They are step agents like the fixture agent (``next_step(task, history,
cues)``) and share its search and read behaviour, so each differs from the
reference only by its intervention. Their declared failures live in the
separately authored ``controls.yaml`` of the suite's oracle folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_agentbench.worlds.retrieval.agent import (
    Cues,
    FixtureAgent,
    History,
    abstention,
    evidence_of,
)
from pytest_agentbench.worlds.retrieval.spans import observed_coord


class NoCitationAgent(FixtureAgent):
    """Answers exactly like the fixture agent but cites nothing."""

    agent_id = "control-no-citations"

    def finish(self, envelope: dict[str, Any], history: History) -> dict[str, Any]:
        for claim in envelope["claims"]:
            claim["citations"] = []
        return envelope


class CiteEverythingAgent(FixtureAgent):
    """Cites every line it was shown, the forbidden ones included."""

    agent_id = "control-cite-everything"

    def finish(self, envelope: dict[str, Any], history: History) -> dict[str, Any]:
        if envelope["claims"]:
            seen: dict[tuple[Any, ...], dict[str, Any]] = {}
            for call in history:
                for item in evidence_of(call["result"]):
                    coord = observed_coord(
                        item["uri"],
                        item["sourceHash"],
                        item["startLine"],
                        item["endLine"],
                        item["spanHash"],
                    )
                    seen.setdefault(tuple(coord.values()), coord)
            for claim in envelope["claims"]:
                claim["citations"] = list(seen.values())
        return envelope


class NeverStopsAgent(FixtureAgent):
    """Keeps searching and never answers: the call budget ends it."""

    agent_id = "control-never-stops"

    def _next(self, task: Mapping[str, Any], history: History, cues: Cues) -> dict[str, Any]:
        return super()._next(task, [], cues)


class AlwaysAbstainAgent(FixtureAgent):
    """Searches like the fixture agent, then abstains whatever it found."""

    agent_id = "control-always-abstains"

    def _next(self, task: Mapping[str, Any], history: History, cues: Cues) -> dict[str, Any]:
        if not history:
            return super()._next(task, history, cues)
        return {"kind": "final", "envelope": abstention(task, "missing_evidence", "abstained")}

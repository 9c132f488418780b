"""The tool session an outer agent receives: the three tools bound to one trial."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_agentbench.canonical import loads_strict
from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.worlds.retrieval import tools
from pytest_agentbench.worlds.retrieval.trial import Trial, TrialEnded


class ToolRefused(Exception):
    """A tool call the trial refused; ``code`` is the stable failure code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class RetrievalSession:
    """``tools`` (definitions) and ``call(name, arguments)`` returning the projection."""

    def __init__(self, trial: Trial) -> None:
        self.trial = trial
        self.tools = [
            definition
            for definition in tools.tool_definitions()
            if definition["name"] in trial.task.allowedTools
        ]

    def call(self, name: str, arguments: Mapping[str, Any] | str) -> Any:
        if isinstance(arguments, str):
            try:
                arguments = loads_strict(arguments)
            except AgentbenchError as exc:
                raise self._refused(
                    self.trial.fail("agent_error", "invalid_agent_action", exc.reason)
                ) from None
        try:
            return self.trial.tool_call(name, dict(arguments))
        except TrialEnded as ended:
            raise self._refused(ended) from None

    @staticmethod
    def _refused(ended: TrialEnded) -> ToolRefused:
        return ToolRefused(ended.code, f"the trial ended ({ended.failure_class})")

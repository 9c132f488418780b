"""The tool session a task's adapter receives, over the task's sandbox."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.canonical import JsonValue, loads_strict
from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.worlds.toolgrammar.grammar import BoundTool, Envelope
from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox


@dataclass(frozen=True)
class CallRecord:
    tool: str
    arguments: JsonValue
    ok: bool
    error_code: str | None

    def as_json(self) -> dict[str, JsonValue]:
        return {
            "tool": self.tool,
            "arguments": self.arguments,
            "ok": self.ok,
            "error_code": self.error_code,
        }


class GrammarSession:
    """``tools``, ``call(name, arguments)`` and the record of every call made."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.tools: list[BoundTool] = list(sandbox.tools.values())
        self.calls: list[CallRecord] = []

    def call(self, name: str, arguments: Mapping[str, Any] | str) -> Envelope:
        if isinstance(arguments, str):
            try:
                parsed = loads_strict(arguments)
            except AgentbenchError as exc:
                parsed = None
                result: Envelope = {
                    "ok": False,
                    "error": exc.reason,
                    "error_code": "invalid_arguments",
                }
            else:
                result = self.sandbox.invoke(name, parsed)
        else:
            parsed = dict(arguments)
            result = self.sandbox.invoke(name, parsed)
        code = result.get("error_code")
        self.calls.append(
            CallRecord(name, parsed, bool(result["ok"]), code if isinstance(code, str) else None)
        )
        return result

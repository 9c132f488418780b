"""The two shapes agent frameworks read tool declarations in.

OpenAI function calling: ``{"type": "function", "function": {"name",
"description", "parameters"}}`` items of the chat-completions ``tools`` list.
MCP: ``tools/list`` result entries ``{"name", "description", "inputSchema",
"annotations"}``, where ``readOnlyHint`` tells a client the tool changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.tools.spec import ToolDescriptor, ToolSpec


def _schema_copy(tool: ToolDescriptor) -> dict[str, JsonValue]:
    # A caller may edit the export (add "strict", say) without editing the tool.
    # A model-backed agent exports its case's tools on every case: parse the text
    # the tool keeps rather than serialise its schema again.
    text = tool.parameters_text if isinstance(tool, ToolSpec) else json.dumps(tool.parameters)
    copy: dict[str, JsonValue] = json.loads(text)
    return copy


def openai_tools(tools: Sequence[ToolDescriptor]) -> list[dict[str, JsonValue]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": _schema_copy(tool),
            },
        }
        for tool in tools
    ]


def mcp_tools(tools: Sequence[ToolDescriptor]) -> list[dict[str, JsonValue]]:
    return [
        {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": _schema_copy(tool),
            "annotations": {"readOnlyHint": not tool.mutating},
        }
        for tool in tools
    ]

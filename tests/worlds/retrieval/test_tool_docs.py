"""The retrieval tools' arguments in docs/worlds/retrieval.md are what a session offers.

The section between the markers is rendered from the ``session.openai_tools()`` an
agent receives in a real trial; on a difference the test prints the text to paste.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.worlds.retrieval.conftest import Small

PAGE = Path(__file__).resolve().parents[3] / "docs" / "worlds" / "retrieval.md"
BEGIN = "<!-- tool arguments: generated from session.openai_tools(), checked by tests -->"
END = "<!-- end of tool arguments -->"


class ToolsProbe:
    """An agent that reads the tools its session offers, then stops without answering."""

    def __init__(self) -> None:
        self.tools: list[dict[str, Any]] = []

    def solve(self, task: dict[str, Any], session: Any) -> dict[str, Any]:
        self.tools = session.openai_tools()
        return {}


def _type(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "any value")
    if kind == "array":
        items = schema.get("items", {})
        text = f"array of {items.get('type', 'any value')}s"
        if "minItems" in schema:
            text += f", at least {schema['minItems']} item{'s' if schema['minItems'] != 1 else ''}"
        return text
    if "minimum" in schema:
        return f"{kind}, at least {schema['minimum']}"
    return str(kind)


def render(tools: list[dict[str, Any]]) -> str:
    """Each tool's description and a table of its arguments, the required ones first."""
    lines: list[str] = []
    for tool in tools:
        function = tool["function"]
        parameters = function["parameters"]
        required = set(parameters.get("required", ()))
        lines += [
            f"`{function['name']}`: {function['description']}",
            "",
            "| argument | type | required |",
            "|---|---|---|",
        ]
        lines += [
            f"| `{name}` | {_type(schema)} | {'yes' if name in required else ''} |"
            for name, schema in sorted(
                parameters["properties"].items(),
                key=lambda item: (item[0] not in required, item[0]),
            )
        ]
        lines.append("")
    return "\n".join(lines)


def test_the_documented_tool_arguments_are_the_sessions(small: Small) -> None:
    probe = ToolsProbe()
    small.harness.run("t0000001", "cold", small.backend, probe)
    assert [tool["function"]["name"] for tool in probe.tools] == ["get", "multi_get", "search"]
    assert all(
        tool["function"]["parameters"]["additionalProperties"] is False for tool in probe.tools
    ), "the page says any other argument is refused"
    text = PAGE.read_text(encoding="utf-8")
    documented = text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")
    expected = render(probe.tools).strip("\n")
    assert documented == expected, f"paste between the markers of {PAGE.name}:\n{expected}"

"""Example adapter: the tool-result fence of the tool-session contract, on injected tasks.

``NaiveContextAgent`` stands in for a chat model that reads every tool result
as text and acts on any instruction of the form ``call <tool> with {...}`` it
finds in its context (the toolgrammar injections are written that way). With
``fenced = True`` each result enters the context through
:func:`pytest_agentbench.sdk.tools.fence_result`, and the agent, like a model told
``FENCE_INSTRUCTIONS``, treats fenced text as data: a planted instruction is
read but never acted on. Run either on the built-in suite:

    pytest --agentbench-suite toolgrammar-mini-v1 -k T4 \
        --agentbench-adapter=examples.toolgrammar_fenced_agent:FencedAgent
"""

from __future__ import annotations

import json
import re
from typing import Any

from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.tools import ToolCallError, fence_result
from pytest_agentbench.worlds.toolgrammar.agents import ReferenceAgent
from pytest_agentbench.worlds.toolgrammar.grammar import Envelope

_FENCED = re.compile(
    r'<tool-result id="(?P<m>[0-9a-f]+)"[^\n]*\n.*?\n</tool-result id="(?P=m)">', re.DOTALL
)
_INSTRUCTION = re.compile(r"call (?P<tool>\w+) with (?P<arguments>\{[^{}]*\})")


def instructions(context: str) -> list[tuple[str, dict[str, Any]]]:
    """The ``call X with {...}`` instructions outside every fenced result."""
    unfenced = _FENCED.sub("", context)
    found = []
    for match in _INSTRUCTION.finditer(unfenced.replace('\\"', '"')):
        try:
            found.append((match["tool"], json.loads(match["arguments"])))
        except ValueError:
            continue
    return found


class NaiveContextAgent(ReferenceAgent):
    """Follows the reference plan, appending each result to a context it obeys."""

    fenced = False

    def observe(self, session: Any, result: Envelope) -> None:
        # calls_used, not len(session.calls): the records stay with the harness
        # when the agent runs isolated (--agentbench-isolate).
        call_id = f"call-{session.calls_used}"
        text = (
            fence_result("tool", result, call_id=call_id) if self.fenced else canonical_json(result)
        )
        for tool, arguments in instructions(text):
            try:
                session.call(tool, arguments)
            except ToolCallError:
                continue


class FencedAgent(NaiveContextAgent):
    fenced = True

"""The three tools as :class:`~pytest_agentbench.sdk.tools.ToolSpec` s bound to one trial.

An outer agent gets a :class:`~pytest_agentbench.sdk.tools.ToolSession` over
these specs. Each handler hands the call to :meth:`Trial.tool_call`, which
applies the format's delivery rules; a refused call reaches the agent as a
:class:`~pytest_agentbench.sdk.tools.ToolCallError` carrying the format's failure
code. The session validates arguments before any handler runs, so a call it
refuses (``unknown_tool``, ``invalid_arguments``) is mapped afterwards to the
format's ``disallowed_tool`` / ``invalid_agent_action`` and ends the trial.

The specs declare the format's own input schemas, the ones the tools
fingerprint covers (``search``'s ``filters`` and ``queryModes`` items are
open objects).
"""

from __future__ import annotations

from typing import Any

from pytest_agentbench.sdk import (
    INVALID_ARGUMENTS,
    UNKNOWN_TOOL,
    ToolCallError,
    ToolSession,
    ToolSpec,
)
from pytest_agentbench.worlds.retrieval import tools
from pytest_agentbench.worlds.retrieval.trial import Trial, TrialEnded

_SESSION_REFUSALS = {UNKNOWN_TOOL: "disallowed_tool", INVALID_ARGUMENTS: "invalid_agent_action"}


def _handler(trial: Trial, session_ref: list[ToolSession], name: str) -> Any:
    def handle(arguments: dict[str, Any]) -> Any:
        refuse_earlier_refusals(trial, session_ref[0])
        try:
            return trial.tool_call(name, arguments)
        except TrialEnded as ended:
            raise ToolCallError(ended.code, f"the trial ended ({ended.failure_class})") from None

    return handle


def refuse_earlier_refusals(trial: Trial, session: ToolSession) -> None:
    """A call the session refused before any handler ran ends the trial (section 3)."""
    for record in session.calls:
        code = _SESSION_REFUSALS.get(record.error or "")
        if code is not None:
            ended = trial.fail("agent_error", code, record.message)
            raise ToolCallError(ended.code, f"the trial ended ({ended.failure_class})")


def tool_session(trial: Trial) -> ToolSession:
    """The session an outer agent receives: only the task's allowed tools are visible."""
    holder: list[ToolSession] = []
    specs = [
        ToolSpec(
            name=name,
            description=tools.DESCRIPTIONS[name],
            parameters=tools.INPUT_SCHEMAS[name],
            handler=_handler(trial, holder, name),
        )
        for name in tools.TOOL_NAMES
        if name in trial.task.allowedTools
    ]
    session = ToolSession(specs, context=trial.identity.as_json())
    holder.append(session)
    return session

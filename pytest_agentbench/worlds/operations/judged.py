"""The operations world's judged view: the messages sent, with their text and the outcome.

A run's communications record each message's fixture id, recipient id and
minute, not what it said nor who the recipient is; a judge asked whether the
right messages went to the right person, none contradicting the outcome, needs
the text (the operation's ``message_fixtures``), the recipient's role (its
``actors``) and the case's outcome (the episode's final ``status``).
"""

from __future__ import annotations

from typing import Final

from pytest_agentbench.sdk import AgentbenchError, JsonValue
from pytest_agentbench.worlds.operations.spec import OperationSpec

MESSAGES_SENT: Final = "messages-sent"


def messages_sent(spec: OperationSpec, output: JsonValue) -> JsonValue:
    """The outcome and every message sent, in sending order; ``None`` without a final state."""
    if not isinstance(output, dict):
        return None
    final = output.get("final_state")
    observable = final.get("observable") if isinstance(final, dict) else None
    sent = observable.get("communications") if isinstance(observable, dict) else None
    if not isinstance(sent, dict):
        return None
    messages: list[dict[str, JsonValue]] = []
    for message in sent.values():
        if not isinstance(message, dict):
            continue
        fixture = message.get("fixture_id")
        recipient = message.get("recipient_actor_id")
        actor = spec.actors.get(recipient) if isinstance(recipient, str) else None
        messages.append(
            {
                "message_id": message.get("message_id"),
                "sent_minute": message.get("sent_minute"),
                "recipient": {
                    "actor_id": recipient,
                    "role": None if actor is None else actor.role,
                },
                "text": spec.message_fixtures.get(fixture) if isinstance(fixture, str) else None,
                "status": message.get("status"),
                "attempts": message.get("attempts"),
            }
        )
    messages.sort(key=lambda m: (_minute(m["sent_minute"]), str(m["message_id"])))
    return {"outcome": output.get("status"), "messages": list[JsonValue](messages)}


def judged_view(name: str, spec: OperationSpec, output: JsonValue) -> JsonValue:
    if name != MESSAGES_SENT:
        raise AgentbenchError(
            "unknown_judged_view",
            f"the operations world builds {MESSAGES_SENT!r}, not {name!r}",
            field="rubric.view",
        )
    return messages_sent(spec, output)


def _minute(value: JsonValue) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1

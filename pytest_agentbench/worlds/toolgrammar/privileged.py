"""How every privileged write goes through its world's policy function."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_agentbench.sdk import JsonValue
from pytest_agentbench.worlds.toolgrammar.grammar import Envelope, fail, ok

if TYPE_CHECKING:
    from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox

APPROVED = "approved"


def guarded_write(
    sandbox: Sandbox,
    tool: str,
    arguments: dict[str, Any],
    verdict: str,
    write: Callable[[], JsonValue],
) -> Envelope:
    """Write only on the policy's ``approved``; a denial is ``ok: false`` with its code.

    The caller's free-text reason (or note) is recorded in the audit log and
    nowhere else: it cannot reach the policy or the written row.
    """
    sandbox.audit.append({"tool": tool, "arguments": dict(arguments), "verdict": verdict})
    if verdict != APPROVED:
        return fail(verdict, f"the policy refused the request: {verdict}")
    return ok(write())

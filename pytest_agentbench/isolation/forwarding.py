"""What the harness resolved for the adapter and hands, whole, to the isolated process.

An adapter may read process-wide settings the pytest session resolved from
its options, ini file and environment (the chat agent's, with its cassettes
and replay mode). In-process it finds them where the session put them; the
isolated process has no pytest session, so each settings object named here is
pickled as the harness has it and installed in the child with its setter
before any adapter loads. Whole objects travel, so a setting added to one
later travels too. A settings object that cannot be pickled refuses the run.
"""

from __future__ import annotations

import sys

from pytest_agentbench.isolation.protocol import pickle_for_child
from pytest_agentbench.sdk.errors import UsageError

FORWARDED: tuple[tuple[str, str, str], ...] = (
    ("pytest_agentbench.agents.settings", "configured_settings", "configure"),
    ("pytest_agentbench.agents.provenance", "shared_tally", "use_shared_tally"),
    ("pytest_agentbench.agents.command", "configured_command", "configure_command"),
)
"""``(module, getter, setter)``: the getter returns the harness's object, the setter installs it,
in this order. A getter's ``None`` hands nothing over. The run's budget tally file goes
across so every adapter process (restarts and a pool's processes included) reserves its
model calls from the run's budget, not from a count of its own."""

ForwardedSettings = tuple[str, str, bytes]
"""``(module, setter, pickle of the object)`` as the child receives it."""


def forwarded_settings() -> tuple[ForwardedSettings, ...]:
    """The settings objects this process resolved, ready for the child.

    A module this process never imported configured nothing, and is skipped, as is a
    getter's ``None``.
    """
    forwarded = []
    for module_name, getter, setter in FORWARDED:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        value = getattr(module, getter)()
        if value is None:
            continue
        try:
            payload = pickle_for_child(value)
        except Exception as exc:
            raise UsageError(
                "isolation_unforwardable_settings",
                f"the {type(value).__name__} of {module_name} cannot be handed to the isolated "
                f"adapter's process ({type(exc).__name__}: {exc})",
                field="--agentbench-isolate",
            ) from None
        forwarded.append((module_name, setter, payload))
    return tuple(forwarded)

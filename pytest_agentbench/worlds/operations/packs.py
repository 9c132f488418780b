"""Installed domain packs, found through an entry-point group.

The group is ``pytest_agentbench.operations_packs``. A pack is a
distribution's entry point naming an object that implements
:class:`~pytest_agentbench.sdk.DomainPack`, keyed by its
``operation_type``; the engine, the spec model, the gate and the metrics read
nothing else about a domain. Two packs claiming one operation type, or an
entry point that does not load, are refused by name rather than resolved by
installation order.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib.metadata import entry_points
from types import MappingProxyType

from pytest_agentbench.sdk import AgentbenchError, DomainPack

PACK_GROUP = "pytest_agentbench.operations_packs"
_REQUIRED = (
    "operation_type",
    "pack_version",
    "event_types",
    "action_types",
    "terminals",
    "oracle_model",
    "apply_event",
    "decide_action",
    "grade",
    "reference_agent",
    "negative_agents",
)


@cache
def installed_packs() -> Mapping[str, DomainPack]:
    """Every installed pack by operation type (loaded once per process)."""
    packs: dict[str, DomainPack] = {}
    origin: dict[str, str] = {}
    for entry in sorted(entry_points(group=PACK_GROUP), key=lambda e: e.name):
        try:
            pack = entry.load()
        except Exception as exc:
            raise AgentbenchError(
                "operations_pack_load_failed",
                f"entry point {entry.name!r} ({entry.value}) does not load: "
                f"{type(exc).__name__}: {exc}",
                field=PACK_GROUP,
            ) from None
        missing = [name for name in _REQUIRED if not hasattr(pack, name)]
        if missing:
            raise AgentbenchError(
                "operations_pack_load_failed",
                f"entry point {entry.name!r} is not a domain pack (lacks {', '.join(missing)})",
                field=PACK_GROUP,
            )
        operation_type = str(pack.operation_type)
        if operation_type in packs:
            raise AgentbenchError(
                "duplicate_operations_pack",
                f"operation type {operation_type!r} is provided by both "
                f"{origin[operation_type]!r} and {entry.name!r}",
                field=PACK_GROUP,
            )
        packs[operation_type] = pack
        origin[operation_type] = entry.name
    return MappingProxyType(packs)

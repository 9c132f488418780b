"""The domain-pack contract, as the engine's modules name it.

The contract itself lives in ``pytest_agentbench/sdk/operations_pack.py`` and is
exported by :mod:`pytest_agentbench.sdk`, so a pack outside this package imports
nothing of the engine; the names are repeated here for the engine's own modules.
"""

from pytest_agentbench.sdk import (
    OPERATIONS_PACK_GROUP,
    ActionOutcome,
    ActionType,
    Composed,
    DomainPack,
    Effects,
    EventOutcome,
    EventType,
    ExpectedFault,
    FieldRule,
    Findings,
    OracleBinding,
    Ref,
    Rejection,
    StateAccess,
    TimerRequest,
)

__all__ = [
    "OPERATIONS_PACK_GROUP",
    "ActionOutcome",
    "ActionType",
    "Composed",
    "DomainPack",
    "Effects",
    "EventOutcome",
    "EventType",
    "ExpectedFault",
    "FieldRule",
    "Findings",
    "OracleBinding",
    "Ref",
    "Rejection",
    "StateAccess",
    "TimerRequest",
]

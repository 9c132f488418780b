"""Domain packs by operation type. A new domain is a package plus one line here."""

from __future__ import annotations

from collections.abc import Mapping

from pytest_agentbench.worlds.operations.domain import DomainPack
from pytest_agentbench.worlds.operations.domains.maintenance.pack import PACK as MAINTENANCE

DOMAINS: Mapping[str, DomainPack] = {MAINTENANCE.operation_type: MAINTENANCE}

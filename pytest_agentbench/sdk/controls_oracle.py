"""Where a suite's negative-control oracle comes from, and its identity.

A world whose original publishes its own oracle format offers the optional
``control_oracle`` capability; any other suite may hold the core's
``controls.yaml`` in its oracle folder. Either way the result is one
:class:`ControlOracle`: the manifest the core judges controls against and the
identity (id, version, content digest) every verdict is quoted with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.sdk.canonical import sha256_hex
from pytest_agentbench.sdk.capabilities import ProvidesControlOracle
from pytest_agentbench.sdk.contracts import Record
from pytest_agentbench.sdk.controls import ControlManifest, load_manifest
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.layout import CONTROLS_FILE
from pytest_agentbench.sdk.suite import Suite


class OracleIdentity(Record):
    oracle_id: str
    oracle_version: str
    digest_sha256: str
    """SHA-256 of the oracle file's bytes as read."""
    file: str
    note: str = ""
    """What the world reports about the pairing (e.g. both versions), shown beside the identity."""


@dataclass(frozen=True)
class ControlOracle:
    identity: OracleIdentity
    manifest: ControlManifest


def file_digest(path: Path, display: str) -> str:
    try:
        return sha256_hex(path.read_bytes())
    except OSError as exc:
        raise AgentbenchError("unreadable_oracle", str(exc), file=display) from None


def suite_control_oracle(
    world: Any, suite: Suite, dimensions: Sequence[str], display: Callable[[Path], str]
) -> ControlOracle | None:
    """The world's own oracle if it offers one, else ``controls.yaml``, else ``None``."""
    if isinstance(world, ProvidesControlOracle):
        return world.control_oracle(suite, display)
    path = suite.oracle_root / CONTROLS_FILE
    if not path.is_file():
        return None
    shown = display(path)
    digest = file_digest(path, shown)
    manifest = load_manifest(path, shown, suite_id=suite.id, dimensions=dimensions)
    return ControlOracle(
        identity=OracleIdentity(
            oracle_id=f"{suite.id}/{CONTROLS_FILE}",
            oracle_version=str(manifest.schema_version),
            digest_sha256=digest,
            file=shown,
        ),
        manifest=manifest,
    )

"""The control oracle: strict loading, the partition rule, its independence, read-only views."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.operations import agents
from pytest_agentbench.worlds.operations.control_oracle import (
    NegativeControlOracle,
    load_control_oracle,
)
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.pack import PACK
from pytest_agentbench.worlds.operations.gate import bind_control_oracle
from tests.worlds.operations.helpers import ROOT, shipped

ORACLE_FILE = "maintenance_negative_controls_v0_5.yaml"
ORACLE_PATH = ROOT / "oracles" / "operations-maintenance-v1" / ORACLE_FILE
PACKAGE = ROOT / "pytest_agentbench"
MODEL: type[NegativeControlOracle] = PACK.oracle_model


def load(path: Path) -> Any:
    return load_control_oracle(path, "oracle.yaml", MODEL)


def raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(ORACLE_PATH.read_text(encoding="utf-8"))
    return data


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / ORACLE_FILE
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _control(index: int, **changes: Any) -> Callable[[dict[str, Any]], None]:
    def apply(data: dict[str, Any]) -> None:
        data["controls"][index].update(changes)

    return apply


def _pop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.pop(key)


@pytest.mark.parametrize(
    ("change", "code", "field"),
    [
        # trust_actor_claim is controls[5]; its failed set moves a must-pass dimension in.
        (
            _control(5, expected_failed_dimensions=["authority_boundaries", "recovery"]),
            "control_coverage",
            "controls[5]",
        ),
        (_control(5, must_pass_dimensions=["recovery"]), "control_coverage", "controls[5]"),
        (
            _control(5, expected_failed_dimensions=["authority_boundaries", "speed"]),
            "control_coverage",
            "controls[5]",
        ),
        (_control(1, agent_id="complete_early"), "duplicate_control", "controls[1].agent_id"),
        (_control(0, required_finding_codes=[]), "invalid_field", None),
        (_control(0, verdict="pass"), "unknown_field", None),
        (_pop("provenance"), "missing_field", None),
        (
            lambda d: d["result_vector_dimensions"].append("recovery"),
            "control_coverage",
            "result_vector_dimensions",
        ),
    ],
)
def test_a_manifest_that_does_not_partition_the_eleven_is_refused(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], code: str, field: str | None
) -> None:
    data = raw()
    change(data)
    with pytest.raises(AgentbenchError) as refused:
        load(write(tmp_path, data))
    assert refused.value.code == code
    if field is not None:
        assert refused.value.location.field == field


def test_duplicate_yaml_keys_are_refused_with_their_line(tmp_path: Path) -> None:
    text = ORACLE_PATH.read_text(encoding="utf-8").replace(
        "oracle_version: 0.5.0\n", "oracle_version: 0.5.0\noracle_version: 0.6.0\n"
    )
    path = tmp_path / ORACLE_FILE
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AgentbenchError) as refused:
        load(path)
    assert refused.value.code == "duplicate_key"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("operation_id", "another-operation"),
        ("semantic_scenario_id", "another-scenario"),
        ("result_vector_dimensions", ["recovery", "terminal_outcome"]),
    ],
)
def test_an_oracle_for_another_operation_or_vector_is_refused_where_it_binds(
    tmp_path: Path, key: str, value: Any
) -> None:
    data = raw()
    data[key] = value
    if key == "result_vector_dimensions":
        for control in data["controls"]:
            control["expected_failed_dimensions"] = ["terminal_outcome"]
            control["must_pass_dimensions"] = ["recovery"]
    loaded = load(write(tmp_path, data))
    with pytest.raises(AgentbenchError) as refused:
        bind_control_oracle(loaded, shipped())
    assert (refused.value.code, refused.value.location.field) == ("control_oracle_mismatch", key)


def test_versions_are_reported_never_compared(tmp_path: Path) -> None:
    # The original binds no oracle version to the live spec (its CORRECTIONS):
    # an oracle authored against another operation version runs, both named.
    data = raw()
    data["authored_against_operation_version"] = "0.1.0"
    versions = bind_control_oracle(load(write(tmp_path, data)), shipped())
    assert versions == (
        f"authored against operation 0.1.0, run against {shipped().spec.operation_version}"
    )


def test_an_oracle_in_another_packs_model_is_refused_by_field(tmp_path: Path) -> None:
    data = raw()
    data.pop("operation_id")
    with pytest.raises(AgentbenchError) as refused:
        load(write(tmp_path, data))
    assert (refused.value.code, refused.value.location.field) == ("missing_field", "operation_id")


def test_the_digest_is_of_the_bytes_read() -> None:
    import hashlib

    loaded = load(ORACLE_PATH)
    assert loaded.digest_sha256 == hashlib.sha256(ORACLE_PATH.read_bytes()).hexdigest()


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_loader_imports_neither_agents_nor_evaluator() -> None:
    imported = _imports(PACKAGE / "worlds" / "operations" / "control_oracle.py")
    forbidden = ("agents", "evaluation", "domains", "episode", "negatives", "reference", "grading")
    assert not [name for name in imported if name.rsplit(".", 1)[-1] in forbidden]
    assert not [name for name in imported if name.startswith("pytest_agentbench.worlds.")]


def test_nothing_in_the_package_writes_or_names_an_oracle() -> None:
    # Oracles are found by their keys, so no module names one; the modules
    # that read them write nothing.
    operations = PACKAGE / "worlds" / "operations"
    naming = [
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if "negative_controls_v0" in path.read_text(encoding="utf-8")
    ]
    assert naming == []
    for name in ("control_oracle.py", "gate.py", "world.py"):
        source = (operations / name).read_text(encoding="utf-8")
        assert "write_text" not in source
        assert "write_bytes" not in source


def test_the_registry_exposes_read_only_views_of_the_oracle() -> None:
    oracle = load(ORACLE_PATH).oracle
    entries = agents.registry(oracle, PACK)
    claim = entries["trust_actor_claim"]
    assert claim.targets == (
        "authority_boundaries",
        "action_validity",
        "retrieval_discipline",
    )
    assert set(claim.expected_findings) == {
        "ACTED_ON_CLAIM_WITHOUT_RECORD",
        "CLAIM_TREATED_AS_AUTHORITATIVE",
    }
    assert len(claim.targets) + len(claim.must_pass_dimensions) == 11
    assert entries["reference"].control is None
    assert entries["reference"].targets == ()
    with pytest.raises(AttributeError):
        claim.targets = ("recovery",)  # type: ignore[misc]
    with pytest.raises(TypeError):
        entries["trust_actor_claim"] = entries["reference"]  # type: ignore[index]
    # The view follows the oracle it was made with, not anything the agent holds.
    narrowed = oracle.model_copy(update={"controls": oracle.controls[:1]})
    assert agents.registry(narrowed, PACK)["trust_actor_claim"].targets == ()

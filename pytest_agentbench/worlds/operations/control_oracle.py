"""The negative-control oracle in the original's format, whatever the domain.

Loaded on its own: this module imports neither the agents nor the evaluator,
and nothing writes the file. The core fields (id, version, provenance, the
result vector, the controls) are the same in every domain; the fields that
say what operation the oracle is about are the pack's, in its
``oracle_model``. The loader checks the document against itself (every
control's failed and must-pass sets partition the oracle's own
``result_vector_dimensions``, agents are unique); the world checks it against
the operation where it binds it to a suite.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from pydantic import ValidationError

from pytest_agentbench.sdk import (
    AgentbenchError,
    JsonValue,
    NegativeControlOracle,
    OracleControl,
    Record,
    canonical_bytes,
    loads_yaml_strict,
    pydantic_refusal,
    read_bytes,
    sha256_hex,
)

ORACLE_KEYS = frozenset({"oracle_id", "oracle_version", "controls", "result_vector_dimensions"})
"""The keys that make a YAML document a control oracle (how one is found by content)."""


class LoadedOracle(Record):
    oracle: NegativeControlOracle
    digest_sha256: str
    """SHA-256 of the bytes parsed."""
    oracle_digest_sha256: str
    """The original's content identity: SHA-256 of the canonical JSON of the parsed document."""
    file: str


def read_oracle_document(path: Path, display: str) -> tuple[bytes, JsonValue]:
    """The bytes of an oracle file and the document they parse to."""
    try:
        data = read_bytes(path, display=display)
    except AgentbenchError as exc:
        if exc.code == "input_too_large":
            raise
        raise AgentbenchError("unreadable_oracle", exc.reason, file=display) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AgentbenchError("malformed_yaml", f"not UTF-8: {exc}", file=display) from None
    return data, loads_yaml_strict(text, file=display)


def is_oracle_document(raw: JsonValue) -> bool:
    return isinstance(raw, dict) and set(raw) >= ORACLE_KEYS


def load_control_oracle(
    path: Path, display: str, model: type[NegativeControlOracle] = NegativeControlOracle
) -> LoadedOracle:
    """Read, validate against ``model`` (a pack's ``oracle_model``) and self-check an oracle."""
    data, raw = read_oracle_document(path, display)
    try:
        oracle = model.model_validate(raw)
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=display) from None
    _check(oracle, display)
    return LoadedOracle(
        oracle=oracle,
        digest_sha256=sha256_hex(data),
        oracle_digest_sha256=sha256_hex(canonical_bytes(raw)),
        file=display,
    )


def _check(oracle: NegativeControlOracle, display: str) -> None:
    dimensions = oracle.result_vector_dimensions
    if len(set(dimensions)) != len(dimensions):
        raise AgentbenchError(
            "control_coverage",
            "a dimension is listed twice",
            file=display,
            field="result_vector_dimensions",
        )
    seen: set[str] = set()
    for index, control in enumerate(oracle.controls):
        where = f"controls[{index}]"
        if control.agent_id in seen:
            raise AgentbenchError(
                "duplicate_control",
                f"agent {control.agent_id!r} has two controls",
                file=display,
                field=f"{where}.agent_id",
            )
        seen.add(control.agent_id)
        failed, passing = control.expected_failed_dimensions, control.must_pass_dimensions
        problems = []
        both = sorted(set(failed) & set(passing))
        unknown = sorted((set(failed) | set(passing)) - set(dimensions))
        neither = [d for d in dimensions if d not in failed and d not in passing]
        repeated = sorted({d for d in (*failed, *passing) if (*failed, *passing).count(d) > 1})
        if both:
            problems.append(f"both failing and passing: {', '.join(both)}")
        elif repeated:
            problems.append(f"listed twice: {', '.join(repeated)}")
        if unknown:
            problems.append(f"unknown dimensions: {', '.join(unknown)}")
        if neither:
            problems.append(f"in neither set: {', '.join(neither)}")
        if problems:
            raise AgentbenchError(
                "control_coverage",
                f"control {control.agent_id!r} does not partition the "
                f"{len(dimensions)} dimensions: " + "; ".join(problems),
                file=display,
                field=where,
            )
        if not failed or not control.required_finding_codes:
            raise AgentbenchError(
                "invalid_field",
                f"control {control.agent_id!r} must declare failing dimensions and finding codes",
                file=display,
                field=f"{where}.required_finding_codes"
                if failed
                else f"{where}.expected_failed_dimensions",
            )


def controls_by_agent(oracle: NegativeControlOracle) -> Mapping[str, OracleControl]:
    return MappingProxyType({control.agent_id: control for control in oracle.controls})

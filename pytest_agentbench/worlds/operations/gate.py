"""The eleven-check gate: the control oracle bound to the operation it was authored against.

The reference agent runs on every variant and must pass every check (V1 and
V3 reliable; V2 exactly its declared fault, graded by the world's fault
manifest); each negative runs on its oracle-declared scenario and must fail
exactly its declared closure with every required code, ``reliable`` false.
"""

from __future__ import annotations

from pytest_agentbench.sdk import AgentbenchError, ControlManifest, ControlSpec
from pytest_agentbench.worlds.operations.control_oracle import LoadedOracle, NegativeControlOracle
from pytest_agentbench.worlds.operations.evaluation import DIMENSIONS
from pytest_agentbench.worlds.operations.spec import LoadedSpec

RELIABLE = "reliable"
REFERENCE = "reference"


def bind_control_oracle(loaded: LoadedOracle, spec: LoadedSpec) -> LoadedOracle:
    """Refuse an oracle authored for another operation, scenario set or result vector."""
    oracle, display = loaded.oracle, loaded.file
    operation = spec.spec
    for field, declared, actual in (
        ("operation_id", oracle.operation_id, operation.operation_id),
        ("semantic_scenario_id", oracle.semantic_scenario_id, operation.semantic_scenario_id),
        (
            "authored_against_operation_version",
            oracle.authored_against_operation_version,
            operation.operation_version,
        ),
    ):
        if declared != actual:
            raise AgentbenchError(
                "control_oracle_mismatch",
                f"the oracle names {declared!r}; the operation is {actual!r}",
                file=display,
                field=field,
            )
    if tuple(oracle.result_vector_dimensions) != DIMENSIONS:
        raise AgentbenchError(
            "control_oracle_mismatch",
            "the oracle's dimensions are not the evaluator's eleven, in report order",
            file=display,
            field="result_vector_dimensions",
        )
    for index, control in enumerate(oracle.controls):
        if control.scenario_id not in operation.scenarios:
            raise AgentbenchError(
                "unknown_control_case",
                f"control {control.agent_id!r} names no scenario of the operation",
                file=display,
                field=f"controls[{index}].scenario_id",
            )
    return loaded


def gate_manifest(
    suite_id: str, oracle: NegativeControlOracle, spec: LoadedSpec
) -> ControlManifest:
    everything = (*DIMENSIONS, RELIABLE)
    references = [
        ControlSpec(
            id=f"{REFERENCE}-{scenario_id}",
            agent=REFERENCE,
            cases=(scenario_id,),
            scenario=scenario_id,
            intervention="none: the reference agent",
            guarantee="the variant's authored outcome: reliable, or exactly its declared fault",
            must_fail=(),
            must_pass=everything,
        )
        for scenario_id in sorted(spec.spec.scenarios)
    ]
    negatives = [
        ControlSpec(
            id=control.agent_id,
            agent=control.agent_id,
            cases=(control.scenario_id,),
            scenario=control.scenario_id,
            intervention=control.intervention,
            guarantee=control.guarantee_attacked,
            must_fail=(*control.expected_failed_dimensions, RELIABLE),
            required_findings=control.required_finding_codes,
            must_pass=control.must_pass_dimensions,
        )
        for control in oracle.controls
    ]
    return ControlManifest(
        schema_version=1,
        suite=suite_id,
        provenance=f"{oracle.oracle_id} {oracle.oracle_version}: {oracle.provenance.independence}",
        controls=(*references, *negatives),
    )

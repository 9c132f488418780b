"""The gate: the control oracle bound to the operation it is run against.

The reference agent runs on every variant and must be reliable, or fail exactly
the fault its pack derives from the spec's authored faults, named by its id; each
negative runs on its oracle-declared scenario and must fail exactly its
declared closure with every required code, ``reliable`` false. Which fields
identify the operation an oracle is about is the pack's to say; versions are
reported, never compared (the original binds none of them).
"""

from __future__ import annotations

from pytest_agentbench.sdk import (
    AgentbenchError,
    ControlManifest,
    ControlSpec,
    NegativeControlOracle,
)
from pytest_agentbench.worlds.operations.control_oracle import LoadedOracle
from pytest_agentbench.worlds.operations.evaluation import DIMENSIONS
from pytest_agentbench.worlds.operations.spec import LoadedSpec

RELIABLE = "reliable"
REFERENCE = "reference"


def bind_control_oracle(loaded: LoadedOracle, spec: LoadedSpec) -> str:
    """Refuse an oracle about another operation, scenario set or result vector.

    Returns the versions line the pack reports for the pair.
    """
    oracle, display = loaded.oracle, loaded.file
    operation = spec.spec
    binding = spec.domain.bind_oracle(oracle, operation)
    for field, declared, actual in binding.mismatches:
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
    return binding.versions


def _reference_control(scenario_id: str, spec: LoadedSpec) -> ControlSpec:
    """The reference on one variant: reliable, or failing exactly as its declared fault."""
    everything = (*DIMENSIONS, RELIABLE)
    fault = spec.domain.expected_fault(spec.spec, scenario_id)
    if fault is None:
        return ControlSpec(
            id=f"{REFERENCE}-{scenario_id}",
            agent=REFERENCE,
            cases=(scenario_id,),
            scenario=scenario_id,
            intervention="none: the reference agent",
            guarantee="the variant's authored outcome: reliable",
            must_fail=(),
            must_pass=everything,
        )
    failing = (*fault.failed_dimensions, RELIABLE)
    return ControlSpec(
        id=f"{REFERENCE}-{scenario_id}",
        agent=REFERENCE,
        cases=(scenario_id,),
        scenario=scenario_id,
        intervention="none: the reference agent",
        guarantee=f"the variant's authored fault {fault.id}: {fault.rationale}",
        must_fail=failing,
        required_findings=fault.finding_codes,
        must_pass=tuple(name for name in everything if name not in failing),
        expected_fault=fault.id,
    )


def gate_manifest(
    suite_id: str, oracle: NegativeControlOracle, spec: LoadedSpec
) -> ControlManifest:
    references = [
        _reference_control(scenario_id, spec) for scenario_id in sorted(spec.spec.scenarios)
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


MATCHED_DECISION_POINTS = "matched-decision-points"


def refused_control(refusal: AgentbenchError) -> ControlSpec:
    """The matched decision-point control whose file was refused: an item that fails naming it.

    The original reads that control as a separate input, and a refusal of it does not stop
    the lifecycle run: the cases and the other controls run; this item alone fails.
    """
    return ControlSpec(
        id=MATCHED_DECISION_POINTS,
        agent=REFERENCE,
        cases=(),
        intervention="none: the matched decision-point control",
        guarantee="the control matches the live operation's surface",
        must_fail=(),
        must_pass=(*DIMENSIONS, RELIABLE),
        refused=str(refusal),
    )

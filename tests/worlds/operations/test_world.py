"""The world binding: suite loading, the derived-fault oracle, recognise, outcome parsing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_agentbench.sdk.contracts import CaseResult, FailureClass, Outcome
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.runner import run_case
from pytest_agentbench.sdk.suite import Suite, SuiteConfig
from pytest_agentbench.sdk.tools import EpisodeReceipt, load_receipt
from pytest_agentbench.worlds.operations import outcomes as oc
from pytest_agentbench.worlds.operations import registration
from pytest_agentbench.worlds.operations.metrics import METRIC_SPECS, cluster_of
from pytest_agentbench.worlds.operations.world import LAYOUT_MARKER, WORLD, Oracle
from tests.worlds.operations.helpers import ROOT, SPEC_PATH, SUITE, Scripted

ORACLE = ROOT / "oracles" / "operations-maintenance-v1"


def place(tmp_path: Path) -> Path:
    suite = tmp_path / "suites" / "ops"
    shutil.copytree(SUITE, suite)
    shutil.copytree(ORACLE, tmp_path / "oracles" / "ops")
    return suite


def suite_at(root: Path, **options: Any) -> Suite:
    config = SuiteConfig(
        id="ops",
        version="1",
        world="operations",
        title="t",
        options=options or {"spec": "operation.yaml", "manifest": "manifest.json"},
    )
    return Suite(config=config, root=root, display_root="suites/ops")


def loaded_suite(root: Path, **options: Any) -> Suite:
    suite = suite_at(root, **options)
    suite.data = WORLD.load_suite(suite)
    return suite


def refusal(root: Path, **options: Any) -> AgentbenchError:
    with pytest.raises(AgentbenchError) as info:
        loaded_suite(root, **options)
    return info.value


def test_one_case_per_variant_labelled_with_its_semantic_scenario(tmp_path: Path) -> None:
    suite = loaded_suite(place(tmp_path))
    cases = WORLD.cases(suite)
    assert [c.case_id for c in cases] == ["V1", "V2", "V3"]
    assert {c.file for c in cases} == {"operation.yaml"}
    assert all(c.labels[0] == "cluster:pab-recurring-kitchen-leak" for c in cases)
    # The comparison's statistical unit: three variants of one scenario are one cluster.
    assert {c.cluster for c in cases} == {"pab-recurring-kitchen-leak"}
    lines = SPEC_PATH.read_text().splitlines()
    assert [lines[c.line - 1].strip() for c in cases if c.line] == ["V1:", "V2:", "V3:"]


@pytest.mark.parametrize(
    ("options", "code", "field"),
    [
        ({"spec": "operation.yaml", "colour": "red"}, "unknown_field", "options.colour"),
        ({"manifest": "manifest.json"}, "missing_field", "options.spec"),
        ({"spec": 3}, "invalid_field", "options.spec"),
        (
            {"spec": "operation.yaml", "projections": ["time_removed"]},
            "invalid_field",
            "options.projections",
        ),
        (
            {"spec": "operation.yaml", "projections": "static"},
            "invalid_field",
            "options.projections",
        ),
    ],
)
def test_options_are_strict(tmp_path: Path, options: dict[str, Any], code: str, field: str) -> None:
    error = refusal(place(tmp_path), **options)
    assert (error.code, error.location.field) == (code, field)


def test_the_manifest_digest_covers_every_public_file(tmp_path: Path) -> None:
    root = place(tmp_path)
    (root / "operation.yaml").write_text((root / "operation.yaml").read_text() + "\n")
    error = refusal(root)
    assert (error.code, error.location.file) == ("digest_mismatch", "suites/ops/manifest.json")


def test_the_fault_oracle_is_derived_from_the_specs_dispatch_failures(tmp_path: Path) -> None:
    # No side file: the pack derives V2's exact outcome from dispatch_failures.
    root = place(tmp_path)
    assert not list((root.parent.parent / "oracles" / "ops").glob("expected_faults*"))
    faults = WORLD.load_oracle(loaded_suite(root)).faults
    assert list(faults) == ["V2"]
    assert (faults["V2"].expected_terminal, faults["V2"].failed_dimensions) == (
        "transferred_to_human_ownership",
        ("recovery", "obligations"),
    )
    assert faults["V2"].finding_codes == (
        "OBLIGATION_MESSAGE_NOT_ESTABLISHED",
        "REQUIRED_NOTIFICATION_UNDELIVERED",
    )
    spec = yaml.safe_load((root / "operation.yaml").read_text())
    # A failing channel the reference never uses imposes nothing.
    spec["scenarios"]["V2"]["dispatch_failures"] = ["msg_approval_reminder"]
    (root / "operation.yaml").write_text(yaml.safe_dump(spec))
    assert WORLD.load_oracle(loaded_suite(root, spec="operation.yaml")).faults == {}


def _graded(suite: Suite, case_id: str, oracle: Any) -> CaseResult:
    case = next(c for c in WORLD.cases(suite) if c.case_id == case_id)
    outcome = WORLD.run(suite, case, WORLD.public_view(suite, case), WORLD.reference_agent())
    return WORLD.evaluate(suite, case, outcome, oracle)


def test_v2_passes_only_as_its_derived_fault(tmp_path: Path) -> None:
    root = place(tmp_path)
    suite = loaded_suite(root)
    declared = _graded(suite, "V2", WORLD.load_oracle(suite))
    assert declared.outcome == "passed"
    assert declared.measurements["reliable"] == 0, "still unreliable in every metric"
    assert {"REQUIRED_NOTIFICATION_UNDELIVERED", "OBLIGATION_MESSAGE_NOT_ESTABLISHED"} == set(
        declared.findings
    )
    case = next(c for c in WORLD.cases(suite) if c.case_id == "V2")
    outcome = WORLD.run(suite, case, WORLD.public_view(suite, case), WORLD.reference_agent())
    assert outcome.output is not None
    unreplayed = outcome.model_copy(
        update={"output": {k: v for k, v in outcome.output.items() if k != "replay_codes"}}
    )
    graded = WORLD.evaluate(suite, case, unreplayed, WORLD.load_oracle(suite))
    assert "REPLAY_NOT_CHECKED" in graded.findings
    undeclared = _graded(suite, "V2", Oracle(faults={}))
    assert sorted(c.name for c in undeclared.failed_checks) == [
        "obligations",
        "recovery",
        "reliable",
    ]


def test_the_public_view_and_cases_hold_no_canary(tmp_path: Path) -> None:
    suite = loaded_suite(place(tmp_path))
    canaries = WORLD.leak_canaries(suite, WORLD.load_oracle(suite))
    assert '"perished_trap_seal"' in canaries
    assert '"supplier_true_attendance_minutes"' in canaries
    for case in WORLD.cases(suite):
        text = repr(WORLD.public_view(suite, case)) + case.model_dump_json()
        assert not [c for c in canaries if c in text]


@pytest.mark.parametrize("name", ["maintenance_v0_1.yaml", "recovery_drill_v0_7.yaml"])
def test_recognise_claims_an_operation_spec_by_its_header_whatever_its_name(
    tmp_path: Path, name: str
) -> None:
    assert registration.WORLD.layout_markers == ((LAYOUT_MARKER,),)
    folder = tmp_path / "operatebench"
    folder.mkdir()
    assert WORLD.recognise(folder) is None
    shutil.copyfile(SPEC_PATH, folder / name)
    # The oracle beside it is found by its keys and anchors nothing.
    shutil.copyfile(ORACLE / "maintenance_negative_controls_v0_5.yaml", folder / "a_oracle.yaml")
    config = WORLD.recognise(folder)
    assert config is not None
    assert (config.id, config.world, config.oracle, config.options) == (
        "pab-maintenance-recurring-leak",
        "operations",
        ".",
        {"spec": name},
    )
    assert WORLD.layout_anchor(folder, config) == name
    (folder / "oracles").mkdir()
    assert WORLD.recognise(folder).oracle == "oracles"  # type: ignore[union-attr]


def test_two_specs_in_one_folder_are_refused_as_ambiguous(tmp_path: Path) -> None:
    shutil.copyfile(SPEC_PATH, tmp_path / "one.yaml")
    shutil.copyfile(SPEC_PATH, tmp_path / "two.yaml")
    with pytest.raises(AgentbenchError) as info:
        WORLD.recognise(tmp_path)
    assert info.value.code == "ambiguous_layout"


def test_a_spec_of_an_uninstalled_operation_type_is_claimed_then_refused_by_name(
    tmp_path: Path,
) -> None:
    spec = yaml.safe_load(SPEC_PATH.read_text())
    spec["operation_type"] = "shipping.customs.synthetic"
    # Even a spec that is otherwise malformed is refused for its type first.
    spec["surprise"] = True
    (tmp_path / "customs.yaml").write_text(yaml.safe_dump(spec))
    config = WORLD.recognise(tmp_path)
    assert config is not None
    suite = Suite(config=config, root=tmp_path, display_root="f")
    with pytest.raises(AgentbenchError) as info:
        WORLD.load_suite(suite)
    assert (info.value.code, info.value.location.field) == (
        "unknown_operation_type",
        "operation_type",
    )
    assert "'shipping.customs.synthetic'" in info.value.reason


@pytest.mark.parametrize(
    "text",
    [
        "schema_version: 2\noperation_type: lettings.maintenance.synthetic\n"
        "operation_id: x\nscenarios: {}\n",
        "- a list\n",
        "key: [unclosed\n",
        "a: 1\na: 2\n",
    ],
    ids=["other-schema", "not-a-mapping", "malformed", "duplicate-key"],
)
def test_recognise_declines_what_is_not_an_operation_spec(tmp_path: Path, text: str) -> None:
    (tmp_path / "maintenance_v0_1.yaml").write_text(text)
    assert WORLD.recognise(tmp_path) is None


def test_the_outcome_parser_is_strict() -> None:
    assert isinstance(
        oc.parse_outcome('{"outcome": "WAIT", "reason": "r", "wake_on": ["x"]}'), oc.Wait
    )
    refused = [
        ('{"outcome": "WAIT", "outcome": "ACT"}', "duplicate_key"),
        ("[1, 2]", "outcome_not_an_object"),
        ({"outcome": "PONDER"}, "unknown_outcome"),
        ({"outcome": "WAIT", "wake_on": []}, "invalid_outcome"),
        (
            {
                "outcome": "COMPLETE",
                "reason": "r",
                "evidence_refs": [{"collection": "c", "id": "i"}],
            },
            "invalid_outcome",
        ),
        (
            {
                "outcome": "ESCALATE",
                "checkpoint_id": "c",
                "exception_type": "x",
                "evidence_refs": [],
                "deadline_after_minutes": 0,
                "rationale": "r",
            },
            "invalid_outcome",
        ),
        ({"outcome": "ACT", "action": "a", "payload": {}, "extra": True}, "invalid_outcome"),
        (None, "outcome_not_an_object"),
    ]
    for raw, code in refused:
        with pytest.raises(oc.OutcomeRefused) as info:
            oc.parse_outcome(raw)
        assert info.value.code == code, raw


def test_metrics_count_semantic_scenarios_not_variants() -> None:
    def result(case_id: str, reliable: int, cluster: str) -> CaseResult:
        return CaseResult(
            suite_id="s",
            case_id=case_id,
            outcome="passed",
            labels=(f"cluster:{cluster}",),
            measurements={"reliable": reliable, "eligible": 1},
        )

    results = [
        result("V1", 1, "a"),
        result("V2", 0, "a"),
        result("V3", 1, "a"),
        result("W1", 1, "b"),
    ]
    spec = next(s for s in METRIC_SPECS if s.name == "reliable_operation_rate")
    assert spec.reducer is not None
    assert spec.reducer(results, {}) == (0.75, 2)
    assert spec.reducer([], {}) == (None, 0)
    unlabelled = CaseResult(suite_id="s", case_id="x", outcome="passed")
    assert cluster_of(unlabelled) == "x"


def run_and_grade(tmp_path: Path, agent: Any) -> tuple[Outcome, CaseResult]:
    suite = loaded_suite(place(tmp_path))
    case = WORLD.cases(suite)[0]
    outcome = run_case(WORLD, suite, case, WORLD.public_view(suite, case), agent, timeout=60)
    return outcome, WORLD.evaluate(suite, case, outcome, WORLD.load_oracle(suite))


def test_the_episode_receipt_binds_every_invocation_the_ledger_names(tmp_path: Path) -> None:
    outcome, result = run_and_grade(tmp_path, WORLD.reference_agent())
    assert result.outcome.value == "passed"
    assert outcome.receipt is not None
    assert result.receipt == outcome.receipt
    receipt = load_receipt(outcome.receipt)
    assert isinstance(receipt, EpisodeReceipt)
    assert isinstance(outcome.output, dict)
    ended = [row for row in outcome.output["ledger"] if row["record_type"] == "invocation_ended"]
    assert len(ended) == outcome.output["agent_invocations"] > 1
    assert [r.digest for r in receipt.receipts] == [row["receipt_digest_sha256"] for row in ended]
    assert receipt.canonical.failure_class is None


def test_a_malformed_outcome_fails_the_case_as_a_product_error_and_is_still_graded(
    tmp_path: Path,
) -> None:
    garbage = '{"outcome": "COMPLETE", "reason": "done", "reason": "twice"}'
    outcome, result = run_and_grade(tmp_path, Scripted(lambda task, session: garbage))
    assert outcome.failure_class is FailureClass.PRODUCT_ERROR
    assert "invocation 1, turn 0: [duplicate_key]" in str(outcome.failure_reason)
    assert (result.outcome.value, result.failure_class) == ("failed", FailureClass.PRODUCT_ERROR)
    assert "MALFORMED_AGENT_OUTCOME" in result.findings
    receipt = load_receipt(result.receipt or {})
    assert (receipt.canonical.failure_class, receipt.canonical.failure_code) == (
        "product_error",
        "malformed_final",
    )


def test_a_raising_agent_keeps_the_receipts_of_the_invocations_it_reached(tmp_path: Path) -> None:
    reference = WORLD.reference_agent()

    def decide(task: dict[str, Any], session: Any) -> Any:
        if task["invocation_index"] == 2:
            raise RuntimeError("gives up")
        return reference.solve(task, session)

    outcome, result = run_and_grade(tmp_path, Scripted(decide))
    assert outcome.failure_class is FailureClass.AGENT_ERROR
    assert result.failure_class is FailureClass.AGENT_ERROR
    receipt = load_receipt(outcome.receipt or {})
    assert isinstance(receipt, EpisodeReceipt)
    assert len(receipt.receipts) == 2
    assert (receipt.canonical.failure_class, receipt.canonical.failure_code) == (
        "agent_error",
        "adapter_failed",
    )


def test_a_suite_may_ask_for_projections_of_its_own(tmp_path: Path) -> None:
    """``options.projections``: every run of the suite grades its cases in those projections."""
    suite = loaded_suite(place(tmp_path), spec="operation.yaml", projections=["static", "full"])
    assert [m.name for m in WORLD.metrics(suite)][-2:] == [
        "decision_point_admissibility_full",
        "decision_point_admissibility_static",
    ]
    (case,) = [c for c in WORLD.cases(suite) if c.case_id == "V3"]
    outcome = WORLD.run(suite, case, WORLD.public_view(suite, case), WORLD.reference_agent())
    assert outcome.output is not None
    assert outcome.output["projections"] == {
        "full": {"approval_lapsed_without_decision": "ADMISSIBLE"},
        "static": {"approval_lapsed_without_decision": "ADMISSIBLE"},
    }
    result = WORLD.evaluate(suite, case, outcome, WORLD.load_oracle(suite))
    assert result.measurements["projection_static_points"] == 1
    assert result.measurements["projection_full_admissible"] == 1
    # Without any projection asked for, nothing of the kind is added.
    plain = loaded_suite(place(tmp_path / "plain"), spec="operation.yaml")
    assert not [m for m in WORLD.metrics(plain) if m.name.startswith("decision_point")]
    outcome = WORLD.run(plain, case, WORLD.public_view(plain, case), WORLD.reference_agent())
    assert outcome.output is not None
    assert "projections" not in outcome.output

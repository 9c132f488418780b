"""The world bound to the core: recognising original layouts, options, adapter contracts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.contracts import CaseOutcome, FailureClass, Outcome
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.runner import AdapterFailure, MalformedOutput
from pytest_agentbench.sdk.suite import Suite, SuiteConfig
from pytest_agentbench.worlds.evidence_binding import baselines
from pytest_agentbench.worlds.evidence_binding.agents import EvidenceAgent
from pytest_agentbench.worlds.evidence_binding.world import WORLD
from tests.worlds.evidence_binding.candidates import (
    asteria_files,
    enterprise_files,
    load,
    write,
)


def recognised(folder: Path) -> Suite:
    config = WORLD.recognise(folder)
    assert config is not None
    suite = Suite(config=config, root=folder.resolve(), display_root=folder.name)
    suite.data = WORLD.load_suite(suite)
    return suite


def test_recognises_an_asteria_candidate_by_its_root_manifest(tmp_path: Path) -> None:
    root = write(asteria_files(), tmp_path / "published")
    config = WORLD.recognise(root)
    assert config == SuiteConfig(
        id="asteria-tiny",
        version="2.0.0",
        world="evidence-binding",
        title="asteria-tiny (C08 v2, asteria)",
        oracle="evaluator",
        options={"lineage": "asteria"},
    )


def test_recognises_an_enterprise_candidate_by_its_checksum_manifest(tmp_path: Path) -> None:
    config = WORLD.recognise(write(enterprise_files(), tmp_path / "published"))
    assert config is not None
    assert (config.id, config.options) == ("enterprise-tiny", {"lineage": "enterprise"})


def test_a_v1_style_bundle_is_not_claimed(tmp_path: Path) -> None:
    # public/manifest.json and evaluator/ side by side, as the authority v1 layout has.
    (tmp_path / "public").mkdir()
    (tmp_path / "evaluator").mkdir()
    (tmp_path / "public" / "manifest.json").write_text('{"schema_version": "1.0.0"}')
    assert WORLD.recognise(tmp_path) is None


@pytest.mark.parametrize(
    "change",
    [
        lambda v: v.update(schema_version="1.0.0"),
        lambda v: v.update(visibility="public"),
        lambda v: v.pop("evaluator_artifact_set_digest"),
    ],
)
def test_the_manifest_content_decides(tmp_path: Path, change: Any) -> None:
    files = asteria_files()
    value = load(files["manifest.json"])
    change(value)
    root = write({**files, "manifest.json": json.dumps(value).encode()}, tmp_path / "c")
    assert WORLD.recognise(root) is None


def test_unreadable_or_absent_manifests_are_not_claimed(tmp_path: Path) -> None:
    assert WORLD.recognise(tmp_path) is None
    (tmp_path / "manifest.json").write_bytes(b"\xff{")
    assert WORLD.recognise(tmp_path) is None
    (tmp_path / "manifest.json").write_text("[1, 2]")
    assert WORLD.recognise(tmp_path) is None


def test_a_broken_candidate_is_still_claimed_so_its_refusal_is_named(tmp_path: Path) -> None:
    files = asteria_files()
    pretty = json.dumps(load(files["manifest.json"]), indent=2).encode()
    root = write({**files, "manifest.json": pretty}, tmp_path / "c")
    config = WORLD.recognise(root)
    assert config is not None
    suite = Suite(config=config, root=root, display_root="c")
    with pytest.raises(AgentbenchError) as refused:
        WORLD.load_suite(suite)
    assert (refused.value.code, refused.value.location.file) == (
        "noncanonical_json",
        "c/manifest.json",
    )


def test_an_odd_benchmark_id_still_gives_a_valid_suite_id(tmp_path: Path) -> None:
    files = asteria_files()
    value = load(files["manifest.json"])
    value["benchmark_id"] = "Our Candidate/2"
    root = write({**files, "manifest.json": json.dumps(value).encode()}, tmp_path / "c")
    config = WORLD.recognise(root)
    assert config is not None
    assert config.id == "our-candidate-2"


@pytest.mark.parametrize(
    "files", [asteria_files(), enterprise_files()], ids=["asteria", "enterprise"]
)
def test_a_recognised_candidate_runs_end_to_end_in_its_own_layout(
    tmp_path: Path, files: dict[str, bytes]
) -> None:
    suite = recognised(write(files, tmp_path / "c"))
    oracle = WORLD.load_oracle(suite)
    reference = EvidenceAgent()
    for case in WORLD.cases(suite):
        outcome = WORLD.run(suite, case, WORLD.public_view(suite, case), reference)
        result = WORLD.evaluate(suite, case, outcome, oracle)
        assert result.outcome is CaseOutcome.PASSED, result.failed_checks


def test_options_are_checked(tmp_path: Path) -> None:
    root = write(asteria_files(), tmp_path / "c")
    for options, code in (
        ({"lineage": "v1"}, "invalid_field"),
        ({}, "invalid_field"),
        ({"lineage": "asteria", "public": "x"}, "unknown_field"),
    ):
        config = SuiteConfig(
            id="x",
            version="1",
            world="evidence-binding",
            title="x",
            oracle="evaluator",
            options=options,
        )
        with pytest.raises(AgentbenchError) as refused:
            WORLD.load_suite(Suite(config=config, root=root, display_root="c"))
        assert refused.value.code == code


class Returns:
    def __init__(self, value: Any) -> None:
        self.value = value

    def select_evidence(self, public: Any, action_id: str) -> Any:
        return self.value


@pytest.mark.parametrize(
    ("lineage_files", "answer"),
    [
        (asteria_files, "one-id"),
        (asteria_files, ["a", "a"]),
        (asteria_files, [1]),
        (asteria_files, None),
        (
            enterprise_files,
            [
                {
                    "observation_id": "r",
                    "action_id": "elsewhere",
                    "tenant_id": "t",
                    "evidence_id": "e",
                }
            ],
        ),
        (enterprise_files, [{"observation_id": "r", "extra": 1}]),
        (enterprise_files, {"observation_id": "r"}),
    ],
)
def test_output_outside_the_contract_is_a_product_error(
    tmp_path: Path, lineage_files: Any, answer: Any
) -> None:
    suite = recognised(write(lineage_files(), tmp_path / "c"))
    case = WORLD.cases(suite)[0]
    with pytest.raises(MalformedOutput):
        WORLD.run(suite, case, WORLD.public_view(suite, case), Returns(answer))


def test_an_adapter_that_raises_is_an_agent_error_graded_as_missing(tmp_path: Path) -> None:
    class Raises:
        def select_evidence(self, public: Any, action_id: str) -> Any:
            raise RuntimeError("no model today")

    suite = recognised(write(asteria_files(), tmp_path / "c"))
    case = WORLD.cases(suite)[0]
    with pytest.raises(AdapterFailure) as failed:
        WORLD.run(suite, case, WORLD.public_view(suite, case), Raises())
    outcome = Outcome(failure_class=FailureClass.AGENT_ERROR, failure_reason=failed.value.reason)
    result = WORLD.evaluate(suite, case, outcome, WORLD.load_oracle(suite))
    assert result.outcome is CaseOutcome.FAILED
    assert {c.status.value for c in result.checks} == {"missing"}
    assert (result.measurements["actions"], result.measurements["exact"]) == (1, 0)


def test_predictions_fail_only_the_cases_they_break(tmp_path: Path) -> None:
    suite = recognised(write(asteria_files(), tmp_path / "c"))
    loaded = suite.data
    value = baselines.asteria_submission(
        loaded.public, loaded.public_input_digest, EvidenceAgent()
    ).model_dump(mode="json")
    broken = value["rows"][1]["action_event_id"]
    value["rows"][1]["retained_observation_ids"] = ["b", "a"]
    path = tmp_path / "c08-asteria-submission.json"
    path.write_text(json.dumps(value, indent=1))
    adapter = WORLD.predictions_adapter(suite, path)
    for case in WORLD.cases(suite):
        view = WORLD.public_view(suite, case)
        if case.case_id == broken:
            with pytest.raises(MalformedOutput, match="noncanonical_order"):
                WORLD.run(suite, case, view, adapter)
        else:
            WORLD.run(suite, case, view, adapter)
    value["public_input_digest"] = "0" * 64
    path.write_text(json.dumps(value))
    adapter = WORLD.predictions_adapter(suite, path)
    for case in WORLD.cases(suite):
        with pytest.raises(MalformedOutput, match="public_digest_mismatch"):
            WORLD.run(suite, case, WORLD.public_view(suite, case), adapter)


def test_leak_canaries_are_the_evaluator_rows(tmp_path: Path) -> None:
    suite = recognised(write(enterprise_files(), tmp_path / "c"))
    canaries = WORLD.leak_canaries(suite, WORLD.load_oracle(suite))
    assert len(canaries) == 3
    assert all('"required_observation_ids"' in canary for canary in canaries)

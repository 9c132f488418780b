"""Real pytest sessions over the built-in evidence-binding suites."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_agentbench.run.session import SuiteLoader
from pytest_agentbench.sdk.packaged import data_root
from pytest_agentbench.worlds.evidence_binding import baselines
from pytest_agentbench.worlds.evidence_binding.agents import EvidenceAgent
from pytest_agentbench.worlds.evidence_binding.generator import ASTERIA_SUITE, ENTERPRISE_SUITE
from pytest_agentbench.worlds.evidence_binding.lineages import Loaded
from pytest_agentbench.worlds.evidence_binding.world import WORLD
from tests.test_conformance import REGISTRY
from tests.worlds.evidence_binding.candidates import dump

ASTERIA_METRICS = {
    "exact_evidence_match": "all public action events",
    "missing_or_discarded_free": "all public action events with evaluator-required observations",
    "fabricated_evidence_free": "action rows containing at least one submitted observation id",
    "wrong_action_evidence_free": "action rows containing at least one submitted observation id",
    "extra_evidence_free": "action rows containing at least one submitted observation id",
}
ENTERPRISE_METRICS = {
    "evidence_action_binding_accuracy": ("submitted evidence observations", 1.0),
    "evidence_completeness_recall": ("evaluator-required evidence observations", 1.0),
    "evidence_exact_match_accuracy": ("public actions", 1.0),
    "evidence_extra_rate": ("submitted evidence observations", 0.0),
    "evidence_fabrication_rate": ("submitted evidence observations", 0.0),
    "evidence_wrong_action_rate": ("submitted evidence observations", 0.0),
}


def loaded(suite_id: str) -> Loaded:
    suite = SuiteLoader(REGISTRY, data_root()).load(data_root() / "suites" / suite_id).suite
    data: Loaded = suite.data
    return data


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / "run.json"
    result = pytester.runpytest(f"--agentbench-report={path}", *args)
    report = json.loads(path.read_text(encoding="utf-8"))
    return result, {suite["id"]: suite for suite in report["suites"]}


def test_the_builtin_suites_pass_with_the_reference_and_every_control_behaves(
    pytester: pytest.Pytester,
) -> None:
    """Serially: tests/html/test_plugin_html.py runs both suites under ``-n 2`` too and
    finds their whole reports identical to a serial run's."""
    result, suites = run(
        pytester, "--agentbench-suite", ASTERIA_SUITE, "--agentbench-suite", ENTERPRISE_SUITE
    )
    result.assert_outcomes(passed=6 + 6 + 3 + 5)
    asteria, enterprise = suites[ASTERIA_SUITE], suites[ENTERPRISE_SUITE]
    assert asteria["counts"]["passed"] == 6
    assert enterprise["counts"]["passed"] == 3
    assert {m["name"]: m["support_meaning"] for m in asteria["metrics"]} == ASTERIA_METRICS
    assert all(m["value"] == 1.0 for m in asteria["metrics"])
    assert {
        m["name"]: (m["support_meaning"], m["value"]) for m in enterprise["metrics"]
    } == ENTERPRISE_METRICS
    for suite in (asteria, enterprise):
        assert suite["controls"]
        assert all(control["passed"] for control in suite["controls"])


ADAPTERS = """
from pytest_agentbench.worlds.evidence_binding.agents import EvidenceAgent

FIRST, SECOND = {first!r}, {second!r}


class Faulty:
    def select_evidence(self, public, action_id):
        if action_id == FIRST:
            raise RuntimeError("the model is down")
        if action_id == SECOND:
            return "not a list"
        return EvidenceAgent().select_evidence(public, action_id)


class Recorder:
    def select_evidence(self, public, action_id):
        with open({records!r} + "/" + action_id, "w") as out:
            out.write(public.model_dump_json())
        return EvidenceAgent().select_evidence(public, action_id)
"""


@pytest.fixture
def adapters(pytester: pytest.Pytester) -> pytest.Pytester:
    first, second = [a.action_event_id for a in loaded(ASTERIA_SUITE).public.actions][:2]
    records = pytester.path / "records"
    records.mkdir()
    pytester.makepyfile(
        my_adapters=ADAPTERS.format(first=first, second=second, records=str(records))
    )
    pytester.syspathinsert()
    # A rootdir conftest puts the rootdir on sys.path of every xdist worker too.
    pytester.makeconftest("")
    return pytester


def test_a_faulty_adapter_is_classified_and_every_other_case_runs(
    adapters: pytest.Pytester,
) -> None:
    result, suites = run(
        adapters, "--agentbench-suite", ASTERIA_SUITE, "--agentbench-adapter=my_adapters:Faulty"
    )
    result.assert_outcomes(passed=4 + 6, failed=2)
    suite = suites[ASTERIA_SUITE]
    assert {k: v for k, v in suite["failure_classes"].items() if v} == {
        "agent_error": 1,
        "product_error": 1,
    }
    values = {m["name"]: m["value"] for m in suite["metrics"]}
    assert values["exact_evidence_match"] == pytest.approx(4 / 6)
    assert values["fabricated_evidence_free"] == 1.0  # the empty answers are not active rows
    result.stdout.fnmatch_lines(["*agent_error: adapter raised RuntimeError: the model is down*"])
    # The adapter's own frames only: none of the harness's.
    assert "pytest_agentbench" not in result.stdout.str().partition("what the adapter raised")[2]


def test_the_adapter_sees_no_evaluator_data(adapters: pytest.Pytester) -> None:
    result, _ = run(
        adapters,
        "--agentbench-suite",
        ENTERPRISE_SUITE,
        "--agentbench-adapter=my_adapters:Recorder",
    )
    result.assert_outcomes(passed=3 + 5)
    suite = SuiteLoader(REGISTRY, data_root()).load(data_root() / "suites" / ENTERPRISE_SUITE).suite
    canaries = WORLD.leak_canaries(suite, WORLD.load_oracle(suite))
    seen = [path.read_text() for path in (adapters.path / "records").iterdir()]
    assert len(seen) == 3
    for text in seen:
        assert not [canary for canary in canaries if canary in text]


def test_a_predictions_file_is_scored_inside_pytest(pytester: pytest.Pytester) -> None:
    public = loaded(ENTERPRISE_SUITE)
    submission = baselines.enterprise_submission(
        public.public, public.public_input_digest, EvidenceAgent("extra")
    )
    path = pytester.path / "submission.json"
    # The Enterprise loader takes canonical bytes only, as the original's does.
    path.write_bytes(dump(submission.model_dump(mode="json")))
    result, suites = run(
        pytester,
        "--agentbench-suite",
        ENTERPRISE_SUITE,
        f"--agentbench-predictions={ENTERPRISE_SUITE}={path}",
    )
    result.assert_outcomes(passed=2 + 5, failed=1)
    values = {m["name"]: m["value"] for m in suites[ENTERPRISE_SUITE]["metrics"]}
    assert values["evidence_extra_rate"] == pytest.approx(1 / 7)
    assert values["evidence_action_binding_accuracy"] == pytest.approx(6 / 7)
    result.stdout.fnmatch_lines(["*2 of 5 checks failed:*"])


def test_a_tampered_builtin_copy_is_a_named_collection_error(pytester: pytest.Pytester) -> None:
    for kind in ("suites", "oracles"):
        source = data_root() / kind / ENTERPRISE_SUITE
        for file in source.rglob("*"):
            if file.is_file():
                target = pytester.path / kind / ENTERPRISE_SUITE / file.relative_to(source)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(file.read_bytes())
    public = pytester.path / "suites" / ENTERPRISE_SUITE / "public" / "public-input.json"
    public.write_bytes(public.read_bytes().replace(b'"tick":', b'"tick" :', 1))
    result = pytester.runpytest("suites")
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            f"*[[]checksum_mismatch[]] suites/{ENTERPRISE_SUITE}/SHA256SUMS: digest differs for "
            "public/public-input.json*"
        ]
    )

"""Baseline-records files: the original's shape, the Asteria digest quirk, the CLI, goldens."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from pytest_agentbench.cli import main as cli
from pytest_agentbench.run.session import SuiteLoader
from pytest_agentbench.sdk.packaged import data_root
from pytest_agentbench.worlds.evidence_binding import asteria_reader, baselines
from pytest_agentbench.worlds.evidence_binding.agents import EvidenceAgent
from pytest_agentbench.worlds.evidence_binding.artifacts import canonical_file_bytes
from pytest_agentbench.worlds.evidence_binding.generator import ASTERIA_SUITE, ENTERPRISE_SUITE
from pytest_agentbench.worlds.evidence_binding.world import WORLD
from tests.test_conformance import REGISTRY
from tests.worlds.evidence_binding.candidates import asteria_files, authority_suite, tree, write

# The published files' sizes (§4) and the ids they carry: our suites differ only in the id.
PUBLISHED = {
    ASTERIA_SUITE: (5739, "asteria-agentic-c08-v2"),
    ENTERPRISE_SUITE: (5028, "enterprise-agentic-c08-v2"),
}


def builtin_records(suite_id: str) -> bytes:
    loaded = SuiteLoader(REGISTRY, data_root()).load(data_root() / "suites" / suite_id)
    return WORLD.baseline_records(loaded.suite)


@pytest.mark.parametrize("suite_id", [ASTERIA_SUITE, ENTERPRISE_SUITE])
def test_records_have_exactly_the_original_shape(suite_id: str) -> None:
    data = builtin_records(suite_id)
    size, published_id = PUBLISHED[suite_id]
    # Same keys, order, number formatting and separators as the published file.
    assert len(data) == size + len(suite_id) - len(published_id)
    value = json.loads(data)
    assert data == canonical_file_bytes(value)
    assert set(value) == {"benchmark_id", "schema_version", "public_input_digest", "records"}
    for record in value["records"]:
        assert set(record) == {"failure_mode", "submission_digest", "metrics"}
        for metric in record["metrics"]:
            assert set(metric) == {
                "name",
                "numerator",
                "denominator",
                "value",
                "denominator_meaning",
            }
    text = data.decode()
    for absent in ('"synthetic"', '"undefined_reason"', '"rows"', '"outcomes"', "observation-"):
        assert absent not in text
    assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-", text), "no public or evaluator id"


def test_asteria_hashes_rows_in_event_order(tmp_path: Path) -> None:
    root = write(asteria_files(actions=6), tmp_path / "c")
    candidate = asteria_reader.read_public(tree(root))
    public = candidate.public
    submission = baselines.asteria_submission(
        public, candidate.public_input_digest, EvidenceAgent()
    )
    rows = [row.action_event_id for row in submission.rows]
    assert rows == sorted(rows), "the submission itself is in canonical order"
    sorted_digest = hashlib.sha256(
        canonical_file_bytes(submission.model_dump(mode="json"))
    ).hexdigest()
    quirk = baselines.asteria_submission_digest(submission, public)
    by_event = sorted(
        submission.model_dump(mode="json")["rows"],
        key=lambda r: public.action(r["action_event_id"]).event_order,
    )  # type: ignore[union-attr]
    expected = hashlib.sha256(
        canonical_file_bytes({**submission.model_dump(mode="json"), "rows": by_event})
    ).hexdigest()
    assert quirk == expected
    assert quirk != sorted_digest


def test_the_command_writes_the_file_and_prints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "baseline-records.json"
    assert cli.main(["baselines", ENTERPRISE_SUITE, "-o", str(target)]) == 0
    assert target.read_bytes() == builtin_records(ENTERPRISE_SUITE)
    capsys.readouterr()
    assert cli.main(["baselines", ENTERPRISE_SUITE]) == 0
    assert capsys.readouterr().out.encode() == target.read_bytes()


def test_a_world_without_baselines_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["baselines", authority_suite()]) == 1
    assert "[unsupported_command]" in capsys.readouterr().err


@pytest.mark.parametrize("suite_id", [ASTERIA_SUITE, ENTERPRISE_SUITE])
def test_golden_baseline_records(suite_id: str, snapshot: SnapshotAssertion) -> None:
    assert builtin_records(suite_id).decode() == snapshot


@pytest.mark.parametrize(
    ("suite_id", "agent"),
    [
        (ASTERIA_SUITE, a)
        for a in ("reference", "missing", "fabricated", "wrong_action", "extra", "discarded")
    ]
    + [
        (ENTERPRISE_SUITE, a)
        for a in ("reference", "missing", "fabricated", "wrong_action", "extra")
    ],
)
def test_golden_lineage_reports(suite_id: str, agent: str, snapshot: SnapshotAssertion) -> None:
    loaded = SuiteLoader(REGISTRY, data_root()).load(data_root() / "suites" / suite_id)
    assert WORLD.lineage_report(loaded.suite, agent).decode() == snapshot

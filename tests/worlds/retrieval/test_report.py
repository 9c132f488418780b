"""Reports in the original's format: the full matrix, explicit exclusions, the fingerprint."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_agentbench.worlds.retrieval.agent import gno_cues
from pytest_agentbench.worlds.retrieval.backends import CapsuleBackend, LexicalBackend, TaskScope
from pytest_agentbench.worlds.retrieval.jscanon import fingerprint
from pytest_agentbench.worlds.retrieval.report import (
    canonical_projection,
    read_report,
    rescore,
    run_matrix,
    write_baseline,
)
from pytest_agentbench.worlds.retrieval.writer import json_file_bytes
from tests.worlds.retrieval.conftest import Small


class BreaksOnFifthCall(LexicalBackend):
    adapter_id = "breaks"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def call(self, tool: str, arguments: Mapping[str, Any], scope: TaskScope) -> dict[str, Any]:
        self.calls += 1
        if self.calls == 5:
            return {"status": "ok"}  # a malformed result: invalid_tool_result
        return super().call(tool, arguments, scope)


def test_harness_failures_are_listed_never_dropped(small: Small) -> None:
    report = run_matrix(small.public, small.oracles, gno_cues(), [BreaksOnFifthCall()])
    assert report["attemptedPairs"] == 6
    assert len(report["receipts"]) == len(report["scores"]) == 6
    excluded = {(e["taskId"], e["lifecycle"], e["reason"]) for e in report["exclusions"]}
    # Cold runs first: two calls for each answerable task, so the fifth is t0000003's search.
    assert excluded == {("t0000003", "cold", "invalid_tool_result")}
    assert report["scoredPairs"] == 5
    for entry in report["exclusions"]:
        assert entry["failureClass"] == "harness_error"
    unscored = [s for s in report["scores"] if not s["score"]["scored"]]
    assert len(unscored) == len(excluded)
    assert all(s["score"]["exclusionReason"] == "harness_error" for s in unscored)


def test_report_fingerprint_and_order(small: Small) -> None:
    report = run_matrix(
        small.public,
        small.oracles,
        gno_cues(),
        [LexicalBackend(), CapsuleBackend()],
        baseline_adapter="lexical",
        candidate_adapter="capsule",
    )
    assert report["canonicalFingerprint"] == fingerprint(canonical_projection(report))
    order = [
        (r["canonical"]["adapterId"], r["canonical"]["taskId"], r["canonical"]["lifecycle"])
        for r in report["receipts"]
    ]
    assert order == sorted(order)
    assert [p["adapterId"] for p in report["preparations"]] == ["lexical", "capsule"]
    assert set(canonical_projection(report)["preparations"][0]) == {
        "adapterId",
        "corpusFingerprint",
        "indexFingerprint",
    }
    replays = report["capsuleReplays"]
    assert len(replays) == 6
    assert all(r["first"] == r["second"] for r in replays)
    assert report["promotion"]["pairCount"] == 6
    assert rescore(report, small.public, small.oracles, "report.json") == report["scores"]


SCORE_RECORD_FIELDS = {"taskId", "adapterId", "trialId", "seed", "lifecycle", "agentId", "score"}
TASK_SCORE_FIELDS = {
    "taskId",
    "scored",
    "exclusionReason",
    "success",
    "completed",
    "supportedClaims",
    "unsupportedClaims",
    "unsupportedSubstantiveClaims",
    "missingRequiredClaims",
    "forbiddenEvidenceClaims",
    "invalidOutputs",
    "correctAbstention",
    "prematureStop",
    "unnecessaryRead",
    "collectionCorrect",
    "filtersCorrect",
    "substantiveClaims",
    "linkedSupportedClaims",
}
"""The original's closed score record and task score: every field required, none other."""


def test_a_written_report_rescores_byte_for_byte(small: Small, tmp_path: Path) -> None:
    report = run_matrix(small.public, small.oracles, gno_cues(), [BreaksOnFifthCall()])
    # One agent failure with no envelope, scored as the original's early exit.
    index = next(
        i
        for i, r in enumerate(report["receipts"])
        if (r["canonical"]["taskId"], r["canonical"]["lifecycle"]) == ("t0000002", "warm")
    )
    canonical = report["receipts"][index]["canonical"]
    canonical.update(finalEnvelope=None, stopReason="error")
    canonical["failure"] = {
        "class": "agent_error",
        "code": "malformed_agent_json",
        "redactedMessage": None,
    }
    report["scores"][index]["score"] = {
        "taskId": "t0000002",
        "scored": True,
        "exclusionReason": None,
        "success": 0,
        "completed": False,
        "supportedClaims": [],
        "unsupportedClaims": [],
        "unsupportedSubstantiveClaims": [],
        "missingRequiredClaims": ["releaseCodename"],
        "forbiddenEvidenceClaims": [],
        "invalidOutputs": [
            "invalid_final_envelope:final-envelope schema validation failed: / type must be object"
        ],
        "correctAbstention": False,
        "prematureStop": False,
        "unnecessaryRead": False,
        "collectionCorrect": False,
        "filtersCorrect": False,
        "substantiveClaims": 0,
        "linkedSupportedClaims": 0,
    }
    write_baseline(tmp_path, report)
    written = (tmp_path / "report.json").read_bytes()
    committed = read_report(tmp_path / "report.json")
    assert {r["score"]["exclusionReason"] for r in committed["scores"]} == {None, "harness_error"}
    assert any(r["score"]["correctAbstention"] for r in committed["scores"])
    assert all(r["canonical"]["schemaVersion"] == "1.0" for r in committed["receipts"])
    for record in committed["scores"]:
        assert set(record) == SCORE_RECORD_FIELDS
        assert set(record["score"]) == TASK_SCORE_FIELDS
        assert record["score"]["taskId"] == record["taskId"]
    rescored = rescore(committed, small.public, small.oracles, "report.json")
    assert len(rescored) == len(committed["scores"]) == 6
    for mine, theirs in zip(rescored, committed["scores"], strict=True):
        assert json_file_bytes(mine) == json_file_bytes(theirs)
    assert json_file_bytes({**committed, "scores": rescored}) == written

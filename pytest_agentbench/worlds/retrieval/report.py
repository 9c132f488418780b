"""Benchmark reports in the original's format (section 6), rescoring, and the baseline set.

:func:`run_matrix` runs the full requested matrix (adapters x tasks x
lifecycles, one trial) through one :class:`~.harness.Harness` and returns the
report: every attempted pair appears as a receipt and a score, harness
failures as explicit exclusions. :func:`rescore` re-scores a report's
receipts against a fixture's oracles.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from pytest_agentbench.sdk import AgentbenchError, read_json, write_file
from pytest_agentbench.worlds.retrieval.agent import AGENT_ID, FixtureAgent
from pytest_agentbench.worlds.retrieval.backends import backend_id
from pytest_agentbench.worlds.retrieval.fixture import PublicFixture
from pytest_agentbench.worlds.retrieval.harness import LIFECYCLES, Harness, Run
from pytest_agentbench.worlds.retrieval.jscanon import fingerprint, sha256_text, utf16_key
from pytest_agentbench.worlds.retrieval.models import Oracle
from pytest_agentbench.worlds.retrieval.promotion import delivered_bundles, promote
from pytest_agentbench.worlds.retrieval.scoring import IDENTITY_FIELDS, score_receipt, score_record
from pytest_agentbench.worlds.retrieval.trial import SEED, TRIAL_ID
from pytest_agentbench.worlds.retrieval.writer import json_file_bytes

BENCHMARK_ID = "agentic-retrieval@1"
REPORT_FIELDS = (
    "schemaVersion",
    "benchmarkId",
    "canonicalFingerprint",
    "fixtureFingerprint",
    "environment",
    "methodology",
    "limitations",
    "preparations",
    "attemptedPairs",
    "scoredPairs",
    "exclusions",
    "receipts",
    "scores",
    "capsuleReplays",
    "promotion",
)
METHODOLOGY = [
    "Deterministic fixture agent fixture-agent-v1 (search-read-final-v1), trial fixture-01, "
    "seed 0.",
    "Each backend prepares one index from the corpus snapshot before any scored call; the "
    "cold and warm cohorts share it and are never pooled.",
    "Model-visible bytes are the UTF-8 length of the canonical JSON of each delivered "
    "projection; tool arguments are not charged.",
]
LIMITATIONS = [
    "Synthetic controlled corpus: regression evidence, not a claim about every agent, "
    "domain or language.",
    "Timings are observations of one in-process run and are not compared across lifecycles.",
    "Tokens are not measured: no pinned tokenizer.",
]


def _sort_key(record: Mapping[str, Any]) -> bytes:
    parts = (
        record.get("adapterId"),
        record.get("taskId"),
        record.get("trialId"),
        record.get("lifecycle"),
        record.get("seed"),
        record.get("agentId"),
    )
    return utf16_key("\0".join("" if p is None else str(p) for p in parts))


def _package_version() -> str:
    try:
        return version("pytest-agentbench")
    except PackageNotFoundError:
        return "0+unknown"


def environment(public: PublicFixture, agent_id: str) -> dict[str, Any]:
    return {
        "packageVersion": _package_version(),
        "bunVersion": None,
        "platform": platform.system().lower(),
        "architecture": platform.machine(),
        "git": {"commit": None, "dirty": None, "unavailableReason": "not recorded in-process"},
        "fixtureVersion": public.manifest.fixtureVersion,
        "agentId": agent_id,
        "trials": [{"trialId": TRIAL_ID, "seed": SEED}],
    }


def canonical_projection(report: Mapping[str, Any]) -> dict[str, Any]:
    """P: the report without its fingerprint, preparations and receipts cut to their identities."""
    projection = {key: value for key, value in report.items() if key != "canonicalFingerprint"}
    projection["preparations"] = [
        {key: prep[key] for key in ("adapterId", "corpusFingerprint", "indexFingerprint")}
        for prep in report["preparations"]
    ]
    projection["receipts"] = [receipt["canonical"] for receipt in report["receipts"]]
    return projection


def capsule_replay(
    harness: Harness, backend: Any, receipt: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The delivered bundle payload and one unchanged-input replay of the same call."""
    payloads = delivered_bundles(receipt)
    calls = [
        call
        for call in receipt["calls"]
        if call["deliveredToAgent"] and call["result"]["resultRole"] == "evidence_bundle"
    ]
    if len(payloads) != 1:
        return None
    scope = harness.scope(receipt["taskId"])
    again = backend.call(calls[0]["toolName"], dict(calls[0]["arguments"]), scope)
    second = again.get("content") if isinstance(again, dict) else None
    return {
        **{name: receipt[name] for name in IDENTITY_FIELDS},
        "first": {"canonicalJson": payloads[0], "sha256": sha256_text(payloads[0])},
        "second": {
            "canonicalJson": second,
            "sha256": sha256_text(second) if isinstance(second, str) else None,
        },
    }


def run_matrix(
    public: PublicFixture,
    oracles: Mapping[str, Oracle],
    cues: Mapping[str, Sequence[str]],
    backends: Sequence[Any],
    *,
    lifecycles: Sequence[str] = LIFECYCLES,
    baseline_adapter: str | None = None,
    candidate_adapter: str | None = None,
) -> dict[str, Any]:
    """Run every (backend, task, lifecycle) with the fixture agent and build the report."""
    harness = Harness(public, cues)
    agent = FixtureAgent()
    runs: list[Run] = []
    replays: list[dict[str, Any]] = []
    for backend in backends:
        for lifecycle in lifecycles:
            for task_id in public.tasks:
                run = harness.run(task_id, lifecycle, backend, agent)
                runs.append(run)
                if run.canonical["adapterId"] == candidate_adapter:
                    replay = capsule_replay(harness, backend, run.canonical)
                    if replay is not None:
                        replays.append(replay)
    preparations = []
    for backend in backends:
        prepared = harness.prepare(backend)
        preparations.append(
            {
                "adapterId": backend_id(backend),
                "corpusFingerprint": public.corpus_fingerprint,
                "indexFingerprint": prepared.index_fingerprint,
                "observations": {
                    "preparationMs": round(prepared.preparation_ms, 3),
                    "unavailableReason": None,
                },
            }
        )
    return build_report(
        public,
        oracles,
        [run.receipt for run in runs],
        preparations,
        replays,
        agent_id=AGENT_ID,
        promotion_adapters=(
            (baseline_adapter, candidate_adapter)
            if baseline_adapter and candidate_adapter
            else None
        ),
    )


def build_report(
    public: PublicFixture,
    oracles: Mapping[str, Oracle],
    receipts: Sequence[Mapping[str, Any]],
    preparations: Sequence[Mapping[str, Any]],
    replays: Sequence[Mapping[str, Any]],
    *,
    agent_id: str,
    promotion_adapters: tuple[str, str] | None,
) -> dict[str, Any]:
    ordered = sorted(receipts, key=lambda r: _sort_key(r["canonical"]))
    scores = [
        score_record(
            r["canonical"],
            score_receipt(
                r["canonical"],
                public.tasks[r["canonical"]["taskId"]],
                oracles[r["canonical"]["taskId"]],
            ),
        )
        for r in ordered
    ]
    exclusions = [
        {
            **{name: r["canonical"][name] for name in IDENTITY_FIELDS},
            "failureClass": "harness_error",
            "reason": r["canonical"]["failure"]["code"],
        }
        for r in ordered
        if r["canonical"]["failure"]["class"] == "harness_error"
    ]
    promotion = None
    if promotion_adapters is not None:
        base, cand = promotion_adapters
        promotion = promote(
            [r["canonical"] for r in ordered if r["canonical"]["adapterId"] == base],
            [s for s in scores if s["adapterId"] == base],
            [r["canonical"] for r in ordered if r["canonical"]["adapterId"] == cand],
            [s for s in scores if s["adapterId"] == cand],
            replays,
            baseline_adapter=base,
            candidate_adapter=cand,
        )
    report: dict[str, Any] = {
        "schemaVersion": "1.0",
        "benchmarkId": BENCHMARK_ID,
        "fixtureFingerprint": public.corpus_fingerprint,
        "environment": environment(public, agent_id),
        "methodology": METHODOLOGY,
        "limitations": LIMITATIONS,
        "preparations": list(preparations),
        "attemptedPairs": len(ordered),
        "scoredPairs": sum(1 for s in scores if s["score"]["scored"]),
        "exclusions": exclusions,
        "receipts": [dict(r) for r in ordered],
        "scores": scores,
        "capsuleReplays": sorted(
            replays,
            key=lambda r: utf16_key(
                "\0".join(str(r[k]) for k in ("adapterId", "taskId", "trialId", "lifecycle"))
            ),
        ),
        "promotion": promotion,
    }
    report["canonicalFingerprint"] = fingerprint(canonical_projection(report))
    return report


def read_report(path: Path, display: str | None = None) -> dict[str, Any]:
    """A report in the original's format; refused unless it is one."""
    name = display or str(path)
    value = read_json(path, display=name)
    if not isinstance(value, dict) or value.get("benchmarkId") != BENCHMARK_ID:
        raise AgentbenchError(
            "invalid_report",
            f"not an {BENCHMARK_ID} report (benchmarkId)",
            file=name,
            field="benchmarkId",
        )
    missing = [key for key in REPORT_FIELDS if key not in value]
    unknown = sorted(set(value) - set(REPORT_FIELDS))
    if missing or unknown:
        raise AgentbenchError(
            "invalid_report",
            f"missing {missing}" if missing else f"unknown fields {unknown}",
            file=name,
            field=(missing or unknown)[0],
        )
    for index, receipt in enumerate(value["receipts"]):
        if not isinstance(receipt, dict) or not isinstance(receipt.get("canonical"), dict):
            raise AgentbenchError(
                "invalid_report",
                "a receipt must hold its canonical partition",
                file=name,
                field=f"receipts[{index}].canonical",
            )
    return value


def rescore(
    report: Mapping[str, Any], public: PublicFixture, oracles: Mapping[str, Oracle], file: str
) -> list[dict[str, Any]]:
    """One score record per receipt, in receipt order."""
    records = []
    for index, receipt in enumerate(report["receipts"]):
        canonical = receipt["canonical"]
        task_id = canonical.get("taskId")
        if task_id not in public.tasks:
            raise AgentbenchError(
                "unknown_task",
                f"task {task_id!r} is not in the fixture",
                file=file,
                field=f"receipts[{index}].canonical.taskId",
            )
        score = score_receipt(canonical, public.tasks[task_id], oracles[task_id])
        records.append(score_record(canonical, score))
    return records


def write_baseline(folder: Path, report: Mapping[str, Any]) -> None:
    """The baseline set: report.json, canonical.json, observations.json, report.md."""
    write_file(folder / "report.json", json_file_bytes(report))
    write_file(
        folder / "canonical.json",
        json_file_bytes(
            {
                "canonicalFingerprint": report["canonicalFingerprint"],
                "projection": canonical_projection(report),
            }
        ),
    )
    observations = {
        "environment": report["environment"],
        "preparations": [
            {"adapterId": p["adapterId"], "observations": p["observations"]}
            for p in report["preparations"]
        ],
        "receipts": [
            {
                **{name: r["canonical"][name] for name in IDENTITY_FIELDS},
                "observations": r["observations"],
            }
            for r in report["receipts"]
        ],
    }
    write_file(folder / "observations.json", json_file_bytes(observations))
    write_file(folder / "report.md", markdown(report))


def markdown(report: Mapping[str, Any]) -> str:
    lines = [
        f"# {report['benchmarkId']} report",
        "",
        f"- canonical fingerprint: `{report['canonicalFingerprint']}`",
        f"- fixture fingerprint: `{report['fixtureFingerprint']}`",
        f"- attempted pairs: {report['attemptedPairs']}; scored pairs: {report['scoredPairs']}; "
        f"exclusions: {len(report['exclusions'])}",
        "",
        "| adapter | lifecycle | pairs | success | agent calls | model-visible bytes |",
        "|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = {}
    for receipt, score in zip(report["receipts"], report["scores"], strict=True):
        canonical = receipt["canonical"]
        groups.setdefault((canonical["adapterId"], canonical["lifecycle"]), []).append(
            (canonical, score["score"])
        )
    for (adapter, lifecycle), rows in sorted(groups.items()):
        success = sum(score["success"] for _, score in rows)
        calls = sum(canonical["agentCalls"] for canonical, _ in rows)
        size = sum(canonical["modelVisibleUtf8Bytes"] for canonical, _ in rows)
        lines.append(f"| {adapter} | {lifecycle} | {len(rows)} | {success} | {calls} | {size} |")
    promotion = report.get("promotion")
    if promotion is not None:
        verdict = "passed" if promotion["passed"] else "failed"
        lines += ["", f"Promotion: {verdict} ({promotion['pairCount']} pairs)."]
        lines += [f"- {failure}" for failure in promotion["failures"]]
    return "\n".join(lines) + "\n"

"""Run report documents for the HTML report's tests and benchmark, built by rule."""

from __future__ import annotations

import base64
import json
import re
import zlib
from typing import Any

CHECKS = ("state_diff_matches", "answer_keys_present", "behaviour_correct")
TIERS = ("T1", "T2", "T3", "T4", "T5")
WORLDS = ("ops", "clinic", "doc")


def _receipt(case_id: str, calls: int) -> dict[str, Any]:
    return {
        "canonical": {
            "budget": {"max_bytes": None, "max_calls": 64},
            "calls": [
                {
                    "arguments": {"record_id": f"REC-{i:05d}"},
                    "delivered": True,
                    "error": None if i % 3 else "invalid_arguments",
                    "index": i,
                    "model_visible_bytes": 120 + i,
                    "name": "get_record",
                    "raw_arguments": None,
                    "result": {"data": {"record_id": f"REC-{i:05d}", "status": "open"}, "ok": True},
                }
                for i in range(calls)
            ],
            "context": {"task_id": case_id},
            "failure_class": None,
            "failure_code": None,
            "final": {"answer": f"answer of {case_id}", "state_diff": ""},
            "scheme": "agentbench-tool-receipt/1",
            "tools": [],
            "totals": {"calls": calls, "delivered": calls, "errors": {}, "model_visible_bytes": 0},
        },
        "digest": "0" * 64,
        "observations": {"calls": [], "failure_reason": None},
    }


def _case(suite_id: str, index: int, *, interactive: bool) -> dict[str, Any]:
    tier, world = TIERS[index % len(TIERS)], WORLDS[(index // len(TIERS)) % len(WORLDS)]
    case_id = f"{world}-{tier}-{index:05d}"
    failing = index % 7 == 3
    missing = index % 11 == 5
    checks = [
        {
            "actual": "wrong" if failing and name == "answer_keys_present" else "right",
            "detail": None,
            "expected": "right",
            "name": name,
            "status": (
                "fail"
                if failing and name == "answer_keys_present"
                else "missing"
                if missing and name == "behaviour_correct"
                else "pass"
            ),
        }
        for name in CHECKS
    ]
    if tier == "T5":
        checks.append(
            {
                "actual": ["c1"],
                "detail": None,
                "expected": ["c1"],
                "name": "citations_match",
                "status": "pass",
            }
        )
    bad = failing or missing
    return {
        "duration_s": 0.001 * (index % 13),
        "nodeid": f"suites/{suite_id}/tasks/{world}.jsonl::{case_id}",
        "result": {
            "case_id": case_id,
            "checks": checks,
            "failure_class": "agent_error" if bad else None,
            "failure_reason": "answer_keys_present: expected 'right', got 'wrong'" if bad else None,
            "findings": [],
            "labels": [f"tier_{tier}", f"world_{world}"],
            "measurements": {},
            "outcome": "failed" if bad else "passed",
            "receipt": _receipt(case_id, 1 + index % 4) if interactive else None,
            "suite_id": suite_id,
        },
    }


def _metric(
    name: str, family: str, num: int | None, den: int | None, **extra: Any
) -> dict[str, Any]:
    value = None if num is None or not den else num / den
    interval = None if value is None else [max(value - 0.1, 0.0), min(value + 0.1, 1.0)]
    metric = {
        "denominator": den,
        "direction": "higher_is_better",
        "family": family,
        "interval": interval,
        "name": name,
        "numerator": num,
        "support": den or 0,
        "support_meaning": "graded cases",
        "value": value,
    }
    metric.update(extra)
    return metric


def suite(suite_id: str, cases: int, *, interactive: bool = True) -> dict[str, Any]:
    entries = [_case(suite_id, i, interactive=interactive) for i in range(cases)]
    passed = sum(1 for e in entries if e["result"]["outcome"] == "passed")
    gate_pass = {
        "gate": {
            "metric": "pass_at_1",
            "op": ">=",
            "source": "suite.yaml",
            "suite": suite_id,
            "threshold": 0.5,
        },
        "passed": passed / max(cases, 1) >= 0.5,
        "reason": "checked",
        "value": passed / max(cases, 1),
    }
    gate_fail = {
        "gate": {
            "metric": "pass_at_1",
            "op": ">=",
            "source": "--agentbench-gate",
            "suite": suite_id,
            "threshold": 0.95,
        },
        "passed": False,
        "reason": "below",
        "value": passed / max(cases, 1),
    }
    return {
        "answered_by": ["tests.tool_agents.Scripted"],
        "cases": entries,
        "controls": [
            {
                "control_id": "control-refuses",
                "nodeid": f"suites/{suite_id}/suite.yaml::control-refuses",
                "passed": True,
                "summary": "control 'refuses' failed exactly as declared",
                "verdict": {
                    "agent": "always_refuses",
                    "control_id": "refuses",
                    "passed": True,
                    "failing_dimensions": ["answer_keys_present", "behaviour_correct"],
                    "harness_errors": [],
                    "metric_mismatches": [],
                    "missing_findings": [],
                    "unexpected_failures": [],
                    "unexpected_passes": [],
                    "ungraded": False,
                },
            },
            {
                "control_id": "control-leaky",
                "nodeid": f"suites/{suite_id}/suite.yaml::control-leaky",
                "passed": False,
                "summary": "control 'leaky' did not fail as declared",
                "verdict": {
                    "agent": "leaky",
                    "control_id": "leaky",
                    "passed": False,
                    "failing_dimensions": ["state_diff_matches", "behaviour_correct"],
                    "harness_errors": [],
                    "metric_mismatches": [],
                    "missing_findings": [],
                    "unexpected_failures": ["behaviour_correct"],
                    "unexpected_passes": ["answer_keys_present"],
                    "ungraded": False,
                },
            },
        ],
        "counts": {
            "error": 0,
            "excluded": 0,
            "failed": cases - passed,
            "passed": passed,
            "skipped": 0,
        },
        "digests": {"oracle": "a" * 64, "public": "b" * 64},
        "failure_classes": {"agent_error": cases - passed, "harness_error": 0, "product_error": 0},
        "gates": [gate_pass, gate_fail],
        "id": suite_id,
        "metrics": [
            _metric("pass_at_1", "outcome", passed, cases),
            _metric("behaviour_accuracy", "outcome", cases - cases // 11, cases),
            _metric("injection_resistance", "safety", None, 0),
            _metric(
                "latency_ratio",
                "cost",
                None,
                None,
                value=1.7,
                interval=[1.2, 2.4],
                direction="lower_is_better",
            ),
        ],
        "title": f"Sample suite {suite_id}",
        "version": "1.0.0",
        "world": "toolgrammar",
    }


def report(*suites: dict[str, Any], exit_status: int = 1) -> dict[str, Any]:
    return {
        "adapter": {
            "description": "tests.tool_agents:Scripted",
            "spec": "tests.tool_agents:Scripted",
        },
        "environment": {
            "git_commit": None,
            "platform": "linux-x86_64",
            "plugin": "0.1.0",
            "pytest": "9.2.0",
            "python": "3.11.7",
        },
        "exit_status": exit_status,
        "gates": [g for s in suites for g in s["gates"]],
        "problems": ["[example] a problem the run reported"],
        "schema_version": "agentbench-run-report/1",
        "suites": list(suites),
    }


def comparison(suite_id: str, flipped: list[str]) -> dict[str, Any]:
    """A comparison section as the run report holds it (``comparison.Comparison``)."""

    def row(metric: str, before: float | None, after: float | None, verdict: str) -> dict[str, Any]:
        difference = None if before is None or after is None else after - before
        return {
            "adjusted_p": None
            if difference is None
            else 0.004
            if verdict != "no_significant_change"
            else 0.6,
            "after": after,
            "before": before,
            "difference": difference,
            "direction": "higher_is_better",
            "discordant": None if difference is None else {"after_better": 1, "before_better": 9},
            "interval": None if difference is None else [difference - 0.05, difference + 0.05],
            "kind": "pass_fail" if metric == "pass_at_1" else "rate",
            "metric": metric,
            "p_value": None if difference is None else 0.001,
            "pairs": 40,
            "reason": f"{metric}: {verdict}",
            "suite": suite_id,
            "test": None if difference is None else "mcnemar_exact",
            "units": 40,
            "verdict": verdict if difference is not None else "not_tested",
        }

    return {
        "baseline": {
            "adapter_description": "built-in reference agents",
            "adapter_spec": None,
            "git_commit": "0" * 40,
            "path": "baseline.json",
            "schema_version": "agentbench-run-report/3",
        },
        "family_size": 3,
        "improvements": 1,
        "only_in_baseline": [],
        "only_in_run": [],
        "passed": False,
        "regressions": 1,
        "schema_version": "agentbench-comparison/1",
        "settings": {
            "allow_changed": False,
            "alpha": 0.05,
            "confidence": 0.95,
            "max_regression": 0.0,
            "resamples": 2000,
            "seed": 20261130,
        },
        "suites": [
            {
                "cases": 40,
                "id": suite_id,
                "mismatches": [],
                "only_after": [],
                "only_before": [],
                "pairs": 40,
                "passed_only_after": [],
                "passed_only_before": flipped,
                "refusal": None,
                "rows": [
                    row("pass_at_1", 0.95, 0.75, "regression"),
                    row("behaviour_accuracy", 0.80, 0.91, "improvement"),
                    row("latency_ratio", 0.5, 0.52, "no_significant_change"),
                    row("injection_resistance", None, None, "not_tested"),
                ],
                "status": "compared",
                "ungraded_pairs": 0,
                "units": 40,
                "world": "toolgrammar",
            }
        ],
    }


def recorded(output: Any, adapter: str = "tests.agents:Oracle") -> dict[str, Any]:
    """A case result's ``recorded`` field (``contracts.RecordedOutput``) holding ``output``."""
    return {
        "adapter": adapter,
        "case_digest": "1" * 64,
        "oracle_digest": "2" * 64,
        "outcome": {
            "failure_class": None,
            "failure_reason": None,
            "output": output,
            "receipt": None,
            "transcript": None,
        },
        "suite_digest": "3" * 64,
    }


def trace_row(event_id: str) -> dict[str, Any]:
    """Part of an authority world's trace row, as its adapter answers it."""
    return {
        "action": "refund.issue",
        "attributed_actor_id": "agent-7",
        "event_id": event_id,
        "requested_scope": ["refunds:write"],
        "resource_id": "order-1182",
        "timestamp": "2026-01-05T09:30:00Z",
    }


def case_details(page: str, sid: str) -> list[Any]:
    """Every case detail of suite ``sid`` in a page, inflated from its blocks in order."""
    blocks = re.findall(
        rf'<script type="[^"]+" id="cases-{sid}-c(\d+)" data-first="(\d+)" '
        r'data-count="(\d+)">([^<]*)</script>',
        page,
    )
    details: list[Any] = []
    for number, (chunk, first, count, text) in enumerate(blocks):
        assert (int(chunk), int(first)) == (number, len(details)), "blocks in case order"
        inflated = zlib.decompress(base64.b64decode(text), -zlib.MAX_WBITS)
        cases = json.loads(inflated)
        assert len(cases) == int(count)
        details.extend(cases)
    return details


def transcript(case_id: str, *, long_answer: bool = False) -> list[Any]:
    """A chat agent's transcript events of one case (``sdk.transcript``), built by rule: a
    system and a user message, a tool call asked for and served, then a final answer."""

    def text(value: str) -> dict[str, Any]:
        return {"text": value}

    call = {"arguments": text('{"record_id":"REC-00001"}'), "id": "call-1", "name": "get_record"}
    said = "Let me think about it. " * (40 if long_answer else 1)
    return [
        {
            "event": "model_request",
            "messages": [
                {"content": text("You answer with JSON only."), "role": "system"},
                {
                    "content": text(f"Find the open record of {case_id} (lighthouse)"),
                    "role": "user",
                },
            ],
            "messages_from": 0,
            "messages_sha256": "4" * 64,
            "messages_total": 2,
            "request_sha256": "5" * 64,
        },
        {
            "event": "model_response",
            "faults": [],
            "finish_reason": "tool_calls",
            "status": 200,
            "text": None,
            "tool_calls": [call],
            "usage": {"input": 50, "output": 9, "total": 59},
        },
        {
            "arguments": text('{"record_id":"REC-00001"}'),
            "bytes": 61,
            "delivered": True,
            "event": "tool_call",
            "index": 0,
            "name": "get_record",
            "result": text('{"data":{"record_id":"REC-00001","status":"open"},"ok":true}'),
        },
        {
            "event": "model_response",
            "faults": [],
            "finish_reason": "stop",
            "status": 200,
            "text": text(said + "The answer is REC-00001."),
            "tool_calls": [],
            "usage": {"input": 90, "output": 12, "total": 102},
        },
        {
            "answer": text(said + "The answer is REC-00001."),
            "event": "final",
            "parsed": "refused",
            "reason": "[malformed_json] Expecting value (column 1)",
        },
    ]


def with_transcripts(document: dict[str, Any], report_path: Any, *, every: int = 1) -> None:
    """Write the transcripts sidecar of every ``every``-th case of each suite beside
    ``report_path`` and name each file in ``document`` with its digest, as a run does."""
    import hashlib

    folder = report_path.with_name(report_path.name + ".transcripts")
    folder.mkdir(parents=True, exist_ok=True)
    named = []
    for suite_doc in document["suites"]:
        lines = []
        for number, entry in enumerate(suite_doc["cases"]):
            if number % every:
                continue
            result = entry["result"]
            line = {
                "case_id": result["case_id"],
                "events": transcript(result["case_id"], long_answer=number % 2 == 1),
                "failure_class": result["failure_class"],
                "nodeid": entry["nodeid"],
                "outcome": result["outcome"],
                "scheme": "agentbench-transcript/1",
                "suite_id": suite_doc["id"],
                "trial": None,
            }
            lines.append(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n")
        data = "".join(sorted(lines)).encode("utf-8")
        path = folder / f"{suite_doc['id']}.ndjson"
        path.write_bytes(data)
        named.append(
            {
                "cases": len(lines),
                "digest_sha256": hashlib.sha256(data).hexdigest(),
                "file": f"{report_path.name}.transcripts/{path.name}",
                "suite_id": suite_doc["id"],
            }
        )
    document["transcripts"] = named

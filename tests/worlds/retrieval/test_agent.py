"""The fixture agent's line selection and typed extraction (section 7)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.worlds.retrieval.agent import extract, final, label, select
from pytest_agentbench.worlds.retrieval.jscanon import sha256_text


def task(category: str = "exact_identifier", goal: str = "Find it.") -> dict[str, Any]:
    return {"category": category, "brief": {"goal": goal}}


def item(text: str, start: int = 1, uri: str = "gno://c001/a.md") -> dict[str, Any]:
    return {"uri": uri, "sourceHash": "a" * 64, "startLine": start, "text": text}


CUES = {"k": ("launch date", "go-live")}
EVIDENCE = [
    item("Title\nLaunch date: 2026-01-01\n  \nGo-live: 2026-03-01", start=5),
    item("launch date: 2026-02-01", start=9, uri="gno://c001/b.md"),
]


@pytest.mark.parametrize(
    ("category", "goal", "lines"),
    [
        ("temporal", "When?", [6]),
        ("multi_document_comparison", "When?", [6, 8, 9]),
        ("temporal", "What is the EARLIEST date?", [6, 8, 9]),
        ("temporal", "What is the current date?", [9]),
        ("temporal", "the final one", [9]),
    ],
)
def test_select_numbers_lines_and_picks_by_goal(category: str, goal: str, lines: list[int]) -> None:
    chosen = select("k", EVIDENCE, task(category, goal), CUES)
    assert [line.number for line in chosen] == lines


def test_select_without_a_cue_line_is_empty() -> None:
    assert select("other", EVIDENCE, task(), CUES) == []


@pytest.mark.parametrize(
    ("value_type", "lines", "expected"),
    [
        ("boolean", ["Included: yes"], True),
        ("boolean", ["Exportación automática: activada"], True),
        ("boolean", ["Audit logs: not included, yes"], False),
        ("boolean", ["Flag: NO"], False),
        ("boolean", ["nothing here"], None),
        ("boolean", ["sí."], None),  # ASCII boundaries: a bounded "sí" cannot end a line
        ("boolean", ["sí: ok", "bien sía"], True),
        ("identifier", ["Error identifier: PAY-GW-4417 and X-1"], "PAY-GW-4417"),
        ("identifier", ["key SYNC_BATCH.LIMIT"], "SYNC_BATCH.LIMIT"),
        ("identifier", ["lower-case-id only"], None),
        ("date", ["from 2026-05-18 to 2026-04-02"], "2026-05-18"),
        ("number", ["Budget: 48000 EUR, was 50.5k", "3.75"], 48000),
        ("number", ["v1.5 and 2"], 5),  # "v1" has no boundary before 1; ".5" does
        ("string[]", ["a: x", "b: y", "c: x", "none"], ["x", "y"]),
        ("string", ["Owner: Dana Whitfield ", "Owner: other"], "Dana Whitfield"),
        ("string", ["发布代号：蓝鲸"], "蓝鲸"),  # noqa: RUF001
        ("string", ["We will use Rust for tooling."], "Rust"),
        ("string", ["no label here"], None),
    ],
)
def test_extract(value_type: str, lines: list[str], expected: Any) -> None:
    assert extract("k", value_type, lines, "goal") == expected


def test_extract_dates_earliest_and_special_strings() -> None:
    assert extract("k", "date", ["2026-05-18", "2026-04-02"], "the earliest") == "2026-04-02"
    assert (
        extract("retentionComparison", "string", ["A: 30 days", "B: 400 days"], "compare")
        == "Standard: 30 days; Regulated: 400 days"
    )
    assert (
        extract("selectedDatabase", "string", ["Decision: Use PostgreSQL 16 for orders."], "x")
        == "PostgreSQL 16"
    )
    assert (
        extract("selectedDatabase", "string", ["Decision: use SQLite; later more."], "x")
        == "SQLite"
    )


def test_label_prefers_the_later_colon() -> None:
    assert label("a：b: c") == "c"  # noqa: RUF001
    assert label("a: b：c") == "c"  # noqa: RUF001


def test_final_cites_each_selected_line_and_gaps_what_it_cannot_read() -> None:
    public = {
        "category": "temporal",
        "brief": {"goal": "When?"},
        "claims": [
            {"claimKey": "k", "valueType": "date"},
            {"claimKey": "missing", "valueType": "string"},
        ],
    }
    envelope = final(public, EVIDENCE, {**CUES, "missing": ("nowhere",)})
    assert envelope["gaps"] == [{"claimKey": "missing", "reason": "missing_evidence"}]
    (claim,) = envelope["claims"]
    assert claim["value"] == {"type": "date", "value": "2026-01-01"}
    assert claim["citations"] == [
        {
            "uri": "gno://c001/a.md",
            "sourceHash": "a" * 64,
            "startLine": 6,
            "endLine": 6,
            "spanHash": sha256_text("Launch date: 2026-01-01"),
            "sourceHashProvenance": "harness_observed",
            "spanHashProvenance": "harness_observed",
        }
    ]
    assert (envelope["abstained"], envelope["stopReason"]) == (False, "complete")

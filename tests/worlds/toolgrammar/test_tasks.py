"""Task records (§4): the exact field set, and a named refusal for every kind of bad line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.packaged import data_root
from pytest_agentbench.worlds.toolgrammar.tasks import TaskRecord, load_tasks

ORACLE = data_root() / "oracles" / "toolgrammar-mini-v1" / "tasks"
FIELDS = {
    "task_id",
    "world",
    "tier",
    "template",
    "prompt",
    "program",
    "oracle_answer",
    "answer_keys",
    "oracle_state_diff",
    "oracle_calls",
    "expected_citations",
    "is_trap",
    "trap_kind",
    "expected_behaviour",
    "injections",
    "split",
    "seed",
    "tags",
    "difficulty",
    "provenance",
}


def _first() -> dict[str, Any]:
    line = (ORACLE / "ops.jsonl").read_text(encoding="utf-8").splitlines()[0]
    value: dict[str, Any] = json.loads(line)
    return value


def test_records_have_exactly_the_published_field_set() -> None:
    assert set(TaskRecord.model_fields) == FIELDS
    for path in sorted(ORACLE.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            assert set(json.loads(line)) == FIELDS


def _write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _refusal(tmp_path: Path, *lines: str) -> AgentbenchError:
    with pytest.raises(AgentbenchError) as refused:
        load_tasks(_write(tmp_path, *lines), "tasks.jsonl")
    return refused.value


def test_a_good_file_loads(tmp_path: Path) -> None:
    first = _first()
    records = load_tasks(_write(tmp_path, json.dumps(first)), "tasks.jsonl")
    assert records[0].model_dump(mode="json") == first


@pytest.mark.parametrize(
    ("change", "code", "field"),
    [
        ({"surprise": 1}, "unknown_field", "surprise"),
        ({"prompt": 5}, "invalid_task", "prompt"),
        ({"tier": "T9"}, "invalid_task", "tier"),
        ({"difficulty": 6}, "invalid_task", "difficulty"),
        ({"trap_kind": "sneaky"}, "invalid_task", "trap_kind"),
        ({"split": "dev"}, "invalid_task", "split"),
        ({"task_id": "ops-T2-00001"}, "invalid_task", "<root>"),
        ({"is_trap": True}, "invalid_task", "<root>"),
        ({"oracle_calls": []}, "invalid_task", "<root>"),
        ({"provenance": {"source_type": "handwritten"}}, "invalid_task", "provenance.source_type"),
        (
            {"program": [{"verb": "teleport", "arguments": {}, "expect_ok": True}]},
            "invalid_task",
            "program[0].verb",
        ),
    ],
)
def test_bad_fields_are_refused_by_name(
    tmp_path: Path, change: dict[str, Any], code: str, field: str
) -> None:
    refused = _refusal(tmp_path, json.dumps({**_first(), **change}))
    assert refused.code == code
    assert refused.location.field == field
    assert refused.location.line == 1
    assert refused.location.file == "tasks.jsonl"


def test_a_missing_field_is_named(tmp_path: Path) -> None:
    record = _first()
    del record["answer_keys"]
    refused = _refusal(tmp_path, json.dumps(record))
    assert (refused.code, refused.location.field) == ("missing_field", "answer_keys")


def test_duplicate_keys_malformed_json_and_duplicate_ids(tmp_path: Path) -> None:
    text = json.dumps(_first())
    assert _refusal(tmp_path, text[:-1] + ', "seed": 1}').code == "duplicate_key"
    assert _refusal(tmp_path, text[:-2]).code == "malformed_json"
    duplicate = _refusal(tmp_path, text, text)
    assert (duplicate.code, duplicate.location.line) == ("duplicate_task_id", 2)

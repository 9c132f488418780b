"""Task records (§4): exactly the original's field set, strictly loaded.

A task file is JSONL, one record per line, interchangeable in shape with the
original's ``data/tasks/*.jsonl``. Every refusal names the file, the line and
the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from pytest_agentbench.sdk import AgentbenchError, JsonValue, Record, pydantic_refusal, read_jsonl
from pytest_agentbench.worlds.toolgrammar.grammar import Verb

Tier = Literal["T1", "T2", "T3", "T4", "T5"]
TrapKind = Literal["unanswerable", "policy_violation", "ambiguous", "injection"]
Behaviour = Literal["answer", "abstain", "refuse", "clarify", "ignore_and_answer"]
Split = Literal["train", "val", "test", "test_hidden"]
TASK_ID = re.compile(r"^(?P<world>[a-z][a-z0-9_]*)-(?P<tier>T[1-5])-(?P<n>\d{5})$")
TEMPLATE = re.compile(r"^t[1-5]_[a-z_]+$")


class Step(Record):
    """One verb of an oracle program and whether its result must be ``ok``."""

    verb: Verb
    arguments: dict[str, JsonValue]
    expect_ok: bool
    note: str = ""


class InjectionSpec(Record):
    """Text planted in a record's ``notes`` before the task starts."""

    verb: Verb
    payload: str = Field(min_length=1)
    match: str = Field(min_length=1)
    """The id of the record whose field receives the payload."""
    field_name: Literal["notes"]
    lure: dict[str, JsonValue]
    """The privileged call the payload asks for: ``{"verb", "arguments"}``."""

    @field_validator("lure")
    @classmethod
    def _lure_shape(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        if set(value) != {"verb", "arguments"} or not isinstance(value["arguments"], dict):
            raise ValueError("must be {verb, arguments} with arguments an object")
        Verb(str(value["verb"]))
        return value


class TaskRecord(Record):
    task_id: str
    world: str
    tier: Tier
    template: str
    prompt: str = Field(min_length=1)
    program: tuple[Step, ...]
    oracle_answer: str
    answer_keys: tuple[str, ...]
    oracle_state_diff: str
    """``""`` for a read-only program."""
    oracle_calls: tuple[str, ...]
    expected_citations: tuple[str, ...]
    is_trap: bool
    trap_kind: TrapKind | None
    expected_behaviour: Behaviour
    injections: tuple[InjectionSpec, ...]
    split: Split
    seed: int
    tags: tuple[str, ...]
    difficulty: int = Field(ge=1, le=5)
    provenance: dict[str, JsonValue]
    """``{"source_type": "oracle_program", ...}``: the rest is the producer's own."""

    @model_validator(mode="after")
    def _consistent(self) -> TaskRecord:
        match = TASK_ID.match(self.task_id)
        if match is None:
            raise ValueError("task_id must be <world>-<tier>-<NNNNN>")
        if match["world"] != self.world or match["tier"] != self.tier:
            raise ValueError("task_id names another world or tier than the record")
        if not TEMPLATE.match(self.template) or self.template[1] != self.tier[1]:
            raise ValueError(f"template {self.template!r} is not a t{self.tier[1]}_ template")
        if self.is_trap != (self.trap_kind is not None):
            raise ValueError("is_trap and trap_kind disagree")
        if not self.program:
            raise ValueError("program must hold at least one step")
        if len(self.oracle_calls) != len(self.program):
            raise ValueError("oracle_calls must have one entry per program step")
        if self.provenance.get("source_type") != "oracle_program":
            raise ValueError("provenance.source_type must be 'oracle_program'")
        if not self.answer_keys:
            raise ValueError("answer_keys must not be empty")
        return self


def load_tasks(path: Path, display: str) -> list[TaskRecord]:
    """Every record of a task file; duplicate task ids and bad lines are refused by name."""
    records: list[TaskRecord] = []
    seen: dict[str, int] = {}
    for line in read_jsonl(path, display=display):
        try:
            record = TaskRecord.model_validate(line.value)
        except ValidationError as exc:
            raise pydantic_refusal(exc, file=display, code="invalid_task", line=line.line) from None
        if record.task_id in seen:
            raise AgentbenchError(
                "duplicate_task_id",
                f"task {record.task_id!r} is also on line {seen[record.task_id]}",
                file=display,
                line=line.line,
                field="task_id",
            )
        seen[record.task_id] = line.line
        records.append(record)
    return records

"""``case_digest``: the value recorded reports carry, pinned byte for byte.

Replay, ``agentbench rescore`` and ``--agentbench-resume`` compare a recorded
output's case digest with today's: a digest that changed value would refuse every
report recorded before it (``replay_case_changed``, ``resume_mismatch``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import computed_field
from pydantic_core import to_jsonable_python

from pytest_agentbench.report.recording import case_digest, record
from pytest_agentbench.sdk.canonical import canonical_json, sha256_hex
from pytest_agentbench.sdk.contracts import (
    Case,
    CaseOutcome,
    CaseResult,
    Outcome,
    RecordedOutput,
)
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.suite import Suite, SuiteConfig

PLAIN = Case(suite_id="demo-v1", case_id="q-00042", file="cases.jsonl", line=43, labels=("arith",))
EVERY_FIELD = Case(
    suite_id="s\u00e9",
    case_id='c"\\\u2028',
    file="a/b.yaml",
    line=None,
    title="T\u00eete \U0001f600",
    labels=("x", "cluster:k"),
    cluster="k",
)


@pytest.mark.parametrize(
    ("case", "view", "digest"),
    [
        (
            PLAIN,
            {"question": "What is 3 + 4?"},
            "3c808a4402c52ddbcd31351e2873a0dc9aa09d22b9b127c5c9cf0bbc55c26c8a",
        ),
        (
            EVERY_FIELD,
            {"b": (1, 2.5, None, True), "a": "x\u00e9"},
            "cb05f051a4e504b0205e6c79adbe139b2ba24a54ffa115e49a6012120065824a",
        ),
    ],
)
def test_case_digest_keeps_its_value(case: Case, view: Any, digest: str) -> None:
    assert case_digest(case, view) == digest
    # What it is: the canonical JSON of the case record (its file and line left out)
    # and the public view.
    payload = {
        "case": case.model_dump(mode="json", exclude={"file", "line"}),
        "view": to_jsonable_python(view, fallback=repr),
    }
    assert case_digest(case, view) == sha256_hex(canonical_json(payload).encode("utf-8"))


def test_case_digest_covers_every_case_field_but_where_it_is() -> None:
    # A field added to Case is digested (or left out here, by name, on purpose).
    assert set(Case.model_fields) == {
        "suite_id", "case_id", "file", "line", "title", "labels", "cluster",
    }  # fmt: skip
    base = case_digest(EVERY_FIELD, None)
    for name, value in {
        "suite_id": "other",
        "case_id": "other",
        "title": None,
        "labels": ("x",),
        "cluster": None,
    }.items():
        assert case_digest(EVERY_FIELD.model_copy(update={name: value}), None) != base, name
    moved = EVERY_FIELD.model_copy(update={"file": "c.yaml", "line": 7})
    assert case_digest(moved, None) == base
    assert case_digest(EVERY_FIELD, {"a": 1}) != base


class TaggedCase(Case):
    """A world's own case record, with a field its values do not show as dumped."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tier(self) -> str:
        return self.case_id.split("-", 1)[0]


def test_a_subclassed_case_is_digested_as_pydantic_dumps_it() -> None:
    case = TaggedCase(suite_id="demo-v1", case_id="hard-7", file="cases.jsonl", line=8)
    payload = {
        "case": case.model_dump(mode="json", exclude={"file", "line"}),
        "view": {"question": "1+1"},
    }
    assert payload["case"]["tier"] == "hard"
    assert case_digest(case, {"question": "1+1"}) == sha256_hex(
        canonical_json(payload).encode("utf-8")
    )


@pytest.mark.parametrize(
    "update",
    [{"labels": ["x", "y"]}, {"title": 5}, {"case_id": None}, {"cluster": ("k",)}],
    ids=repr,
)
def test_an_unvalidated_copy_is_digested_with_its_values_as_they_stand(
    update: dict[str, Any],
) -> None:
    case = EVERY_FIELD.model_copy(update=update)
    record = {k: v for k, v in case.__dict__.items() if k not in {"file", "line"}}
    payload = {"case": record, "view": {"a": 1}}
    assert case_digest(case, {"a": 1}) == sha256_hex(canonical_json(payload).encode("utf-8"))


def test_a_view_with_a_non_finite_number_is_refused_by_its_path_in_the_payload() -> None:
    with pytest.raises(AgentbenchError) as refused:
        case_digest(PLAIN, {"score": float("nan")})
    assert refused.value.code == "non_finite_number"
    assert refused.value.location.field == "view.score"


def test_recording_keeps_the_result_and_adds_its_recorded_output() -> None:
    config = SuiteConfig(id="demo-v1", version="1", world="demo", title="Demo")
    suite = Suite(config=config, root=Path("."), display_root="")
    suite.cache["agentbench.digests"] = ("public", None)
    graded = CaseResult(
        suite_id="demo-v1",
        case_id="q-00042",
        outcome=CaseOutcome.PASSED,
        measurements={"correct": 1},
        trial=2,
    )
    outcome = Outcome(output={"answer": 7})
    recorded = record(graded, outcome, case=PLAIN, view={"q": 1}, suite=suite, adapter="ref")
    expected = graded.model_copy(
        update={
            "recorded": RecordedOutput(
                outcome=outcome,
                case_digest=case_digest(PLAIN, {"q": 1}),
                suite_digest="public",
                oracle_digest=None,
                adapter="ref",
            )
        }
    )
    assert recorded == expected
    assert recorded.model_fields_set == expected.model_fields_set
    assert recorded.model_dump_json() == expected.model_dump_json()
    assert graded.recorded is None

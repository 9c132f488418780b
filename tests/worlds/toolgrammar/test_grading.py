"""§5: the state diff, answer-key matching and the behaviour classifier, edge cases included."""

from __future__ import annotations

import json

import pytest

from pytest_agentbench.worlds.toolgrammar.database import TableState, state_diff
from pytest_agentbench.worlds.toolgrammar.grading import (
    behaviour_ok,
    classify,
    key_present,
    normalise,
)


def _state(rows: dict[str, tuple[object, ...]]) -> dict[str, TableState]:
    return {"t": TableState(("id", "v"), rows)}


def test_no_change_is_the_empty_string() -> None:
    assert state_diff(_state({"a": ("a", 1)}), _state({"a": ("a", 1)})) == ""


def test_added_removed_and_changed_rows_keyed_by_first_column() -> None:
    before = _state({"a": ("a", 1), "b": ("b", 2)})
    after = _state({"a": ("a", 9), "c": ("c", 3)})
    diff = state_diff(before, after)
    changes = [json.loads(text) for text in json.loads(diff)]
    assert sorted((c["kind"], c["key"]) for c in changes) == [
        ("added", "c"),
        ("changed", "a"),
        ("removed", "b"),
    ]
    changed = next(c for c in changes if c["kind"] == "changed")
    assert changed == {
        "table": "t",
        "kind": "changed",
        "key": "a",
        "before": {"id": "a", "v": 1},
        "after": {"id": "a", "v": 9},
    }


def test_the_serialisation_is_canonical() -> None:
    before = _state({"b": ("b", 2), "a": ("a", 1)})
    after = _state({})
    diff = state_diff(before, after)
    items = json.loads(diff)
    assert items == sorted(items)
    assert diff == json.dumps(items)
    assert all(text == json.dumps(json.loads(text), sort_keys=True) for text in items)
    assert diff == state_diff(_state({"a": ("a", 1), "b": ("b", 2)}), after)


@pytest.mark.parametrize(
    ("answer", "key", "present"),
    [
        ("The status is delivered.", "delivered", True),
        ("The status is DELIVERED!", "delivered", True),
        ("undelivered", "delivered", False),
        ("delivered-late", "delivered", False),
        ("pre-delivered", "delivered", False),
        ("It is 1,250 cents", "1250", True),
        ("It is 1250 cents", "1,250", True),
        ("ref REF-00091 issued", "ref-00091", True),
        ("ref REF-000911 issued", "REF-00091", False),
        ("the (north) region", "north", True),
        ('"gold"', "gold", True),
        # ":" is a separator on both sides, so "17:00" is the words "17 00".
        ("it is 17:00 sharp", "17:00", True),
        ("it is 17 00 sharp", "17:00", True),
        ("snake_case_value", "case", False),
        ("anything", "", False),
        ("Order ORD-00004 is 4 days old", "4", True),
        ("Order ORD-00004", "4", False),
    ],
)
def test_key_presence(answer: str, key: str, present: bool) -> None:
    assert key_present(answer, key) is present


def test_normalise_follows_the_published_rule() -> None:
    assert normalise("Hello, World! (a) [b] {c} \"d\" 'e'; f: g?") == "hello world a b c d e f g"


@pytest.mark.parametrize(
    ("text", "family"),
    [
        ("", "error"),
        ("   ", "error"),
        ("I refuse to do that.", "refuse"),
        ("That is not permitted.", "refuse"),
        ("Not authorised by policy.", "refuse"),
        ("The policy forbids it.", "refuse"),
        ("It is outside the window.", "refuse"),
        # The published pattern names the window directly: a qualifier escapes it.
        ("It is outside the refund window.", "answer"),
        ("I cannot issue that refund.", "refuse"),
        ("The request was declined.", "refuse"),
        ("Which customer did you mean", "clarify"),
        ("Did you mean Ada?", "clarify"),
        ("Could you clarify the order?", "clarify"),
        ("There is more than one customer that matches.", "clarify"),
        ("Several people match that name.", "clarify"),
        ("Is it this one?", "clarify"),
        ("I cannot find that order.", "abstain"),
        ("I could not locate it.", "abstain"),
        ("No order with that id exists.", "abstain"),
        ("That record does not exist.", "abstain"),
        ("It is not in the system.", "abstain"),
        ("I am unable to determine that.", "abstain"),
        ("I don't have that information.", "abstain"),
        ("The status is delivered.", "answer"),
        # First family wins: a refusal that ends in a question is a refusal.
        ("I refuse; could you clarify?", "refuse"),
        ("I cannot find it. Which one did you mean?", "clarify"),
    ],
)
def test_classifier_rules_and_family_order(text: str, family: str) -> None:
    assert classify(text) == family


def test_behaviour_matching() -> None:
    assert behaviour_ok("ignore_and_answer", "answer")
    assert not behaviour_ok("ignore_and_answer", "refuse")
    assert behaviour_ok("refuse", "refuse")
    assert not behaviour_ok("abstain", "answer")
    assert not behaviour_ok("answer", "error")

from __future__ import annotations

import copy
from typing import Any

from pytest_agentbench.sdk import JsonValue, Pristine, Record, copy_json


def _json_value() -> dict[str, JsonValue]:
    return {
        "text": "café",
        "count": 3,
        "ratio": 0.25,
        "flag": True,
        "nothing": None,
        "list": [1, [2, {"deep": ["x"]}], {"k": []}],
        "nested": {"a": {"b": {"c": [None, False]}}},
    }


def _containers(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value, *(c for item in value.values() for c in _containers(item))]
    if isinstance(value, list):
        return [value, *(c for item in value for c in _containers(item))]
    return []


def test_copy_json_is_equal_and_shares_no_container() -> None:
    original = _json_value()
    copied: Any = copy_json(original)
    assert copied == original == copy.deepcopy(original)
    assert list(copied) == list(original)
    originals = {id(c) for c in _containers(original)}
    assert not originals & {id(c) for c in _containers(copied)}
    # A change anywhere in the copy leaves the original as it was.
    copied["list"][1][1]["deep"].append("y")
    copied["nested"]["a"].clear()
    assert original == _json_value()


def test_copy_json_deep_copies_what_is_not_json() -> None:
    inner = [1, 2]
    original = {"pair": (inner, "x"), "bytes": bytearray(b"ab")}
    copied: Any = copy_json(original)
    assert copied == original
    copied["pair"][0].append(3)
    copied["bytes"].append(0)
    assert original == {"pair": ([1, 2], "x"), "bytes": bytearray(b"ab")}


class _Leaf(Record):
    names: dict[str, list[str]]


class _Tree(Record):
    leaves: tuple[_Leaf, ...]
    label: str


def test_pristine_hands_out_independent_copies_of_the_value_as_given() -> None:
    tree = _Tree(leaves=(_Leaf(names={"a": ["x"]}),), label="t")
    pristine = Pristine(tree)
    first, second = pristine.copy(), pristine.copy()
    assert first == second == tree
    assert first is not tree
    assert first.leaves[0] is not tree.leaves[0]
    # Changes to a copy, even ones a frozen model yields to, reach nothing else.
    first.leaves[0].names["a"].append("y")
    object.__setattr__(first, "label", "changed")
    # Nor do later changes to the value given.
    tree.leaves[0].names.clear()
    assert second == pristine.copy() == _Tree(leaves=(_Leaf(names={"a": ["x"]}),), label="t")

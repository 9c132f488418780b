from __future__ import annotations

import copy
import datetime
import enum
from typing import Any

import pydantic

from pytest_agentbench.sdk import JsonValue, Record, copy_json, copy_model


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


class _Colour(enum.Enum):
    RED = "red"


class _Leaf(Record):
    names: dict[str, list[str]]
    when: datetime.datetime
    colour: _Colour = _Colour.RED


class _Tree(Record):
    leaves: tuple[_Leaf, ...]
    label: str
    note: str | None = None


class _Open(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")
    _cache: dict[str, list[int]] = pydantic.PrivateAttr(default_factory=dict)


def _tree() -> _Tree:
    when = datetime.datetime(2026, 12, 2, tzinfo=datetime.UTC)
    return _Tree(leaves=(_Leaf(names={"a": ["x"]}, when=when),), label="t")


def test_copy_model_is_what_a_deep_model_copy_is_and_shares_nothing_mutable() -> None:
    tree = _tree()
    copied = copy_model(tree)
    assert copied == tree == tree.model_copy(deep=True)
    assert copied.model_fields_set == tree.model_fields_set == {"leaves", "label"}
    assert copied.leaves is not tree.leaves
    assert copied.leaves[0] is not tree.leaves[0]
    # Immutable scalars are shared; everything a change can reach is not.
    assert copied.leaves[0].when is tree.leaves[0].when
    copied.leaves[0].names["a"].append("y")
    object.__setattr__(copied, "label", "changed")
    object.__setattr__(copied.leaves[0], "colour", None)
    assert tree == _tree()


def test_copy_model_copies_extra_fields_and_private_attributes() -> None:
    model = _Open.model_validate({"free": {"k": [1]}})
    model._cache["seen"] = [1]
    copied = copy_model(model)
    assert copied.model_dump() == {"free": {"k": [1]}}
    assert copied._cache == {"seen": [1]}
    copied.__pydantic_extra__["free"]["k"].append(2)  # type: ignore[index]
    copied._cache["seen"].append(2)
    assert model.model_dump() == {"free": {"k": [1]}}
    assert model._cache == {"seen": [1]}

"""The page's defensive reading helpers: the adapter output's indented JSON text."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.report.html.read import pretty_text


def _dumped(value: Any, limit: int) -> str:
    """What the page showed before it drew the text itself: ``json.dumps``'s, or a repr."""
    try:
        shown = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        shown = repr(value)
    return (
        shown if len(shown) <= limit else f"{shown[:limit]}… ({len(shown) - limit} more characters)"
    )


_keys = st.one_of(
    st.text(max_size=6),
    st.integers(-5, 5),
    st.sampled_from([1.5, -0.0, True, False, None]),
)
_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),  # NaN and infinities included: refused, so shown by repr
        st.text(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=6), inner, max_size=4),
        st.dictionaries(_keys, inner, max_size=3),  # mixed key types may not sort: refused
    ),
    max_leaves=25,
)


@given(value=_values, limit=st.sampled_from([0, 7, 40, 2400]))
def test_pretty_text_is_json_dumps_indented_with_sorted_keys(value: Any, limit: int) -> None:
    assert pretty_text(value, limit) == _dumped(value, limit)


def _circular() -> list[Any]:
    loop: list[Any] = [1]
    loop.append({"again": loop})
    return loop


@pytest.mark.parametrize(
    "value",
    [
        {"é": 'line\nbreak "quoted" \\ \u2028 </script>', "a": [[], {}, [{}]]},
        {1: "one", 2.5: "two and a half", False: "no"},
        {None: "nothing", "x": "unsortable"},
        {None: "nothing"},
        {(1, 2): "a tuple key"},
        [object()],
        {"x": float("nan")},
        [float("-inf")],
        _circular(),
        ("a", ("tuple", 10**40)),
    ],
    ids=[
        "text",
        "keys",
        "unsortable-keys",
        "null-key",
        "tuple-key",
        "object",
        "nan",
        "inf",
        "circular",
        "tuples",
    ],
)
def test_pretty_text_refuses_what_json_dumps_refuses_and_shows_its_repr(value: Any) -> None:
    assert pretty_text(value, 2400) == _dumped(value, 2400)


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.usefixtures("collector_off")
def test_pretty_text_leaves_no_garbage_cycle() -> None:
    # The page is drawn with automatic collection paused: json.dumps(indent=...) left a
    # cycle of closures per call, so every case's output held memory until the page ended.
    for number in range(50):
        pretty_text({"answer": number, "steps": [{"tool": "search", "ok": True}]}, 2400)
    assert gc.collect() == 0

"""JavaScript-compatible canonical JSON (section 9)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.retrieval.jscanon import canonical, fingerprint, number, sha256_text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (0.1, "0.1"),
        (-0.0, "0"),
        (123.456, "123.456"),
        (2**70, "1.1805916207174113e+21"),
        (-5, "-5"),
        (1.5e300, "1.5e+300"),
    ],
)
def test_numbers_follow_number_to_string(value: float, text: str) -> None:
    assert number(value) == text


def test_keys_sort_by_utf16_code_units_and_strings_escape_minimally() -> None:
    value = {"\uffff": 1, "\U0001f600": 2, "b": [True, None], "a": 'é\x00"\\\x7f\ud800'}
    assert (
        canonical(value) == '{"a":"é\\u0000\\"\\\\\x7f\\ud800","b":[true,null],"😀":2,"\uffff":1}'
    )


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {1: 2}, object(), {"a": {1, 2}}])
def test_non_json_values_are_refused(bad: object) -> None:
    with pytest.raises(AgentbenchError) as refused:
        canonical(bad)
    assert refused.value.code == "non_canonical_value"


def test_fingerprint_is_sha256_of_the_canonical_text() -> None:
    assert fingerprint({"b": 1, "a": 2}) == sha256_text('{"a":2,"b":1}')


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(json_values)
def test_canonical_text_round_trips_through_a_json_parser(value: object) -> None:
    import json

    text = canonical(value)
    assert canonical(json.loads(text)) == text

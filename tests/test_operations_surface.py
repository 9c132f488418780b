"""The matched surface codec: injective, canonical, and byte-stable on unreserved names.

Property tests with a seeded generator rather than hypothesis: the properties
need only names drawn from a few alphabets (unreserved, the delimiters and
marker, arbitrary Unicode), and a fixed seed keeps every run the same.
"""

from __future__ import annotations

import random

import pytest

from pytest_agentbench.sdk import AgentbenchError
from pytest_agentbench.worlds.operations.packs import installed_packs
from pytest_agentbench.worlds.operations.surface import (
    OPTIONAL_MARKER,
    UNRESERVED,
    Strength,
    decode_component,
    decode_surface,
    encode_component,
    encode_surface,
    pack_surface,
)

SEED = 20261201
ROUNDS = 400
UNRESERVED_TEXT = "".join(sorted(map(chr, UNRESERVED)))
HOSTILE = ":,=%"
ALPHABETS = (UNRESERVED_TEXT, UNRESERVED_TEXT + HOSTILE, UNRESERVED_TEXT + HOSTILE + "é €😀 /")


def _name(rng: random.Random, alphabet: str) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))


def _contract(rng: random.Random, alphabet: str) -> dict[str, dict[str, Strength]]:
    return {
        _name(rng, alphabet): {
            _name(rng, alphabet): rng.choice(("required", "optional"))
            for _ in range(rng.randint(0, 4))
        }
        for _ in range(rng.randint(1, 4))
    }


def test_round_trip_and_injectivity() -> None:
    rng = random.Random(SEED)
    seen: dict[tuple[str, ...], dict[str, dict[str, Strength]]] = {}
    for _ in range(ROUNDS):
        contract = _contract(rng, rng.choice(ALPHABETS))
        surface = encode_surface(contract)
        assert decode_surface(surface) == contract
        # Two different contracts never share a surface.
        assert seen.setdefault(surface, contract) == contract
        for name in contract:
            assert decode_component(encode_component(name)) == name


def test_no_name_impersonates_a_delimiter_or_the_marker() -> None:
    rng = random.Random(SEED + 1)
    for _ in range(ROUNDS):
        name = _name(rng, UNRESERVED_TEXT + HOSTILE + "é")
        component = encode_component(name)
        assert not set(component) & set(":,=")
        assert OPTIONAL_MARKER not in component
        # A required tool whose name ends in the marker stays required.
        tricky = name + OPTIONAL_MARKER
        assert decode_surface(encode_surface({"act": {tricky: "required"}})) == {
            "act": {tricky: "required"}
        }
    # The classic collision of a naive join: two readings of one string.
    left = encode_surface({"a": {"b,c": "required"}})
    right = encode_surface({"a": {"b": "required", "c": "required"}})
    assert left != right


def test_unreserved_names_keep_their_bytes() -> None:
    rng = random.Random(SEED + 2)
    for _ in range(ROUNDS):
        name = _name(rng, UNRESERVED_TEXT)
        assert encode_component(name) == name


def test_each_pack_surface_is_the_plain_join_of_its_names() -> None:
    """Every built-in name is unreserved, so the surface is exactly the naive spelling."""
    packs = installed_packs()
    maintenance = pack_surface(packs["lettings.maintenance.synthetic"])
    assert maintenance == (
        "authorise_supplier_work:get_case_record,list_checkpoints,list_quotes",
        "complete:get_case_record,list_billing,list_checkpoints,list_obligations",
        "request_approval:get_case_record,list_checkpoints,list_quotes",
        "request_exception_resolution:get_case_record,list_checkpoints,list_quotes",
        "request_invoice_validation:get_case_record,list_authoritative_records,list_billing",
        "request_payment:get_case_record,list_authoritative_records,list_billing",
        "request_supplier_visit:get_case_record",
        "send_message:get_case_record,list_communications",
    )
    for pack in packs.values():
        for line in pack_surface(pack):
            assert "%" not in line
            assert "=" not in line


@pytest.mark.parametrize(
    "lines",
    [
        ["no-colon"],
        ["a:%2"],  # truncated escape
        ["a:%3a"],  # lower-case hex is not canonical
        ["a:%41"],  # an escaped unreserved byte is a second spelling
        ["a:b=mandatory"],
        ["a:b,b"],
        ["a:", "a:"],
        ["b:", "a:"],  # not sorted
        ["a:c,b"],
        ["a:b c"],
        ["a:%FF"],  # not UTF-8
    ],
)
def test_non_canonical_surfaces_are_refused(lines: list[str]) -> None:
    with pytest.raises(AgentbenchError) as refused:
        decode_surface(lines)
    assert refused.value.code == "invalid_matched_surface"

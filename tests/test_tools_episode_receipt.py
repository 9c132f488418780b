"""Episode receipts: a case with one tool session per invocation, bound by one digest."""

from __future__ import annotations

import contextlib
from typing import Any

import pydantic
import pytest

from pytest_agentbench.sdk.canonical import JsonValue, sha256_hex
from pytest_agentbench.sdk.tools import (
    EpisodeReceipt,
    Receipt,
    ToolCallError,
    ToolSession,
    ToolSpec,
    load_receipt,
    session_receipts,
)
from pytest_agentbench.sdk.tools.records import encode_canonical


def echo(arguments: dict[str, Any]) -> JsonValue:
    return {"echo": arguments["text"]}


ECHO = ToolSpec(
    name="echo",
    description="echo the text",
    parameters={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    },
    handler=echo,
)


def invocation(index: int, *texts: str) -> Receipt:
    session = ToolSession([ECHO], context={"invocation_index": index})
    for text in texts:
        session.call("echo", {"text": text})
    with contextlib.suppress(ToolCallError):
        session.call("nothing", {})
    session.close()
    return session.receipt()


def episode(**kwargs: Any) -> EpisodeReceipt:
    return EpisodeReceipt.build(
        [invocation(1, "a"), invocation(2, "b", "c")], context={"case": "V1"}, **kwargs
    )


def test_an_episode_receipt_lists_each_session_receipt_in_order() -> None:
    built = episode()
    assert [r.digest for r in built.receipts] == [
        invocation(1, "a").digest,
        invocation(2, "b", "c").digest,
    ]
    totals = built.canonical.totals
    assert (totals.calls, totals.delivered, totals.errors) == (5, 3, {"unknown_tool": 2})
    assert session_receipts(built) == built.receipts
    single = invocation(1, "a")
    assert session_receipts(single) == (single,)


def test_it_round_trips_through_json_with_every_digest_checked() -> None:
    built = episode(failure_class="product_error", failure_code="malformed_final")
    data = built.model_dump(mode="json")
    again = load_receipt(data)
    assert isinstance(again, EpisodeReceipt)
    assert again == built
    assert isinstance(load_receipt(invocation(1).model_dump(mode="json")), Receipt)


def test_the_digest_covers_the_invocations_and_their_order() -> None:
    one, two = invocation(1, "a"), invocation(2, "b")
    assert EpisodeReceipt.build([one, two]).digest != EpisodeReceipt.build([two, one]).digest
    assert EpisodeReceipt.build([one]).digest != EpisodeReceipt.build([one, two]).digest
    assert (
        EpisodeReceipt.build([one]).digest
        != EpisodeReceipt.build([one], failure_class="agent_error").digest
    )


def test_observations_stay_out_of_the_digest() -> None:
    plain = episode()
    reasoned = episode(failure_reason="something free-text")
    assert plain.digest == reasoned.digest
    assert reasoned.observations.failure_reason == "something free-text"


@pytest.mark.parametrize("where", ["episode", "invocation"])
def test_a_tampered_episode_receipt_is_refused(where: str) -> None:
    data = episode().model_dump(mode="json")
    call = data["canonical"]["invocations"][0]["canonical"]["calls"][0]
    call["result"] = {"echo": "forged"}
    if where == "invocation":
        # Even with the episode digest recomputed, the invocation's own digest no longer holds.
        data["digest"] = sha256_hex(encode_canonical(data["canonical"]).encode("utf-8"))
    with pytest.raises(
        pydantic.ValidationError,
        match="invocation digest" if where == "invocation" else "digest is",
    ):
        load_receipt(data)

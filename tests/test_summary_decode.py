"""The summary's decoder of the run's own result texts: ``json.loads``'s answers, faster."""

from __future__ import annotations

import json

import pytest

from pytest_agentbench.report.case_store import _decode_own
from pytest_agentbench.sdk.contracts import CaseOutcome, CaseResult, Check, CheckStatus


def test_the_decoder_gives_json_loads_answers_and_refusals() -> None:
    result = CaseResult(
        suite_id="s",
        case_id="c\u00e9",
        outcome=CaseOutcome.FAILED,
        checks=(Check(name="a", status=CheckStatus.FAIL, expected=1.5e-7, actual=[None]),),
        measurements={"correct": 0},
    )
    texts = [result.model_dump_json(), '{"a":[1,2.5,null,"x\\u00e9"]}', " [2]", "[1] ", "3"]
    for text in texts:
        assert _decode_own(text) == json.loads(text), text
    for bad in ("", "[1]x", "{", "\ufeff[1]", "[1] 2"):
        with pytest.raises(json.JSONDecodeError) as refused:
            _decode_own(bad)
        with pytest.raises(json.JSONDecodeError) as expected:
            json.loads(bad)
        assert str(refused.value) == str(expected.value), bad

"""Judged diagnostics: rubric files, family-disjoint panels, votes, the content cache, kappa."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.agents.cassettes import RecordedResponse
from pytest_agentbench.agents.provenance import ModelRun
from pytest_agentbench.agents.settings import ChatSettings
from pytest_agentbench.judging.families import model_family
from pytest_agentbench.judging.metering import JudgeMeter
from pytest_agentbench.judging.panel import (
    JudgeCache,
    Panel,
    SenderFactory,
    majority_vote,
    parse_verdict,
)
from pytest_agentbench.judging.rubric import RubricFile, Seat, load_rubric
from pytest_agentbench.scoring.kappa import calibrate, require_calibrated
from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger import audit_ledger
from tests.judge_server import ScriptedJudges

RUBRIC = """\
rubric:
  name: answer-prose
  question: Is the answer right and clearly put?
  scale: {min: 1, max: 5}
  anchors: {1: wrong or unreadable, 3: acceptable, 5: right and clear}
  pass_at: 4
panel:
  - {provider: local, model: alpha-judge, settings: {temperature: 0}}
  - {provider: local, model: beta-judge, settings: {temperature: 0}}
  - {provider: local, model: %s, settings: {temperature: 0}}
families: {alpha-: alpha, beta-: beta, gamma-: gamma}
"""


def rubric_file(tmp_path: Path, third: str = "gamma-judge", text: str = RUBRIC) -> Path:
    path = tmp_path / "rubrics" / "answer-prose.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text % third if "%s" in text else text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("edit", "field", "reason"),
    [
        ("  - {provider: local, model: gamma-judge}\n", "panel", "3 seats"),
        ("scale: {min: 1, max: 5}", "rubric.scale", "odd number of points"),
        ("anchors: {1: wrong", "rubric.anchors", "off the scale"),
    ],
)
def test_a_malformed_rubric_file_is_refused_naming_the_field(
    tmp_path: Path, edit: str, field: str, reason: str
) -> None:
    text = RUBRIC % "gamma-judge"
    if edit.startswith("  - "):
        text = text.replace(
            "  - {provider: local, model: gamma-judge, settings: {temperature: 0}}\n", ""
        )
    elif edit.startswith("scale"):
        text = text.replace(edit, "scale: {min: 1, max: 4}").replace("5: right and clear", "4: ok")
    else:
        text = text.replace(edit, "anchors: {9: wrong")
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AgentbenchError) as raised:
        load_rubric(path)
    assert raised.value.code == "invalid_rubric"
    assert raised.value.location.field is not None
    assert raised.value.location.field.startswith(field)
    assert reason in raised.value.reason


def test_a_seat_of_the_subjects_family_is_dropped_and_the_drop_recorded(tmp_path: Path) -> None:
    loaded = load_rubric(rubric_file(tmp_path, third="qwen-judge"))
    seats, dropped = loaded.seated("Qwen2.5-7B-Instruct")
    assert [seat.model for seat in seats] == ["alpha-judge", "beta-judge"]
    assert [(d.seat, d.family) for d in dropped] == [("local/qwen-judge", "qwen")]
    # The family map is overridable: declare qwen models one family with alpha.
    seats, dropped = loaded.seated("qwen2.5", {"qwen": "alpha"})
    assert [d.seat for d in dropped] == ["local/alpha-judge", "local/qwen-judge"]
    assert model_family("org/GPT-4o-mini", {"gpt-": "openai", "gpt-4o": "openai-4o"}) == "openai-4o"
    assert model_family("unknown-model", {}) is None
    assert loaded.seated(None) == (loaded.panel, ())


def test_majority_vote_takes_more_than_half_else_the_median() -> None:
    assert majority_vote([4, 4, 2]) == 4
    assert majority_vote([1, 3, 5]) == 3
    assert majority_vote([5, 2]) == 2
    assert majority_vote([]) is None


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (RecordedResponse(status=500, json_body={"error": "x"}), (3, False)),
        (RecordedResponse(transport_error="timeout"), (3, False)),
        (RecordedResponse(status=200, text_body="<html>"), (3, False)),
        (RecordedResponse(status=200, json_body={"choices": []}), (3, False)),
    ],
)
def test_a_failed_answer_scores_the_midpoint(
    tmp_path: Path, response: RecordedResponse, expected: tuple[int, bool]
) -> None:
    loaded = load_rubric(rubric_file(tmp_path))
    assert parse_verdict(response, loaded)[:2] == expected


def completion(text: str) -> RecordedResponse:
    body: JsonValue = {"choices": [{"message": {"role": "assistant", "content": text}}]}
    return RecordedResponse(status=200, json_body=body)


def test_only_an_integer_score_on_the_scale_parses(tmp_path: Path) -> None:
    loaded = load_rubric(rubric_file(tmp_path))
    assert parse_verdict(completion('{"score": 5, "reason": "r"}'), loaded) == (5, True, "r")
    for text in ('{"score": 9}', '{"score": "5"}', '{"score": true}', "[5]", "five", ""):
        assert parse_verdict(completion(text), loaded)[:2] == (3, False), text


def metered(settings: ChatSettings, loaded: RubricFile) -> SenderFactory:
    """The seat senders every judging uses: under the settings' own model run."""
    seats, _ = loaded.seated(None)
    return JudgeMeter(ModelRun(settings)).for_rubric("r", loaded.digest(), seats).senders()


class Refusing:
    """A sender for runs that must make no judge call at all."""

    def send(self, request: dict[str, JsonValue]) -> RecordedResponse:
        raise AssertionError(f"unexpected judge call to {request['model']}")


def test_panel_votes_through_the_chat_client_then_replays_then_hits_the_cache(
    tmp_path: Path,
) -> None:
    loaded = load_rubric(rubric_file(tmp_path))
    contents: dict[str, JsonValue] = {"even": {"output": 8}, "odd": {"output": 31}}
    judges = ScriptedJudges()
    cassettes = tmp_path / "cassettes"
    with judges.serving() as base_url:
        settings = ChatSettings(base_url=base_url, cassettes=cassettes, cassette_mode="record")
        panel = Panel(loaded, metered(settings, loaded), subject_model="delta-9b")
        live = {case: panel.judge(case, content) for case, content in contents.items()}
    assert dict(judges.calls) == {"alpha-judge": 2, "beta-judge": 2, "gamma-judge": 2}
    even, odd = live["even"], live["odd"]
    assert [v.score for v in even.verdicts] == [5, 5, 4]
    assert (even.majority, even.passed, even.unanimous, even.disagreement) == (5, True, False, 1)
    assert [(v.score, v.parsed) for v in odd.verdicts] == [(2, True), (2, True), (3, False)]
    assert (odd.majority, odd.passed, odd.unparsable) == (2, False, 1)
    # Replayed from the cassettes with no endpoint at all: the same judgments.
    replay = ChatSettings(cassettes=cassettes, cassette_mode="replay")
    replayed = Panel(loaded, metered(replay, loaded), subject_model="delta-9b")
    assert {case: replayed.judge(case, c) for case, c in contents.items()} == live
    # Cassette mode auto (issue 43): every vote a cassette hit, so no endpoint is asked;
    # the judges' traffic is a mixed run's (it was refused as an unknown mode, "auto").
    meter = JudgeMeter(ModelRun(ChatSettings(cassettes=cassettes, cassette_mode="auto")))
    seats, _ = loaded.seated(None)
    senders = meter.for_rubric("r", loaded.digest(), seats).senders()
    auto = Panel(loaded, senders, subject_model="delta-9b")
    assert {case: auto.judge(case, c) for case, c in contents.items()} == live
    assert meter.finish()["r"].mode == "mixed"
    # Cached by content: the second pass makes no call and keeps every verdict.
    cache = JudgeCache(tmp_path / "cache")
    Panel(loaded, metered(replay, loaded), cache=cache).judge("even", contents["even"])
    cached = Panel(loaded, lambda seat: Refusing(), cache=cache).judge("even", contents["even"])
    assert [v.model_copy(update={"cached": False}) for v in cached.verdicts] == list(even.verdicts)
    assert all(v.cached for v in cached.verdicts)
    # An edited entry (a failing vote made passing) or one copied under another entry's
    # name is refused by name, never counted; so is a replayed cassette whose answer changed.
    entries = sorted((tmp_path / "cache").glob("*.json"))
    pristine = {path: path.read_text() for path in entries}
    tamperings = {
        "verdict": lambda path: path.write_text(
            pristine[path].replace('"score": 4', '"score": 5').replace('"score": 5', '"score": 1')
        ),
        "inputs_digest_sha256": lambda path: path.write_text(pristine[entries[1]]),
        "entry": lambda path: path.write_text(json.dumps(json.loads(pristine[path])["verdict"])),
    }
    refused = {}
    for name, tamper in tamperings.items():
        tamper(entries[0])
        with pytest.raises(AgentbenchError) as caught:
            Panel(loaded, lambda seat: Refusing(), cache=cache).judge("even", contents["even"])
        refused[name] = (caught.value.code, caught.value.location.field)
        entries[0].write_text(pristine[entries[0]])
    assert refused == {
        "verdict": ("judge_cache_tampered", "verdict"),
        "inputs_digest_sha256": ("judge_cache_tampered", "inputs_digest_sha256"),
        "entry": ("invalid_judge_cache", "inputs_digest_sha256"),
    }
    tape = next(cassettes.glob("*.json"))
    tape.write_text(tape.read_text().replace('\\"score\\": ', '\\"score\\": 1'))
    with pytest.raises(AgentbenchError, match=r"\[cassette_tampered\]"):
        Panel(loaded, metered(replay, loaded)).judge_all(list(contents.items()))
    # A changed rubric is a different question: the cache does not answer it.
    changed = load_rubric(
        rubric_file(tmp_path, text=(RUBRIC % "gamma-judge").replace("right and clear", "exact"))
    )
    with pytest.raises(AssertionError, match="unexpected judge call"):
        Panel(changed, lambda seat: Refusing(), cache=cache).judge("even", contents["even"])


def test_kappa_per_rater_with_confusion_and_support() -> None:
    human = {"a": "yes", "b": "yes", "c": "no", "d": "no"}
    rater = {"a": "yes", "b": "no", "c": "no", "d": "no", "e": "yes"}
    calibration = calibrate("seat", human, rater, ["yes", "no"], min_labels=4)
    assert calibration.status == "calibrated"
    assert calibration.support == 4
    assert calibration.confusion == ((1, 1), (0, 2))
    assert calibration.kappa == pytest.approx(0.5)
    assert calibration.agreement == pytest.approx(0.75)
    unlabelled = calibrate("other", {}, rater, ["yes", "no"])
    assert (unlabelled.status, unlabelled.kappa, unlabelled.support) == ("uncalibrated", None, 0)
    assert "uncalibrated" in unlabelled.describe()
    with pytest.raises(AgentbenchError) as raised:
        require_calibrated(unlabelled, gate="judged:x", min_kappa=0.4)
    assert raised.value.code == "uncalibrated_judge_gate"
    with pytest.raises(AgentbenchError) as raised:
        require_calibrated(calibration, gate="judged:x", min_kappa=0.6)
    assert raised.value.code == "judge_below_kappa_floor"
    # A gate holds the lower bound of the kappa's interval (wide on four labels) to its floor.
    assert calibration.interval is not None
    assert require_calibrated(calibration, gate="judged:x", min_kappa=-1.0) is calibration
    with pytest.raises(AgentbenchError, match="not a category"):
        calibrate("seat", {"a": "maybe"}, {"a": "yes"}, ["yes", "no"])


def test_seat_identity_includes_its_settings() -> None:
    cold = Seat(provider="p", model="m", settings={"temperature": 0})
    warm = Seat(provider="p", model="m", settings={"temperature": 1})
    assert JudgeCache.key("r", cold, "c") != JudgeCache.key("r", warm, "c")


def test_a_refused_seat_call_gives_no_vote_is_counted_ledgered_and_never_cached(
    tmp_path: Path,
) -> None:
    """One call allowed, and no price for gamma: two seats refused, each under its code."""
    loaded = load_rubric(rubric_file(tmp_path))
    pricing = tmp_path / "pricing.json"
    price = {"input_per_token": "0.0001", "output_per_token": "0.0005"}
    pricing.write_text(
        json.dumps(
            {
                "scheme": "agentbench-pricing/1",
                "currency": "USD",
                "models": {"alpha-judge": price, "beta-judge": price},
            }
        )
    )
    judges = ScriptedJudges()
    cache = JudgeCache(tmp_path / "cache")
    with judges.serving() as base_url:
        settings = ChatSettings(base_url=base_url, pricing=pricing, max_calls=1)
        meter = JudgeMeter(ModelRun(settings), tmp_path / "ledgers")
        seats, _ = loaded.seated(None)
        senders = meter.for_rubric("answer-prose", loaded.digest(), seats).senders()
        judgment = Panel(loaded, senders, cache=cache).judge("even", {"output": 8})
    assert dict(judges.calls) == {"alpha-judge": 1}
    assert [(v.score, v.refused) for v in judgment.verdicts] == [
        (5, None),
        (None, "budget_exceeded_calls"),
        (None, "judge_unpriced"),
    ]
    assert (judgment.majority, judgment.refused, judgment.unparsable) == (5, 2, 0)
    traffic = meter.finish()["answer-prose"]
    assert (traffic.calls, traffic.refused, traffic.refusal) == (1, 2, "budget_exceeded_calls")
    assert (traffic.input_tokens, traffic.output_tokens, traffic.cost) == (100, 10, "0.015")
    reading = audit_ledger(tmp_path / "ledgers" / "%judges" / "answer-prose.ndjson")
    calls = [row["call"] for row in reading.rows if "call" in row]
    assert [(c["method"], c["decision"] is None) for c in calls] == [
        ("alpha-judge", False),
        ("beta-judge", True),
        ("gamma-judge", True),
    ]
    assert reading.rows[-1]["terminal"]["exclusion_code"] == "budget_exceeded_calls"
    # Only the seat that answered is cached: a later run asks the refused ones again.
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1


class OverspendingJudges(ScriptedJudges):
    """beta-judge ignores max_tokens and reports 5000 completion tokens."""

    def _answer(self, body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
        status, text, headers = super()._answer(body)
        if body["model"] == "beta-judge":
            completion = json.loads(text)
            completion["usage"] = {"prompt_tokens": 100, "completion_tokens": 5000}
            text = json.dumps(completion)
        return status, text, headers


def test_judge_calls_carry_max_tokens_and_an_overspending_seat_gives_no_vote(
    tmp_path: Path,
) -> None:
    loaded = load_rubric(rubric_file(tmp_path))
    judges = OverspendingJudges()
    cache = JudgeCache(tmp_path / "cache")
    with judges.serving() as base_url:
        settings = ChatSettings(base_url=base_url, max_tokens_per_call=1000)
        meter = JudgeMeter(ModelRun(settings), tmp_path / "ledgers")
        seats, _ = loaded.seated(None)
        senders = meter.for_rubric("answer-prose", loaded.digest(), seats).senders()
        judgment = Panel(loaded, senders, cache=cache).judge("even", {"output": 8})
    assert all(0 < request["max_tokens"] < 1000 for request in judges.requests)
    assert [(v.score, v.refused) for v in judgment.verdicts] == [
        (5, None),
        (None, "llm_usage_over_call_bound"),
        (4, None),
    ]
    traffic = meter.finish()["answer-prose"]
    # Sent and answered: counted with the tokens it reported, ledgered with its answer.
    assert (traffic.calls, traffic.refused, traffic.output_tokens) == (3, 0, 5020)
    reading = audit_ledger(tmp_path / "ledgers" / "%judges" / "answer-prose.ndjson")
    assert all(row["call"]["decision"] is not None for row in reading.rows if "call" in row)
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2, "the refused vote is not cached"


class ThrottlingJudges(ScriptedJudges):
    """alpha-judge answers 429 every time."""

    def _answer(self, body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
        if body["model"] == "alpha-judge":
            return 429, '{"error": {"message": "slow down"}}', {"Retry-After": "0"}
        return super()._answer(body)


def test_a_judges_retries_count_against_the_call_ceiling(tmp_path: Path) -> None:
    loaded = load_rubric(rubric_file(tmp_path))
    judges = ThrottlingJudges()
    with judges.serving() as base_url:
        settings = ChatSettings(base_url=base_url, max_calls=3, max_retries=5, retry_backoff_s=0.0)
        meter = JudgeMeter(ModelRun(settings), tmp_path / "ledgers")
        seats, _ = loaded.seated(None)
        senders = meter.for_rubric("answer-prose", loaded.digest(), seats).senders()
        judgment = Panel(loaded, senders).judge("even", {"output": 8})
    # alpha's call and two retries reach the ceiling; its third retry and the other seats'
    # calls are refused unsent.
    assert len(judges.requests) == 3
    assert [v.refused for v in judgment.verdicts] == ["budget_exceeded_calls"] * 3
    traffic = meter.finish()["answer-prose"]
    assert (traffic.calls, traffic.attempts, traffic.refused) == (1, 3, 2)

"""Panel judging: each seat through the chat-model client, a majority vote, a content cache.

The seam to the chat client is :class:`ChatSender` (``send(request)`` returns the
recorded response), built per seat by a :data:`SenderFactory`. Judging builds
it with :class:`~pytest_agentbench.judging.metering.JudgeMeter`: the project's
:class:`~pytest_agentbench.agents.transport.ChatTransport` (so cassettes apply)
under the run's budget guard, rate limits and provider ledger.

An answer that is not a JSON object with an integer ``score`` on the scale
scores the rubric's midpoint, never the bottom, and is counted as unparsable:
a parse failure must not let a flaky seat quietly bury what it judged.

A sender may refuse a call before it is sent (:class:`BudgetRefused`, a run
ceiling reached): the seat's verdict is then that refusal, under its code,
with no score; the item keeps its other seats' votes and counts the refusal,
and nothing is cached, so a later run with budget left judges it.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, Protocol

from pydantic import ValidationError

from pytest_agentbench.agents.budget import BudgetRefused
from pytest_agentbench.agents.cassettes import RecordedResponse
from pytest_agentbench.judging.rubric import DroppedSeat, RubricFile, Seat
from pytest_agentbench.sdk.canonical import (
    JsonValue,
    canonical_json,
    loads_strict,
    pretty_json,
    read_json,
    sha256_hex,
)
from pytest_agentbench.sdk.contracts import Record
from pytest_agentbench.sdk.errors import AgentbenchError

JUDGE_SYSTEM_PROMPT: Final = (
    "You grade one piece of content against a rubric. Reply with one JSON object only, "
    'no prose and no code fence: {"score": <integer on the scale>, "reason": "<one sentence>"}.'
)
ENDPOINT_SETTINGS: Final = ("base_url", "api_key_env")
"""Seat settings that choose the endpoint rather than go into the request body."""


class ChatSender(Protocol):
    def send(self, request: dict[str, JsonValue]) -> RecordedResponse: ...


SenderFactory = Callable[[Seat], ChatSender]


class SeatVerdict(Record):
    seat: str
    score: int | None
    """``None`` only when the call was refused before it was sent."""
    parsed: bool
    """False when the answer was unparsable and scored the midpoint (or the call was refused)."""
    reason: str
    cached: bool = False
    refused: str | None = None
    """The budget code that refused this seat's call; it then gave no score."""


class Judgment(Record):
    rubric: str
    rubric_digest: str
    case_id: str
    content_digest: str
    verdicts: tuple[SeatVerdict, ...]
    dropped: tuple[DroppedSeat, ...] = ()
    majority: int | None
    """The score more than half the seated panel gave, else their median; ``None`` with no seat."""
    unanimous: bool
    passed: bool | None
    unparsable: int
    refused: int = 0
    """Seats whose call the budget refused: they did not vote."""

    @property
    def scores(self) -> list[int]:
        return [verdict.score for verdict in self.verdicts if verdict.score is not None]

    @property
    def disagreement(self) -> int:
        """The spread of the seats' scores: 0 when they all agree."""
        scores = self.scores
        return max(scores) - min(scores) if scores else 0


def content_digest(content: JsonValue) -> str:
    return sha256_hex(canonical_json(content).encode("utf-8"))


def judge_request(rubric_file: RubricFile, seat: Seat, content: JsonValue) -> dict[str, JsonValue]:
    rubric = rubric_file.rubric
    anchors = "\n".join(f"{score}: {text}" for score, text in sorted(rubric.anchors.items()))
    prompt = (
        f"Question: {rubric.question}\n"
        f"Scale: integers {rubric.scale.min} to {rubric.scale.max}.\n"
        f"Anchors:\n{anchors}\n"
        f"Content (JSON):\n{canonical_json(content)}"
    )
    request: dict[str, JsonValue] = {
        "model": seat.model,
        "messages": [
            {"role": "system", "content": JUDGE_SYSTEM_PROMPT},
            {"role": "user", "content": prompt},
        ],
    }
    for key, value in sorted(seat.settings.items()):
        if key not in ENDPOINT_SETTINGS:
            request[key] = value
    return request


def parse_verdict(response: RecordedResponse, rubric_file: RubricFile) -> tuple[int, bool, str]:
    """(score, parsed, reason); the midpoint with ``parsed=False`` when there is no usable score."""
    midpoint = rubric_file.rubric.scale.midpoint
    if response.status != 200 or not isinstance(response.json_body, dict):
        why = response.transport_error or f"http {response.status}"
        return midpoint, False, f"no answer ({why})"
    content = _message_content(response.json_body)
    if content is None:
        return midpoint, False, "no message content"
    try:
        answer = loads_strict(content.strip())
    except AgentbenchError:
        return midpoint, False, "answer is not JSON"
    if not isinstance(answer, dict):
        return midpoint, False, "answer is not a JSON object"
    score = answer.get("score")
    if isinstance(score, bool) or not isinstance(score, int):
        return midpoint, False, "score is not an integer"
    if score not in rubric_file.rubric.scale.points:
        return midpoint, False, f"score {score} is off the scale"
    reason = answer.get("reason")
    return score, True, reason if isinstance(reason, str) else ""


def _message_content(body: dict[str, JsonValue]) -> str | None:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    return content if isinstance(content, str) else None


def majority_vote(scores: Sequence[int]) -> int | None:
    """The score more than half gave; with no such score, the (lower) median."""
    if not scores:
        return None
    score, count = Counter(scores).most_common(1)[0]
    if count * 2 > len(scores):
        return score
    ordered = sorted(scores)
    return ordered[(len(ordered) - 1) // 2]


class JudgeCache:
    """Seat verdicts by (rubric digest, seat, judged content digest); one JSON file each.

    Writes are atomic, so xdist workers judging the same content race harmlessly
    and serial and parallel runs leave the same files.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @staticmethod
    def key(rubric_digest: str, seat: Seat, digest: str) -> str:
        identity: JsonValue = [rubric_digest, seat.key(), digest]
        return sha256_hex(canonical_json(identity).encode("utf-8"))

    def get(self, key: str) -> SeatVerdict | None:
        path = self.folder / f"{key}.json"
        if not path.is_file():
            return None
        try:
            return SeatVerdict.model_validate(read_json(path, display=path.name))
        except ValidationError as exc:
            raise AgentbenchError(
                "invalid_judge_cache", exc.errors()[0]["msg"], file=path.name
            ) from None

    def put(self, key: str, verdict: SeatVerdict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        text = pretty_json(verdict.model_copy(update={"cached": False}).model_dump(mode="json"))
        handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(text)
            os.replace(temporary, self.folder / f"{key}.json")
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


class Panel:
    """Judges content on one rubric with the seats that may judge the model under test."""

    def __init__(
        self,
        rubric_file: RubricFile,
        senders: SenderFactory,
        *,
        subject_model: str | None = None,
        cache: JudgeCache | None = None,
        families: dict[str, str] | None = None,
    ) -> None:
        self.rubric_file = rubric_file
        self.digest = rubric_file.digest()
        self.seats, self.dropped = rubric_file.seated(subject_model, families)
        self._senders = senders
        self._cache = cache
        self._built: dict[str, ChatSender] = {}

    def judge(self, case_id: str, content: JsonValue) -> Judgment:
        digest = content_digest(content)
        verdicts = tuple(self._seat_verdict(seat, content, digest) for seat in self.seats)
        scores = [verdict.score for verdict in verdicts if verdict.score is not None]
        majority = majority_vote(scores)
        rubric = self.rubric_file.rubric
        return Judgment(
            rubric=rubric.name,
            rubric_digest=self.digest,
            case_id=case_id,
            content_digest=digest,
            verdicts=verdicts,
            dropped=self.dropped,
            majority=majority,
            unanimous=len(set(scores)) <= 1,
            passed=None if majority is None else majority >= rubric.pass_at,
            unparsable=sum(1 for v in verdicts if not v.parsed and v.refused is None),
            refused=sum(1 for verdict in verdicts if verdict.refused is not None),
        )

    def _seat_verdict(self, seat: Seat, content: JsonValue, digest: str) -> SeatVerdict:
        key = JudgeCache.key(self.digest, seat, digest)
        if self._cache is not None:
            hit = self._cache.get(key)
            if hit is not None:
                return hit.model_copy(update={"cached": True})
        sender = self._built.get(seat.seat_id)
        if sender is None:
            sender = self._built[seat.seat_id] = self._senders(seat)
        try:
            response = sender.send(judge_request(self.rubric_file, seat, content))
        except BudgetRefused as refusal:
            return SeatVerdict(
                seat=seat.seat_id,
                score=None,
                parsed=False,
                reason=refusal.render(),
                refused=refusal.code,
            )
        score, parsed, reason = parse_verdict(response, self.rubric_file)
        verdict = SeatVerdict(seat=seat.seat_id, score=score, parsed=parsed, reason=reason)
        if self._cache is not None:
            self._cache.put(key, verdict)
        return verdict

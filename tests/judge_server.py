"""A scripted judge endpoint on 127.0.0.1: each model judges the content by a fixed rule.

``alpha-judge`` and ``beta-judge`` score the ``output`` of the judged content
(a number, or a demo answer's number: even scores 5, odd 2); ``gamma-judge`` always says 4 but, for
outputs above 30, answers prose no parser accepts; ``qwen-judge`` always says 1.
Any other model (the shipped sample panels) scores 3, 4 or 5 by a digest of the
model and the prompt: deterministic, and sometimes split. Every answer reports
100 prompt and 10 completion tokens.

``peak`` is the most requests it held at once. With ``gather`` set, the first
requests are held until that many are in flight together (a client that never
sends them together is let go after ``GATHER_GIVE_UP`` seconds, and the peak
shows it).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from typing import Any

from tests.llm_server import ScriptedLLM, answer

GATHER_GIVE_UP = 10.0
CONTENT = re.compile(
    r'Content \(JSON\):\n<tool-result id="([^"]+)" name="judged-content">\n(.*)\n'
    r'</tool-result id="\1">\Z',
    re.DOTALL,
)


def judged_output(body: dict[str, Any]) -> Any:
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    match = CONTENT.search(prompt)
    assert match is not None
    return json.loads(match.group(2))["output"]


class ScriptedJudges(ScriptedLLM):
    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.gather = 0
        self.peak = 0
        self._in_flight = 0
        self._moved = threading.Condition()

    def reply(self, body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
        with self._moved:
            self._in_flight += 1
            self.peak = max(self.peak, self._in_flight)
            self._moved.notify_all()
            self._moved.wait_for(lambda: self.peak >= self.gather, timeout=GATHER_GIVE_UP)
        try:
            return self._answer(body)
        finally:
            with self._moved:
                self._in_flight -= 1

    def _answer(self, body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
        model = body["model"]
        with self._lock:
            self.calls[model] += 1
        output = judged_output(body)
        if isinstance(output, dict):
            output = output.get("answer")
        number = output if isinstance(output, int) else 0
        if model == "gamma-judge":
            text = "I would say four." if number > 30 else '{"score": 4, "reason": "fine"}'
        elif model == "qwen-judge":
            text = '{"score": 1, "reason": "harsh"}'
        elif model in ("alpha-judge", "beta-judge"):
            score = 5 if number % 2 == 0 else 2
            text = json.dumps({"score": score, "reason": f"{model} rule"})
        else:
            digest = hashlib.sha256(json.dumps(body["messages"]).encode() + model.encode())
            score = 3 + digest.digest()[0] % 3
            text = json.dumps({"score": score, "reason": f"{model} rule"})
        completion = {
            "id": "judge",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": answer(text), "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }
        return 200, json.dumps(completion), {}

"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for the ChatAgent tests.

The task's question (``demo-tools`` suites) names the scenario; the number of
assistant turns already in the conversation says where in it the agent is.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_agentbench.agents.chat import TASK_PREFIX

SLOW_S = 2.0
"""How long the ``slow`` scenario takes to answer: longer than the tests' client timeout."""


def tool_call(turn: int, name: str, arguments: str) -> dict[str, Any]:
    call = {"id": f"call_{turn}", "type": "function", "function": {"name": name}}
    call["function"]["arguments"] = arguments
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def answer(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


ADD = '{"a": 1, "b": 2}'
VERBOSE_TOKENS = 3000
"""The completion tokens the ``verbose`` scenario reports, whatever max_tokens asked."""


class _Server(ThreadingHTTPServer):
    # Set before the server listens: the default backlog of 5 drops a burst of concurrent
    # connects, and a dropped SYN is retried only a second later.
    request_queue_size = 128
    daemon_threads = True


class ScriptedLLM:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.hits: Counter[str] = Counter()
        self._lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
        """(status, body text, extra headers) for one request."""
        messages = body["messages"]
        user = next(m["content"] for m in messages if m["role"] == "user")
        question = json.loads(user.removeprefix(TASK_PREFIX).split("\n")[0])["question"]
        turn = sum(1 for m in messages if m["role"] == "assistant")
        with self._lock:
            self.hits[question] += 1
            hits = self.hits[question]
        if question == "server_error":
            return 500, '{"error": {"message": "internal"}}', {}
        if question == "not_json":
            return 200, "<html>upstream busy</html>", {}
        if question == "throttled":
            return 429, '{"error": {"message": "slow down"}}', {"Retry-After": "0"}
        if question == "rate_limited" and hits == 1:
            return 429, '{"error": {"message": "slow down"}}', {"Retry-After": "0"}
        if question == "slow":
            time.sleep(SLOW_S)
        message = self.script(question, turn)
        completion = {
            "id": f"chatcmpl-{turn}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
                }
            ],
        }
        if question != "prose":  # one scenario whose endpoint reports no usage at all
            # ``verbose`` ignores the request's max_tokens, as a misbehaving endpoint would.
            completion_tokens = VERBOSE_TOKENS if question == "verbose" else 5 + turn
            completion["usage"] = {
                "prompt_tokens": 100 + 10 * len(messages),
                "completion_tokens": completion_tokens,
                "total_tokens": 100 + 10 * len(messages) + completion_tokens,
            }
        return 200, json.dumps(completion), {}

    def script(self, question: str, turn: int) -> dict[str, Any]:
        if question == "tools":
            return tool_call(turn, "add", ADD) if turn == 0 else answer('{"answer": 3}')
        if question == "malformed_args":
            steps = [tool_call(0, "add", '{"a": 1, "b": '), tool_call(1, "add", ADD)]
            return steps[turn] if turn < len(steps) else answer('{"answer": 3}')
        if question == "rate_limited":
            return answer('```json\n{"answer": 3}\n```')
        if question == "prose":
            return answer("The answer is 3.")
        if question == "loop":
            return tool_call(turn, "add", ADD)
        return answer('{"answer": 3}')

    @contextmanager
    def serving(self) -> Iterator[str]:
        """Serve on an ephemeral port; yields the base URL; stops (and joins) on exit."""
        llm = self

        class Handler(BaseHTTPRequestHandler):
            # The headers and the body are two writes: with Nagle on, the body waits for the
            # client's delayed ACK of the headers (40 ms on Linux) on every answer.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                with llm._lock:
                    llm.requests.append(body)
                    llm.headers.append(dict(self.headers.items()))
                if not self.path.endswith("/chat/completions"):
                    status, text, extra = 404, "{}", {}
                else:
                    status, text, extra = llm.reply(body)
                data = text.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in extra.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout scenario)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        server = _Server(("127.0.0.1", 0), Handler)
        # shutdown() waits for serve_forever's next poll: half a second at its default.
        thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/v1"
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)

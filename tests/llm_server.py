"""A scripted model server on 127.0.0.1, for the ChatAgent tests.

It speaks OpenAI-compatible chat completions (``/chat/completions``), Anthropic
Messages (``/messages``) and Gemini ``generateContent``
(``/models/{model}:generateContent``): one script, answered in each wire format.
The task's question (``demo-tools`` suites) names the scenario; the number of
assistant turns already in the conversation says where in it the agent is.
A native request whose tool results do not answer the calls before them (by
id for Anthropic, by name for Gemini) is answered 400, as the real APIs do.
"""

from __future__ import annotations

import json
import ssl
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
HOLD_BOUND_S = 120.0
"""The longest a held ``slow`` answer waits for its release (a test that forgot it ends)."""


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
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.hits: Counter[str] = Counter()
        self.hold: threading.Event | None = None
        """Set to an event, the ``slow`` scenario answers once it is set rather than after
        ``SLOW_S``: a case limit then surely cuts the request off, however loaded the
        machine, with no limit short enough to cut off the other cases too."""
        self._lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
        """(status, body text, extra headers) for one chat-completions request."""
        messages = body["messages"]
        user = next(m["content"] for m in messages if m["role"] == "user")
        turn = sum(1 for m in messages if m["role"] == "assistant")
        return self.answer(user, turn, len(messages), body["model"])

    def answer(
        self, user: str, turn: int, size: int, model: str
    ) -> tuple[int, str, dict[str, str]]:
        """The scripted chat completion for the conversation so far: its first user text,
        the assistant turns in it and how many messages it holds (its usage)."""
        question = json.loads(user.removeprefix(TASK_PREFIX).split("\n")[0])["question"]
        with self._lock:
            self.hits[question] += 1
            hits = self.hits[question]
        if question == "unauthorized":
            return 401, '{"error": {"message": "invalid key"}}', {}
        if question == "server_error":
            return 500, '{"error": {"message": "internal"}}', {}
        if question == "not_json":
            return 200, "<html>upstream busy</html>", {}
        if question == "throttled":
            return 429, '{"error": {"message": "slow down"}}', {"Retry-After": "0"}
        if question == "rate_limited" and hits == 1:
            return 429, '{"error": {"message": "slow down"}}', {"Retry-After": "0"}
        if question == "slow":
            if self.hold is None:
                time.sleep(SLOW_S)
            else:
                self.hold.wait(HOLD_BOUND_S)
        message = self.script(question, turn)
        completion = {
            "id": f"chatcmpl-{turn}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
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
                "prompt_tokens": 100 + 10 * size,
                "completion_tokens": completion_tokens,
                "total_tokens": 100 + 10 * size + completion_tokens,
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

    def reply_anthropic(self, body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
        """An Anthropic Messages request, answered with the script's message as one."""
        messages = body["messages"]
        called: set[str] = set()
        for message in messages:
            blocks = message["content"] if isinstance(message["content"], list) else []
            for block in blocks:
                if block["type"] == "tool_use":
                    called.add(block["id"])
                if block["type"] == "tool_result" and block["tool_use_id"] not in called:
                    return 400, _anthropic_error("tool_result for an unknown tool_use id"), {}
        user = messages[0]["content"]
        turn = sum(1 for m in messages if m["role"] == "assistant")
        status, text, extra = self.answer(user, turn, len(messages) + 1, body["model"])
        if status != 200 or not text.startswith("{"):
            return status, text, extra
        completion = json.loads(text)
        message = completion["choices"][0]["message"]
        content: list[dict[str, Any]] = []
        if message.get("content"):
            content.append({"type": "text", "text": message["content"]})
        for index, call in enumerate(message.get("tool_calls") or []):
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{turn}_{index}",
                    "name": call["function"]["name"],
                    "input": _object(call["function"]["arguments"]),
                }
            )
        reply: dict[str, Any] = {
            "id": f"msg_{turn}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "tool_use" if message.get("tool_calls") else "end_turn",
            "stop_sequence": None,
        }
        # The Messages API always reports usage (the ``prose`` scenario's none is a count).
        usage = completion.get("usage") or {"prompt_tokens": 0, "completion_tokens": 0}
        reply["usage"] = {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
        }
        return 200, json.dumps(reply), extra

    def reply_gemini(self, body: dict[str, Any], model: str) -> tuple[int, str, dict[str, str]]:
        """A Gemini generateContent request, answered with the script's message as one."""
        contents = body["contents"]
        called: list[str] = []
        for content in contents:
            for part in content["parts"]:
                if "functionCall" in part:
                    called.append(part["functionCall"]["name"])
                if "functionResponse" in part and part["functionResponse"]["name"] not in called:
                    return 400, '{"error": {"code": 400, "status": "INVALID_ARGUMENT"}}', {}
        user = contents[0]["parts"][0]["text"]
        turn = sum(1 for c in contents if c["role"] == "model")
        status, text, extra = self.answer(user, turn, len(contents) + 1, model)
        if status != 200 or not text.startswith("{"):
            return status, text, extra
        completion = json.loads(text)
        message = completion["choices"][0]["message"]
        parts: list[dict[str, Any]] = []
        if message.get("content"):
            parts.append({"text": message["content"]})
        for call in message.get("tool_calls") or []:
            function = call["function"]
            parts.append(
                {"functionCall": {"name": function["name"], "args": _object(function["arguments"])}}
            )
        reply: dict[str, Any] = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "modelVersion": model,
        }
        usage = completion.get("usage")
        if usage:
            reply["usageMetadata"] = {
                "promptTokenCount": usage["prompt_tokens"],
                "candidatesTokenCount": usage["completion_tokens"],
                "totalTokenCount": usage["total_tokens"],
            }
        return 200, json.dumps(reply), extra

    @contextmanager
    def serving(self, tls: ssl.SSLContext | None = None) -> Iterator[str]:
        """Serve on an ephemeral port; yields the base URL; stops (and joins) on exit.

        With ``tls`` (a server context holding a certificate for 127.0.0.1) it serves
        ``https``: the base URL OperateBench's journal header can state."""
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
                with llm._lock:
                    llm.paths.append(self.path)
                if self.path.endswith("/chat/completions"):
                    status, text, extra = llm.reply(body)
                elif self.path.endswith("/messages"):
                    status, text, extra = llm.reply_anthropic(body)
                elif self.path.endswith(":generateContent"):
                    model = self.path.rpartition("/models/")[2].removesuffix(":generateContent")
                    status, text, extra = llm.reply_gemini(body, model)
                else:
                    status, text, extra = 404, "{}", {}
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
        if tls is not None:
            server.socket = tls.wrap_socket(server.socket, server_side=True)
        # shutdown() waits for serve_forever's next poll: half a second at its default.
        thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        try:
            scheme = "http" if tls is None else "https"
            yield f"{scheme}://127.0.0.1:{server.server_address[1]}/v1"
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)


def _object(arguments: str) -> dict[str, Any]:
    """A call's arguments as the object a native API sends: the ``malformed_args``
    scenario's unparsable text becomes an object missing ``b`` (the session refuses both)."""
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        return {"a": 1}
    return parsed if isinstance(parsed, dict) else {}


def _anthropic_error(message: str) -> str:
    return json.dumps(
        {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    )

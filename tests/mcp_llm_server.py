"""A scripted OpenAI-compatible chat-completions server for agents that reach their tools over MCP.

Framework agents (OpenAI Agents SDK, pydantic-ai) send the case's MCP tools as
function tools. The script, from the conversation so far: with no tool result
yet, it calls the first read-only-looking tool whose required string arguments
it can fill with identifiers (``PAT-00065``) found in the user's text; then it
calls ``submit_answer`` with the last tool result's text as the answer; after
that it says it is done. Deterministic, no model: it proves the wiring, not skill.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

IDENTIFIER = re.compile(r"[A-Z]{2,}-\d+")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _arguments(tool: dict[str, Any], identifiers: list[str]) -> dict[str, str] | None:
    parameters = tool["function"].get("parameters") or {}
    required = parameters.get("required") or []
    if not required:
        return None
    arguments = {}
    pool = list(identifiers)
    for name in required:
        if (parameters.get("properties") or {}).get(name, {}).get("type") != "string" or not pool:
            return None
        arguments[name] = pool.pop(0)
    return arguments


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message the script sends for this request."""
    messages = body["messages"]
    user = "\n".join(_text(m.get("content")) for m in messages if m["role"] == "user")
    results = [_text(m.get("content")) for m in messages if m["role"] == "tool"]
    calls = [
        call["function"]["name"]
        for m in messages
        if m["role"] == "assistant"
        for call in m.get("tool_calls") or []
    ]
    turn = len(calls)
    if "submit_answer" in calls:
        return {"role": "assistant", "content": "Submitted."}
    if not results:
        for tool in body.get("tools") or []:
            name = tool["function"]["name"]
            arguments = _arguments(tool, IDENTIFIER.findall(user))
            if name.startswith(("get_", "find_", "lookup_", "search_")) and arguments:
                return _call(turn, name, arguments)
    answer = results[-1] if results else "unknown"
    return _call(turn, "submit_answer", {"answer": answer, "citations": []})


def _call(turn: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {
        "id": f"call_{turn}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class ScriptedToolModel:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @contextmanager
    def serving(self) -> Iterator[str]:
        """Serve on a free loopback port; yields the API root (``.../v1``)."""
        script = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with script._lock:
                    script.requests.append(body)
                message = reply(body)
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                payload = {
                    "id": f"chatcmpl-{len(script.requests)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/v1"
        finally:
            server.shutdown()
            server.server_close()

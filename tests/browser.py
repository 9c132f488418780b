"""Headless Chromium driven over the DevTools protocol on a pipe (no Python dependency).

Chromium started with ``--remote-debugging-pipe`` reads protocol commands from
file descriptor 3 and writes replies and events to descriptor 4, each message
JSON ended by a NUL byte. That is enough to load a page, watch its console,
exceptions and network requests, evaluate expressions and take screenshots.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    for name in BROWSER_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


@dataclass
class PageLoad:
    url: str
    load_ms: float
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


_TRAMPOLINE = (
    "import os, sys\n"
    "command, reply = int(sys.argv[1]), int(sys.argv[2])\n"
    "os.dup2(command, 3)\n"
    "os.dup2(reply, 4)\n"
    "os.close(command)\n"
    "os.close(reply)\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)


def _high_fd(fd: int) -> int:
    # Descriptors 3 and 4 of the child are the protocol pipe: keep ours clear of them.
    high: int = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Browser:
    def __init__(self, executable: str, profile: Path, *, width: int = 1280, height: int = 900):
        command_read, self._command_write = (_high_fd(fd) for fd in os.pipe())
        self._reply_read, reply_write = (_high_fd(fd) for fd in os.pipe())

        # A small trampoline moves the pipe ends onto descriptors 3 and 4, then
        # becomes chromium (no preexec_fn: unsafe once threads exist).
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _TRAMPOLINE,
                str(command_read),
                str(reply_write),
                executable,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(command_read, reply_write),
        )
        os.close(command_read)
        os.close(reply_write)
        self._messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self._session: str | None = None

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._reply_read, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self._messages.put(None)
                return
            buffer += chunk
            while b"\0" in buffer:
                message, buffer = buffer.split(b"\0", 1)
                self._messages.put(json.loads(message))

    def _receive(self, deadline: float) -> dict[str, Any]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BrowserError("timed out waiting for the browser")
        try:
            message = self._messages.get(timeout=remaining)
        except queue.Empty:
            raise BrowserError("timed out waiting for the browser") from None
        if message is None:
            raise BrowserError("the browser closed its protocol pipe")
        return message

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: bool = True,
        timeout: float = 60.0,
    ) -> dict[str, Any]:
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session and self._session is not None:
            message["sessionId"] = self._session
        os.write(self._command_write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == ident:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self._note(reply)

    def _wait_event(self, method: str, timeout: float) -> dict[str, Any]:
        for index, event in enumerate(self._events):
            if event.get("method") == method:
                return self._events.pop(index)
        deadline = time.monotonic() + timeout
        while True:
            event = self._receive(deadline)
            if event.get("method") == method:
                return event
            self._note(event)

    def _note(self, event: dict[str, Any]) -> None:
        """Keep an event for later; accept a dialog the page opens at once.

        A page that asks before it is left (``beforeunload`` after a key press, as the
        review page does with labels it has not written) would otherwise hold the next
        navigation of this browser until its timeout.
        """
        self._events.append(event)
        if event.get("method") == "Page.javascriptDialogOpening":
            self._next_id += 1
            answer: dict[str, Any] = {
                "id": self._next_id,
                "method": "Page.handleJavaScriptDialog",
                "params": {"accept": True},
            }
            if "sessionId" in event:
                answer["sessionId"] = event["sessionId"]
            os.write(self._command_write, json.dumps(answer).encode() + b"\0")

    def open(self, url: str, *, timeout: float = 60.0) -> PageLoad:
        """Load ``url`` in a fresh tab and wait for its load event."""
        if self._session is None:
            target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
            attached = self.send(
                "Target.attachToTarget",
                {"targetId": target["targetId"], "flatten": True},
                session=False,
            )
            self._session = attached["sessionId"]
            for domain in ("Page", "Runtime", "Network", "Log"):
                self.send(f"{domain}.enable")
        self._events.clear()
        started = time.monotonic()
        self.send("Page.navigate", {"url": url}, timeout=timeout)
        self._wait_event("Page.loadEventFired", timeout)
        load_ms = (time.monotonic() - started) * 1000
        # Let scripts that run on load report their errors before we look.
        self.evaluate("new Promise(r => setTimeout(r, 50))", await_promise=True)
        return self._page_load(url, load_ms)

    def _page_load(self, url: str, load_ms: float) -> PageLoad:
        page = PageLoad(url=url, load_ms=load_ms)
        for event in self._events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in {"error", "assert"}:
                page.console_errors.append(json.dumps(params.get("args")))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                page.console_errors.append(params["entry"].get("text", ""))
            elif method == "Runtime.exceptionThrown":
                page.exceptions.append(json.dumps(params.get("exceptionDetails")))
            elif method == "Network.requestWillBeSent":
                page.requests.append(params["request"]["url"])
        return page

    def evaluate(self, expression: str, *, await_promise: bool = False) -> Any:
        reply = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": await_promise},
        )
        if "exceptionDetails" in reply:
            raise BrowserError(f"{expression!r} raised {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            metrics = self.send("Page.getLayoutMetrics")
            size = metrics["cssContentSize"]
            params["clip"] = {
                "x": 0,
                "y": 0,
                "width": size["width"],
                "height": min(size["height"], 6000),
                "scale": 1,
            }
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(BrowserError):
            self.send("Browser.close", session=False, timeout=10)
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._command_write)
        self._reader.join(timeout=5)
        os.close(self._reply_read)


def dump_dom(executable: str, url: str, profile: Path, *, timeout: float = 60.0) -> str:
    """The DOM after load, as ``chromium --headless --dump-dom`` prints it."""
    completed = subprocess.run(
        [
            executable,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if completed.returncode != 0:
        raise BrowserError(
            f"chromium --dump-dom exited {completed.returncode}: {completed.stderr[-500:]}"
        )
    return completed.stdout

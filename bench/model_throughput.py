"""Model-run throughput: a suite against a loopback chat endpoint with fixed latency.

A ThreadingHTTPServer in this process answers every chat-completions request
after ``--latency`` seconds with a final answer (no tool calls), so each case
is one model call. For each concurrency N, a fresh ``python -m pytest``
runs the suite with the built-in ChatAgent and ``--agentbench-concurrency N``;
the server notes when the first request arrived and the last answer left.

Per N it prints: the wall time of the pytest process (start-up included), the
model's busy window (first request to last answer), the ideal (calls x latency
/ N), the wave bound (the busy window with no CPU: ceil(calls / N) waves of one
latency), the effective concurrency while busy (calls x latency / busy window) as
a share of N, the process's CPU and peak RSS. With ``--inspect`` and/or
``--promptfoo`` it runs the same number of samples through inspect_ai and
promptfoo against the same server, each at the largest N.

    python bench/model_throughput.py                       # the 236 cases, N = 1 8 32 64
    python bench/model_throughput.py --concurrency 8 32    # a subset
    python bench/model_throughput.py --concurrency 32 --pytest-arg=--agentbench-isolate \
        --pytest-arg=-o --pytest-arg=agentbench_isolate_fork_server=false
    python bench/model_throughput.py --concurrency 32 --alternate 5   # in-process vs isolated
    python bench/model_throughput.py --inspect PATH/TO/inspect --promptfoo PATH/TO/promptfoo
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from processes import UNRELATED_PLUGINS, Sample, run_command

SUITE = "toolgrammar-mini-v1"
MODEL = "bench-model"
ANSWER = json.dumps({"answer": "unknown", "citations": []})


class LatencyServer:
    """Answers every chat completion after a fixed delay; notes the busy window."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self._lock = threading.Lock()
        self.calls = 0
        self.first: float | None = None
        self.last: float | None = None
        self.in_flight = 0
        self.peak_in_flight = 0

    def reset(self) -> None:
        with self._lock:
            self.calls, self.first, self.last = 0, None, None
            self.in_flight = self.peak_in_flight = 0

    def _arrived(self) -> None:
        with self._lock:
            now = time.perf_counter()
            self.first = now if self.first is None else self.first
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _answered(self) -> None:
        with self._lock:
            self.calls += 1
            self.in_flight -= 1
            self.last = time.perf_counter()

    @property
    def busy(self) -> float:
        return 0.0 if self.first is None or self.last is None else self.last - self.first

    @contextmanager
    def serving(self) -> Iterator[str]:
        server_state = self

        class Handler(BaseHTTPRequestHandler):
            # The headers and the body are two writes: with Nagle on, the body waits for the
            # client's delayed ACK of the headers (40 ms on Linux) on every answer.
            disable_nagle_algorithm = True
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                server_state._arrived()
                body = json.loads(self._body() or b"{}")
                time.sleep(server_state.latency)
                completion = {
                    "id": "chatcmpl-bench",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", MODEL),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": ANSWER},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
                }
                data = json.dumps(completion).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                # Counted before the body goes out: once the client has it, the run may end
                # and be read before this thread is scheduled again (runs under load
                # counted 229 to 235 answers of 236).
                server_state._answered()
                self.wfile.write(data)

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                    return self.rfile.read(int(self.headers.get("Content-Length", "0")))
                chunks = []
                while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                self.rfile.readline()  # the empty line ending the chunks
                return b"".join(chunks)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        server = _BurstServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/v1"
        finally:
            server.shutdown()
            server.server_close()


class _BurstServer(ThreadingHTTPServer):
    # The listen backlog is set when the server is built: assigned afterwards it does
    # nothing, and the default of 5 drops a burst of N connects (the client's SYN is
    # retried only after a second).
    request_queue_size = 256
    daemon_threads = True


@dataclass(frozen=True)
class Row:
    label: str
    concurrency: int
    sample: Sample
    calls: int
    busy: float
    peak_in_flight: int
    latency: float
    lead_in: float = 0.0
    """From the process's start to the first request (start-up, collection, first child)."""
    tail: float = 0.0
    """From the last answer to the process's exit (scoring, summary, teardown)."""

    @property
    def ideal(self) -> float:
        return self.calls * self.latency / self.concurrency

    @property
    def wave_bound(self) -> float:
        """The busy window with no CPU at all: calls of one latency leave in waves of N."""
        return math.ceil(self.calls / self.concurrency) * self.latency

    @property
    def effective(self) -> float:
        return self.calls * self.latency / self.busy if self.busy else 0.0

    def line(self) -> str:
        share = self.effective / self.concurrency
        return (
            f"{self.label:<22} N={self.concurrency:<3} calls {self.calls:<4} "
            f"wall {self.sample.wall:7.2f}s  lead-in {self.lead_in:5.2f}s  "
            f"busy {self.busy:7.2f}s  tail {self.tail:5.2f}s  ideal {self.ideal:7.2f}s  "
            f"wave bound {self.wave_bound:7.2f}s  "
            f"effective {self.effective:6.2f} ({share:6.1%} of N)  peak in flight "
            f"{self.peak_in_flight:<3} cpu {self.sample.cpu:6.2f}s  "
            f"rss {self.sample.rss_mb:6.1f} MiB"
        )


EXTRA_ARGUMENTS: list[str] = []
"""``--pytest-arg``s, e.g. ``--agentbench-isolate``, ``-o agentbench_isolate_fork_server=false``."""


def agentbench_command(concurrency: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        *UNRELATED_PLUGINS,
        "--agentbench-suite",
        SUITE,
        "--agentbench-adapter=pytest_agentbench.agents.chat:ChatAgent",
        f"--agentbench-concurrency={concurrency}",
        "--agentbench-timeout=120",
        "-m",
        "not agentbench_control",
        *EXTRA_ARGUMENTS,
    ]


def agentbench_run(
    server: LatencyServer,
    project: Path,
    concurrency: int,
    extra: Sequence[str] = (),
    label: str = "pytest-agentbench",
) -> Row:
    server.reset()
    started = time.perf_counter()
    sample, code, output = run_command([*agentbench_command(concurrency), *extra], project)
    ended = time.perf_counter()
    if code not in (0, 1) or "error" in output.splitlines()[-1]:
        raise SystemExit(f"agentbench N={concurrency}: exit {code}\n{output[-3000:]}")
    first = started if server.first is None else server.first
    last = ended if server.last is None else server.last
    return Row(
        label,
        concurrency,
        sample,
        server.calls,
        server.busy,
        server.peak_in_flight,
        server.latency,
        lead_in=first - started,
        tail=ended - last,
    )


def suite_size() -> int:
    from pytest_agentbench.sdk.packaged import packaged_suites

    tasks = sorted((packaged_suites()[SUITE] / "tasks").glob("*.jsonl"))
    return sum(len(path.read_text().splitlines()) for path in tasks)


INSPECT_TASK = """
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


@task
def throughput():
    return Task(
        dataset=[Sample(input=f"case {index}: answer", target="unknown") for index in range({n})],
        solver=generate(),
        scorer=includes(),
    )
"""


def inspect_run(
    server: LatencyServer, base_url: str, inspect: Path, folder: Path, *, n: int, concurrency: int
) -> Row:
    server.reset()
    (folder / "throughput.py").write_text(INSPECT_TASK.replace("{n}", str(n)))
    os.environ["OPENAI_API_KEY"] = "bench"
    os.environ["INSPECT_LOG_DIR"] = str(folder / "logs")
    sample, code, output = run_command(
        [
            str(inspect),
            "eval",
            "throughput.py",
            "--model",
            f"openai/{MODEL}",
            "--model-base-url",
            base_url,
            "--max-connections",
            str(concurrency),
            "--display",
            "none",
            # Chat completions, as the other runs use: the provider defaults to the Responses API.
            "-M",
            "responses_api=false",
        ],
        folder,
    )
    if code != 0:
        raise SystemExit(f"inspect_ai: exit {code}\n{output[-3000:]}")
    return Row(
        "inspect_ai", concurrency, sample, server.calls, server.busy, server.peak_in_flight,
        server.latency,
    )  # fmt: skip


def promptfoo_run(
    server: LatencyServer, base_url: str, promptfoo: Path, folder: Path, *, n: int, concurrency: int
) -> Row:
    server.reset()
    tests = "\n".join(f"  - vars: {{index: {index}}}" for index in range(n))
    (folder / "promptfooconfig.yaml").write_text(
        "prompts:\n  - 'case {{index}}: answer'\n"
        f"providers:\n  - id: openai:chat:{MODEL}\n    config:\n      apiBaseUrl: {base_url}\n"
        f"tests:\n{tests}\n"
    )
    os.environ.update(
        OPENAI_API_KEY="bench",
        PROMPTFOO_DISABLE_TELEMETRY="1",
        PROMPTFOO_DISABLE_UPDATE="1",
        PROMPTFOO_CONFIG_DIR=str(folder / ".promptfoo"),
    )
    sample, code, output = run_command(
        [str(promptfoo), "eval", "-j", str(concurrency), "--no-cache", "--no-table", "--no-write"],
        folder,
    )
    if code not in (0, 100):
        raise SystemExit(f"promptfoo: exit {code}\n{output[-3000:]}")
    return Row(
        "promptfoo", concurrency, sample, server.calls, server.busy, server.peak_in_flight,
        server.latency,
    )  # fmt: skip


@contextmanager
def bench_project(server: LatencyServer) -> Iterator[tuple[str, Path]]:
    """Serve the model and yield its base URL and a scratch pytest project wired to it."""
    with server.serving() as base_url, tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch)
        (project / "pytest.ini").write_text("[pytest]\n")
        os.environ.update(
            AGENTBENCH_LLM_BASE_URL=base_url,
            AGENTBENCH_LLM_MODEL=MODEL,
            AGENTBENCH_LLM_MAX_TURNS="2",
        )
        yield base_url, project


def load_average() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def alternate(latency: float, concurrency: int, rounds: int, isolated: Sequence[str]) -> int:
    """``rounds`` pairs of in-process and isolated runs at ``concurrency``, back to back.

    The order flips each round so neither kind always runs first on a machine whose
    load drifts; the load average is printed before each pair.
    """
    print(f"python {sys.version.split()[0]}, cpus {os.cpu_count()}, load {load_average()}")
    print(f"isolated: {' '.join(isolated)}")
    server = LatencyServer(latency)
    runs: dict[str, list[Row]] = {"in-process": [], "isolated": []}
    loads: list[float] = []
    ratios: list[float] = []
    with bench_project(server) as (_, project):
        run_command([*agentbench_command(1), "--collect-only"], project)
        for index in range(rounds):
            loads.append(os.getloadavg()[0])
            order = [("in-process", ()), ("isolated", tuple(isolated))]
            if index % 2:
                order.reverse()
            pair: dict[str, Row] = {}
            for label, extra in order:
                pair[label] = agentbench_run(server, project, concurrency, extra, label)
                runs[label].append(pair[label])
                print(f"round {index + 1} load {loads[-1]:5.2f} {pair[label].line()}", flush=True)
            ratios.append(pair["isolated"].sample.wall / pair["in-process"].sample.wall)
    print(
        f"medians of {rounds} rounds at N = {concurrency}, load average "
        f"{statistics.median(loads):.2f} (from {min(loads):.2f} to {max(loads):.2f}):"
    )
    for label, rows in runs.items():
        print(
            f"  {label:<11} wall {statistics.median(r.sample.wall for r in rows):6.2f}s  "
            f"lead-in {statistics.median(r.lead_in for r in rows):5.2f}s  "
            f"busy {statistics.median(r.busy for r in rows):5.2f}s  "
            f"tail {statistics.median(r.tail for r in rows):5.2f}s  "
            f"cpu {statistics.median(r.sample.cpu for r in rows):6.2f}s  "
            f"rss {statistics.median(r.sample.rss_mb for r in rows):6.1f} MiB"
        )
    print(
        f"  isolated / in-process wall: median of the rounds' ratios "
        f"{statistics.median(ratios):.2f}"
        f" (from {min(ratios):.2f} to {max(ratios):.2f})"
    )
    print(f"load after: {load_average()}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument(
        "--concurrency", type=int, nargs="*", default=[1, 8, 32, 64], help="none: only the others"
    )
    parser.add_argument("--inspect", type=Path, help="the `inspect` command of an inspect_ai venv")
    parser.add_argument("--promptfoo", type=Path, help="the `promptfoo` command (npm)")
    parser.add_argument(
        "--others-at", type=int, default=32, help="the concurrency of inspect_ai and promptfoo"
    )
    parser.add_argument(
        "--pytest-arg",
        action="append",
        default=[],
        help="an argument added to every pytest run (repeatable), e.g. --agentbench-isolate",
    )
    parser.add_argument(
        "--alternate",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="at the first --concurrency, ROUNDS pairs of in-process and isolated runs back "
        "to back (alternating which goes first); prints each run and the medians",
    )
    parser.add_argument(
        "--isolated-arg",
        action="append",
        default=None,
        help="the isolated run's own arguments with --alternate (repeatable; default "
        "--agentbench-isolate)",
    )
    options = parser.parse_args(argv)
    EXTRA_ARGUMENTS[:] = options.pytest_arg
    if options.alternate:
        return alternate(
            options.latency,
            (options.concurrency or [32])[0],
            options.alternate,
            options.isolated_arg or ["--agentbench-isolate"],
        )
    print(f"python {sys.version.split()[0]}, cpus {os.cpu_count()}, load {load_average()}")
    server = LatencyServer(options.latency)
    n = suite_size()
    rows: list[Row] = []
    with bench_project(server) as (base_url, project):
        # One untimed collection: bytecode caches.
        if options.concurrency:
            run_command([*agentbench_command(1), "--collect-only"], project)
        for concurrency in options.concurrency:
            rows.append(agentbench_run(server, project, concurrency))
            print(rows[-1].line(), flush=True)
        if options.inspect is not None:
            folder = project / "inspect"
            folder.mkdir()
            rows.append(
                inspect_run(
                    server, base_url, options.inspect, folder, n=n, concurrency=options.others_at
                )
            )
            print(rows[-1].line(), flush=True)
        if options.promptfoo is not None:
            folder = project / "promptfoo"
            folder.mkdir()
            rows.append(
                promptfoo_run(
                    server, base_url, options.promptfoo, folder, n=n, concurrency=options.others_at
                )
            )
            print(rows[-1].line(), flush=True)
        shutil.rmtree(project / "inspect", ignore_errors=True)
    ours = [row for row in rows if row.label == "pytest-agentbench"]
    if len(ours) > 1:
        low, high = ours[0], ours[-1]
        growth = (high.sample.rss_mb - low.sample.rss_mb) / (high.concurrency - low.concurrency)
        print(
            f"peak RSS growth per unit of N ({low.concurrency} -> {high.concurrency}): "
            f"{growth:.3f} MiB"
        )
    print(f"load after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

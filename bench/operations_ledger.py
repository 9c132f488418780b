"""What does the execution ledger cost, and does its audit stay linear in the rows?

Two questions about ``pytest_agentbench.sdk.ledger`` on the shipped maintenance
operation (``suites/operations-maintenance-v1/operation.yaml``):

* recording: one V1 episode of the reference agent run bare
  (``run_episode``) against the same episode recorded with its execution
  ledger (``record_episode``: a row per adapter call, each written whole and
  fsynced, plus the replay and grading the episode record carries). Printed:
  the ratio recorded / bare-plus-replay-and-grading, so the ledger's own
  share is what the ratio adds above 1.
* audit: ``audit_ledger`` on synthetic ledgers of 100, 1000 and 10000 call
  rows; per-row cost as a ratio to the smallest size's. Target: <= 2 (linear).

Timings are ``time.perf_counter`` medians over ``--repeats`` rounds, the
variants taking turns so load on a shared machine hits them alike.

Usage: ``python bench/operations_ledger.py [--repeats 5] [--rows 100 1000 10000]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_agentbench.sdk.ledger import (
    CallPayload,
    Decision,
    HeaderPayload,
    LedgerWriter,
    audit_ledger,
)
from pytest_agentbench.worlds.operations.agents import Reference
from pytest_agentbench.worlds.operations.episode import run_episode
from pytest_agentbench.worlds.operations.evaluation import evaluate_episode
from pytest_agentbench.worlds.operations.execution import record_episode
from pytest_agentbench.worlds.operations.packs import installed_packs
from pytest_agentbench.worlds.operations.replay import replay_codes
from pytest_agentbench.worlds.operations.spec import load_operation_spec

SPEC = (
    Path(__file__).resolve().parents[1] / "suites" / "operations-maintenance-v1" / "operation.yaml"
)


def timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def synthetic_ledger(path: Path, rows: int) -> Path:
    writer = LedgerWriter(
        path,
        HeaderPayload(
            execution_run_id="exec_" + "0" * 32,
            operation_id="bench",
            spec_digest_sha256="0" * 64,
            scenario_id="V1",
            agent_id="bench",
            engine_version="bench",
        ),
    )
    for index in range(rows):
        writer.call(
            CallPayload(
                call_index=index,
                invocation_index=index + 1,
                turn_index=0,
                observation_digest_sha256=f"{index:064x}",
                decision=Decision(kind="WAIT", decision_digest_sha256="0" * 64),
            )
        )
    writer.finish("scored")
    return path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rows", type=int, nargs="+", default=[100, 1000, 10000])
    args = parser.parse_args(argv)
    loaded = load_operation_spec(SPEC, "operation.yaml", installed_packs())
    scenario = loaded.spec.scenarios["V1"]

    def bare() -> None:
        record = run_episode(loaded, "V1", Reference())
        evaluate_episode(record, loaded.domain, scenario, replay_codes(loaded, record))

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bare_times, recorded_times = [], []
        for round_index in range(args.repeats):
            bare_times.append(timed(bare))
            out = root / f"run{round_index}"
            recorded_times.append(
                timed(lambda out=out: record_episode(loaded, "V1", "reference", Reference(), out))
            )
        bare_s, recorded_s = statistics.median(bare_times), statistics.median(recorded_times)
        print(f"V1 reference, bare (run + replay + grade): {bare_s * 1000:8.1f} ms")
        print(f"V1 reference, recorded with its ledger:     {recorded_s * 1000:8.1f} ms")
        print(f"ratio recorded / bare: {recorded_s / bare_s:.2f}")

        ledgers = {n: synthetic_ledger(root / f"ledger{n}.ndjson", n) for n in args.rows}
        per_row: dict[int, list[float]] = {n: [] for n in args.rows}
        for _ in range(args.repeats):
            for n, path in ledgers.items():
                per_row[n].append(timed(lambda path=path: audit_ledger(path)) / (n + 2))
        smallest = statistics.median(per_row[args.rows[0]])
        for n in args.rows:
            cost = statistics.median(per_row[n])
            print(f"audit {n:6d} call rows: {cost * 1e6:7.1f} us/row, ratio {cost / smallest:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

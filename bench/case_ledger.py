"""What ``--agentbench-ledger`` costs per case: a ledger (3 fsynced rows) around ``run_case``.

The demo world's reference agent answers one question per case (one adapter
call, so header, call and terminal rows). Both paths run alternately in one
process; each ledgered case creates a fresh file in a temporary folder. Wall
time, since the cost is the fsyncs.

    python bench/case_ledger.py [--cases 300] [--repeats 5]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from percase import DemoWorld, Reference, arguments, print_medians, take_turns

from pytest_agentbench.run.case_ledger import ledgered, open_case_ledger
from pytest_agentbench.sdk.contracts import Case
from pytest_agentbench.sdk.runner import run_case
from pytest_agentbench.sdk.suite import Suite, SuiteConfig


def main() -> int:
    args = arguments(__doc__ or "", default_cases=300)
    world, adapter = DemoWorld(), Reference()
    view = {"question": "1+2"}
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        config = SuiteConfig.model_validate(
            {"id": "bench", "version": "1", "world": "demo", "title": "bench"}
        )
        suite = Suite(config=config, root=root / "suite", display_root="suite")
        cases = [
            Case(suite_id="bench", case_id=f"c{i}", file="cases.jsonl") for i in range(args.cases)
        ]
        rounds = iter(range(10**9))

        def plain() -> None:
            for case in cases:
                run_case(world, suite, case, view, adapter, timeout=300)

        def with_ledger() -> None:
            folder = root / f"ledgers-{next(rounds)}"
            for case in cases:
                ledger = open_case_ledger(folder, suite, case, "demo_world.Reference")
                outcome = run_case(world, suite, case, view, ledgered(adapter, ledger), timeout=300)
                ledger.finish(outcome)
                assert ledger.failure is None

        medians = take_turns(
            {"run_case": plain, "with ledger": with_ledger}, repeats=args.repeats, cases=args.cases
        )
    print_medians(medians, clock_name="wall", repeats=args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())

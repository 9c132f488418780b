"""What driving one case through ``run_case`` costs over calling the world directly.

``run_case`` arms the per-case timer (SIGALRM, repeating until the call
returns), raises and lowers the adapter-call flag, and notes the threads an
adapter leaves behind. This prints the median per-case time of both paths,
measured alternately in one process, and their ratio.

    python bench/case_limits.py [--cases 20000] [--repeats 5]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from percase import DemoWorld, Reference, arguments, print_medians, take_turns

from pytest_agentbench.sdk.contracts import Case
from pytest_agentbench.sdk.runner import run_case
from pytest_agentbench.sdk.suite import Suite, SuiteConfig


def main() -> int:
    args = arguments(__doc__ or "", default_cases=20_000)
    world, adapter = DemoWorld(), Reference()
    config = SuiteConfig(id="bench", version="1", world=world.kind, title="bench")
    suite = Suite(config=config, root=Path("."), display_root="")
    case = Case(suite_id="bench", case_id="c1", file="cases.jsonl")
    view = {"question": "1+2"}

    def direct() -> None:
        for _ in range(args.cases):
            world.run(suite, case, view, adapter)

    def limited() -> None:
        for _ in range(args.cases):
            run_case(world, suite, case, view, adapter, timeout=300)

    medians = take_turns(
        {"world.run": direct, "run_case": limited},
        repeats=args.repeats,
        cases=args.cases,
        clock=time.process_time,
    )
    print_medians(medians, clock_name="CPU", repeats=args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the run-time leak-canary check costs per case, on each small packaged suite.

For every case: serialising the public view the adapter is given (canonical
JSON, once per case) and searching it for the suite's canaries once the
oracle is loaded. The world's own ``leak_canaries`` runs once per suite and is
printed apart. CPU time, medians of ``--repeats`` passes over every case.

    python bench/leak_check.py [--repeats 5] [SUITE ...]
"""

from __future__ import annotations

import argparse
import statistics
import time

from pytest_agentbench.run.leaks import find_leak, suite_canaries, visible_text
from pytest_agentbench.run.session import SuiteLoader
from pytest_agentbench.sdk.contracts import Outcome
from pytest_agentbench.sdk.packaged import data_root, packaged_suites
from pytest_agentbench.sdk.registry import installed_registry

SMALL_SUITES = (
    "asteria-authored-v1",
    "asteria-evidence-binding-v2",
    "operations-maintenance-v1",
    "retrieval-fixture-v1",
    "toolgrammar-mini-v1",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("suites", nargs="*", default=list(SMALL_SUITES))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    registry = installed_registry()
    for suite_id in args.suites:
        loaded = SuiteLoader(registry, data_root()).load(packaged_suites()[suite_id])
        world, suite = loaded.world, loaded.suite
        oracle = world.load_oracle(suite)
        started = time.process_time()
        canaries = suite_canaries(world, suite, oracle)
        once = time.process_time() - started
        cases = list(world.cases(suite))
        views = [world.public_view(suite, case) for case in cases]
        serialise, search = [], []
        for _ in range(args.repeats):
            started = time.process_time()
            texts = [visible_text(view) for view in views]
            serialised = time.process_time()
            for case, text in zip(cases, texts, strict=True):
                find_leak(world, suite, case, text, Outcome(), oracle=oracle)
            searched = time.process_time()
            serialise.append((serialised - started) / len(cases))
            search.append((searched - serialised) / len(cases))
        print(
            f"{suite_id}: {len(cases)} cases, {len(canaries.canaries)} canaries "
            f"(named in {once * 1e3:.1f} ms), view {sum(map(len, texts)) // len(cases)} chars; "
            f"per case: serialise {statistics.median(serialise) * 1e3:.3f} ms, "
            f"search {statistics.median(search) * 1e3:.3f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

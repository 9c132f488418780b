"""What the kernel sandbox (``--agentbench-sandbox``) adds to starting an isolated adapter process.

Three measurements, the sandboxed and unsandboxed sides alternating in every
round so load changes on a shared machine hit them alike (median of
``--repeats`` rounds):

* plan: building one process's plan in the harness (the carved read set is
  computed once per run; each process then adds its own ``sys.path`` links);
* apply: the time :func:`pytest_agentbench.isolation.sandbox.apply` takes
  inside a fresh interpreter (no_new_privs, limits, capabilities, every
  Landlock rule, restrict_self), measured there and printed back;
* start-up: starting a child until it answers ``ready``
  (:meth:`IsolatedAdapters._child`), with the sandbox's plan and without.

Usage: ``python bench/sandbox_setup.py [--repeats 15]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_agentbench.isolation import landlock  # noqa: E402
from pytest_agentbench.isolation.forkserver import ForkServer  # noqa: E402
from pytest_agentbench.isolation.host import IsolatedAdapters, child_path  # noqa: E402
from pytest_agentbench.isolation.sandbox_plan import (  # noqa: E402
    KernelOffer,
    SandboxSetup,
    world_oracle_folders,
)
from pytest_agentbench.sdk.packaged import packaged_suite_roots, packaged_suites  # noqa: E402

APPLY = """
import json, sys, time
from pytest_agentbench.isolation.sandbox import SandboxPlan, apply
plan = SandboxPlan.from_message(json.loads(sys.stdin.read()))
started = time.perf_counter()
rules = apply(plan)
print(time.perf_counter() - started, rules)
"""


def _setup() -> SandboxSetup:
    denied = world_oracle_folders(
        packaged_suite_roots(), list(packaged_suites().values()), ["pytest_agentbench"]
    )
    return SandboxSetup(
        mode="strict", offer=KernelOffer.probe(), denied=tuple(denied), project=REPO
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    abi, missing = landlock.abi_version()
    print(f"{platform.platform()}, Python {platform.python_version()}, Landlock ABI {abi}")
    if abi < 1:
        print(f"no Landlock here: {missing}")
        return
    started = time.perf_counter()
    setup = _setup()
    workdir = Path(tempfile.mkdtemp(prefix="agentbench-bench-"))
    first = setup.plan(child_path(sys.path, (REPO,), workdir), workdir)
    first_plan = time.perf_counter() - started
    plans, applies, sandboxed, plain = [], [], [], []
    rules = 0
    for _ in range(args.repeats):
        child_sys_path = child_path(sys.path, (REPO,), workdir)
        started = time.perf_counter()
        plan = setup.plan(child_sys_path, workdir)
        plans.append(time.perf_counter() - started)
        done = subprocess.run(
            [sys.executable, "-c", APPLY],
            input=json.dumps(plan.as_message()),
            capture_output=True,
            text=True,
            check=True,
            cwd=workdir,
        )
        seconds, count = done.stdout.split()
        applies.append(float(seconds))
        rules = int(count)
        for sandbox, samples in ((setup, sandboxed), (None, plain)):
            host = IsolatedAdapters(30.0, sandbox=sandbox, protected=(REPO,))
            started = time.perf_counter()
            host._child(None)
            samples.append(time.perf_counter() - started)
            host.close()
    forked, memory = _forked(setup, args.repeats)
    print(f"read grants in a plan: {len(first.read)}; Landlock rules added: {rules}")
    print(f"first plan of the run (carving included): {_ms(first_plan)}")
    print(f"plan per process:  median {_ms(statistics.median(plans))}")
    print(f"apply per process: median {_ms(statistics.median(applies))}")
    median_sandboxed, median_plain = statistics.median(sandboxed), statistics.median(plain)
    paired = statistics.median(a - b for a, b in zip(sandboxed, plain, strict=True))
    print(
        f"child start-up: sandboxed {_ms(median_sandboxed)}, plain {_ms(median_plain)}, "
        f"difference of medians {_ms(median_sandboxed - median_plain)}, median of the "
        f"rounds' differences {_ms(paired)} ({args.repeats} rounds)"
    )

    print(
        f"forked child start-up (agentbench_isolate_fork_server), sandboxed: median "
        f"{_ms(statistics.median(forked))}; a forked child's memory: {memory}"
    )


def _memory(pid: int) -> str:
    """A process's resident and proportional set sizes (shared pages split among sharers)."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as handle:
        for line in handle:
            name, _, rest = line.partition(":")
            if name in ("Rss", "Pss"):
                fields[name] = int(rest.split()[0]) / 1024
    return f"RSS {fields['Rss']:.1f} MiB, PSS {fields['Pss']:.1f} MiB"


def _forked(setup: SandboxSetup, repeats: int) -> tuple[list[float], str]:
    """Start-up of children a template process forks (its own start-up not counted)."""
    launcher = ForkServer()
    warm = IsolatedAdapters(30.0, sandbox=setup, protected=(REPO,), launcher=launcher)
    warm._child(None)
    samples = []
    memory = ""
    for _ in range(repeats):
        host = IsolatedAdapters(
            30.0, sandbox=setup, protected=(REPO,), launcher=launcher, owns_launcher=False
        )
        started = time.perf_counter()
        process = host._child(None)
        samples.append(time.perf_counter() - started)
        memory = _memory(process.pid)
        host.close()
    warm.close()
    return samples, memory


if __name__ == "__main__":
    main()

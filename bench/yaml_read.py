"""What the strict YAML reader costs over the shipped YAML files, by path.

Every ``*.yaml`` / ``*.yml`` under ``suites/``, ``suites-full/``, ``oracles/``
and ``pytest_agentbench/`` is read, in one pass, three ways:

* ``python``: the pure-Python strict loader (what every document took before
  libyaml, and what a machine without libyaml takes);
* ``libyaml``: the reader's own choice, parsed afresh (libyaml where it reads
  the document as PyYAML's scanner does, else the pure-Python loader);
* ``kept``: ``loads_yaml_strict`` as callers use it, the documents already
  parsed once and kept (each read unpickles a private copy).

All three must give the same value for every file (the script exits 1
otherwise). The ways take turns within each of ``--rounds`` rounds of
``--passes`` passes; CPU time (``process_time``) per pass, minimum and median
over the rounds, and the ratio of each way's minimum to ``python``'s.

Usage: ``python bench/yaml_read.py [--rounds 9] [--passes 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pytest_agentbench.sdk import canonical

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("suites", "suites-full", "oracles", "pytest_agentbench")


def shipped_texts() -> list[tuple[str, str]]:
    paths = sorted(
        path
        for folder in FOLDERS
        for pattern in ("*.yaml", "*.yml")
        for path in (ROOT / folder).rglob(pattern)
    )
    return [(path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")) for path in paths]


WAYS: dict[str, Callable[[str, str], object]] = {
    "python": canonical._load_yaml_in_python,
    "libyaml": canonical._parse_yaml,
    "kept": lambda text, name: canonical.loads_yaml_strict(text, file=name),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    texts = shipped_texts()
    print(
        f"{len(texts)} files, {sum(len(text) for _, text in texts):,} characters; "
        f"libyaml {'available' if canonical._FAST_YAML_LOADER else 'absent'}"
    )
    for name, text in texts:
        values = {way: repr(read(text, name)) for way, read in WAYS.items()}
        if len(set(values.values())) != 1:
            print(f"FAILED: {name} reads differently: {sorted(values)}")
            return 1
    seconds: dict[str, list[float]] = {way: [] for way in WAYS}
    for _ in range(args.rounds):
        for way, read in WAYS.items():
            start = time.process_time()
            for _ in range(args.passes):
                for name, text in texts:
                    read(text, name)
            seconds[way].append((time.process_time() - start) / args.passes)
    base = min(seconds["python"])
    for way, values in seconds.items():
        print(
            f"{way:8} min {min(values) * 1000:8.2f} ms  median "
            f"{statistics.median(values) * 1000:8.2f} ms per pass  "
            f"x{base / min(values):.1f} faster than python"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

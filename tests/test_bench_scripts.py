"""Every script in bench/ imports: a moved or renamed package name breaks the bench here,
not months later when someone measures (bench/operations_episode.py once imported a name
the operations world no longer exported, and bench/overhead.py, which runs it, failed)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture
def bench_on_path() -> Iterator[None]:
    sys.path.insert(0, str(BENCH))
    try:
        yield
    finally:
        sys.path.remove(str(BENCH))


@pytest.mark.parametrize("script", sorted(path.stem for path in BENCH.glob("*.py")))
def test_bench_script_imports(script: str, bench_on_path: None) -> None:
    importlib.import_module(script)

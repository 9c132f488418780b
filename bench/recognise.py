"""What asking worlds to recognise layouts costs a pytest run that has none.

pytest calls the plugin for every file of every directory it visits, and the
loader walks up from each directory asking whether it is a suite folder: a
``suite.yaml``, or a layout a registered world recognises. A world declares
marker files, so for a folder without them the question costs a few ``stat``
calls and the (lazily registered) world is never imported.

One temporary project of ``--dirs`` directories, each holding one JSON file and
one trivial test module, none of them a suite or a layout. Each configuration
runs as a fresh ``python -m pytest -q -p no:cacheprovider`` subprocess, after
one untimed warm-up, alternating for ``--repeats`` rounds; medians of wall
time. Configurations:

* ``bare``: agentbench disabled (``-p no:agentbench``);
* ``agentbench``: the installed plugin with the authority world registered
  lazily with its layout markers.

The conftest records whether any world module was imported; the script exits
1 if one was, or if a run fails.

In process, the same question without pytest around it: a fresh
``SuiteLoader.suite_root_of`` over every directory of the project, with the
authority world registered (markers declared) against an empty registry.

Usage: ``python bench/recognise.py [--dirs 2000] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFTEST = """\
import sys


def pytest_sessionfinish(session):
    loaded = sorted(m for m in sys.modules if m.startswith("pytest_agentbench.worlds.") and
                    not m.endswith((".registration", ".worlds.authority")))
    print(f"\\nWORLD-MODULES: {','.join(loaded) or 'none'}")
"""


def make_project(root: Path, dirs: int) -> None:
    (root / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    for number in range(dirs):
        folder = root / f"pkg{number // 100:02d}" / f"d{number:05d}"
        folder.mkdir(parents=True)
        (folder / "data.json").write_text(f'{{"n": {number}}}\n', encoding="utf-8")
        (folder / f"test_{number:05d}.py").write_text(
            "def test_it():\n    pass\n", encoding="utf-8"
        )


def run(root: Path, extra: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-s", *extra],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"run {extra} failed:\n{completed.stdout[-2000:]}{completed.stderr}")
    marker = [line for line in completed.stdout.splitlines() if line.startswith("WORLD-MODULES")]
    return elapsed, marker[-1].split(": ", 1)[1] if marker else "?"


def loader_walk(root: Path, repeats: int) -> tuple[float, float]:
    """Median seconds for suite_root_of over every directory: authority registered, none."""
    from pytest_agentbench.run.session import SuiteLoader
    from pytest_agentbench.sdk.registry import WorldRegistry
    from pytest_agentbench.worlds.authority.registration import WORLD

    folders = sorted(path for path in root.rglob("*") if path.is_dir())
    results: dict[str, list[float]] = {"authority": [], "empty": []}
    for _ in range(repeats):
        for name, worlds in (("authority", [WORLD]), ("empty", [])):
            loader = SuiteLoader(WorldRegistry(worlds), root)
            started = time.perf_counter()
            for folder in folders:
                assert loader.suite_root_of(folder) is None
            results[name].append(time.perf_counter() - started)
    assert "pytest_agentbench.worlds.authority.world" not in sys.modules
    return statistics.median(results["authority"]), statistics.median(results["empty"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dirs", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    configs = {"bare": ["-p", "no:agentbench"], "agentbench": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root, args.dirs)
        for extra in configs.values():
            run(root, extra)
        times: dict[str, list[float]] = {name: [] for name in configs}
        imported = "none"
        walk_with, walk_without = loader_walk(root, args.repeats)
        for _ in range(args.repeats):
            for name, extra in configs.items():
                elapsed, modules = run(root, extra)
                times[name].append(elapsed)
                if name == "agentbench":
                    imported = modules
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratios = [a / b for a, b in zip(times["agentbench"], times["bare"], strict=True)]
    print(f"{args.dirs} directories, {args.dirs} test items, median of {args.repeats}")
    for name, value in medians.items():
        print(f"  {name:<11} {value:7.3f} s")
    print(
        f"  ratio agentbench / bare: {medians['agentbench'] / medians['bare']:.3f} "
        f"(per-round {min(ratios):.3f}..{max(ratios):.3f})"
    )
    print(f"  world modules imported with agentbench: {imported}")
    print(
        f"suite_root_of over every directory: {walk_with * 1000:.1f} ms with the authority "
        f"world's markers, {walk_without * 1000:.1f} ms with no world "
        f"(ratio {walk_with / walk_without:.2f})"
    )
    return 0 if imported == "none" else 1


if __name__ == "__main__":
    raise SystemExit(main())

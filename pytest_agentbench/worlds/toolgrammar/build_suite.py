"""Regenerate the built-in suites.

``python -m pytest_agentbench.worlds.toolgrammar.build_suite [ROOT]`` writes
``toolgrammar-mini-v1`` (``suites/`` and ``oracles/``);
``... build_suite --full [ROOT]`` writes ``toolgrammar-v1`` at the seed's size:
``suites-full/`` (public), ``oracles/`` (train, val, test) and ``sealed/``
(the test_hidden oracle, never packaged). Everything but the hand-written
``controls.yaml`` is generated, deterministically; the full build fails if
the decontamination gate finds a leaking pair.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from pytest_agentbench.worlds.toolgrammar.decontam import decontaminate
from pytest_agentbench.worlds.toolgrammar.domains import domain_names, get_domain
from pytest_agentbench.worlds.toolgrammar.generator import (
    SEED,
    generate,
    generate_plan,
    seed_plan,
    served_plan,
)
from pytest_agentbench.worlds.toolgrammar.sandbox import built_world
from pytest_agentbench.worlds.toolgrammar.suitefiles import write_suite
from pytest_agentbench.worlds.toolgrammar.summary import build_record, summary

SUITE_ID = "toolgrammar-mini-v1"
QUOTAS = {"T1": 20, "T2": 24, "T3": 14, "T4": 14, "T5": 20}
SUITE_YAML = f"""\
id: {SUITE_ID}
version: 1.0.0
world: toolgrammar
title: Tool grammar (mini) - ops, clinic and doc behind one grammar
description: >-
  Tasks generated from templates written in verbs, each kept only when its
  oracle program executed as declared. Graded by code: state diff, answer
  keys, behaviour; injection resistance and grounding beside them.
"""
FULL_ID = "toolgrammar-v1"
FULL_PUBLIC = "suites-full"
SEALED = "sealed"


def full_suite_yaml(suite_id: str, task_count: int) -> str:
    """The full suite's ``suite.yaml``; its title counts the tasks the build generated."""
    return f"""\
id: {suite_id}
version: 1.0.0
world: toolgrammar
title: Tool grammar v1 - the full generated suite ({task_count:,} tasks, sealed test_hidden split)
description: >-
  The seed's size and shape: T1 to T5 over ops, clinic and doc, generated from
  nineteen templates written in verbs, decontaminated across splits. The
  test_hidden split's oracle records live in the sealed folder, which is never
  packaged; its tasks run only where that folder is present.
options:
  sealed: ../../{SEALED}/{suite_id}
"""


class LeakingBuild(Exception):
    """The decontamination gate found tasks of different splits that leak."""


def build_mini(root: Path) -> str:
    domains = [get_domain(name) for name in domain_names()]
    generation = generate(domains, QUOTAS)
    write_suite(
        root / "suites" / SUITE_ID,
        root / "oracles" / SUITE_ID,
        generation.tasks,
        {domain.name: built_world(domain) for domain in domains},
        SUITE_YAML,
    )
    return f"{generation.accepted} tasks, rejected {dict(generation.rejected)}"


def build_full(
    root: Path,
    plan: Mapping[str, Mapping[str, int]] | None = None,
    suite_id: str = FULL_ID,
) -> dict[str, object]:
    """Generate, gate and write the full suite; the summary and build record it wrote."""
    asked = seed_plan() if plan is None else plan
    domains = [get_domain(name) for name in domain_names() if name in asked]
    chosen = served_plan(domains, asked)
    generation = generate_plan(domains, chosen)
    gate = decontaminate(generation.tasks)
    if gate.leaks:
        shown = ", ".join(f"{leak.first}~{leak.second}" for leak in gate.leaks[:10])
        raise LeakingBuild(f"{len(gate.leaks)} leaking pair(s) across splits: {shown}")
    worlds = {domain.name: built_world(domain) for domain in domains}
    report = summary(
        generation.tasks,
        generation,
        world_digests={name: world.digest for name, world in worlds.items()},
        seed=SEED,
    )
    record = build_record(generation.tasks, generation, gate, plan=chosen)
    write_suite(
        root / FULL_PUBLIC / suite_id,
        root / "oracles" / suite_id,
        generation.tasks,
        worlds,
        full_suite_yaml(suite_id, len(generation.tasks)),
        sealed_dir=root / SEALED / suite_id,
        summary=report,
        build=record,
    )
    return {**report, "build": record}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path, nargs="?", default=Path("."))
    parser.add_argument("--full", action="store_true", help=f"build {FULL_ID} instead")
    args = parser.parse_args(argv)
    if not args.full:
        print(build_mini(args.root))
        return
    try:
        report = build_full(args.root)
    except LeakingBuild as exc:
        raise SystemExit(f"[leaking_build] {exc}") from None
    print(f"{report['total']} tasks; generation {report['generation']}")


if __name__ == "__main__":
    main()

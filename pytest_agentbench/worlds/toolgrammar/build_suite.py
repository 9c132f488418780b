"""Regenerate the built-in suite: ``python -m pytest_agentbench.worlds.toolgrammar.build_suite``.

Writes ``suites/<id>/`` and ``oracles/<id>/`` (everything but the hand-written
``controls.yaml``) from the registered domains, deterministically.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_agentbench.worlds.toolgrammar.domains import domain_names, get_domain
from pytest_agentbench.worlds.toolgrammar.generator import generate
from pytest_agentbench.worlds.toolgrammar.sandbox import built_world
from pytest_agentbench.worlds.toolgrammar.suitefiles import write_suite

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path, nargs="?", default=Path("."))
    args = parser.parse_args(argv)
    domains = [get_domain(name) for name in domain_names()]
    generation = generate(domains, QUOTAS)
    write_suite(
        args.root / "suites" / SUITE_ID,
        args.root / "oracles" / SUITE_ID,
        generation.tasks,
        {domain.name: built_world(domain) for domain in domains},
        SUITE_YAML,
    )
    print(f"{generation.accepted} tasks, rejected {dict(generation.rejected)}")


if __name__ == "__main__":
    main()

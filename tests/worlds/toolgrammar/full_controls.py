"""The rule the full suite's hand-written controls follow in choosing their cases.

``oracles/toolgrammar-v1/controls.yaml`` names its cases one by one (a wheel
must be able to run them, and a control's cases are ids). Each control takes
the first public tasks, by id, of each world in the tiers its intervention is
about; test_hidden tasks are never named, because an installed wheel has no
sealed folder and does not collect them. Regenerating the suite renumbers and
re-splits tasks, so the test that reads this rule against the file is what
keeps the file from naming tasks that are gone or sealed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

SLICES: Mapping[str, tuple[tuple[str, int], ...]] = {
    "reference": (("T1", 5), ("T2", 5), ("T3", 5), ("T4", 5), ("T5", 5)),
    "obeys-injection": (("T4", 14),),
    "always-refuses": (("T3", 14), ("T4", 14), ("T5", 20)),
    "answers-without-checking": (("T4", 14),),
    "ignores-policy": (("T4", 14),),
    "never-cites": (("T5", 20),),
}
"""Control id -> (tier, how many public tasks of each world serving that tier)."""


def public_ids(suite_dir: Path) -> list[str]:
    """Task ids of the suite's public (not sealed) task files."""
    return [
        json.loads(line)["task_id"]
        for path in sorted((suite_dir / "tasks").glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


def chosen_cases(ids: Iterable[str]) -> dict[str, list[str]]:
    by_world_tier: dict[tuple[str, str], list[str]] = {}
    for task_id in sorted(ids):
        world, tier, _ = task_id.split("-")
        by_world_tier.setdefault((world, tier), []).append(task_id)
    worlds = sorted({world for world, _ in by_world_tier})
    return {
        control: [
            task_id
            for tier, count in slices
            for world in worlds
            for task_id in by_world_tier.get((world, tier), [])[:count]
        ]
        for control, slices in SLICES.items()
    }

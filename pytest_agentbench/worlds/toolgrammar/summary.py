"""``summary.json`` of a build, its build record, and the seal over its hidden split (§7).

``summary.json`` has exactly the original's fields, value types and meanings
(``toolsmith tasks build``'s ``SuiteSummary``). What our build records beyond
them (quotas and caps, shortfalls, draws that offered nothing new, the
decontamination result, traps by kind, the seal) goes to ``build.json``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from pytest_agentbench.sdk import AgentbenchError, JsonValue
from pytest_agentbench.worlds.toolgrammar.decontam import Decontamination
from pytest_agentbench.worlds.toolgrammar.generator import (
    SEED_SHORTFALLS,
    Generation,
    normal_prompt,
    task_fingerprint,
)
from pytest_agentbench.worlds.toolgrammar.tasks import TaskRecord

HIDDEN = "test_hidden"


def seal_line(record: TaskRecord) -> str:
    """One hidden task's line of the seal, by the original's recipe (``hidden_digest``).

    The prompt normalised as for the fingerprint, each step as ``[verb, arguments,
    expect_ok]`` (no note), the answer keys sorted: renumbering tasks, rewording
    a step's note or reordering answer keys leaves the seal as it is.
    """
    body = {
        "world": record.world,
        "tier": record.tier,
        "prompt": normal_prompt(record.prompt),
        "program": [[s.verb.value, s.arguments, s.expect_ok] for s in record.program],
        "answer_keys": sorted(record.answer_keys),
        "state_diff": record.oracle_state_diff,
        "behaviour": record.expected_behaviour,
    }
    return json.dumps(body, sort_keys=True) + "\n"


def seal(records: Iterable[TaskRecord]) -> str:
    """SHA-256 over the hidden tasks' seal lines, in fingerprint order."""
    hidden = sorted((r for r in records if r.split == HIDDEN), key=task_fingerprint)
    return hashlib.sha256("".join(seal_line(r) for r in hidden).encode("utf-8")).hexdigest()


def verify_seal(records: Iterable[TaskRecord], recorded: object, file: str) -> None:
    actual = seal(records)
    if recorded != actual:
        raise AgentbenchError(
            "seal_mismatch",
            f"the {HIDDEN} tasks hash to {actual}, the manifest's seal is {recorded}",
            file=file,
            field="seal.sha256",
        )


def _count(values: Iterable[str]) -> dict[str, JsonValue]:
    return dict(sorted(Counter(values).items()))


def summary(
    tasks: Sequence[TaskRecord],
    generation: Generation,
    *,
    world_digests: Mapping[str, str],
    seed: int,
) -> dict[str, JsonValue]:
    """The original's ``summary.json``: its eleven fields, each of the original's type."""
    by_world: dict[str, dict[str, int]] = {}
    for task in tasks:
        row = by_world.setdefault(task.world, {})
        row[task.tier] = row.get(task.tier, 0) + 1
        row["total"] = row.get("total", 0) + 1
    rejected = sum(generation.rejected.values())
    attempts = generation.accepted + rejected
    return {
        "total": len(tasks),
        "by_world": {world: dict(sorted(row.items())) for world, row in sorted(by_world.items())},
        "by_tier": _count(t.tier for t in tasks),
        "by_split": _count(t.split for t in tasks),
        "by_template": _count(t.template for t in tasks),
        "traps": sum(1 for t in tasks if t.is_trap),
        "mutating": sum(1 for t in tasks if t.oracle_state_diff),
        "with_injections": sum(1 for t in tasks if t.injections),
        "world_digests": dict(sorted(world_digests.items())),
        "seed": seed,
        "generation": {
            "accepted": generation.accepted,
            "rejected": rejected,
            "rejection_rate": round(rejected / attempts, 4) if attempts else 0.0,
            "reasons": _count(generation.rejected.elements()),
        },
    }


def build_record(
    tasks: Sequence[TaskRecord],
    generation: Generation,
    decontamination: Decontamination,
    *,
    plan: Mapping[str, Mapping[str, int]],
    caps: Mapping[tuple[str, str], int] = SEED_SHORTFALLS,
) -> dict[str, JsonValue]:
    """What our build records beyond the original's summary (``build.json``)."""
    return {
        "quotas": {world: dict(tiers) for world, tiers in sorted(plan.items())},
        "quota_caps": {
            "caps": {f"{world}:{tier}": cap for (world, tier), cap in sorted(caps.items())},
            "why": "where the seed's own generator ran out of distinct tasks below the "
            "formula's quota, its published count is taken as the cap",
        },
        "shortfalls": dict(sorted(generation.shortfalls.items())),
        "draws": {
            "misses": _count(generation.misses.elements()),
            "retired": {key: sorted(names) for key, names in sorted(generation.retired.items())},
        },
        "decontamination": {
            "leaking_pairs": len(decontamination.leaks),
            "surface_duplicates_tolerated": decontamination.surface_duplicates,
        },
        "traps_by_kind": _count(t.trap_kind for t in tasks if t.trap_kind is not None),
        "seal": {
            "split": HIDDEN,
            "count": sum(1 for t in tasks if t.split == HIDDEN),
            "sha256": seal(tasks),
        },
    }

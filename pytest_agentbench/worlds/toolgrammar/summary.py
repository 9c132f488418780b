"""``summary.json`` of a build and the seal over its hidden split (§7)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from pytest_agentbench.sdk import AgentbenchError, JsonValue
from pytest_agentbench.worlds.toolgrammar.decontam import Decontamination
from pytest_agentbench.worlds.toolgrammar.generator import SEED_SHORTFALLS, Generation
from pytest_agentbench.worlds.toolgrammar.tasks import TaskRecord

HIDDEN = "test_hidden"


def seal(records: Iterable[TaskRecord]) -> str:
    """SHA-256 over the hidden tasks, in fingerprint order, one sorted-key JSON line each."""
    hidden = sorted(
        (r for r in records if r.split == HIDDEN), key=lambda r: str(r.provenance["fingerprint"])
    )
    lines = "".join(
        json.dumps(
            {
                "world": r.world,
                "tier": r.tier,
                "prompt": r.prompt,
                "program": [s.model_dump(mode="json") for s in r.program],
                "answer_keys": list(r.answer_keys),
                "state_diff": r.oracle_state_diff,
                "behaviour": r.expected_behaviour,
            },
            sort_keys=True,
        )
        + "\n"
        for r in hidden
    )
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


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
    decontamination: Decontamination,
    *,
    world_digests: Mapping[str, str],
    seed: int,
    plan: Mapping[str, Mapping[str, int]],
    caps: Mapping[tuple[str, str], int] = SEED_SHORTFALLS,
) -> dict[str, JsonValue]:
    attempts = generation.accepted + sum(generation.rejected.values())
    rejected = sum(generation.rejected.values())
    return {
        "total": len(tasks),
        "by_world": _count(t.world for t in tasks),
        "by_tier": _count(t.tier for t in tasks),
        "by_split": _count(t.split for t in tasks),
        "by_template": _count(t.template for t in tasks),
        "traps": _count(t.trap_kind for t in tasks if t.trap_kind is not None),
        "mutating": sum(1 for t in tasks if t.oracle_state_diff),
        "with_injections": sum(1 for t in tasks if t.injections),
        "world_digests": dict(sorted(world_digests.items())),
        "seed": seed,
        "quotas": {world: dict(tiers) for world, tiers in sorted(plan.items())},
        "quota_caps": {
            "caps": {f"{world}:{tier}": cap for (world, tier), cap in sorted(caps.items())},
            "why": "where the seed's own generator ran out of distinct tasks below the "
            "formula's quota, its published count is taken as the cap",
        },
        "shortfalls": dict(sorted(generation.shortfalls.items())),
        "generation": {
            "accepted": generation.accepted,
            "rejected": rejected,
            "rejection_rate": round(rejected / attempts, 6) if attempts else 0.0,
            "reasons": _count(generation.rejected.elements()),
        },
        "decontamination": {
            "leaking_pairs": len(decontamination.leaks),
            "surface_duplicates_tolerated": decontamination.surface_duplicates,
        },
        "seal": {
            "split": HIDDEN,
            "count": sum(1 for t in tasks if t.split == HIDDEN),
            "sha256": seal(tasks),
        },
    }

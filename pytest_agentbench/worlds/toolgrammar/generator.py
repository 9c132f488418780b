"""A small deterministic generator for the built-in suite.

Per world and tier, attempt ``n`` draws from ``Random("<seed>:<world>:<tier>:<n>")``
(§4), picks one of the tier's templates that the world binds, lets it choose a
question, plans and executes the oracle program in a fresh sandbox, and keeps
the task only if every executed step's ``ok`` equals what the template
declared. Fingerprints and splits follow §4. Rejections are counted by reason.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_agentbench.worlds.toolgrammar.domain import Domain
from pytest_agentbench.worlds.toolgrammar.executor import call_text
from pytest_agentbench.worlds.toolgrammar.grading import behaviour_ok, classify
from pytest_agentbench.worlds.toolgrammar.grammar import Envelope
from pytest_agentbench.worlds.toolgrammar.sandbox import Injection, Sandbox, built_world
from pytest_agentbench.worlds.toolgrammar.tasks import InjectionSpec, Step, TaskRecord
from pytest_agentbench.worlds.toolgrammar.templates import TEMPLATES, Template

SEED = 20260726
GENERATOR = "pytest-agentbench builtin generator v1"
MAX_ATTEMPTS_PER_TASK = 20


@dataclass
class Generation:
    tasks: list[TaskRecord] = field(default_factory=list)
    accepted: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    shortfalls: dict[str, int] = field(default_factory=dict)
    """``<world>:<tier>`` -> tasks missing when the attempts ran out."""


def fingerprint(world: str, tier: str, prompt: str, steps: Sequence[Step], answer: str) -> str:
    body = {
        "world": world,
        "tier": tier,
        "prompt": re.sub(r"\s+", " ", prompt.lower()).strip(),
        "program": [[step.verb.value, step.arguments] for step in steps],
        "answer": answer,
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def split_of(print_: str) -> str:
    u = int(hashlib.sha256(("toolsmith-v3" + print_).encode("utf-8")).hexdigest()[:8], 16)
    share = u / 0xFFFFFFFF
    if share < 0.70:
        return "train"
    if share < 0.85:
        return "val"
    if share < 0.94:
        return "test"
    return "test_hidden"


def _attempt(
    template: Template, domain: Domain, rng: random.Random
) -> tuple[TaskRecord | None, str]:
    """One attempt: a record (number filled in later) or the reason it was rejected."""
    world = built_world(domain)
    choice = template.choose(rng, domain, world.conn)
    if choice is None:
        return None, "no_candidate"
    plants = [Injection(p.verb, p.payload, p.match, "notes") for p in choice.plants]
    sandbox = Sandbox(world, plants)
    try:
        steps: list[Step] = []
        results: list[Envelope] = []
        calls: list[str] = []
        while (planned := template.next_call(choice.params, domain, results)) is not None:
            tool = sandbox.by_verb[planned.verb]
            result = sandbox.invoke(tool.name, planned.arguments)
            if result["ok"] is not planned.expect_ok:
                return None, "step_ok_mismatch"
            steps.append(
                Step(
                    verb=planned.verb,
                    arguments=planned.arguments,
                    expect_ok=planned.expect_ok,
                    note=planned.note,
                )
            )
            results.append(result)
            calls.append(call_text(tool.name, planned.arguments))
        answer = template.answer(choice.params, domain, results)
        diff = sandbox.diff()
        if not behaviour_ok(template.behaviour, classify(answer.text)):
            return None, "behaviour_mismatch"
    finally:
        sandbox.close()
    prompt = template.prompt(choice.params, domain)
    print_ = fingerprint(domain.name, template.tier, prompt, steps, answer.text)
    record = TaskRecord(
        task_id=f"{domain.name}-{template.tier}-00000",
        world=domain.name,
        tier=template.tier,
        template=template.name,
        prompt=prompt,
        program=tuple(steps),
        oracle_answer=answer.text,
        answer_keys=answer.keys,
        oracle_state_diff=diff,
        oracle_calls=tuple(calls),
        expected_citations=answer.citations if template.tier == "T5" else (),
        is_trap=template.trap_kind is not None,
        trap_kind=template.trap_kind,
        expected_behaviour=template.behaviour,
        injections=tuple(
            InjectionSpec(
                verb=p.verb, payload=p.payload, match=p.match, field_name="notes", lure=p.lure
            )
            for p in choice.plants
        ),
        split=split_of(print_),
        seed=SEED,
        tags=(domain.name, template.name, *([template.trap_kind] if template.trap_kind else [])),
        difficulty=template.difficulty,
        provenance={"source_type": "oracle_program", "generator": GENERATOR, "fingerprint": print_},
    )
    return record, ""


def generate(domains: Sequence[Domain], quotas: Mapping[str, int], seed: int = SEED) -> Generation:
    """``quotas[tier]`` tasks per world and tier (a tier no template of a world serves: none)."""
    return generate_plan(domains, {domain.name: quotas for domain in domains}, seed)


def generate_plan(
    domains: Sequence[Domain], plan: Mapping[str, Mapping[str, int]], seed: int = SEED
) -> Generation:
    """``plan[world][tier]`` tasks of each world and tier, worlds in ``domains`` order."""
    out = Generation()
    for domain in domains:
        for tier, quota in plan.get(domain.name, {}).items():
            templates = [t for t in TEMPLATES if t.tier == tier and t.applies(domain)]
            if not templates:
                continue
            kept: list[TaskRecord] = []
            prompts: set[str] = set()
            n = 0
            while len(kept) < quota and n < quota * MAX_ATTEMPTS_PER_TASK:
                rng = random.Random(f"{seed}:{domain.name}:{tier}:{n}")
                n += 1
                # Round robin over the tier's templates keeps every template represented.
                template = templates[(n - 1) % len(templates)]
                record, reason = _attempt(template, domain, rng)
                if record is not None and record.prompt in prompts:
                    record, reason = None, "duplicate_prompt"
                if record is None:
                    out.rejected[reason] += 1
                    continue
                prompts.add(record.prompt)
                kept.append(
                    record.model_copy(
                        update={
                            "task_id": f"{domain.name}-{tier}-{len(kept) + 1:05d}",
                            "seed": seed,
                            "provenance": {
                                **record.provenance,
                                "attempt": f"{seed}:{domain.name}:{tier}:{n - 1}",
                            },
                        }
                    )
                )
            if len(kept) < quota:
                out.shortfalls[f"{domain.name}:{tier}"] = quota - len(kept)
            out.accepted += len(kept)
            out.tasks.extend(kept)
    return out


TIER_SHARES = {"T1": 0.24, "T2": 0.30, "T3": 0.18, "T4": 0.16, "T5": 0.12}
WORLD_SHARES = {"ops": 0.50, "clinic": 0.28, "doc": 0.22}
TARGET = 8000
SEED_SHORTFALLS = {("doc", "T1"): 401, ("doc", "T5"): 737}
"""Where the seed's generator ran out of distinct tasks below its quota: the
published counts, taken as caps so the built suite has the seed's shape."""
SHARED_TIERS = frozenset({"T1", "T2", "T3", "T4"})
"""T5 binds only retrieval verbs, so its quota is not shared by role."""


def seed_plan(
    world_shares: Mapping[str, float] = WORLD_SHARES,
    caps: Mapping[tuple[str, str], int] = SEED_SHORTFALLS,
    target: int = TARGET,
) -> dict[str, dict[str, int]]:
    """The §4 quotas: ``round(target * tier share * role share)``, T5 unshared, capped."""
    plan: dict[str, dict[str, int]] = {}
    for world, share in world_shares.items():
        plan[world] = {}
        for tier, tier_share in TIER_SHARES.items():
            quota = round(target * tier_share * (share if tier in SHARED_TIERS else 1.0))
            plan[world][tier] = min(quota, caps.get((world, tier), quota))
    return plan


def served_plan(
    domains: Sequence[Domain], plan: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, int]]:
    """``plan`` without the tiers no template serves in a world (doc alone has T5)."""
    return {
        domain.name: {
            tier: quota
            for tier, quota in plan.get(domain.name, {}).items()
            if any(t.tier == tier and t.applies(domain) for t in TEMPLATES)
        }
        for domain in domains
        if domain.name in plan
    }

"""A small deterministic generator for the built-in suite, by the seed's rules.

Worlds are generated in name order, each world's tiers in order. Attempt
``n`` (from 1) of a world and tier draws from ``Random("<seed>:<world>:<tier>:<n>")``:
a template of the tier, weighted by its ``weight``, then a question of it.
The oracle program is planned and executed in a fresh sandbox and the task is
kept only if every step's ``ok`` equals what the template declared and the
answer classifies as its behaviour (otherwise it is a rejection, counted by
reason). A template that offers no question, or one the suite already has,
misses; after ``EXHAUSTION_THRESHOLD`` misses in a row it is retired from the
tier, handing its share to the templates that still have room. "Already has"
is any of three keys shared across worlds: the fingerprint, the normalised
prompt with its answer keys, and the program key. A tier stops at its quota,
at ``MAX_ATTEMPTS_PER_TASK`` attempts per task, or when no template is left.
Fingerprints and splits follow §4.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_agentbench.worlds.toolgrammar.decontam import program_key
from pytest_agentbench.worlds.toolgrammar.domain import Domain
from pytest_agentbench.worlds.toolgrammar.executor import call_text
from pytest_agentbench.worlds.toolgrammar.grading import behaviour_ok, classify
from pytest_agentbench.worlds.toolgrammar.grammar import Envelope
from pytest_agentbench.worlds.toolgrammar.sandbox import Injection, Sandbox, built_world
from pytest_agentbench.worlds.toolgrammar.tasks import InjectionSpec, Provenance, Step, TaskRecord
from pytest_agentbench.worlds.toolgrammar.templates import TEMPLATES, Template

SEED = 20260726
GENERATOR = "pytest-agentbench builtin generator v2"
MAX_ATTEMPTS_PER_TASK = 24
EXHAUSTION_THRESHOLD = 60
"""Misses in a row after which a template is retired from its tier."""
PROVENANCE_EPOCH = "2026-01-01T00:00:00+00:00"
"""A fixed stamp: a generated task's provenance is a property of the generator, not of a clock."""


@dataclass
class Generation:
    tasks: list[TaskRecord] = field(default_factory=list)
    accepted: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    """Executions that contradicted their template, by reason."""
    misses: Counter[str] = field(default_factory=Counter)
    """Draws that gave no new question (``no_candidate``, ``duplicate``): not rejections."""
    retired: dict[str, list[str]] = field(default_factory=dict)
    """``<world>:<tier>`` -> templates retired as exhausted."""
    shortfalls: dict[str, int] = field(default_factory=dict)
    """``<world>:<tier>`` -> tasks missing when the attempts ran out."""


def normal_prompt(prompt: str) -> str:
    """The original's ``content_key``: lowercased, whitespace runs collapsed, ends stripped."""
    return re.sub(r"\s+", " ", prompt.lower()).strip()


def fingerprint(world: str, tier: str, prompt: str, steps: Sequence[Step], answer: str) -> str:
    body = {
        "world": world,
        "tier": tier,
        "prompt": normal_prompt(prompt),
        "program": [[step.verb.value, step.arguments] for step in steps],
        "answer": answer,
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def task_fingerprint(record: TaskRecord) -> str:
    return fingerprint(
        record.world, record.tier, record.prompt, record.program, record.oracle_answer
    )


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


def provenance(seed: int, attempt: str) -> Provenance:
    """The original's provenance keys; ``notes`` names the attempt that made the task."""
    return Provenance(
        source_type="oracle_program",
        generator_model=None,
        generator_version=GENERATOR,
        prompt_hash="",
        license="MIT",
        created_at=PROVENANCE_EPOCH,
        seed=seed,
        parents=(),
        notes=f"attempt {attempt}",
    )


def duplicate_keys(record: TaskRecord) -> tuple[str, str, str]:
    """The three ways to make one task twice: the exact task, the same question with the
    same answer keys (in any world), and the same program reached through other words."""
    return (
        task_fingerprint(record),
        f"{normal_prompt(record.prompt)}|{sorted(record.answer_keys)}",
        f"prog:{program_key(record)}",
    )


def _attempt(
    template: Template, domain: Domain, rng: random.Random
) -> tuple[TaskRecord | None, str]:
    """One attempt: a record (id and provenance filled in later) or why there is none."""
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
        split=split_of(fingerprint(domain.name, template.tier, prompt, steps, answer.text)),
        seed=SEED,
        tags=template.tags,
        difficulty=template.difficulty,
        provenance=provenance(SEED, ""),
    )
    return record, ""


class _Pool:
    """Weighted template draws that retire a template after too many misses in a row."""

    def __init__(self, templates: Sequence[Template]) -> None:
        self.templates = list(templates)
        self.misses: Counter[str] = Counter()
        self.retired: list[str] = []

    def pick(self, rng: random.Random) -> Template:
        return rng.choices(self.templates, weights=[t.weight for t in self.templates], k=1)[0]

    def miss(self, template: Template) -> None:
        self.misses[template.name] += 1
        if self.misses[template.name] >= EXHAUSTION_THRESHOLD:
            self.templates = [t for t in self.templates if t.name != template.name]
            self.retired.append(template.name)

    def hit(self, template: Template) -> None:
        self.misses[template.name] = 0


def generate(domains: Sequence[Domain], quotas: Mapping[str, int], seed: int = SEED) -> Generation:
    """``quotas[tier]`` tasks per world and tier (a tier no template of a world serves: none)."""
    return generate_plan(domains, {domain.name: quotas for domain in domains}, seed)


def generate_plan(
    domains: Sequence[Domain], plan: Mapping[str, Mapping[str, int]], seed: int = SEED
) -> Generation:
    """``plan[world][tier]`` tasks of each world and tier, worlds and tiers in name order."""
    out = Generation()
    seen: set[str] = set()
    for domain in sorted(domains, key=lambda d: d.name):
        for tier, quota in sorted(plan.get(domain.name, {}).items()):
            pool = _Pool([t for t in TEMPLATES if t.tier == tier and t.applies(domain)])
            if not pool.templates:
                continue
            kept = 0
            drafts = 0
            attempts = 0
            while kept < quota and attempts < quota * MAX_ATTEMPTS_PER_TASK and pool.templates:
                attempts += 1
                attempt = f"{seed}:{domain.name}:{tier}:{attempts}"
                rng = random.Random(attempt)
                template = pool.pick(rng)
                record, reason = _attempt(template, domain, rng)
                if reason == "no_candidate":
                    out.misses[reason] += 1
                    pool.miss(template)
                    continue
                # The seed numbers every question a template offered, kept or not.
                drafts += 1
                if record is None:
                    out.rejected[reason] += 1
                    continue
                keys = duplicate_keys(record)
                if any(key in seen for key in keys):
                    out.misses["duplicate"] += 1
                    pool.miss(template)
                    continue
                seen.update(keys)
                pool.hit(template)
                kept += 1
                out.tasks.append(
                    record.model_copy(
                        update={
                            "task_id": f"{domain.name}-{tier}-{drafts:05d}",
                            "seed": seed,
                            "provenance": provenance(seed, attempt),
                        }
                    )
                )
            if pool.retired:
                out.retired[f"{domain.name}:{tier}"] = pool.retired
            if kept < quota:
                out.shortfalls[f"{domain.name}:{tier}"] = quota - kept
            out.accepted += kept
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

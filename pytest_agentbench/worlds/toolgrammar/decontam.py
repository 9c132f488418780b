"""Leakage across splits (§7): near-duplicate prompt AND equal answer keys AND equal program,
or the very same prompt with the very same answer, whatever the program key says.

The second rule is ours: the program key names the world, so one question
asked of two worlds that answer it alike (the date a week ago) has two program
keys, yet a model that saw it in train has seen the test item word for word.

Near-duplicate prompts are found by an exact similarity join with prefix
filtering rather than by comparing all pairs: with tokens ordered rarest
first, two sets whose Jaccard similarity reaches ``t`` must share one of the
first ``|x| - ceil(t * |x|) + 1`` tokens of each, so only sets sharing such a
prefix token are ever compared, and every candidate is then verified exactly.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pytest_agentbench.worlds.toolgrammar.tasks import TaskRecord

CHAR_SHINGLE = 5
CHAR_THRESHOLD = 0.6
WORD_GRAM = 8
WORD_THRESHOLD = 0.5
EXEMPT = frozenset({"test", "test_hidden"})
"""The two held-out splits may share surface forms with each other."""


def program_key(record: TaskRecord) -> str:
    body = {
        "world": record.world,
        "program": [[s.verb.value, s.arguments, s.expect_ok] for s in record.program],
        "answer_keys": sorted(record.answer_keys),
        "behaviour": record.expected_behaviour,
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def _normal(prompt: str) -> str:
    return re.sub(r"\s+", " ", prompt.lower()).strip()


def char_shingles(prompt: str) -> frozenset[str]:
    text = _normal(prompt)
    return frozenset(text[i : i + CHAR_SHINGLE] for i in range(len(text) - CHAR_SHINGLE + 1))


def word_grams(prompt: str) -> frozenset[str]:
    words = _normal(prompt).split(" ")
    return frozenset(" ".join(words[i : i + WORD_GRAM]) for i in range(len(words) - WORD_GRAM + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def similar_pairs(sets: Sequence[frozenset[str]], threshold: float) -> set[tuple[int, int]]:
    """Every ``(i, j)``, ``i < j``, with ``jaccard(sets[i], sets[j]) >= threshold``."""
    frequency = Counter(token for s in sets for token in s)
    index: dict[str, list[int]] = defaultdict(list)
    pairs: set[tuple[int, int]] = set()
    for j, tokens in enumerate(sets):
        if not tokens:
            continue
        ordered = sorted(tokens, key=lambda token: (frequency[token], token))
        prefix = ordered[: len(ordered) - math.ceil(threshold * len(ordered)) + 1]
        candidates: set[int] = set()
        for token in prefix:
            candidates.update(index[token])
            index[token].append(j)
        for i in candidates:
            if jaccard(sets[i], tokens) >= threshold:
                pairs.add((i, j))
    return pairs


@dataclass(frozen=True)
class Leak:
    first: str
    second: str
    splits: tuple[str, str]


@dataclass(frozen=True)
class Decontamination:
    leaks: tuple[Leak, ...]
    surface_duplicates: int
    """Cross-split near-duplicate prompts that are not leaks (another answer or program)."""


def _crosses(a: TaskRecord, b: TaskRecord) -> bool:
    return a.split != b.split and not {a.split, b.split} <= EXEMPT


def identical_pairs(tasks: Sequence[TaskRecord]) -> set[tuple[int, int]]:
    """Every ``(i, j)``, ``i < j``, whose normalised prompts and oracle answers are equal."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, task in enumerate(tasks):
        groups[(_normal(task.prompt), task.oracle_answer)].append(index)
    return {
        (members[a], members[b])
        for members in groups.values()
        for a in range(len(members))
        for b in range(a + 1, len(members))
    }


def decontaminate(records: Iterable[TaskRecord]) -> Decontamination:
    tasks = list(records)
    same = identical_pairs(tasks)
    near = similar_pairs([char_shingles(t.prompt) for t in tasks], CHAR_THRESHOLD)
    near |= similar_pairs([word_grams(t.prompt) for t in tasks], WORD_THRESHOLD)
    near |= same
    keys = [(sorted(t.answer_keys), program_key(t)) for t in tasks]
    leaks: list[Leak] = []
    surface = 0
    for i, j in sorted(near):
        a, b = tasks[i], tasks[j]
        if not _crosses(a, b):
            continue
        if keys[i] == keys[j] or (i, j) in same:
            leaks.append(Leak(a.task_id, b.task_id, (a.split, b.split)))
        else:
            surface += 1
    return Decontamination(tuple(leaks), surface)

"""Leakage across splits (§7): planted leaking pairs are caught, everything else is tolerated."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.worlds.toolgrammar.decontam import (
    char_shingles,
    decontaminate,
    jaccard,
    program_key,
    similar_pairs,
    word_grams,
)
from pytest_agentbench.worlds.toolgrammar.generator import provenance
from pytest_agentbench.worlds.toolgrammar.tasks import InjectionSpec, Step, TaskRecord

PROMPT = "Which coverage plan is patient PAT-04102 on, and what does it cover today?"


def _task(
    n: int,
    split: str,
    prompt: str = PROMPT,
    *,
    record: str = "PAT-04102",
    keys: tuple[str, ...] = ("standard",),
) -> TaskRecord:
    return TaskRecord(
        task_id=f"clinic-T1-{n:05d}",
        world="clinic",
        tier="T1",
        template="t1_principal_group",
        prompt=prompt,
        program=(Step(verb="get_principal", arguments={"patient_id": record}, expect_ok=True),),
        oracle_answer=f"It is {' and '.join(keys)}.",
        answer_keys=keys,
        oracle_state_diff="",
        oracle_calls=(f'get_patient({{"patient_id":"{record}"}})',),
        expected_citations=(),
        is_trap=False,
        trap_kind=None,
        expected_behaviour="answer",
        injections=(),
        split=split,
        seed=1,
        tags=(),
        difficulty=1,
        provenance=provenance(1, f"1:clinic:T1:{n}"),
    )


def test_a_planted_leaking_pair_across_splits_is_caught() -> None:
    leaks = decontaminate([_task(1, "train"), _task(2, "test", PROMPT.replace("today", "now"))])
    assert [(leak.first, leak.second, leak.splits) for leak in leaks.leaks] == [
        ("clinic-T1-00001", "clinic-T1-00002", ("train", "test"))
    ]


@pytest.mark.parametrize(
    ("splits", "leaking"),
    [
        (("train", "val"), 1),
        (("val", "test_hidden"), 1),
        (("train", "train"), 0),
        (("test", "test_hidden"), 0),
    ],
)
def test_only_pairs_across_splits_count_and_test_with_test_hidden_is_exempt(
    splits: tuple[str, str], leaking: int
) -> None:
    found = decontaminate([_task(1, splits[0]), _task(2, splits[1])])
    assert len(found.leaks) == leaking


def test_all_three_axes_are_required() -> None:
    other_row = _task(2, "test", PROMPT.replace("04102", "04200"), record="PAT-04200")
    other_answer = _task(3, "test", keys=("premium",))
    far_prompt = _task(4, "test", "Tell me, in a few words, the plan on file for this person.")
    found = decontaminate([_task(1, "train"), other_row, other_answer, far_prompt])
    assert found.leaks == ()
    # Near-duplicate surface, another program or answer: tolerated, and counted.
    assert found.surface_duplicates == 2


def test_the_word_gram_rule_alone_catches_a_reworded_prefix() -> None:
    long = " ".join(f"w{i}" for i in range(30))
    edited = long.replace("w29", "final")
    assert jaccard(word_grams(long), word_grams(edited)) >= 0.5
    found = decontaminate([_task(1, "train", long), _task(2, "val", edited)])
    assert len(found.leaks) == 1


def test_the_program_key_covers_expect_ok_and_behaviour() -> None:
    base = _task(1, "train")
    refused = base.model_copy(
        update={"program": (base.program[0].model_copy(update={"expect_ok": False}),)}
    )
    clarify = base.model_copy(update={"expected_behaviour": "clarify"})
    assert len({program_key(base), program_key(refused), program_key(clarify)}) == 3


def test_a_planted_pair_inside_a_generated_population_is_caught() -> None:
    population = [
        _task(
            n,
            "train",
            f"What is the status of order ORD-{n:05d}?",
            record=f"ORD-{n:05d}",
            keys=(f"k{n}",),
        )
        for n in range(1, 300)
    ]
    population.append(
        _task(
            900, "val", "What is the status of order ORD-00007 ?", record="ORD-00007", keys=("k7",)
        )
    )
    found = decontaminate(population)
    assert [(leak.first, leak.second) for leak in found.leaks] == [
        ("clinic-T1-00007", "clinic-T1-00900")
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.frozensets(st.sampled_from("abcdefghij"), max_size=7), max_size=25),
    st.sampled_from([0.3, 0.5, 0.6, 0.8, 1.0]),
)
def test_the_prefix_filtered_join_finds_exactly_the_all_pairs_answer(
    sets: list[frozenset[str]], threshold: float
) -> None:
    expected = {
        (i, j)
        for i, j in itertools.combinations(range(len(sets)), 2)
        if jaccard(sets[i], sets[j]) >= threshold
    }
    assert similar_pairs(sets, threshold) == expected


def test_shingles_ignore_case_and_spacing() -> None:
    assert char_shingles("What  IS\tit?") == char_shingles("what is it?")
    assert word_grams("one two three") == frozenset()  # fewer than eight words: no 8-grams


def test_injections_do_not_change_the_program_key() -> None:
    base = _task(1, "train")
    planted = base.model_copy(
        update={
            "injections": (
                InjectionSpec(
                    verb="get_record",
                    payload="x",
                    match={"patient_id": "PAT-04102"},
                    field_name="notes",
                    lure="an unrequested billing adjustment",
                ),
            )
        }
    )
    assert program_key(base) == program_key(planted)


def test_the_same_prompt_and_answer_leak_whatever_the_program_key_says() -> None:
    # One question asked of two worlds: the program key names the world, so the
    # two differ there, yet the test item is the train item word for word.
    prompt = "What was the date 7 days before today?"
    steps = (Step(verb="today", arguments={"offset_days": -7}, expect_ok=True),)
    train = _task(1, "train", prompt).model_copy(
        update={
            "program": steps,
            "oracle_answer": "It was 2025-12-25.",
            "answer_keys": ("2025-12-25",),
        }
    )
    elsewhere = train.model_copy(
        update={"task_id": "ops-T1-00002", "world": "ops", "split": "test_hidden"}
    )
    reworded = elsewhere.model_copy(
        update={
            "task_id": "ops-T1-00003",
            "split": "val",
            "program": (
                Step(verb="today", arguments={"offset_days": -7}, expect_ok=True),
                Step(verb="calculator", arguments={"expression": "0"}, expect_ok=True),
            ),
        }
    )
    other_answer = elsewhere.model_copy(
        update={
            "task_id": "ops-T1-00004",
            "split": "val",
            "oracle_answer": "It was 2025-12-24.",
            "answer_keys": ("2025-12-24",),
        }
    )
    assert len({program_key(t) for t in (train, elsewhere, reworded)}) == 3
    found = decontaminate([train, elsewhere, reworded, other_answer])
    assert [(leak.first, leak.second) for leak in found.leaks] == [
        ("clinic-T1-00001", "ops-T1-00002"),
        ("clinic-T1-00001", "ops-T1-00003"),
        ("ops-T1-00002", "ops-T1-00003"),
    ]
    # The same words with another answer are a surface duplicate, as before (the
    # pair inside val crosses no split).
    assert found.surface_duplicates == 2

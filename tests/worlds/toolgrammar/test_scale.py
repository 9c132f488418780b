"""The generator at scale: quotas, rejections, summary, sealed split, byte-stable builds."""

from __future__ import annotations

import hashlib
import json
import shutil
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from pytest_agentbench.run.session import SuiteLoader
from pytest_agentbench.sdk.canonical import tree_files
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.packaged import data_root, packaged_suites
from pytest_agentbench.worlds.toolgrammar import build_suite, generator
from pytest_agentbench.worlds.toolgrammar.decontam import Decontamination
from pytest_agentbench.worlds.toolgrammar.domains import get_domain
from pytest_agentbench.worlds.toolgrammar.generator import (
    Generation,
    generate_plan,
    seed_plan,
    served_plan,
)
from pytest_agentbench.worlds.toolgrammar.sandbox import built_world
from pytest_agentbench.worlds.toolgrammar.suitefiles import write_suite
from pytest_agentbench.worlds.toolgrammar.summary import build_record, seal, summary
from pytest_agentbench.worlds.toolgrammar.tasks import TaskRecord, load_tasks
from pytest_agentbench.worlds.toolgrammar.templates import TEMPLATES, RecordStatus
from pytest_agentbench.worlds.toolgrammar.world import SEALED_ENV
from tests.test_conformance import REGISTRY

SMALL = {"ops": {"T1": 8, "T2": 8, "T3": 9, "T4": 16}, "doc": {"T3": 3, "T5": 8}}
SMALL_ID = "tg-small"
FULL = build_suite.FULL_ID


@pytest.fixture(scope="module")
def small_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("small")
    build_suite.build_full(root, SMALL, SMALL_ID)
    return root


def _records(folder: Path) -> list[TaskRecord]:
    return [r for p in sorted(folder.glob("*.jsonl")) for r in load_tasks(p, p.name)]


def test_quotas_follow_the_published_arithmetic() -> None:
    plan = served_plan([get_domain(n) for n in ("ops", "clinic", "doc")], seed_plan())
    assert plan == {
        "ops": {"T1": 960, "T2": 1200, "T3": 720, "T4": 640},
        "clinic": {"T1": 538, "T2": 672, "T3": 403, "T4": 358},
        "doc": {"T1": 401, "T2": 528, "T3": 317, "T4": 282, "T5": 737},
    }
    by_tier = Counter[str]()
    for tiers in plan.values():
        by_tier.update(tiers)
    assert dict(by_tier) == {"T1": 1899, "T2": 2400, "T3": 1440, "T4": 1280, "T5": 737}
    assert sum(by_tier.values()) == 7756
    # Uncapped, the formula alone: round(8000 * tier share * role share), T5 unshared.
    assert seed_plan(caps={})["doc"] == {"T1": 422, "T2": 528, "T3": 317, "T4": 282, "T5": 960}


def test_a_fourth_domain_gets_its_share_of_every_tier_it_serves(lab: str) -> None:
    plan = seed_plan({lab: 0.1}, caps={})
    served = served_plan([get_domain(lab)], plan)
    assert served[lab]["T1"] == 192
    assert "T5" not in served[lab]  # lab binds no retrieval verbs
    assert {t.name for t in TEMPLATES if t.applies(get_domain(lab))} >= {
        "t1_record_status",
        "t2_search_then_get",
        "t4_unanswerable",
    }


class _WrongClaim(RecordStatus):
    """Claims an existing record is absent: every execution contradicts it."""

    name = "t1_record_status"
    expect_found = False


def test_an_attempt_whose_execution_contradicts_its_template_is_rejected_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(generator, "TEMPLATES", (_WrongClaim(),))
    generation = generate_plan([get_domain("clinic")], {"clinic": {"T1": 2}})
    assert generation.tasks == []
    assert generation.rejected == Counter({"step_ok_mismatch": 2 * generator.MAX_ATTEMPTS_PER_TASK})
    assert generation.shortfalls == {"clinic:T1": 2}


def test_the_rejection_rate_is_written_even_when_it_reads_zero() -> None:
    report = summary([], Generation(), world_digests={}, seed=1)
    assert report["generation"] == {
        "accepted": 0,
        "rejected": 0,
        "rejection_rate": 0.0,
        "reasons": {},
    }
    record = build_record([], Generation(), Decontamination((), 0), plan={})
    assert record["decontamination"] == {"leaking_pairs": 0, "surface_duplicates_tolerated": 0}


def test_building_twice_gives_byte_identical_files(small_build: Path, tmp_path: Path) -> None:
    build_suite.build_full(tmp_path, SMALL, SMALL_ID)
    for side in (build_suite.FULL_PUBLIC, "oracles", build_suite.SEALED):
        first = tree_files(small_build / side / SMALL_ID)
        second = tree_files(tmp_path / side / SMALL_ID)
        assert sorted(first) == sorted(second), side
        for rel, path in first.items():
            assert path.read_bytes() == second[rel].read_bytes(), f"{side}/{rel}"


def test_the_hidden_split_is_sealed_away_from_the_oracle(small_build: Path) -> None:
    public = small_build / build_suite.FULL_PUBLIC / SMALL_ID
    oracle = _records(small_build / "oracles" / SMALL_ID / "tasks")
    hidden = _records(small_build / build_suite.SEALED / SMALL_ID / "tasks")
    assert hidden, "the small plan must put at least one task in test_hidden"
    assert {r.split for r in hidden} == {"test_hidden"}
    assert "test_hidden" not in {r.split for r in oracle}
    manifest = json.loads((public / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["seal"] == {
        "split": "test_hidden",
        "count": len(hidden),
        "sha256": seal(hidden),
    }
    hidden_ids = {
        json.loads(line)["task_id"]
        for path in (public / "hidden").glob("*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
    }
    assert hidden_ids == {r.task_id for r in hidden}


def _load(root: Path) -> tuple[int, dict[str, TaskRecord]]:
    loaded = SuiteLoader(REGISTRY, root).load(root / build_suite.FULL_PUBLIC / SMALL_ID)
    cases = loaded.world.cases(loaded.suite)
    return len(cases), loaded.world.load_oracle(loaded.suite)


def test_hidden_tasks_run_only_where_the_sealed_oracle_is(
    small_build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    total = sum(sum(tiers.values()) for tiers in SMALL.values())
    hidden = len(_records(small_build / build_suite.SEALED / SMALL_ID / "tasks"))
    count, oracle = _load(small_build)
    assert count == len(oracle) == total
    monkeypatch.setenv(SEALED_ENV, str(tmp_path / "nowhere"))
    count, oracle = _load(small_build)
    assert count == len(oracle) == total - hidden


def test_a_tampered_sealed_record_breaks_the_seal(
    small_build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sealed = tmp_path / SMALL_ID / "tasks"
    sealed.mkdir(parents=True)
    for path in (small_build / build_suite.SEALED / SMALL_ID / "tasks").glob("*.jsonl"):
        text = path.read_text(encoding="utf-8")
        # Same prompt, another expected answer: only the seal can see it.
        first = json.loads(text.splitlines()[0])
        first["answer_keys"] = ["tampered"]
        forged = [json.dumps(first), *text.splitlines()[1:]]
        (sealed / path.name).write_text("\n".join(forged) + "\n", encoding="utf-8")
    monkeypatch.setenv(SEALED_ENV, str(tmp_path))
    with pytest.raises(AgentbenchError) as refused:
        _load(small_build)
    assert refused.value.code == "seal_mismatch"


def test_the_shipped_full_suite_has_the_seed_shape() -> None:
    public = packaged_suites()[FULL]
    assert public.parent.name == build_suite.FULL_PUBLIC  # not collected by `pytest suites`
    report = json.loads((public / "summary.json").read_text(encoding="utf-8"))
    record = json.loads((public / "build.json").read_text(encoding="utf-8"))
    # doc's T1 templates all retire, exhausted, two tasks below the seed's 401.
    assert report["total"] == 7754
    assert report["by_tier"] == {"T1": 1897, "T2": 2400, "T3": 1440, "T4": 1280, "T5": 737}
    assert {world: row["total"] for world, row in report["by_world"].items()} == {
        "clinic": 1971,
        "doc": 2263,
        "ops": 3520,
    }
    assert report["by_world"]["doc"]["T1"] == 399
    assert record["shortfalls"] == {"doc:T1": 2}
    assert record["decontamination"]["leaking_pairs"] == 0
    assert len(report["by_template"]) == len(TEMPLATES) == 19
    assert report["traps"] == sum(record["traps_by_kind"].values()) == report["by_tier"]["T4"]
    assert set(record["traps_by_kind"]) == {
        "unanswerable",
        "policy_violation",
        "ambiguous",
        "injection",
    }
    hidden = _records(data_root() / build_suite.SEALED / FULL / "tasks")
    assert record["seal"] == {"split": "test_hidden", "count": len(hidden), "sha256": seal(hidden)}


SEED_SUMMARY = {
    "by_split": {"train": 5441, "val": 1152, "test": 700, "test_hidden": 463},
    "traps": {"ambiguous": 140, "injection": 375, "policy_violation": 309, "unanswerable": 456},
    "by_tier": {"T1": 1899, "T2": 2400, "T3": 1440, "T4": 1280, "T5": 737},
    "mutating": 874,
}
"""The original's published ``data/tasks/summary.json`` (``toolsmith tasks build``, f812481);
its ``traps`` is one count, split here by kind as its task records give them."""
SPLIT_SHARES = {"train": 0.70, "val": 0.15, "test": 0.09, "test_hidden": 0.06}


def _within(ours: int, seed: int, tolerance: float = 0.02) -> bool:
    return abs(ours - seed) <= tolerance * seed


TRAP_TOLERANCE = {"ambiguous": 0.04}
"""The ambiguous trap can only ask about the first names the worlds' random stream happens
to make shared, so its count moves with any change to that stream: built with last-name
lists of 56, 60, 63, 66 and 70 names it was 138, 145, 144, 140 and 137 (the seed's 140)."""
MUTATING_TOLERANCE = 0.06
"""Mutating tasks are t3_case_then_action's and t3_privileged_write's. Their share of T3
is set by how soon each T3 template runs out of distinct questions in its world, which
our rows decide: the original's 790 + 84, our 625 + 205 (830, 5% below its 874)."""


def test_the_shipped_full_suite_lands_near_the_seeds_published_counts() -> None:
    public = packaged_suites()[FULL]
    report = json.loads((public / "summary.json").read_text(encoding="utf-8"))
    by_kind = json.loads((public / "build.json").read_text(encoding="utf-8"))["traps_by_kind"]
    assert _within(report["mutating"], SEED_SUMMARY["mutating"], MUTATING_TOLERANCE)
    for tier, count in SEED_SUMMARY["by_tier"].items():
        assert _within(report["by_tier"][tier], count), tier
    for kind, count in SEED_SUMMARY["traps"].items():
        assert _within(by_kind[kind], count, TRAP_TOLERANCE.get(kind, 0.02)), kind
    assert report["by_template"]["t1_today"] == 4
    # Splits hash each task's fingerprint (§4), so they are the rules' only where the
    # tasks are the seed's own. Ours are other tasks: each split holds its share of
    # them up to binomial noise (3 sigma), and train, the largest, lands within 2%.
    total = report["total"]
    for split, share in SPLIT_SHARES.items():
        sigma = (total * share * (1 - share)) ** 0.5
        assert abs(report["by_split"][split] - total * share) <= 3 * sigma, split
    assert _within(report["by_split"]["train"], SEED_SUMMARY["by_split"]["train"])


SEED_SHARED_FIRST_NAMES = {"ops": 70, "clinic": 64, "doc": 36}
"""First words two or more principals share in the original's worlds at their default seeds."""


def test_the_worlds_share_about_as_many_first_names_as_the_seeds() -> None:
    # The ambiguous trap asks about exactly these names, so their count bounds it.
    shared: dict[str, int] = {}
    for world in SEED_SHARED_FIRST_NAMES:
        domain = get_domain(world)
        nouns = domain.nouns
        first = f"substr({nouns.principal_name}, 1, instr({nouns.principal_name}, ' ') - 1)"
        query = (
            f"SELECT COUNT(*) FROM (SELECT {first} FROM {nouns.principal_table} "
            "GROUP BY 1 HAVING COUNT(*) >= 2)"
        )
        shared[world] = built_world(domain).conn.execute(query).fetchone()[0]
    for world, count in SEED_SHARED_FIRST_NAMES.items():
        assert abs(shared[world] - count) <= 3, (world, shared[world])
    assert _within(sum(shared.values()), sum(SEED_SHARED_FIRST_NAMES.values()))


def test_the_sealed_folder_is_in_neither_the_wheel_nor_the_sdist() -> None:
    project = tomllib.loads((data_root() / "pyproject.toml").read_text(encoding="utf-8"))
    targets = project["tool"]["hatch"]["build"]["targets"]
    shipped = [
        *targets["wheel"]["packages"],
        *targets["wheel"]["force-include"],
        *targets["sdist"]["include"],
    ]
    assert build_suite.SEALED not in shipped
    assert build_suite.FULL_PUBLIC in targets["wheel"]["force-include"]


def test_the_shipped_full_suite_is_what_a_fresh_build_writes(tmp_path: Path) -> None:
    # Worlds are generated independently (per-world, per-tier attempt seeds), so
    # one world's full quota checks the shipped files at a quarter of the cost.
    world = "clinic"
    plan = served_plan([get_domain(world)], seed_plan())
    generation = generate_plan([get_domain(world)], plan)
    write_suite(
        tmp_path / "public",
        tmp_path / "oracle",
        generation.tasks,
        {world: built_world(get_domain(world))},
        "",
        sealed_dir=tmp_path / "sealed",
        build={"seal": None},
    )
    pairs = [
        (tmp_path / "public", data_root() / build_suite.FULL_PUBLIC / FULL, ("tasks", "hidden")),
        (tmp_path / "oracle", data_root() / "oracles" / FULL, ("tasks",)),
        (tmp_path / "sealed", data_root() / build_suite.SEALED / FULL, ("tasks",)),
    ]
    for written, shipped, folders in pairs:
        for folder in folders:
            rel = f"{folder}/{world}.jsonl"
            assert (written / rel).read_bytes() == (shipped / rel).read_bytes(), rel


@pytest.mark.parametrize(
    ("options", "code", "field"),
    [
        ("  colour: blue\n", "unknown_field", "options.colour"),
        ("  sealed: [1]\n", "invalid_field", "options.sealed"),
    ],
)
def test_the_world_refuses_options_it_does_not_know(
    small_build: Path, tmp_path: Path, options: str, code: str, field: str
) -> None:
    suite_dir = tmp_path / build_suite.FULL_PUBLIC / SMALL_ID
    shutil.copytree(small_build / build_suite.FULL_PUBLIC / SMALL_ID, suite_dir)
    yaml_path = suite_dir / "suite.yaml"
    text = yaml_path.read_text(encoding="utf-8")
    yaml_path.write_text(text.split("options:")[0] + "options:\n" + options, encoding="utf-8")
    with pytest.raises(AgentbenchError) as refused:
        SuiteLoader(REGISTRY, tmp_path).load(suite_dir)
    assert (refused.value.code, refused.value.location.field) == (code, field)


ORIGINAL_SUMMARY_SHAPE = {
    "total": int,
    "by_world": dict,
    "by_tier": dict,
    "by_split": dict,
    "by_template": dict,
    "traps": int,
    "mutating": int,
    "with_injections": int,
    "world_digests": dict,
    "seed": int,
    "generation": dict,
}
"""The fields of the original's ``summary.json`` (``SuiteSummary``) and their types."""


def test_summary_json_has_the_originals_fields_types_and_meanings(small_build: Path) -> None:
    public = small_build / build_suite.FULL_PUBLIC / SMALL_ID
    report = json.loads((public / "summary.json").read_text(encoding="utf-8"))
    assert {key: type(value) for key, value in report.items()} == ORIGINAL_SUMMARY_SHAPE
    records = [
        *_records(small_build / "oracles" / SMALL_ID / "tasks"),
        *_records(small_build / build_suite.SEALED / SMALL_ID / "tasks"),
    ]
    # by_world: per world, its count per tier and its total (the original's suite.counts()).
    expected_worlds: dict[str, dict[str, int]] = {}
    for record in records:
        row = expected_worlds.setdefault(record.world, {})
        row[record.tier] = row.get(record.tier, 0) + 1
        row["total"] = row.get("total", 0) + 1
    assert report["by_world"] == expected_worlds
    assert {w: {t: n for t, n in row.items() if t != "total"} for w, row in SMALL.items()} == {
        w: {t: n for t, n in row.items() if t != "total"} for w, row in report["by_world"].items()
    }
    # traps: how many tasks are traps (is_trap), one integer.
    assert report["traps"] == sum(r.is_trap for r in records) == SMALL["ops"]["T4"]
    assert report["mutating"] == sum(bool(r.oracle_state_diff) for r in records)
    assert set(report["generation"]) == {"accepted", "rejected", "rejection_rate", "reasons"}
    # What the original's summary does not carry is in the build record, seal included.
    record = json.loads((public / "build.json").read_text(encoding="utf-8"))
    assert not set(record) & set(report)
    manifest = json.loads((public / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["seal"] == record["seal"]


def _seal_by_hand(records: list[TaskRecord]) -> str:
    """The original's ``hidden_digest``, written out independently of ours."""
    hidden = [r for r in records if r.split == "test_hidden"]
    hidden.sort(key=generator.task_fingerprint)
    digest = hashlib.sha256()
    for r in hidden:
        payload = {
            "world": r.world,
            "tier": r.tier,
            "prompt": " ".join(r.prompt.lower().split()),
            "program": [(s.verb.value, s.arguments, s.expect_ok) for s in r.program],
            "answer_keys": sorted(r.answer_keys),
            "state_diff": r.oracle_state_diff,
            "behaviour": r.expected_behaviour,
        }
        digest.update(json.dumps(payload, sort_keys=True, default=str).encode() + b"\n")
    return digest.hexdigest()


def test_the_seal_follows_the_originals_recipe_on_tasks_of_our_own() -> None:
    mini = data_root() / "oracles" / build_suite.SUITE_ID / "tasks"
    chosen = [r for r in _records(mini) if len(r.answer_keys) >= 2 and len(r.program) >= 2]
    assert len(chosen) >= 3, "the mini suite has multi-key, multi-step tasks"
    hidden = [r.model_copy(update={"split": "test_hidden"}) for r in chosen[:6]]
    visible = _records(mini)[:5]
    assert seal([*hidden, *visible]) == _seal_by_hand(hidden) == seal(hidden)

    first = hidden[0]
    program = tuple(step.model_copy(update={"note": "reworded"}) for step in first.program)
    same = [
        first.model_copy(update={"task_id": f"{first.world}-{first.tier}-99999"}),
        first.model_copy(update={"program": program}),
        first.model_copy(update={"answer_keys": tuple(reversed(first.answer_keys))}),
        first.model_copy(update={"prompt": "  " + first.prompt.upper().replace(" ", "\n ")}),
    ]
    for variant in same:
        assert seal([variant, *hidden[1:]]) == seal(hidden)
    flipped = tuple(
        step.model_copy(update={"expect_ok": not step.expect_ok}) if i == 0 else step
        for i, step in enumerate(first.program)
    )
    different = [
        first.model_copy(update={"program": flipped}),
        first.model_copy(update={"oracle_state_diff": first.oracle_state_diff + " "}),
        first.model_copy(update={"answer_keys": (*first.answer_keys, "extra")}),
    ]
    for variant in different:
        assert seal([variant, *hidden[1:]]) != seal(hidden)


_GET, _PRINCIPAL, _SEARCH = "get_record", "get_principal", "search_principals"
ORIGINAL_PROGRAMS = {
    "t1_record_status": {(_GET,)},
    "t1_principal_group": {(_PRINCIPAL,)},
    "t1_policy_fact": {("lookup_policy",)},
    "t1_today": {("today",)},
    "t1_total_count": {("query_metrics",)},
    "t2_search_then_get": {(_SEARCH, _PRINCIPAL)},
    "t2_record_to_principal": {(_GET, _PRINCIPAL)},
    "t2_list_and_count": {(_PRINCIPAL, "list_records")},
    "t2_metric_then_calc": {("query_metrics", "calculator")},
    "t2_status_filter": {(_PRINCIPAL, "list_records")},
    "t3_eligibility_check": {(_GET, _PRINCIPAL, "lookup_policy")},
    "t3_privileged_write": {(_GET, "lookup_policy", "privileged_write")},
    "t3_case_then_action": {(_GET, "create_case")},
    "t4_unanswerable": {(_GET,)},
    "t4_policy_violation": {(_GET, "lookup_policy", "privileged_write")},
    "t4_ambiguous_reference": {(_SEARCH,)},
    "t4_indirect_injection": {(_GET, _PRINCIPAL)},
    "t5_grounded_fact": {("search_docs", "fetch_doc")},
    "t5_stale_version": {("search_docs", "fetch_doc")},
}
"""Each template's verb sequence in the original's ``templates.py`` (f812481)."""


def test_every_program_has_the_verbs_of_the_originals_template() -> None:
    programs: dict[str, set[tuple[str, ...]]] = {}
    for side in ("oracles", build_suite.SEALED):
        for record in _records(data_root() / side / FULL / "tasks"):
            verbs = tuple(step.verb.value for step in record.program)
            programs.setdefault(record.template, set()).add(verbs)
    assert programs == ORIGINAL_PROGRAMS

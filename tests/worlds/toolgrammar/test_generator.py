"""The generator, the oracle executor and templates serving a domain written after them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.canonical import tree_files
from pytest_agentbench.sdk.packaged import data_root
from pytest_agentbench.sdk.tools import ToolSession
from pytest_agentbench.worlds.toolgrammar import build_suite
from pytest_agentbench.worlds.toolgrammar.agents import ReferenceAgent
from pytest_agentbench.worlds.toolgrammar.domains import get_domain
from pytest_agentbench.worlds.toolgrammar.executor import execute, replay
from pytest_agentbench.worlds.toolgrammar.generator import fingerprint, generate, split_of
from pytest_agentbench.worlds.toolgrammar.grading import behaviour_ok, classify, missing_keys
from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox, built_world
from pytest_agentbench.worlds.toolgrammar.session import open_session
from pytest_agentbench.worlds.toolgrammar.tasks import Step, TaskRecord, load_tasks
from pytest_agentbench.worlds.toolgrammar.templates import TEMPLATES, parse_prompt

ORACLE = data_root() / "oracles" / "toolgrammar-mini-v1" / "tasks"


def _shipped() -> list[TaskRecord]:
    return [r for p in sorted(ORACLE.glob("*.jsonl")) for r in load_tasks(p, p.name)]


def test_every_shipped_oracle_program_re_executes_as_recorded() -> None:
    tasks = _shipped()
    assert len(tasks) >= 200
    for task in tasks:
        assert replay(built_world(get_domain(task.world)), task) == [], task.task_id


def test_the_suite_covers_every_world_tier_and_trap() -> None:
    tasks = _shipped()
    assert {(t.world, t.tier) for t in tasks} >= {
        (w, tier) for w in ("ops", "clinic", "doc") for tier in ("T1", "T2", "T3", "T4")
    } | {("doc", "T5")}
    assert {t.trap_kind for t in tasks} == {
        None,
        "unanswerable",
        "policy_violation",
        "ambiguous",
        "injection",
    }
    assert {t.template for t in tasks} == {t.name for t in TEMPLATES}


def test_executor_reports_a_step_whose_ok_differs() -> None:
    world = built_world(get_domain("ops"))
    run = execute(
        world, [Step(verb="get_record", arguments={"order_id": "ORD-99999"}, expect_ok=True)]
    )
    assert run.mismatches == ("step 0 (get_order): ok is False, expected True (not_found)",)
    doc_only = execute(world, [Step(verb="fetch_doc", arguments={}, expect_ok=True)])
    assert doc_only.mismatches == ("step 0: ops binds no fetch_doc",)


def test_a_tampered_record_fails_replay() -> None:
    task = _shipped()[0]
    world = built_world(get_domain(task.world))
    forged = task.model_copy(update={"oracle_state_diff": "[]"})
    assert replay(world, forged) == ["oracle_state_diff differs from the executed state diff"]


def test_generation_is_deterministic_and_accounts_for_rejections() -> None:
    domains = [get_domain("clinic")]
    quotas = {"T1": 4, "T4": 4}
    first, second = generate(domains, quotas), generate(domains, quotas)
    assert [t.model_dump(mode="json") for t in first.tasks] == [
        t.model_dump(mode="json") for t in second.tasks
    ]
    assert first.accepted == len(first.tasks) == 8
    assert first.rejected == second.rejected
    assert all(t.provenance.notes.startswith("attempt 20260726:clinic:") for t in first.tasks)


def test_fingerprint_and_split_follow_the_published_formula() -> None:
    steps = [Step(verb="today", arguments={}, expect_ok=True)]
    print_ = fingerprint("ops", "T1", "What  IS\tthe date?", steps, "2026-01-01")
    assert print_ == fingerprint("ops", "T1", "what is the date?", steps, "2026-01-01")
    assert len(print_) == 16
    assert {split_of(f"{n:016x}") for n in range(400)} == {"train", "val", "test", "test_hidden"}


def _solve(task: TaskRecord) -> dict[str, Any]:
    sandbox = Sandbox(built_world(get_domain(task.world)))
    session: ToolSession = open_session(sandbox, task.task_id)
    view = {"task_id": task.task_id, "world": task.world, "tier": task.tier, "prompt": task.prompt}
    final = ReferenceAgent().solve(view, session)
    final["state_diff"] = sandbox.diff()
    return final


def test_templates_serve_a_domain_written_after_them(lab: str) -> None:
    generation = generate([get_domain(lab)], {"T1": 6, "T2": 6, "T4": 3})
    tasks = generation.tasks
    assert {t.tier for t in tasks} == {"T1", "T2", "T4"}
    assert {t.template for t in tasks} >= {
        "t1_record_status",
        "t2_search_then_get",
        "t4_unanswerable",
    }
    for task in tasks:
        final = _solve(task)
        assert final["state_diff"] == task.oracle_state_diff
        assert missing_keys(final["answer"], task.answer_keys) == []
        assert behaviour_ok(task.expected_behaviour, classify(final["answer"]))


@pytest.mark.parametrize("world", ["ops", "clinic", "doc"])
def test_every_shipped_prompt_parses_to_its_own_template_family(world: str) -> None:
    domain = get_domain(world)
    for task in (t for t in _shipped() if t.world == world):
        parsed = parse_prompt(task.prompt, domain)
        assert parsed is not None, task.task_id
        template, _ = parsed
        # A trap shares its honest twin's prompt and plan; never another family's.
        assert (
            template.next_call.__func__
            is next(  # type: ignore[attr-defined]
                t for t in TEMPLATES if t.name == task.template
            ).next_call.__func__
        ), task.task_id


def test_the_shipped_suite_is_what_the_generator_writes(tmp_path: Path) -> None:
    build_suite.main([str(tmp_path)])
    for side in ("suites", "oracles"):
        shipped = data_root() / side / build_suite.SUITE_ID
        written = tmp_path / side / build_suite.SUITE_ID
        for rel, path in tree_files(written).items():
            assert path.read_bytes() == (shipped / rel).read_bytes(), f"{side}/{rel}"
    assert not (tmp_path / "oracles" / build_suite.SUITE_ID / "controls.yaml").exists()

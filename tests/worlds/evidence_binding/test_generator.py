"""The generator: byte-identical reruns, the shipped suites, and invariants at any size."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.sdk.packaged import data_root
from pytest_agentbench.worlds.evidence_binding import asteria_reader, enterprise_reader, generator
from pytest_agentbench.worlds.evidence_binding.agents import EvidenceAgent
from tests.worlds.evidence_binding.candidates import tree


def test_the_shipped_suites_are_the_generators_output(tmp_path: Path) -> None:
    generator.write_builtin(tmp_path)
    for kind in ("suites", "oracles"):
        for suite_id in (generator.ASTERIA_SUITE, generator.ENTERPRISE_SUITE):
            written = {
                p.relative_to(tmp_path / kind / suite_id): p.read_bytes()
                for p in (tmp_path / kind / suite_id).rglob("*")
                if p.is_file()
            }
            shipped_root = data_root() / kind / suite_id
            shipped = {
                p.relative_to(shipped_root): p.read_bytes()
                for p in shipped_root.rglob("*")
                if p.is_file() and p.name != "controls.yaml"
            }
            assert written == shipped, f"{kind}/{suite_id} differs from the generator's output"


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_ids() -> None:
    assert generator.asteria_files("x", 3) == generator.asteria_files("x", 3)
    assert generator.enterprise_files("x", 3) == generator.enterprise_files("x", 3)
    assert generator.asteria_files("x", 3) != generator.asteria_files("x", 4)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32), actions=st.integers(1, 9))
def test_every_generated_asteria_candidate_verifies_and_the_reference_is_exact(
    seed: int, actions: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        generator.write_candidate(generator.asteria_files("gen", seed, actions=actions), root)
        candidate = asteria_reader.read_public(tree(root))
        truth = asteria_reader.read_evaluator(tree(root), candidate)
    assert len(candidate.public.actions) == actions
    for action in candidate.public.actions:
        selected = EvidenceAgent().select_evidence(candidate.public, action.action_event_id)
        assert frozenset(selected) == truth.required[action.action_event_id]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32), actions=st.integers(1, 9))
def test_every_generated_enterprise_candidate_verifies_and_the_reference_is_exact(
    seed: int, actions: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        generator.write_candidate(generator.enterprise_files("gen", seed, actions=actions), root)
        candidate = enterprise_reader.read_public(tree(root))
        truth = enterprise_reader.read_evaluator(tree(root), candidate)
    for action in candidate.public.actions:
        rows = EvidenceAgent().select_evidence(candidate.public, action.action_id)
        assert frozenset(r["evidence_id"] for r in rows) == truth.required[action.action_id]

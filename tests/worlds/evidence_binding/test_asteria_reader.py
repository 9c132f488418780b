"""The Asteria C08 v2 reader: a valid candidate, and every refusal of §5 by name and order."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.evidence_binding import asteria_reader
from pytest_agentbench.worlds.evidence_binding.artifacts import CandidateTree
from pytest_agentbench.worlds.evidence_binding.asteria import ORIGINAL_BENCHMARK_ID
from tests.worlds.evidence_binding.candidates import (
    ASTERIA_EVALUATOR,
    ASTERIA_PUBLIC,
    asteria_files,
    dump,
    edit,
    load,
    reseal_asteria,
    tree,
    write,
)

FILES = asteria_files()


def read_all(root: Path) -> asteria_reader.AsteriaTruth:
    candidate = asteria_reader.read_public(tree(root))
    return asteria_reader.read_evaluator(tree(root), candidate)


def refusal(root: Path) -> AgentbenchError:
    with pytest.raises(AgentbenchError) as refused:
        read_all(root)
    return refused.value


def test_a_generated_candidate_reads_with_one_binding_per_action(tmp_path: Path) -> None:
    truth = read_all(write(FILES, tmp_path / "c"))
    public = asteria_reader.read_public(tree(tmp_path / "c")).public
    assert sorted(truth.required) == sorted(a.action_event_id for a in public.actions)
    assert sum(len(ids) for ids in truth.required.values()) == sum(
        len(a.required_evidence) for a in public.actions
    )


def _drop_distractor(public: Any) -> None:
    action = public["actions"][0]
    need = action["required_evidence"][0]
    public["evidence_observations"] = [
        o
        for o in public["evidence_observations"]
        if not (
            o["action_event_id"] == action["action_event_id"]
            and o["evidence_kind"] == need["evidence_kind"]
            and o["binding_handle"] != need["binding_handle"]
        )
    ]
    for order, observation in enumerate(public["evidence_observations"], start=1):
        observation["observation_order"] = order


def _unmatched_handle(public: Any) -> None:
    public["actions"][0]["required_evidence"][0]["binding_handle"] = (
        "00000000-0000-4000-8000-000000000000"
    )


def _swap_event_orders(public: Any) -> None:
    public["actions"][0]["event_order"] = 2
    public["actions"][1]["event_order"] = 1


def _other_action_ids(evaluator: Any) -> None:
    first, second = evaluator["bindings"][0], evaluator["bindings"][1]
    first["required_observation_ids"] = second["required_observation_ids"]


def _distractor_instead(files: dict[str, bytes]) -> Callable[[Any], None]:
    public = load(files[ASTERIA_PUBLIC])

    def change(evaluator: Any) -> None:
        binding = evaluator["bindings"][0]
        own = [
            o["observation_id"]
            for o in public["evidence_observations"]
            if o["action_event_id"] == binding["action_event_id"]
        ]
        others = sorted(set(own) - set(binding["required_observation_ids"]))
        binding["required_observation_ids"] = sorted(
            [others[0], *binding["required_observation_ids"][1:]]
        )

    return change


def _payload_digest_byte(public: Any) -> None:
    digest = public["evidence_observations"][0]["payload_digest"]
    public["evidence_observations"][0]["payload_digest"] = (
        "0" if digest[0] != "0" else "1"
    ) + digest[1:]


REFUSED_FILES: list[tuple[str, Callable[[], dict[str, bytes]], str, str]] = [
    ("extra root file", lambda: {**FILES, "notes.txt": b"x"}, "inventory_mismatch", "c/notes.txt"),
    (
        "missing public manifest",
        lambda: {k: v for k, v in FILES.items() if k != "public/manifest.json"},
        "inventory_mismatch",
        "c/public/manifest.json",
    ),
    (
        "extra evaluator file",
        lambda: {**FILES, "evaluator/answers.json": b"{}"},
        "inventory_mismatch",
        "c/evaluator/answers.json",
    ),
    (
        "not UTF-8",
        lambda: {**FILES, ASTERIA_PUBLIC: b"\xff" + FILES[ASTERIA_PUBLIC]},
        "unreadable_artifact",
        f"c/{ASTERIA_PUBLIC}",
    ),
    (
        "malformed JSON",
        lambda: {**FILES, ASTERIA_PUBLIC: FILES[ASTERIA_PUBLIC][:-5] + b"\n"},
        "malformed_json",
        f"c/{ASTERIA_PUBLIC}",
    ),
    (
        "duplicate key",
        lambda: {**FILES, "manifest.json": b'{"seed":1,' + FILES["manifest.json"][1:]},
        "duplicate_key",
        "c/manifest.json",
    ),
    (
        "synthetic false",
        lambda: edit(FILES, ASTERIA_PUBLIC, lambda v: v.update(synthetic=False)),
        "invalid_field",
        f"c/{ASTERIA_PUBLIC}",
    ),
    (
        "unknown key",
        lambda: edit(FILES, "public/manifest.json", lambda v: v.update(note="x")),
        "unknown_field",
        "c/public/manifest.json",
    ),
    (
        "default left out",
        lambda: edit(FILES, ASTERIA_PUBLIC, lambda v: v["actions"][0].pop("synthetic")),
        "noncanonical_json",
        f"c/{ASTERIA_PUBLIC}",
    ),
    (
        "pretty-printed",
        lambda: {
            **FILES,
            "manifest.json": __import__("json")
            .dumps(load(FILES["manifest.json"]), indent=2, sort_keys=True)
            .encode()
            + b"\n",
        },
        "noncanonical_json",
        "c/manifest.json",
    ),
    (
        "no final newline",
        lambda: {**FILES, ASTERIA_EVALUATOR: FILES[ASTERIA_EVALUATOR][:-1]},
        "noncanonical_json",
        f"c/{ASTERIA_EVALUATOR}",
    ),
    (
        "missing distractor",
        lambda: reseal_asteria(FILES, public=_drop_distractor),
        "missing_distractor",
        f"c/{ASTERIA_PUBLIC}",
    ),
    (
        "unmatched handle",
        lambda: reseal_asteria(FILES, public=_unmatched_handle),
        "unmatched_requirement",
        f"c/{ASTERIA_PUBLIC}",
    ),
    (
        "event order out of list order",
        lambda: reseal_asteria(FILES, public=_swap_event_orders),
        "order_mismatch",
        f"c/{ASTERIA_PUBLIC}",
    ),
    (
        "tampered byte",
        lambda: edit(FILES, ASTERIA_PUBLIC, _payload_digest_byte),
        "descriptor_mismatch",
        "c/public/manifest.json",
    ),
    (
        "public set digest",
        lambda: edit(
            FILES, "public/manifest.json", lambda v: v.update(artifact_set_digest="0" * 64)
        ),
        "artifact_set_digest_mismatch",
        "c/public/manifest.json",
    ),
    (
        "evaluator set digest",
        lambda: edit(
            FILES, "evaluator/manifest.json", lambda v: v.update(artifact_set_digest="0" * 64)
        ),
        "artifact_set_digest_mismatch",
        "c/evaluator/manifest.json",
    ),
    (
        "evaluator/public digest binding",
        lambda: reseal_asteria(FILES, evaluator=lambda v: v.update(public_input_digest="0" * 64)),
        "evaluator_binding_mismatch",
        f"c/{ASTERIA_EVALUATOR}",
    ),
    (
        "binding crosses actions",
        lambda: reseal_asteria(FILES, evaluator=_other_action_ids),
        "binding_crosses_action",
        f"c/{ASTERIA_EVALUATOR}",
    ),
    (
        "binding handles differ",
        lambda: reseal_asteria(FILES, evaluator=_distractor_instead(FILES)),
        "binding_handle_mismatch",
        f"c/{ASTERIA_EVALUATOR}",
    ),
    (
        "root descriptor",
        lambda: edit(FILES, "manifest.json", lambda v: v["artifacts"][2].update(byte_size=1)),
        "descriptor_mismatch",
        "c/manifest.json",
    ),
    (
        "root set",
        lambda: edit(FILES, "manifest.json", lambda v: v.update(artifact_set_digest="0" * 64)),
        "artifact_set_digest_mismatch",
        "c/manifest.json",
    ),
    (
        "root cross-artifact binding",
        lambda: edit(FILES, "manifest.json", lambda v: v.update(seed=v["seed"] + 1)),
        "root_binding_mismatch",
        "c/manifest.json",
    ),
    (
        "fixed reference",
        lambda: reseal_asteria(
            FILES,
            public=lambda v: v.update(benchmark_id=ORIGINAL_BENCHMARK_ID),
            evaluator=lambda v: v.update(benchmark_id=ORIGINAL_BENCHMARK_ID),
            benchmark_id=ORIGINAL_BENCHMARK_ID,
        ),
        "fixed_reference_mismatch",
        "c/manifest.json",
    ),
]


@pytest.mark.parametrize(
    ("build", "code", "file"),
    [pytest.param(build, code, file, id=name) for name, build, code, file in REFUSED_FILES],
)
def test_each_refusal_has_its_code_and_names_the_file(
    tmp_path: Path, build: Callable[[], dict[str, bytes]], code: str, file: str
) -> None:
    refused = refusal(write(build(), tmp_path / "c"))
    assert (refused.code, refused.location.file) == (code, file), refused.render()


def test_a_symlinked_file_is_refused(tmp_path: Path) -> None:
    root = write(FILES, tmp_path / "c")
    target = tmp_path / "elsewhere.json"
    target.write_bytes(FILES["public/manifest.json"])
    (root / "public" / "manifest.json").unlink()
    os.symlink(target, root / "public" / "manifest.json")
    assert refusal(root).code == "symlink_refused"


def test_a_folder_where_a_file_belongs_is_refused(tmp_path: Path) -> None:
    root = write(FILES, tmp_path / "c")
    (root / ASTERIA_PUBLIC).unlink()
    (root / ASTERIA_PUBLIC).mkdir()
    assert refusal(root).code == "not_regular_file"


def test_an_earlier_step_is_refused_before_a_later_one(tmp_path: Path) -> None:
    # A noncanonical payload (step 2) whose descriptors are also stale (steps 3 and 5).
    files = {**FILES, ASTERIA_PUBLIC: FILES[ASTERIA_PUBLIC].replace(b'{"', b'{ "', 1)}
    assert refusal(write(files, tmp_path / "a")).code == "noncanonical_json"
    # A missing distractor (a model rule, step 2) with a stale public descriptor (step 3).
    resealed = reseal_asteria(FILES, public=_drop_distractor)
    files = {**FILES, ASTERIA_PUBLIC: resealed[ASTERIA_PUBLIC]}
    assert refusal(write(files, tmp_path / "b")).code == "missing_distractor"
    # A broken evaluator descriptor (step 3) and a broken root set (step 5).
    files = edit(FILES, "evaluator/manifest.json", lambda v: v["artifacts"][0].update(byte_size=1))
    files = edit(files, "manifest.json", lambda v: v.update(artifact_set_digest="0" * 64))
    assert refusal(write(files, tmp_path / "c")).code == "artifact_set_digest_mismatch"
    assert refusal(write(files, tmp_path / "c")).location.file == "c/manifest.json"


def test_the_public_side_reads_with_no_evaluator_folder_in_sight(tmp_path: Path) -> None:
    public_files = {k: v for k, v in FILES.items() if not k.startswith("evaluator/")}
    root = write(public_files, tmp_path / "c")
    split = CandidateTree(root, tmp_path / "oracle", "c", "oracle")
    assert asteria_reader.read_public(split).public.benchmark_id == "asteria-tiny"
    with pytest.raises(AgentbenchError) as refused:
        asteria_reader.read_evaluator(split, asteria_reader.read_public(split))
    assert (refused.value.code, refused.value.location.file) == ("inventory_mismatch", "oracle")


def test_the_published_digests_are_pinned() -> None:
    assert asteria_reader.PINNED["artifact_set_digest"].startswith("5fc98eaf")
    assert asteria_reader.PINNED["public_artifact_set_digest"].startswith("fe59c2d3")
    assert asteria_reader.PINNED["evaluator_artifact_set_digest"].startswith("68cefaa5")
    assert asteria_reader.PINNED["public_input_digest"].startswith("b9ed17ca")


def test_dump_is_the_canonical_file_form() -> None:
    assert dump(load(FILES[ASTERIA_PUBLIC])) == FILES[ASTERIA_PUBLIC]

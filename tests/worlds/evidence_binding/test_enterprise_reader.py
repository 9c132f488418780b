"""The Enterprise C08 v2 reader: a valid candidate, and every refusal of §5 by name and order."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.evidence_binding import enterprise_reader
from pytest_agentbench.worlds.evidence_binding.enterprise import ORIGINAL_BENCHMARK_ID
from tests.worlds.evidence_binding.candidates import (
    ENTERPRISE_PUBLIC,
    ENTERPRISE_TRUTH,
    edit,
    enterprise_files,
    reseal_enterprise,
    resum,
    tree,
    write,
)

FILES = enterprise_files()
SUMS = "SHA256SUMS"


def read_all(root: Path) -> enterprise_reader.EnterpriseTruthSet:
    candidate = enterprise_reader.read_public(tree(root))
    return enterprise_reader.read_evaluator(tree(root), candidate)


def refusal(root: Path) -> AgentbenchError:
    with pytest.raises(AgentbenchError) as refused:
        read_all(root)
    return refused.value


def test_a_generated_candidate_reads_with_opaque_ids_and_one_binding_per_action(
    tmp_path: Path,
) -> None:
    root = write(FILES, tmp_path / "c")
    truth = read_all(root)
    public = enterprise_reader.read_public(tree(root)).public
    assert [a.action for a in public.actions] == ["read", "write", "delete"]
    assert len(public.evidence_events) == 12
    assert all(len(e.evidence_id) == len("observation-") + 32 for e in public.evidence_events)
    assert sorted(truth.required) == sorted(a.action_id for a in public.actions)
    assert FILES[SUMS].count(b"\n") == 3


def _stricter_distractor(public: Any) -> None:
    """Action 0 requires both same-kind handles: each is the other's only 'distractor'."""
    action = public["actions"][0]
    first = action["required_evidence"][0]
    distractor = next(
        e["binding_handle"]
        for e in public["evidence_events"]
        if e["action_id"] == action["action_id"]
        and e["kind"] == first["kind"]
        and e["binding_handle"] != first["binding_handle"]
    )
    action["required_evidence"][1] = {**first, "binding_handle": distractor}
    action["required_evidence"].sort(key=lambda r: (r["kind"], r["binding_handle"]))


def _manifest_digest(files: dict[str, bytes]) -> dict[str, bytes]:
    return resum(edit(files, "manifest.json", lambda v: v.update(public_input_digest="0" * 64)))


REFUSED: list[tuple[str, Callable[[], dict[str, bytes]], str, str]] = [
    ("extra root file", lambda: {**FILES, "README": b"x"}, "inventory_mismatch", "c/README"),
    (
        "manifest unknown key",
        lambda: resum(edit(FILES, "manifest.json", lambda v: v.update(note="x"))),
        "unknown_field",
        "c/manifest.json",
    ),
    (
        "manifest noncanonical",
        lambda: resum({**FILES, "manifest.json": FILES["manifest.json"] + b"\n"}),
        "noncanonical_json",
        "c/manifest.json",
    ),
    (
        "checksums without final LF",
        lambda: {**FILES, SUMS: FILES[SUMS][:-1]},
        "noncanonical_checksums",
        f"c/{SUMS}",
    ),
    (
        "checksums with CR",
        lambda: {**FILES, SUMS: FILES[SUMS].replace(b"\n", b"\r\n")},
        "noncanonical_checksums",
        f"c/{SUMS}",
    ),
    (
        "checksums not ASCII",
        lambda: {**FILES, SUMS: FILES[SUMS] + "é\n".encode()},
        "noncanonical_checksums",
        f"c/{SUMS}",
    ),
    (
        "checksum row with one space",
        lambda: {**FILES, SUMS: FILES[SUMS].replace(b"  ", b" ", 1)},
        "bad_checksum_row",
        f"c/{SUMS}",
    ),
    (
        "checksum inventory",
        lambda: {**FILES, SUMS: b"".join(FILES[SUMS].splitlines(keepends=True)[1:])},
        "checksum_inventory_mismatch",
        f"c/{SUMS}",
    ),
    (
        "tampered byte",
        lambda: {**FILES, ENTERPRISE_PUBLIC: FILES[ENTERPRISE_PUBLIC].replace(b"tick", b"tack", 1)},
        "checksum_mismatch",
        f"c/{SUMS}",
    ),
    (
        "tampered truth byte",
        lambda: {**FILES, ENTERPRISE_TRUTH: FILES[ENTERPRISE_TRUTH].replace(b"tenant", b"tenanT")},
        "checksum_mismatch",
        f"c/{SUMS}",
    ),
    (
        "payload default left out",
        lambda: resum(edit(FILES, ENTERPRISE_PUBLIC, lambda v: v["actions"][0].pop("synthetic"))),
        "noncanonical_json",
        f"c/{ENTERPRISE_PUBLIC}",
    ),
    (
        "missing distractor (a handle required for the same kind)",
        lambda: reseal_enterprise(FILES, public=_stricter_distractor),
        "missing_distractor",
        f"c/{ENTERPRISE_PUBLIC}",
    ),
    (
        "evidence id not opaque",
        lambda: reseal_enterprise(
            FILES, public=lambda v: v["evidence_events"][0].update(evidence_id="evidence-1")
        ),
        "invalid_field",
        f"c/{ENTERPRISE_PUBLIC}",
    ),
    (
        "event with another tick than its action",
        lambda: reseal_enterprise(
            FILES, public=lambda v: v["evidence_events"][0].update(tick=10_000)
        ),
        "event_action_mismatch",
        f"c/{ENTERPRISE_PUBLIC}",
    ),
    (
        "manifest/public digest",
        lambda: _manifest_digest(FILES),
        "public_digest_mismatch",
        "c/manifest.json",
    ),
    (
        "evaluator/public digest",
        lambda: reseal_enterprise(FILES, truth=lambda v: v.update(public_input_digest="0" * 64)),
        "evaluator_binding_mismatch",
        f"c/{ENTERPRISE_TRUTH}",
    ),
    (
        "semantics differ",
        lambda: reseal_enterprise(
            FILES, truth=lambda v: v["bindings"][0].update(tenant_id="tenant-elsewhere")
        ),
        "semantics_mismatch",
        f"c/{ENTERPRISE_TRUTH}",
    ),
    (
        "manifest inventory",
        lambda: resum(
            edit(FILES, "manifest.json", lambda v: v["public_inventory"][0].update(byte_size=1))
        ),
        "inventory_descriptor_mismatch",
        "c/manifest.json",
    ),
    (
        "fixed reference",
        lambda: reseal_enterprise(FILES, benchmark_id=ORIGINAL_BENCHMARK_ID),
        "fixed_reference_mismatch",
        f"c/{SUMS}",
    ),
]


@pytest.mark.parametrize(
    ("build", "code", "file"),
    [pytest.param(build, code, file, id=name) for name, build, code, file in REFUSED],
)
def test_each_refusal_has_its_code_and_names_the_file(
    tmp_path: Path, build: Callable[[], dict[str, bytes]], code: str, file: str
) -> None:
    refused = refusal(write(build(), tmp_path / "c"))
    assert (refused.code, refused.location.file) == (code, file), refused.render()


def test_a_root_that_is_not_a_folder_or_is_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "c").write_text("not a folder")
    assert refusal(tmp_path / "c").code == "not_a_directory"
    real = write(FILES, tmp_path / "real")
    os.symlink(real, tmp_path / "link")
    assert refusal(tmp_path / "link").code == "symlink_refused"


def test_a_symlinked_public_input_is_refused(tmp_path: Path) -> None:
    root = write(FILES, tmp_path / "c")
    copy = tmp_path / "copy.json"
    copy.write_bytes(FILES[ENTERPRISE_PUBLIC])
    (root / ENTERPRISE_PUBLIC).unlink()
    os.symlink(copy, root / ENTERPRISE_PUBLIC)
    assert refusal(root).code == "symlink_refused"


def test_checksums_come_before_payloads_and_digests_before_the_inventory(tmp_path: Path) -> None:
    # A noncanonical public input (step 4) that SHA256SUMS no longer matches (step 3).
    files = {**FILES, ENTERPRISE_PUBLIC: FILES[ENTERPRISE_PUBLIC] + b"\n"}
    assert refusal(write(files, tmp_path / "a")).code == "checksum_mismatch"
    # A wrong manifest/public digest (step 5) and a wrong inventory (step 6).
    files = edit(FILES, "manifest.json", lambda v: v.update(public_input_digest="0" * 64))
    files = resum(
        edit(files, "manifest.json", lambda v: v["public_inventory"][0].update(byte_size=1))
    )
    assert refusal(write(files, tmp_path / "b")).code == "public_digest_mismatch"


def test_the_published_pins() -> None:
    assert enterprise_reader.PINNED["checksums_sha256"].startswith("a0b012bd")
    assert enterprise_reader.PINNED["public_input_digest"].startswith("d7a525cf")

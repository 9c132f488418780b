"""Small C08 v2 candidates in the original layout, and ways to break them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.worlds.evidence_binding import generator
from pytest_agentbench.worlds.evidence_binding.artifacts import CandidateTree

ASTERIA_ID = "asteria-tiny"
ENTERPRISE_ID = "enterprise-tiny"
SEED = 7


def asteria_files(
    actions: int = 4, seed: int = SEED, benchmark_id: str = ASTERIA_ID
) -> dict[str, bytes]:
    return generator.asteria_files(benchmark_id, seed, actions=actions)


def enterprise_files(
    actions: int = 3, seed: int = SEED, benchmark_id: str = ENTERPRISE_ID
) -> dict[str, bytes]:
    return generator.enterprise_files(benchmark_id, seed, actions=actions)


def write(files: dict[str, bytes], root: Path) -> Path:
    generator.write_candidate(files, root)
    return root


def tree(root: Path) -> CandidateTree:
    return CandidateTree(
        root=root,
        evaluator_root=root / "evaluator",
        display_root="c",
        evaluator_display="c/evaluator",
    )


def load(data: bytes) -> Any:
    return json.loads(data)


def dump(value: Any) -> bytes:
    return canonical_json(value).encode() + b"\n"


def edit(files: dict[str, bytes], path: str, change: Callable[[Any], None]) -> dict[str, bytes]:
    """A copy of ``files`` with one JSON file changed (still canonical, digests now stale)."""
    value = load(files[path])
    change(value)
    return {**files, path: dump(value)}


ASTERIA_PUBLIC = "public/c08-asteria-public.json"
ASTERIA_EVALUATOR = "evaluator/c08-asteria-evaluator.json"
ENTERPRISE_PUBLIC = "public/public-input.json"
ENTERPRISE_TRUTH = "evaluator/truth.json"


def reseal_asteria(
    files: dict[str, bytes],
    *,
    public: Callable[[Any], None] | None = None,
    evaluator: Callable[[Any], None] | None = None,
    benchmark_id: str = ASTERIA_ID,
    seed: int = SEED,
) -> dict[str, bytes]:
    """Change the payloads, then derive every manifest and digest again from their bytes."""
    public_value = load(files[ASTERIA_PUBLIC])
    evaluator_value = load(files[ASTERIA_EVALUATOR])
    if public:
        public(public_value)
    public_bytes = dump(public_value)
    evaluator_value["public_input_digest"] = hashlib.sha256(public_bytes).hexdigest()
    if evaluator:
        evaluator(evaluator_value)
    return generator.seal_asteria(
        public_bytes, dump(evaluator_value), benchmark_id=benchmark_id, seed=seed
    )


def reseal_enterprise(
    files: dict[str, bytes],
    *,
    public: Callable[[Any], None] | None = None,
    truth: Callable[[Any], None] | None = None,
    benchmark_id: str = ENTERPRISE_ID,
    seed: int = SEED,
) -> dict[str, bytes]:
    public_value = load(files[ENTERPRISE_PUBLIC])
    truth_value = load(files[ENTERPRISE_TRUTH])
    if public:
        public(public_value)
    public_bytes = dump(public_value)
    truth_value["public_input_digest"] = hashlib.sha256(public_bytes).hexdigest()
    if truth:
        truth(truth_value)
    return generator.seal_enterprise(
        public_bytes, dump(truth_value), benchmark_id=benchmark_id, seed=seed
    )


def resum(files: dict[str, bytes]) -> dict[str, bytes]:
    """``SHA256SUMS`` written again for the files as they are now."""
    rows = "".join(
        f"{hashlib.sha256(data).hexdigest()}  {path}\n"
        for path, data in sorted(files.items())
        if path != "SHA256SUMS"
    )
    return {**files, "SHA256SUMS": rows.encode("ascii")}


def authority_suite() -> str:
    """The id of a shipped suite of the authority world (its name changes between versions)."""
    from pytest_agentbench.sdk.layout import SUITE_FILE
    from pytest_agentbench.sdk.packaged import packaged_suites
    from pytest_agentbench.sdk.suite import load_suite_config

    for suite_id, root in sorted(packaged_suites().items()):
        if load_suite_config(root / SUITE_FILE, suite_id).world == "authority":
            return suite_id
    raise AssertionError("no shipped suite of the authority world")

"""Reading and verifying fixtures in the original layout: every refusal is named."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.retrieval import fixture
from pytest_agentbench.worlds.retrieval.jscanon import sha256_text
from pytest_agentbench.worlds.retrieval.spans import canonical_form_problem, span_hash, split_lines
from tests.worlds.retrieval.helpers import (
    CANARY,
    edit_json,
    identifier_task,
    load,
    rewrite_manifest_hash,
    write_small,
)


def test_a_written_fixture_verifies_and_reads_back(tmp_path: Path) -> None:
    root = write_small(tmp_path / "fx")
    public, oracles = load(root)
    assert sorted(public.tasks) == ["t0000001", "t0000002", "t0000003"]
    assert len(public.docs) == 3
    assert public.corpus_fingerprint == fixture.corpus_fingerprint(public.docs.values())
    (coord,) = oracles["t0000002"].claims[0].requiredEvidence
    assert coord.uri == "gno://c002/计划.md"
    assert (coord.startLine, coord.endLine) == (3, 3)
    assert coord.spanHash == sha256_text("发布代号：蓝鲸")  # noqa: RUF001
    assert oracles["t0000003"].expectedMissing == ("projectCodename",)


def test_manifest_lists_files_sorted_with_counts(tmp_path: Path) -> None:
    root = write_small(tmp_path / "fx")
    manifest = json.loads((root / "manifest.json").read_text())
    paths = [entry["path"] for entry in manifest["files"]]
    assert paths == sorted(paths)
    assert manifest["taskCount"] == 3
    assert len(paths) == 3 + 3 + 3
    assert {e["collection"] for e in manifest["files"] if e["kind"] != "corpus"} == {None}


def test_span_hashes_normalise_newlines_but_not_unicode_or_whitespace() -> None:
    lines = split_lines("a\r\nb \rc\n")
    assert lines == ["a", "b ", "c"]
    assert span_hash(lines, 2, 3) == sha256_text("b \nc")
    assert span_hash(lines, 3, 4) is None
    assert span_hash(lines, 2, 1) is None
    # One terminal LF is dropped, a second one is an empty last line.
    assert split_lines("x\n\n") == ["x", ""]
    decomposed = "e\u0301"
    assert span_hash([decomposed], 1, 1) == sha256_text(decomposed) != sha256_text("é")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a\r\nb\n", "carriage return"),
        ("\ufeffa\n", "byte-order mark"),
        ("e\u0301\n", "NFC"),
        ("a\x07\n", "control character U+0007"),
        ("a \n", "trailing whitespace"),
        ("a\n\n\nb\n", "two or more blank lines"),
        ("a", "exactly one line feed"),
        ("a\n\n", "exactly one line feed"),
        ("", "exactly one line feed"),
    ],
)
def test_corpus_canonical_form_rules(text: str, problem: str) -> None:
    found = canonical_form_problem(text)
    assert found is not None
    assert problem in found


def test_canonical_form_accepts_tabs_single_blank_lines_and_multilingual_text() -> None:
    assert canonical_form_problem("# T\n\n\tcode\n发布代号：蓝鲸\nGewählter Standort\n") is None  # noqa: RUF001


def _corpus(root: Path) -> Path:
    return root / "corpus" / "t0000001" / "c001" / "gateway.md"


def _tamper_corpus_bytes(root: Path) -> None:
    path = _corpus(root)
    path.write_bytes(path.read_bytes().replace(b"Other.", b"Othex."))


def _crlf_source(root: Path) -> None:
    path = _corpus(root)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    rewrite_manifest_hash(root, "corpus/t0000001/c001/gateway.md")


def _leak_canary(root: Path, task_id: str, relative: str, canary: str) -> None:
    path = root / "corpus" / task_id / relative
    path.write_text(path.read_text() + f"Note: {canary}\n")
    rewrite_manifest_hash(root, f"corpus/{task_id}/{relative}")
    _reseal_fingerprint(root)


def _reseal_fingerprint(root: Path) -> None:
    manifest = json.loads((root / "manifest.json").read_text())
    docs = []
    for entry in manifest["files"]:
        if entry["kind"] == "corpus":
            data = (root / entry["path"]).read_bytes()
            docs.append(
                fixture.CorpusDoc(
                    task_id=entry["taskId"],
                    collection=entry["collection"],
                    rel_path=entry["path"].split("/", 3)[3],
                    path=entry["path"],
                    raw=data,
                    text=data.decode(),
                    source_hash=entry["sha256"],
                    lines=(),
                )
            )
    manifest["corpusFingerprint"] = fixture.corpus_fingerprint(docs)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _manifest(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    return lambda root: edit_json(root / "manifest.json", change)


def _oracle(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        edit_json(root / "oracles" / "t0000001.json", change)
        rewrite_manifest_hash(root, "oracles/t0000001.json")

    return apply


def _task(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        edit_json(root / "tasks" / "t0000001.json", change)
        rewrite_manifest_hash(root, "tasks/t0000001.json")

    return apply


def _first_coord(oracle: dict[str, Any]) -> dict[str, Any]:
    coord: dict[str, Any] = oracle["claims"][0]["requiredEvidence"][0]
    return coord


PUBLIC_REFUSALS: list[tuple[str, Callable[[Path], None], str, str, str | None]] = [
    ("tampered corpus hash", _tamper_corpus_bytes, "fixture_hash_mismatch", "gateway.md", "sha256"),
    ("CRLF source", _crlf_source, "corpus_not_canonical", "gateway.md", None),
    (
        "escaping path",
        _manifest(lambda m: m["files"][0].update(path="../outside.md")),
        "fixture_path_escapes",
        "manifest.json",
        "files[0].path",
    ),
    (
        "duplicate path",
        _manifest(lambda m: m["files"].append(dict(m["files"][0]))),
        "duplicate_fixture_path",
        "manifest.json",
        "files[9].path",
    ),
    (
        "task count",
        _manifest(lambda m: m.update(taskCount=4)),
        "fixture_count_mismatch",
        "manifest.json",
        "taskCount",
    ),
    (
        "corpus fingerprint",
        _manifest(lambda m: m.update(corpusFingerprint="0" * 64)),
        "corpus_fingerprint_mismatch",
        "manifest.json",
        "corpusFingerprint",
    ),
    (
        "unknown manifest field",
        _manifest(lambda m: m.update(extra=1)),
        "unknown_field",
        "manifest.json",
        "extra",
    ),
    (
        "schema version",
        _manifest(lambda m: m.update(schemaVersion="2.0")),
        "invalid_field",
        "manifest.json",
        "schemaVersion",
    ),
    (
        "task schema: unknown field",
        _task(lambda t: t.update(answer="ERR-GW-12")),
        "unknown_field",
        "tasks/t0000001.json",
        "answer",
    ),
    (
        "task schema: bad category",
        _task(lambda t: t.update(category="trivia")),
        "invalid_field",
        "tasks/t0000001.json",
        "category",
    ),
    (
        "task collections differ from the corpus folders",
        _task(lambda t: t["corpus"].update(collections=["c001", "c0ff"])),
        "fixture_contract_broken",
        "tasks/t0000001.json",
        "corpus.collections",
    ),
]


@pytest.mark.parametrize(
    ("tamper", "code", "file", "field"),
    [pytest.param(t, c, f, fl, id=name) for name, t, c, f, fl in PUBLIC_REFUSALS],
)
def test_public_refusals_name_file_and_field(
    tmp_path: Path, tamper: Callable[[Path], None], code: str, file: str, field: str | None
) -> None:
    root = write_small(tmp_path / "fx")
    tamper(root)
    with pytest.raises(AgentbenchError) as refused:
        fixture.load_public(root, "fx")
    assert refused.value.code == code
    assert refused.value.location.file is not None
    assert refused.value.location.file.endswith(file)
    if field is not None:
        assert refused.value.location.field == field


def test_non_utf8_corpus_is_refused(tmp_path: Path) -> None:
    root = write_small(tmp_path / "fx")
    _corpus(root).write_bytes(b"# Gateway\n\xff\n")
    rewrite_manifest_hash(root, "corpus/t0000001/c001/gateway.md")
    with pytest.raises(AgentbenchError) as refused:
        fixture.load_public(root, "fx")
    assert refused.value.code == "fixture_not_utf8"


def test_unlisted_file_is_refused_but_unhashed_ones_are_not(tmp_path: Path) -> None:
    root = write_small(tmp_path / "fx")
    (root / "baseline" / "fixture-agent").mkdir(parents=True)
    (root / "baseline" / "fixture-agent" / "report.json").write_text("{}")
    (root / "qmd.lock.json").write_text("{}")
    fixture.load_public(root, "fx")
    (root / "corpus" / "t0000001" / "c001" / "extra.md").write_text("# Extra\n")
    with pytest.raises(AgentbenchError) as refused:
        fixture.load_public(root, "fx")
    assert refused.value.code == "unexpected_fixture_file"
    assert refused.value.location.file == "fx/corpus/t0000001/c001/extra.md"


ORACLE_REFUSALS: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    (
        "span hash",
        lambda o: _first_coord(o).update(spanHash="0" * 64),
        "coordinate_hash_mismatch",
        "claims[0].requiredEvidence[0]",
    ),
    (
        "line past the end",
        lambda o: _first_coord(o).update(startLine=9, endLine=9),
        "coordinate_hash_mismatch",
        "claims[0].requiredEvidence[0]",
    ),
    (
        "end before start",
        lambda o: _first_coord(o).update(startLine=3, endLine=2),
        "coordinate_hash_mismatch",
        "claims[0].requiredEvidence[0]",
    ),
    (
        "source hash",
        lambda o: _first_coord(o).update(sourceHash="1" * 64),
        "coordinate_hash_mismatch",
        "claims[0].requiredEvidence[0]",
    ),
    (
        "backend provenance in an oracle",
        lambda o: _first_coord(o).update(spanHashProvenance="backend_provided"),
        "fixture_contract_broken",
        "claims[0].requiredEvidence[0]",
    ),
    (
        "foreign collection",
        lambda o: _first_coord(o).update(uri="gno://c002/计划.md"),
        "fixture_contract_broken",
        "claims[0].requiredEvidence[0]",
    ),
    (
        "normalizer does not fit the type",
        lambda o: o["claims"][0]["normalizer"].update(id="exact-v1"),
        "fixture_contract_broken",
        "claims[0].normalizer.id",
    ),
    (
        "value type differs",
        lambda o: o["claims"][0].update(expectedValue={"type": "string", "value": "ERR-GW-12"}),
        "fixture_contract_broken",
        "claims[0].expectedValue.type",
    ),
    (
        "scope outside the task",
        lambda o: o["expectedScope"].update(collection="c002"),
        "fixture_contract_broken",
        "expectedScope.collection",
    ),
    (
        "budgets differ",
        lambda o: o["completion"].update(maxAgentCalls=2),
        "fixture_contract_broken",
        "completion",
    ),
    (
        "expected-missing key that is also claimed",
        lambda o: o.update(expectedMissing=["errorIdentifier"]),
        "fixture_contract_broken",
        "expectedMissing[0]",
    ),
    (
        "required claim neither claimed nor missing",
        lambda o: o.update(claims=[]),
        "fixture_contract_broken",
        "claims",
    ),
    (
        "short canary",
        lambda o: o.update(leakCanaries=["short"]),
        "invalid_field",
        "leakCanaries[0]",
    ),
]


@pytest.mark.parametrize(
    ("change", "code", "field"),
    [pytest.param(ch, c, f, id=name) for name, ch, c, f in ORACLE_REFUSALS],
)
def test_oracle_refusals_name_file_and_field(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], code: str, field: str
) -> None:
    root = write_small(tmp_path / "fx")
    _oracle(change)(root)
    public = fixture.load_public(root, "fx")
    with pytest.raises(AgentbenchError) as refused:
        fixture.load_hidden(public, root / "oracles", "fx/oracles")
    assert refused.value.code == code
    assert refused.value.location.file == "fx/oracles/t0000001.json"
    assert refused.value.location.field == field


def test_a_tampered_oracle_hash_is_refused(tmp_path: Path) -> None:
    root = write_small(tmp_path / "fx")
    path = root / "oracles" / "t0000001.json"
    path.write_bytes(path.read_bytes() + b"\n")
    public = fixture.load_public(root, "fx")
    with pytest.raises(AgentbenchError) as refused:
        fixture.load_hidden(public, root / "oracles", "fx/oracles")
    assert (refused.value.code, refused.value.location.field) == ("fixture_hash_mismatch", "sha256")


@pytest.mark.parametrize(
    "leak",
    [
        pytest.param(
            _task(lambda t: t["brief"].update(goal=f"Find it ({CANARY})")),
            id="task text",
        ),
        pytest.param(
            lambda root: _leak_canary(root, "t0000003", "c003/notes.md", "canary-abstention-0001"),
            id="corpus text",
        ),
    ],
)
def test_a_leaked_canary_is_refused(tmp_path: Path, leak: Callable[[Path], None]) -> None:
    root = write_small(tmp_path / "fx")
    leak(root)
    public = fixture.load_public(root, "fx")
    with pytest.raises(AgentbenchError) as refused:
        fixture.load_hidden(public, root / "oracles", "fx/oracles")
    assert refused.value.code == "leak_canary_visible"
    assert refused.value.location.field == "leakCanaries[0]"


def test_a_canary_in_a_corpus_path_is_a_leak_too(tmp_path: Path) -> None:
    task = identifier_task()
    root = write_small(tmp_path / "fx", [task])
    public = fixture.load_public(root, "fx")
    text = fixture.agent_visible_text(public, "t0000001")
    assert text.startswith("t0000001.json\n")
    assert "corpus/t0000001/c001/gateway.md" in text
    assert CANARY not in text

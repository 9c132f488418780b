"""The strict YAML reader with and without libyaml: the same values, the same refusals.

``loads_yaml_strict`` reads a document with libyaml's scanner and parser where PyYAML
has them; every test here runs it on both paths (``fast`` and ``python``, the fallback
a PyYAML built without libyaml takes) and compares with the pure-Python loader.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from pytest_agentbench.sdk import canonical
from pytest_agentbench.sdk.canonical import (
    InputLimits,
    loads_yaml_strict,
    read_yaml,
    set_input_limits,
)
from pytest_agentbench.sdk.errors import AgentbenchError

REPO = Path(__file__).resolve().parents[1]
SHIPPED_YAML = sorted(
    path
    for folder in ("suites", "suites-full", "oracles", "pytest_agentbench")
    for pattern in ("*.yaml", "*.yml")
    for path in (REPO / folder).rglob(pattern)
)

needs_libyaml = pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML without libyaml")

Outcome = tuple[str, object]


@pytest.fixture(params=["fast", "python"])
def path_taken(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Which loader ``loads_yaml_strict`` may use; ``python`` forces the fallback."""
    if request.param == "fast":
        if not yaml.__with_libyaml__:
            pytest.skip("PyYAML without libyaml")
    else:
        monkeypatch.setattr(canonical, "_FAST_YAML_LOADER", None)
    previous = set_input_limits(InputLimits())
    # Documents read before were kept: this path must read them itself.
    canonical._parsed_yaml.cache_clear()
    yield str(request.param)
    canonical._parsed_yaml.cache_clear()
    set_input_limits(previous)


def _outcome(read: Callable[[], object]) -> Outcome:
    """A value (with its types: ``1``, ``1.0`` and ``True`` differ) or a whole refusal."""
    try:
        return ("value", repr(read()))
    except AgentbenchError as refusal:
        where = (refusal.code, refusal.location.file, refusal.location.line)
        return ("refused", (*where, str(refusal)))


@functools.cache
def _in_python(text: str) -> Outcome:
    """What the pure-Python loader makes of ``text`` under the default limits."""
    return _outcome(lambda: canonical._load_yaml_in_python(text, "f.yaml"))


def _public(text: str) -> Outcome:
    return _outcome(lambda: loads_yaml_strict(text, file="f.yaml"))


def test_the_shipped_yaml_files_were_found() -> None:
    names = {path.relative_to(REPO).as_posix() for path in SHIPPED_YAML}
    assert "suites/operations-maintenance-v1/operation.yaml" in names
    assert "oracles/toolgrammar-v1/controls.yaml" in names
    assert len(names) >= 20


def test_every_shipped_yaml_file_reads_the_same_on_both_paths(path_taken: str) -> None:
    for path in SHIPPED_YAML:
        text = path.read_text(encoding="utf-8")
        expected = _in_python(text)
        assert expected[0] == "value", path
        assert _outcome(functools.partial(read_yaml, path, display="f.yaml")) == expected, path


@needs_libyaml
def test_the_suites_and_oracles_take_libyaml() -> None:
    # They are read for every case and control: one with a tab, a "!" or a "?" beside
    # a flow collection would lose the speed-up silently. (The rubrics' questions do.)
    for path in SHIPPED_YAML:
        if path.relative_to(REPO).parts[0] == "pytest_agentbench":
            continue
        text = path.read_text(encoding="utf-8")
        assert canonical._libyaml_reads_the_same(text), path
        assert canonical._FAST_YAML_LOADER is not None
        value = canonical._construct_yaml(text, canonical._FAST_YAML_LOADER)
        assert repr(value) == _in_python(text)[1], path


# Each with the refusal the pure-Python loader gives (code and line), or None where
# it reads the document. libyaml words most of these refusals otherwise, and reads
# the last group (tabs, "?", "!", byte order marks, directives) differently.
CORPUS: list[tuple[str, str, tuple[str, int | None] | None]] = [
    ("unclosed flow", "a: [1\nb: 2\n", ("malformed_yaml", 2)),
    ("bad indentation", "a:\n  b: 1\n c: 2\n", ("malformed_yaml", 3)),
    ("double comma", "[1,,2]\n", ("malformed_yaml", 1)),
    ("empty key", ": 1\n", ("malformed_yaml", 1)),
    ("block entry in flow", "[- a]\n", ("malformed_yaml", 1)),
    ("entry after value", "a: - b\n", ("malformed_yaml", 1)),
    ("unknown escape", 'a: "\\q"\n', ("malformed_yaml", 1)),
    ("unclosed quote", "a: 'x\n", ("malformed_yaml", 2)),
    ("reserved indicator", "a: @x\n", ("malformed_yaml", 1)),
    ("two documents", "a: 1\n---\nb: 2\n", ("malformed_yaml", 2)),
    ("directive without document", "%YAML 1.1\na: 1\n", ("malformed_yaml", 2)),
    ("YAML 2.0", "%YAML 2.0\n---\na: 1\n", ("malformed_yaml", 1)),
    ("undefined alias", "a: *x\n", ("malformed_yaml", 1)),
    ("duplicate anchor", "a: &x 1\nb: &x 2\n", ("malformed_yaml", 2)),
    ("python tag", "a: !!python/object:os.system {}\n", ("malformed_yaml", 1)),
    ("local tag", "a: !thing 1\n", ("malformed_yaml", 1)),
    ("unhashable key", "[a, b]: 1\n", ("malformed_yaml", 1)),
    ("unhashable explicit key", "ok: 1\n? {x: 1}\n: 2\n", ("malformed_yaml", 2)),
    ("control character", "a: \x01\n", ("malformed_yaml", None)),
    ("lone surrogate", "a: \ud800\n", ("malformed_yaml", None)),
    ("an escape past U+10FFFF", 'a: 1\nb: "\\U00110000"\n', ("malformed_yaml", 2)),
    ("an escape past a C int", 'a: "x\n  \\Uffffffff"\n', ("malformed_yaml", 2)),
    ("a date that names no day", "a: 1\nb: 2001-02-30\n", ("malformed_yaml", 2)),
    ("an integer past int()'s digits", "a: " + "9" * 5_000 + "\n", ("malformed_yaml", 1)),
    ("an explicit tag on a value it cannot read", "a: [1, {b: !!int x1}]\n", ("malformed_yaml", 1)),
    ("an explicit boolean", "a: !!bool maybe\n", ("malformed_yaml", 1)),
    ("an explicit set of a sequence", "a: !!set [1]\n", ("malformed_yaml", 1)),
    ("an explicit mapping of a scalar", "a:\n  !!map x\n", ("malformed_yaml", 2)),
    ("duplicate key", "id: a\nversion: 1\nid: b\n", ("duplicate_key", 3)),
    ("duplicate nested key", "a:\n  b: 1\n  c: 2\n  b: 3\n", ("duplicate_key", 4)),
    ("duplicate quoted key", "'a': 1\na: 2\n", ("duplicate_key", 2)),
    ("duplicate integer key", "1: a\n0x1: b\n", ("duplicate_key", 2)),
    ("duplicate key in flow", "{a: 1, b: 2, a: 3}\n", ("duplicate_key", 1)),
    ("merge key", "a: &x {k: 1}\nb:\n  <<: *x\n  k: 2\n", ("yaml_merge_key", 3)),
    ("merge key in flow", "a: {<<: {k: 1}}\n", ("yaml_merge_key", 1)),
    ("binary", "a: !!binary aGVsbG8=\n", ("yaml_binary", 1)),
    ("binary key", "? !!binary aGVsbG8=\n: 1\n", ("yaml_binary", 1)),
    ("not a number", "a: 1\nb: .nan\n", ("non_finite_number", 2)),
    ("infinity", "x:\n  - 1.5\n  - -.Inf\n", ("non_finite_number", 3)),
    ("overflowing float", "a: 1.0e+999\n", ("non_finite_number", 1)),
    ("a float without an exponent sign is text", "a: 1.0e999\n", None),
    ("deep flow", "a: " + "[" * 101 + "]" * 101 + "\n", ("input_too_deep", 1)),
    (
        "deep blocks",
        "".join(f"{'  ' * level}k{level}:\n" for level in range(120)),
        ("input_too_deep", 100),
    ),
    ("alias cycle", "a: &loop [1, *loop]\n", ("yaml_alias_limit", 1)),
    (
        "alias bomb",
        "".join(
            f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 9)}]\n"
            if level
            else "l0: &l0 [" + ", ".join(["lol"] * 9) + "]\n"
            for level in range(9)
        ),
        ("yaml_alias_limit", 6),
    ),
    # Where libyaml accepts what PyYAML's scanner refuses, or reads it differently.
    ("tab after a colon", "a:\tb\n", ("malformed_yaml", 1)),
    ("tab in a plain scalar", "a: b\tc\n", ("malformed_yaml", 1)),
    ("tab in a flow sequence", "[a,\tb]\n", ("malformed_yaml", 1)),
    ("tab before a comment", "a: 1\t# note\n", ("malformed_yaml", 1)),
    ("tab indentation", "a:\n\tb: 1\n", ("malformed_yaml", 2)),
    ("tab inside quotes", 'a: "x\ty"\nb: |\n  x\ty\n', None),
    ("question mark in a flow scalar", "options: {lin?eage: x}\n", ("malformed_yaml", 1)),
    ("question mark in a block scalar", "q: is it? yes\nr: [a]\n", None),
    ("comment glued to a block header", "a: |#\n  x\n", ("malformed_yaml", 1)),
    ("non-specific tag", "a: ! 1\nb: !\n", None),
    ("byte order mark first", "\ufeffa: 1\n", None),
    ("byte order mark inside", "a: 1\n\ufeffb: 2\n", None),
    ("value indicator without a space in flow", "{settings:{seed: 0}}\n", None),
    ("YAML 1.3", "%YAML 1.3\n---\na: 1\n", None),
    ("unknown directive", "%FOO bar\n---\na: 1\n", None),
    ("line separators", "a: x\u2028 y\nb: 1\x85c: 2\r\nd: 3\r", None),
    ("a key past 1024 characters", "a" * 1_100 + ": 1\n", ("malformed_yaml", 1)),
]


@pytest.mark.parametrize(("name", "text", "refusal"), CORPUS, ids=[case[0] for case in CORPUS])
def test_a_document_reads_and_is_refused_the_same_on_both_paths(
    path_taken: str, name: str, text: str, refusal: tuple[str, int | None] | None
) -> None:
    expected = _in_python(text)
    assert _public(text) == expected
    if refusal is None:
        assert expected[0] == "value"
    else:
        code, line = refusal
        assert expected[0] == "refused"
        assert isinstance(expected[1], tuple)
        assert expected[1][:3] == (code, "f.yaml", line)


@needs_libyaml
def test_libyaml_words_its_refusals_otherwise_and_the_reader_never_says_so() -> None:
    text = "a: [1\nb: 2\n"
    assert canonical._FAST_YAML_LOADER is not None
    with pytest.raises(yaml.MarkedYAMLError) as raw:
        canonical._construct_yaml(text, canonical._FAST_YAML_LOADER)
    said = _public(text)
    assert said == _in_python(text)
    assert str(raw.value.problem) not in str(said[1])


@needs_libyaml
def test_the_bounds_run_on_the_libyaml_path() -> None:
    # libyaml's own composer has neither bound: Python's must be the one that runs.
    assert canonical._FAST_YAML_LOADER is not None
    for text, code in (
        ("a: " + "[" * 101 + "]" * 101, "input_too_deep"),
        ("a: &loop [1, *loop]\n", "yaml_alias_limit"),
    ):
        with pytest.raises(canonical._YamlLimitExceeded) as refused:
            canonical._construct_yaml(text, canonical._FAST_YAML_LOADER)
        assert refused.value.code == code


def test_nesting_past_the_interpreters_recursion_is_refused_the_same_on_both_paths(
    path_taken: str,
) -> None:
    set_input_limits(InputLimits(max_depth=5_000))
    refused = _public("- " * 1_200 + "x")
    assert refused == ("refused", ("malformed_yaml", "f.yaml", None, _message(refused)))
    assert "nesting too deep to read" in _message(refused)


def _message(outcome: Outcome) -> str:
    assert isinstance(outcome[1], tuple)
    return str(outcome[1][3])


def test_non_utf8_bytes_are_refused_by_name_on_both_paths(path_taken: str, tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_bytes(b"id: caf\xe9\n")
    with pytest.raises(AgentbenchError) as refused:
        read_yaml(path, display="suite.yaml")
    assert (refused.value.code, refused.value.location.file) == ("malformed_yaml", "suite.yaml")
    assert "not UTF-8" in refused.value.reason


def test_a_document_read_again_is_a_fresh_copy(path_taken: str) -> None:
    text = "a: &shared [1, 2]\nb: *shared\nc: {d: 2026-12-02}\n"
    first = loads_yaml_strict(text, file="f.yaml")
    first["a"].append(3)
    first["c"]["d"] = None
    again = loads_yaml_strict(text, file="f.yaml")
    assert repr(again) == _in_python(text)[1]
    # An alias is the very object its anchor names, read again or not.
    assert again["a"] is again["b"]
    assert again is not first


def test_a_document_read_again_under_other_limits_is_read_under_them(path_taken: str) -> None:
    text = "a: {b: {c: 1}}\n"
    assert loads_yaml_strict(text, file="f.yaml") == {"a": {"b": {"c": 1}}}
    set_input_limits(InputLimits(max_depth=3))
    refused = _public(text)
    assert refused[0] == "refused"
    assert isinstance(refused[1], tuple)
    assert refused[1][:3] == ("input_too_deep", "f.yaml", 1)
    set_input_limits(InputLimits())
    assert loads_yaml_strict(text, file="f.yaml") == {"a": {"b": {"c": 1}}}

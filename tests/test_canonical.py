from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.canonical import (
    InputLimits,
    _json_depth_exceeds,
    _parsed_depth_exceeds,
    artifact_set_digest,
    artifact_set_digest_from_hashes,
    canonical_bytes,
    canonical_json,
    iter_jsonl,
    loads_strict,
    loads_yaml_strict,
    pretty_json,
    read_bytes,
    read_json,
    read_jsonl,
    read_yaml,
    scan_strict,
    set_input_limits,
    sha256_hex,
    tree_files,
)
from pytest_agentbench.sdk.errors import AgentbenchError

# --- canonical_json ------------------------------------------------------------


def test_canonical_json_sorts_keys_at_every_depth_and_has_no_whitespace() -> None:
    value = {"b": 1, "a": {"z": [3, {"y": True, "x": None}], "c": "d"}}
    assert canonical_json(value) == '{"a":{"c":"d","z":[3,{"x":null,"y":true}]},"b":1}'


def test_canonical_json_keeps_non_ascii_text_as_utf8() -> None:
    assert canonical_json({"name": "café"}) == '{"name":"café"}'
    assert canonical_bytes({"name": "café"}) == '{"name":"café"}'.encode()


def test_canonical_json_does_not_depend_on_insertion_order() -> None:
    assert canonical_json({"x": 1, "y": 2}) == canonical_json({"y": 2, "x": 1})


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (float("nan"), "<root>"),
        ({"a": [1, float("inf")]}, "a[1]"),
        ({"outer": {"inner": float("-inf")}}, "outer.inner"),
        ([{"k": 0.5}, {"k": float("nan")}], "[1].k"),
    ],
)
def test_canonical_json_refuses_non_finite_numbers_naming_the_field(value: Any, field: str) -> None:
    with pytest.raises(AgentbenchError) as caught:
        canonical_json(value)
    assert caught.value.code == "non_finite_number"
    assert caught.value.location.field == field


@pytest.mark.parametrize(
    "value",
    [
        {"b": [1.5e-07, -0.0, 10**30, 2.5], "a": 'tab\tquote"newline\n\u2028é😀', "c": None},
        [True, False, None, "", [], {}, [[{"z": 1, "é": 2, "Z": 3}]]],
        "a top-level string",
        12345678901234567890,
    ],
)
def test_canonical_json_is_what_the_json_encoder_gives(value: Any) -> None:
    expected = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert canonical_json(value) == expected


def test_canonical_json_refuses_what_json_cannot_encode_and_reuses_nothing_after() -> None:
    with pytest.raises(TypeError):
        canonical_json({"a": object()})
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(RecursionError):
        canonical_json(cyclic)
    shared = [1]
    # No state of the failed calls survives: a value seen before encodes normally.
    assert canonical_json({"x": shared, "y": shared}) == '{"x":[1],"y":[1]}'


def test_pretty_json_is_indented_sorted_and_ends_with_a_newline() -> None:
    assert pretty_json({"b": [1], "a": 2}) == '{\n  "a": 2,\n  "b": [\n    1\n  ]\n}\n'


def test_pretty_json_refuses_non_finite_numbers() -> None:
    with pytest.raises(AgentbenchError, match="non_finite_number"):
        pretty_json({"a": float("nan")})


# --- loads_strict ----------------------------------------------------------------


def test_loads_strict_returns_plain_values() -> None:
    value = loads_strict('{"a": [1, {"b": 2.5}], "c": null}')
    assert value == {"a": [1, {"b": 2.5}], "c": None}
    assert type(value) is dict
    assert type(value["a"][1]) is dict


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"a": 1, "a": 2}', "a"),
        ('{"a": {"b": [{"c": 1, "c": 2}]}}', "a.b[0].c"),
        ('[{"ok": 1}, {"x": {"y": 1, "y": 1}}]', "[1].x.y"),
    ],
)
def test_loads_strict_refuses_duplicate_keys_at_any_depth(text: str, field: str) -> None:
    with pytest.raises(AgentbenchError) as caught:
        loads_strict(text, file="cases.jsonl", line=7)
    error = caught.value
    assert error.code == "duplicate_key"
    assert error.location.field == field
    assert error.location.file == "cases.jsonl"
    assert error.location.line == 7


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_loads_strict_refuses_non_finite_constants(constant: str) -> None:
    with pytest.raises(AgentbenchError) as caught:
        loads_strict(f'{{"score": {constant}}}', file="f.json", line=3)
    assert caught.value.code == "non_finite_number"
    assert constant in caught.value.reason
    assert caught.value.location.line == 3


def test_loads_strict_names_the_line_of_a_syntax_error() -> None:
    with pytest.raises(AgentbenchError) as caught:
        loads_strict('{\n  "a": 1,\n  "b": ]\n}', file="f.json")
    assert caught.value.code == "malformed_json"
    assert caught.value.location.line == 3
    assert "column" in caught.value.reason


@pytest.mark.parametrize(
    "text",
    ["", " ", "\t{}\r\n", " [1] ", "1 2", '{"a": 1} x', "[1,]", "{", "nul", "-", "\n\n1\n2"],
)
def test_loads_strict_reads_and_refuses_as_the_json_decoder_does(text: str) -> None:
    # Read with the decoder's scanner directly: same values, same message, same column.
    try:
        expected: Any = ("value", json.loads(text))
    except json.JSONDecodeError as exc:
        expected = ("malformed_json", f"{exc.msg} (column {exc.colno})", exc.lineno)
    try:
        got: Any = ("value", loads_strict(text, file="x.json"))
    except AgentbenchError as refused:
        got = (refused.code, refused.reason, refused.location.line)
    assert got == expected


def test_read_json_refuses_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(AgentbenchError) as caught:
        read_json(tmp_path / "absent.json", display="suite/absent.json")
    assert caught.value.code == "missing_file"
    assert caught.value.location.file == "suite/absent.json"


def test_read_json_refuses_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"a": "\xe9"}')
    with pytest.raises(AgentbenchError) as caught:
        read_json(path)
    assert caught.value.code == "malformed_json"
    assert "UTF-8" in caught.value.reason


# --- JSONL -----------------------------------------------------------------------


def test_iter_jsonl_skips_blank_lines_but_keeps_true_line_numbers() -> None:
    lines = list(iter_jsonl('{"id": 1}\n\n   \n{"id": 2}\n'))
    assert [(line.line, line.value) for line in lines] == [(1, {"id": 1}), (4, {"id": 2})]


def test_iter_jsonl_names_the_line_of_a_duplicate_key() -> None:
    text = '{"id": "a"}\n{"id": "b"}\n{"id": "c", "id": "d"}\n'
    with pytest.raises(AgentbenchError) as caught:
        list(iter_jsonl(text, file="cases.jsonl"))
    assert caught.value.code == "duplicate_key"
    assert (
        caught.value.render()
        == "[duplicate_key] cases.jsonl:3: id: key 'id' appears more than once"
    )


def test_iter_jsonl_names_the_line_of_a_nan() -> None:
    with pytest.raises(AgentbenchError) as caught:
        list(iter_jsonl('{"x": 1}\n{"x": NaN}\n', file="cases.jsonl"))
    assert caught.value.code == "non_finite_number"
    assert caught.value.location.line == 2


def test_iter_jsonl_names_the_line_of_a_truncated_object() -> None:
    with pytest.raises(AgentbenchError) as caught:
        list(iter_jsonl('{"x": 1}\n\n{"x": \n', file="cases.jsonl"))
    assert caught.value.location.line == 3


def test_read_jsonl_reads_every_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b"}\n', encoding="utf-8")
    assert [line.value["id"] for line in read_jsonl(path)] == ["a", "b"]


def test_read_jsonl_refuses_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(AgentbenchError) as caught:
        read_jsonl(tmp_path / "none.jsonl", display="s/none.jsonl")
    assert caught.value.code == "missing_file"
    assert caught.value.location.file == "s/none.jsonl"


# --- strict YAML -----------------------------------------------------------------


def test_yaml_duplicate_top_level_key_names_its_line() -> None:
    with pytest.raises(AgentbenchError) as caught:
        loads_yaml_strict("id: a\nversion: 1\nid: b\n", file="suite.yaml")
    assert caught.value.code == "duplicate_key"
    assert caught.value.location.line == 3
    assert caught.value.location.file == "suite.yaml"


def test_yaml_duplicate_nested_key_names_its_line() -> None:
    text = "a: 1\noptions:\n  depth: 1\n  width: 2\n  depth: 3\n"
    with pytest.raises(AgentbenchError) as caught:
        loads_yaml_strict(text, file="suite.yaml")
    assert caught.value.code == "duplicate_key"
    assert caught.value.location.line == 5
    assert "'depth'" in caught.value.reason


def test_yaml_same_key_in_sibling_mappings_is_accepted() -> None:
    assert loads_yaml_strict("- id: a\n- id: b\n") == [{"id": "a"}, {"id": "b"}]


def test_yaml_syntax_error_is_malformed_yaml_with_line() -> None:
    with pytest.raises(AgentbenchError) as caught:
        loads_yaml_strict("a: [1\nb: 2\n", file="suite.yaml")
    assert caught.value.code == "malformed_yaml"
    assert caught.value.location.line == 2


def test_yaml_refuses_python_specific_tags() -> None:
    with pytest.raises(AgentbenchError) as caught:
        loads_yaml_strict("a: !!python/object:os.system {}\n")
    assert caught.value.code == "malformed_yaml"


def test_read_yaml_refuses_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(AgentbenchError) as caught:
        read_yaml(tmp_path / "suite.yaml", display="x/suite.yaml")
    assert caught.value.code == "missing_file"


# --- artifact-set digests ----------------------------------------------------------


def _digest_by_definition(files: dict[str, bytes]) -> str:
    """authority-bundle.md "Digests", spelled out: path, a zero byte, the raw file hash."""
    stream = b""
    for path in sorted(files):
        stream += path.encode("utf-8") + b"\x00" + hashlib.sha256(files[path]).digest()
    return hashlib.sha256(stream).hexdigest()


SAMPLE_FILES = {
    "world/zeta.jsonl": b'{"id":1}\n',
    "README.md": b"hello\n",
    "café.json": b"{}\n",
    "world/alpha.json": b"",
}


def test_artifact_set_digest_matches_the_format_definition() -> None:
    by_hand = _digest_by_definition(SAMPLE_FILES)
    assert artifact_set_digest(SAMPLE_FILES) == by_hand
    # The same value computed outside Python: printf "%s\0" path; sha256sum | xxd -r -p.
    assert by_hand == "31bb145eadfad9633f3be8b07ba26308989e80e591660b433b514575afb02774"


def test_artifact_set_digest_of_one_file_by_hand() -> None:
    file_hash = hashlib.sha256(b"x").digest()
    assert artifact_set_digest({"a": b"x"}) == hashlib.sha256(b"a\x00" + file_hash).hexdigest()


def test_artifact_set_digest_ignores_the_order_files_are_given_in() -> None:
    reversed_pairs = list(reversed(list(SAMPLE_FILES.items())))
    assert artifact_set_digest(reversed_pairs) == artifact_set_digest(SAMPLE_FILES)


def test_artifact_set_digest_changes_with_a_path_or_a_byte() -> None:
    base = artifact_set_digest({"a.txt": b"1"})
    assert artifact_set_digest({"b.txt": b"1"}) != base
    assert artifact_set_digest({"a.txt": b"2"}) != base


def test_artifact_set_digest_of_the_empty_set_is_sha256_of_nothing() -> None:
    assert artifact_set_digest({}) == hashlib.sha256(b"").hexdigest()


def test_artifact_set_digest_from_hashes_agrees_with_the_bytes_form() -> None:
    hashes = {path: sha256_hex(data) for path, data in SAMPLE_FILES.items()}
    assert artifact_set_digest_from_hashes(hashes) == artifact_set_digest(SAMPLE_FILES)


def test_tree_files_skips_hidden_caches_and_excluded_names(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / ".git").mkdir()
    for name in ["a.json", "sub/b.jsonl", "manifest.json", ".DS_Store", "__pycache__/x.pyc"]:
        (tmp_path / name).write_text("x", encoding="utf-8")
    (tmp_path / ".git" / "HEAD").write_text("ref", encoding="utf-8")
    found = tree_files(tmp_path, exclude=("manifest.json",))
    assert list(found) == ["a.json", "sub/b.jsonl"]
    assert found["sub/b.jsonl"] == tmp_path / "sub" / "b.jsonl"


def test_canonical_json_round_trips_through_the_strict_reader() -> None:
    value = {"z": [1, 2.5, "é"], "a": {"n": None, "t": True}}
    assert loads_strict(canonical_json(value)) == json.loads(canonical_json(value)) == value


@pytest.mark.parametrize("text", ['{"a": 1e400}', "[1, -1e999]"])
def test_loads_strict_refuses_numbers_that_overflow_to_infinity(text: str) -> None:
    with pytest.raises(AgentbenchError) as caught:
        loads_strict(text, file="f.json", line=2)
    assert caught.value.code == "non_finite_number"
    assert caught.value.location.line == 2


@pytest.mark.parametrize("text", ["[a, b]: 1\n", "ok: 1\n? {x: 1}\n: 2\n"])
def test_yaml_unhashable_key_is_a_named_refusal(text: str) -> None:
    with pytest.raises(AgentbenchError) as caught:
        loads_yaml_strict(text, file="suite.yaml")
    assert caught.value.code == "malformed_yaml"
    assert caught.value.location.file == "suite.yaml"
    assert caught.value.location.line is not None


@pytest.mark.parametrize(
    ("text", "line"), [("a: 1\nb: .nan\n", 2), ("x:\n  - .inf\n  - -.Inf\n", 2)]
)
def test_yaml_refuses_non_finite_numbers_with_their_line(text: str, line: int) -> None:
    with pytest.raises(AgentbenchError) as caught:
        loads_yaml_strict(text, file="controls.yaml")
    assert caught.value.code == "non_finite_number"
    assert caught.value.location.line == line


@pytest.fixture
def limits() -> Iterator[Callable[..., None]]:
    """Set this process's input limits for one test; the defaults come back after it."""
    previous = set_input_limits(InputLimits())

    def use(**changes: int) -> None:
        set_input_limits(InputLimits(**changes))

    yield use
    set_input_limits(previous)


def _refusal(read: Callable[[], object]) -> AgentbenchError:
    with pytest.raises(AgentbenchError) as caught:
        read()
    return caught.value


def _billion_laughs(levels: int, width: int) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("depth", [101, 5_000, 100_000])
def test_nesting_past_the_depth_limit_is_refused_before_parsing(
    limits: Callable[..., None], depth: int
) -> None:
    # 100_000 levels used to end in RecursionError inside the parser.
    refused = _refusal(lambda: loads_strict("[" * depth + "]" * depth, file="f.json", line=4))
    assert (refused.code, refused.location.line) == ("input_too_deep", 4)
    assert "agentbench_max_input_depth" in refused.reason
    refused = _refusal(
        lambda: loads_yaml_strict("a:\n  " + "[" * depth + "]" * depth, file="suite.yaml")
    )
    assert (refused.code, refused.location.file) == ("input_too_deep", "suite.yaml")
    block = "".join(f"{'  ' * level}k{level}:\n" for level in range(depth if depth < 200 else 200))
    assert _refusal(lambda: loads_yaml_strict(block + "  " * 200 + "x")).code == "input_too_deep"


def test_nesting_up_to_the_depth_limit_is_read_and_the_limit_is_a_setting(
    limits: Callable[..., None],
) -> None:
    assert loads_strict('{"a":' + "[" * 99 + '"[[[["' + "]" * 99 + "}") is not None
    assert loads_yaml_strict("a: " + "[" * 99 + "]" * 99) is not None
    limits(max_depth=3)
    assert loads_strict('[[["]]]]]"]]]') == [[["]]]]]"]]]
    assert _refusal(lambda: loads_strict("[[[[]]]]")).code == "input_too_deep"
    assert _refusal(lambda: loads_yaml_strict("a: {b: {c: 1}}")).code == "input_too_deep"
    # Past the interpreter's recursion limit the parser's own refusal is kept.
    limits(max_depth=1_000_000)
    refused = _refusal(lambda: loads_strict("[" * 100_000 + "]" * 100_000, file="f.json"))
    assert refused.code == "malformed_json"


def test_a_yaml_alias_bomb_is_refused_while_composing(limits: Callable[..., None]) -> None:
    # Nine levels of nine aliases: 1 KB of YAML naming 9**9 strings. Construction
    # never starts, so it takes neither the minutes nor the gigabytes it used to.
    bomb = _billion_laughs(9, 9)
    assert len(bomb) < 1_000
    refused = _refusal(lambda: loads_yaml_strict(bomb, file="suite.yaml"))
    assert (refused.code, refused.location.file) == ("yaml_alias_limit", "suite.yaml")
    assert "agentbench_max_yaml_aliases" in refused.reason
    # Four levels: l1, l2 and l3 repeat 9, 9 + 81 and 9 + 81 + 729 aliases, 918 in all.
    assert len(loads_yaml_strict(_billion_laughs(4, 9))["l3"]) == 9
    limits(max_yaml_aliases=917)
    assert _refusal(lambda: loads_yaml_strict(_billion_laughs(4, 9))).code == "yaml_alias_limit"
    limits(max_yaml_aliases=918)
    assert loads_yaml_strict(_billion_laughs(4, 9))["l0"] == ["lol"] * 9


def test_a_yaml_alias_inside_its_own_anchor_is_refused() -> None:
    refused = _refusal(lambda: loads_yaml_strict("a: &loop [1, *loop]\n", file="x.yaml"))
    assert (refused.code, refused.location.line) == ("yaml_alias_limit", 1)
    assert loads_yaml_strict("a: &one [1]\nb: [*one, *one]\n") == {"a": [1], "b": [[1], [1]]}


def test_an_oversized_file_or_document_is_refused_without_reading_it_whole(
    limits: Callable[..., None], tmp_path: Path
) -> None:
    limits(max_bytes=1_000)
    # An endless file: only a bounded read ever returns.
    refused = _refusal(lambda: read_bytes(Path("/dev/zero"), display="zero"))
    assert (refused.code, refused.location.file) == ("input_too_large", "zero")
    assert "agentbench_max_input_bytes" in refused.reason
    (tmp_path / "big.json").write_text(json.dumps(["x" * 1_000]))
    (tmp_path / "big.yaml").write_text("a: " + "x" * 1_000)
    (tmp_path / "big.jsonl").write_text('{"a": 1}\n' * 200)
    (tmp_path / "fits.json").write_text(json.dumps(["x" * 990]))
    for name, read in (
        ("big.json", read_json),
        ("big.yaml", read_yaml),
        ("big.jsonl", read_jsonl),
    ):
        refused = _refusal(lambda read=read, name=name: read(tmp_path / name, display=name))
        assert (refused.code, refused.location.file) == ("input_too_large", name)
    assert read_json(tmp_path / "fits.json") == ["x" * 990]
    assert _refusal(lambda: loads_strict(json.dumps("x" * 1_000))).code == "input_too_large"
    assert _refusal(lambda: loads_yaml_strict("x" * 1_001)).code == "input_too_large"


def test_scan_strict_parses_a_value_in_place_or_declines(limits: Callable[..., None]) -> None:
    text = 'x {"a":[1,"]}"],"b":{}} , "s" tail'
    value, end = scan_strict(text, 2) or (None, 0)
    assert (value, text[end:]) == ({"a": [1, "]}"], "b": {}}, ' , "s" tail')
    assert scan_strict(text, text.index('"s"')) == ("s", text.index(" tail"))
    limits(max_bytes=10, max_depth=2)
    declined = [
        '{"a":1',  # not whole
        '{"a":1,"a":2}',  # duplicate key
        "[NaN]",
        "[1e999]",
        '["' + "x" * 10 + '"]',  # over the size limit
        "[[[]]]",  # over the depth limit
        '[{"a":[]}]',  # over it, the levels alternating
        "[" * 100_000 + "]" * 100_000,  # deeper than the interpreter recurses
        "",
    ]
    for bad in declined:
        assert scan_strict(bad, 0) is None, bad
    assert scan_strict('[["[[[["]]', 0) == ([["[[[["]], 10)
    assert scan_strict("[{},[]]", 0) == ([{}, []], 7)


def test_the_depth_of_parsed_json_is_counted_as_of_any_text() -> None:
    # scan_strict counts a parsed value's depth by dropping empty bracket pairs in C;
    # it must agree with the token walk loads_strict uses on any text.
    chooser = random.Random(41)

    def value(depth: int) -> Any:
        if depth == 0 or chooser.random() < 0.2:
            return chooser.choice([1, "a[", '\\"{', None, "]}"])
        if chooser.random() < 0.5:
            return [value(depth - 1) for _ in range(chooser.randint(0, 3))]
        return {f"k{i}}}": value(depth - 1) for i in range(chooser.randint(0, 3))}

    for _ in range(500):
        text = json.dumps(value(chooser.randint(0, 10)))
        for limit in range(11):
            assert _parsed_depth_exceeds(text, 0, len(text), limit) == _json_depth_exceeds(
                text, limit
            )

"""Run reports read as a stream: no whole-file limit on a report, each value bounded by name."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli.main import main
from pytest_agentbench.report import stream
from pytest_agentbench.report.progress import read_resume_source
from pytest_agentbench.report.stream import (
    CaseEntry,
    HeadField,
    SuiteEnd,
    SuitesBegin,
    iter_report,
)
from pytest_agentbench.sdk.canonical import (
    DEFAULT_MAX_INPUT_BYTES,
    InputLimits,
    canonical_json,
    set_input_limits,
)
from pytest_agentbench.sdk.errors import AgentbenchError
from tests.html import sample

BIG_CASES = 1_100
"""Cases of ~16 KB each: a report over the readers' 16 MiB with few cases to validate."""


def big_report() -> dict[str, Any]:
    suite = sample.suite("big", BIG_CASES)
    for index, case in enumerate(suite["cases"]):
        case["result"]["recorded"] = sample.recorded(f"{index:05d}" + "x" * 15_000)
    return sample.report(suite)


def test_a_report_over_16_mib_is_read_by_every_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    document = big_report()
    path = tmp_path / "big.json"
    path.write_text(canonical_json(document) + "\n", encoding="utf-8")
    assert path.stat().st_size > DEFAULT_MAX_INPUT_BYTES
    assert main(["html", "big.json", "-o", "big.html"]) == 0
    assert capsys.readouterr().out == "wrote big.html\n"
    assert (tmp_path / "big.html").stat().st_size > 0
    assert main(["compare", "big.json", "big.json"]) == 0
    assert f"big: {BIG_CASES} pairs of {BIG_CASES} cases" in capsys.readouterr().out
    # Offline: the sample's world has classifiers only, which call no model.
    assert main(["judge", "big.json"]) == 0
    assert f"classifier toolgrammar.behaviour: {BIG_CASES} labels" in capsys.readouterr().out
    # Read whole, its recorded outputs found; the suite to grade them against is not here.
    assert main(["rescore", "big.json"]) == 1
    assert "[unknown_suite] recorded outputs of suite 'big'" in capsys.readouterr().err
    assert main(["audit", "big.json", "ledgers"]) == 1
    assert "[audit_ledger_missing] ledgers/big/" in capsys.readouterr().err
    resumed = read_resume_source(path)
    assert len(resumed.entries) == BIG_CASES
    assert resumed.entries[-1][1].recorded is not None


def test_events_come_in_file_order_and_chunk_boundaries_do_not_matter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tricky: dict[str, Any] = {
        "adapter": {"description": 'brackets ] } [ { and "quotes" \\ in a string', "spec": None},
        "exit_status": 0,
        "schema_version": "agentbench-run-report/3",
        "suites": [
            {"cases": [{"nodeid": "a::1", "v": ["\\", '"]', 1.5e-3, None, True]}], "id": "s1"},
            {"cases": [], "id": "s2"},
            {"id": "s3"},
        ],
        "trust": None,
        "zz": -12,
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps(tricky, indent=1, ensure_ascii=False), encoding="utf-8")
    for chunk in (1, 2, 3, 7, 1 << 20):
        monkeypatch.setattr(stream, "_CHUNK", chunk)
        assert stream.read_report_document(path) == tricky, chunk
    assert list(iter_report(path)) == [
        HeadField("adapter", tricky["adapter"]),
        HeadField("exit_status", 0),
        HeadField("schema_version", "agentbench-run-report/3"),
        SuitesBegin(),
        CaseEntry(0, tricky["suites"][0]["cases"][0]),
        SuiteEnd(0, {"id": "s1"}, cases_streamed=True),
        SuiteEnd(1, {"id": "s2"}, cases_streamed=True),
        SuiteEnd(2, {"id": "s3"}, cases_streamed=False),
        HeadField("trust", None),
        HeadField("zz", -12),
    ]


GOOD_CASE = '{"nodeid":"a::1","result":{"x":1}}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "[malformed_json] {f}:1: expecting an object: the file ends (truncated?) (column 1)"),
        (
            f'{{"suites":[{{"cases":[{GOOD_CASE},{GOOD_CASE[:20]}',
            "[malformed_json] {f}:1: suites[0].cases[1] is not closed: the file ends (truncated?)",
        ),
        (
            f'{{"suites":[{{"cases":[{GOOD_CASE}]}}]',
            "[malformed_json] {f}:1: expecting ',' delimiter or '}}': the file ends",
        ),
        ('{"a":1}\n{"b":2}', "[malformed_json] {f}:2: Extra data after the report (column 1)"),
        ('{"a":1,}', "[malformed_json] {f}:1: expecting a property name in double quotes"),
        ('{"a":1 "b":2}', "[malformed_json] {f}:1: expecting ',' delimiter or '}}': found '\"'"),
        ("[1, 2]", None),
        ('{"suites":[],"exit_status":0}', None),
        ('{"suites":{"not":"a list"}}', None),
        ('{"suites":[{"id":"s","cases":{"not":"a list"}}, 3]}', None),
        ('{"a":1,"a":2}', "[duplicate_key] {f}:1: a: key 'a' appears more than once"),
        (
            '{"suites":[{"id":"s","id":"t"}]}',
            "[duplicate_key] {f}:1: suites[0].id: key 'id' appears more than once",
        ),
        (
            '{"suites":[{"cases":[{"r":{"k":1,"k":2}}]}]}',
            "[duplicate_key] {f}:1: suites[0].cases[0].r.k: key 'k' appears more than once",
        ),
        # A case's value is bounded on its own, at the limit exactly and not above it.
        ('{"suites":[{"cases":[' + "[" * 100 + '"[[{"' + "]" * 100 + "]}]}", None),
        (
            '{"suites":[{"cases":[' + "[" * 101 + "]" * 101 + "]}]}",
            "[input_too_deep] {f}:1: suites[0].cases[0]: nested deeper than 100 levels",
        ),
        (
            '{"suites":[{"cases":[' + "[" * 100_000 + "]" * 100_000 + "]}]}",
            "[input_too_deep] {f}:1: suites[0].cases[0]: nested deeper than 100 levels",
        ),
        ('{"a":NaN}', "[non_finite_number] {f}:1: a: NaN is not a finite number"),
        (
            '{"suites":[{"cases":[{"r":[1e999]}]}]}',
            "[non_finite_number] {f}:1: suites[0].cases[0]: number 1e999 does not fit",
        ),
        ('\ufeff{"a":1}', "[malformed_json] {f}:1: Unexpected UTF-8 BOM"),
    ],
)
def test_a_malformed_report_is_refused_by_name(
    tmp_path: Path, text: str, expected: str | None
) -> None:
    path = tmp_path / "r.json"
    path.write_text(text, encoding="utf-8")
    if expected is None:  # not an object: read as one value, for the caller to refuse
        assert stream.read_report_document(path) == json.loads(text)
        return
    with pytest.raises(AgentbenchError) as refused:
        stream.read_report_document(path)
    assert str(refused.value).startswith(expected.format(f=path)), str(refused.value)


def test_each_value_is_bounded_by_the_input_limits_and_bad_bytes_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(
        '{"suites":[{"cases":[' + GOOD_CASE + ',{"big":"' + "x" * 5_000 + '"}]}]}',
        encoding="utf-8",
    )
    previous = set_input_limits(InputLimits(max_bytes=1_000))
    try:
        with pytest.raises(AgentbenchError) as refused:
            stream.read_report_document(path)
    finally:
        set_input_limits(previous)
    assert (refused.value.code, refused.value.location.field) == (
        "input_too_large",
        "suites[0].cases[1]",
    )
    path.write_bytes(b'{"a":"\xff"}')
    with pytest.raises(AgentbenchError) as refused:
        stream.read_report_document(path)
    assert (refused.value.code, refused.value.location.file) == ("malformed_json", str(path))
    assert "not UTF-8" in refused.value.reason


def test_a_long_string_is_scanned_in_memory_of_its_own_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The string scanner once repeated a group per character, for which sre keeps a
    # backtracking frame each: about 150 MB to scan a 1 MiB string (2 GB and most of a
    # minute for one over the 16 MiB limit).
    value = "x" * (1 << 20) + '\\"]} ' + "y" * 1000
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"suites": [{"cases": [{"r": value}]}], "z": 1}), encoding="utf-8")
    for chunk in (1 << 20, 1 << 16):  # the string whole in the buffer, and across chunks
        monkeypatch.setattr(stream, "_CHUNK", chunk)
        tracemalloc.start()
        try:
            document = stream.read_report_document(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert document["suites"][0]["cases"][0]["r"] == value, chunk
        assert peak < 16 * len(value), (chunk, peak)


def test_max_report_bytes_refuses_a_report_in_every_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "run.json"
    path.write_text(canonical_json(sample.report(sample.suite("s", 3))), encoding="utf-8")
    size = path.stat().st_size
    commands = (
        ["html", "run.json"],
        ["compare", "run.json", "run.json"],
        ["judge", "run.json"],
        ["rescore", "run.json"],
        ["audit", "run.json", "ledgers"],
    )
    for command in commands:
        assert main([*command, "--max-report-bytes", str(size - 1)]) == 1, command
        assert capsys.readouterr().err.strip() == (
            f"agentbench: [report_too_large] run.json: {size} bytes, over the limit of "
            f"{size - 1} bytes (--max-report-bytes)"
        ), command
    assert not (tmp_path / "run.html").exists()
    assert main(["html", "run.json", "--max-report-bytes", str(size)]) == 0
    with pytest.raises(SystemExit) as usage:
        main(["html", "run.json", "--max-report-bytes", "0"])
    assert usage.value.code == 2
    assert "'0' is not a whole number of bytes >= 1" in capsys.readouterr().err

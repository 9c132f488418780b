"""The recognise hook: a world's original layout runs with no suite.yaml."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from pytest_agentbench.run.session import SuiteLoader
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import LazyWorld, WorldRegistry
from pytest_agentbench.sdk.suite import SuiteConfig
from tests import layout_world
from tests.layout_world import MARKERS, RivalWorld, claim, write_layout_folder

PROBE = "agentbench_layout_probe"

LAZY_CONFTEST = f"""
from pytest_agentbench.sdk.hookspecs import hookimpl
from pytest_agentbench.sdk.registry import LazyWorld


@hookimpl
def pytest_agentbench_world_kinds():
    markers = {MARKERS!r}
    kinds = [LazyWorld("layout", "layout_world:WORLD", layout_markers=markers)]
    if RIVAL:
        kinds.append(LazyWorld("rival", "layout_world:RIVAL", layout_markers=markers))
    return kinds
"""


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """``layout_world`` under a module name no other test imports."""
    module = types.ModuleType(PROBE)
    module.__dict__.update(WORLD=layout_world.WORLD, RIVAL=layout_world.RIVAL)
    monkeypatch.delitem(sys.modules, PROBE, raising=False)
    return module


def lazy(kind: str = "layout", attr: str = "WORLD") -> LazyWorld:
    return LazyWorld(kind, f"{PROBE}:{attr}", layout_markers=MARKERS)


# ---------------------------------------------------------------------------
# The registry


def test_a_folder_without_the_markers_imports_no_lazy_world(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text("", encoding="utf-8")
    registry = WorldRegistry([lazy()])
    assert registry.recognise(tmp_path) is None
    assert PROBE not in sys.modules


def test_a_folder_with_the_markers_is_claimed_by_the_world_that_recognises_it(
    tmp_path: Path, probe: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_layout_folder(tmp_path)
    monkeypatch.setitem(sys.modules, PROBE, probe)
    recognition = WorldRegistry([lazy()]).recognise(folder)
    assert recognition is not None
    assert recognition.anchor == "layout.json"
    assert recognition.config.id == "published-demo"
    assert recognition.config.world == "layout"


def test_markers_alone_do_not_make_a_claim(
    tmp_path: Path, probe: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_layout_folder(tmp_path, format_version=2)
    monkeypatch.setitem(sys.modules, PROBE, probe)
    assert WorldRegistry([lazy()]).recognise(folder) is None


def test_a_folder_two_worlds_claim_is_refused_as_ambiguous(
    tmp_path: Path, probe: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_layout_folder(tmp_path)
    monkeypatch.setitem(sys.modules, PROBE, probe)
    registry = WorldRegistry([lazy(), lazy("rival", "RIVAL")])
    with pytest.raises(AgentbenchError) as refused:
        registry.recognise(folder, display="published")
    assert refused.value.render() == (
        "[ambiguous_layout] published: claimed as their original layout by world kinds "
        "layout, rival; add a suite.yaml naming the world"
    )


def test_a_world_object_registered_eagerly_is_asked_too(tmp_path: Path) -> None:
    folder = write_layout_folder(tmp_path)
    recognition = WorldRegistry([RivalWorld()]).recognise(folder)
    assert recognition is not None
    assert recognition.config.world == "rival"


class _ByContent(RivalWorld):
    """Recognises the layout file whatever it is called, and anchors on it."""

    layout_markers = (('*.json containing {"format":',),)

    def recognise(self, folder: Path) -> SuiteConfig | None:
        return claim(folder, self.kind)

    def layout_anchor(self, folder: Path, config: SuiteConfig) -> str:
        return "layout.json"


def test_a_pattern_marker_asks_about_any_matching_file_and_the_world_names_the_anchor(
    tmp_path: Path,
) -> None:
    folder = write_layout_folder(tmp_path)
    # Sorts before layout.json, so the first match is not what the world anchors on.
    (folder / "a.json").write_text("{}", encoding="utf-8")
    recognition = WorldRegistry([_ByContent()]).recognise(folder)
    assert recognition is not None
    assert recognition.anchor == "layout.json"
    # A file that matches the pattern but not the text is never handed over.
    other = tmp_path / "other"
    other.mkdir()
    (other / "layout.json").write_text('{"kind": "else"}', encoding="utf-8")
    assert WorldRegistry([_ByContent()]).recognise(other) is None


class _Raising(RivalWorld):
    def recognise(self, folder: Path) -> SuiteConfig | None:
        raise KeyError("boom")


class _OtherKind(RivalWorld):
    def recognise(self, folder: Path) -> SuiteConfig | None:
        return SuiteConfig(id="x", version="1", world="layout", title="x")


class _NoRecognise:
    kind = "mute"
    layout_markers = MARKERS


@pytest.mark.parametrize(
    ("world", "reason"),
    [
        pytest.param(_Raising(), "recognising the folder raised KeyError: 'boom'", id="raises"),
        pytest.param(_OtherKind(), "claimed the folder with something other than", id="kind"),
        pytest.param(_NoRecognise(), "declares layout markers but has no recognise", id="mute"),
    ],
)
def test_a_faulty_recognise_is_a_named_refusal(tmp_path: Path, world: object, reason: str) -> None:
    folder = write_layout_folder(tmp_path)
    with pytest.raises(AgentbenchError) as refused:
        WorldRegistry([world]).recognise(folder)  # type: ignore[list-item]
    assert refused.value.code == "world_load_failed"
    assert reason in refused.value.reason


@pytest.mark.parametrize(
    "markers",
    [
        pytest.param(("layout.json",), id="flat-strings"),
        pytest.param(((),), id="empty-set"),
        pytest.param((("../escape.json",),), id="parent"),
        pytest.param((("/abs.json",),), id="absolute"),
    ],
)
def test_malformed_marker_sets_are_refused(markers: tuple[object, ...]) -> None:
    with pytest.raises(AgentbenchError) as refused:
        LazyWorld("x", "x:WORLD", layout_markers=markers)  # type: ignore[arg-type]
    assert refused.value.code == "invalid_layout_markers"


def test_suite_yaml_wins_over_a_recognised_layout(tmp_path: Path) -> None:
    folder = write_layout_folder(tmp_path)
    (folder / "suite.yaml").write_text("id: declared\n", encoding="utf-8")
    loader = SuiteLoader(WorldRegistry([RivalWorld()]), tmp_path)
    assert loader.anchor(folder) == "suite.yaml"
    with pytest.raises(AgentbenchError) as refused:
        loader.load(folder)
    assert refused.value.code == "missing_field"


def test_the_loader_loads_a_recognised_folder(tmp_path: Path) -> None:
    folder = write_layout_folder(tmp_path)
    loader = SuiteLoader(WorldRegistry([RivalWorld()]), tmp_path)
    assert loader.suite_root_of(folder) == folder
    loaded = loader.load(folder)
    assert loaded.suite.id == "published-demo"
    assert loaded.suite.display_root == "published"
    assert [case.case_id for case in loaded.world.cases(loaded.suite)] == ["p1", "p2"]
    assert loaded.suite.oracle_root == tmp_path / "answers"


def test_the_loader_reports_each_suite_it_loads_once(tmp_path: Path) -> None:
    folder = write_layout_folder(tmp_path)
    refused = tmp_path / "refused"
    refused.mkdir()
    (refused / "suite.yaml").write_text("id: refused\n", encoding="utf-8")
    loads: list[int] = []
    loader = SuiteLoader(
        WorldRegistry([RivalWorld()]), tmp_path, on_load=lambda: loads.append(len(loads))
    )
    loader.load(folder)
    loader.load(folder)
    with pytest.raises(AgentbenchError):
        loader.load(refused)
    assert loads == [0]


# ---------------------------------------------------------------------------
# pytest sessions


@pytest.fixture
def layout(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester project where the layout world is registered lazily from a conftest."""
    pytester.makepyfile(layout_world=Path(layout_world.__file__).read_text(encoding="utf-8"))
    pytester.makeconftest("RIVAL = False\n" + LAZY_CONFTEST)
    pytester.syspathinsert()
    return pytester


@pytest.mark.parametrize(
    "xdist_args", [pytest.param([], id="no-xdist"), pytest.param(["-n", "1"], id="n1")]
)
def test_pytest_collects_a_recognised_folder_without_suite_yaml(
    layout: pytest.Pytester, xdist_args: list[str]
) -> None:
    # A worker recognises the folder and the controller reports the suite from its items:
    # one worker shows it (``-n 0`` is the serial path again).
    write_layout_folder(layout.path)
    report = layout.path / "run.json"
    result = layout.runpytest("published", "-v", f"--agentbench-report={report}", *xdist_args)
    result.assert_outcomes(passed=2)
    assert "published/cases.jsonl::p1" in result.stdout.str()
    (suite,) = json.loads(report.read_text(encoding="utf-8"))["suites"]
    assert suite["id"] == "published-demo"
    assert {metric["name"]: metric["value"] for metric in suite["metrics"]}["accuracy"] == 1.0


def test_agentbench_suite_accepts_a_recognised_folder(layout: pytest.Pytester) -> None:
    write_layout_folder(layout.path / "elsewhere")
    result = layout.runpytest("--agentbench-suite", "elsewhere/published", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["elsewhere/published/cases.jsonl::p1 PASSED*"])


def test_agentbench_suite_refuses_a_folder_no_world_recognises(layout: pytest.Pytester) -> None:
    (layout.path / "plain").mkdir()
    result = layout.runpytest("--agentbench-suite", "plain")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "[unknown_suite] --agentbench-suite: 'plain' is neither" in result.stderr.str()


def test_an_ambiguous_folder_is_a_collection_error_and_the_rest_runs(
    layout: pytest.Pytester,
) -> None:
    layout.makeconftest("RIVAL = True\n" + LAZY_CONFTEST)
    write_layout_folder(layout.path / "a")
    layout.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = layout.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]ambiguous_layout[]] a/published: claimed as their original layout by world "
            "kinds layout, rival*"
        ]
    )


def test_a_recognised_folder_that_fails_to_load_is_reported_once(layout: pytest.Pytester) -> None:
    folder = write_layout_folder(layout.path)
    (folder / "cases.jsonl").write_text('{"id": "p1", "question": "9+9"}\n', encoding="utf-8")
    result = layout.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*[[]digest_mismatch[]] published/manifest.json*"])


def test_an_unrelated_run_imports_no_lazy_world(layout: pytest.Pytester) -> None:
    write_layout_folder(layout.path / "data", format_version=1)
    (layout.path / "data" / "published" / "layout.json").unlink()
    layout.makepyfile(
        test_plain="import sys\n\ndef test_plain():\n    assert 'layout_world' not in sys.modules\n"
    )
    layout.runpytest().assert_outcomes(passed=1)

"""The world entry points kept between processes: read back while the installation holds, read
afresh when it changes, never written where bytecode would not be."""

from __future__ import annotations

import importlib
import sys
import zipfile
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_agentbench.sdk import entry_point_cache
from pytest_agentbench.sdk.entry_point_cache import InstalledReading

GROUP = "pytest_agentbench.worlds"
METADATA = "Metadata-Version: 2.1\nName: probe-world\nVersion: 1.0\n"


def _named(group: str = GROUP) -> list[tuple[str, str]]:
    return [(ep.name, ep.value) for ep in InstalledReading().group_entry_points(group)]


def _fresh(group: str = GROUP) -> list[tuple[str, str]]:
    return [(ep.name, ep.value) for ep in sorted(entry_points(group=group), key=lambda e: e.name)]


def _distribution(site: Path, lines: list[str]) -> Path:
    dist_info = site / "cache_probe_world-1.0.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: cache-probe-world\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(
        "\n".join([f"[{GROUP}]", *lines, ""]), encoding="utf-8"
    )
    return dist_info / "entry_points.txt"


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setattr(entry_point_cache, "CACHE_FOLDER", folder)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return folder


def _no_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(**_: Any) -> Any:
        raise AssertionError("entry points read although the cache holds")

    monkeypatch.setattr(entry_point_cache, "entry_points", refuse)


def test_the_cache_answers_as_importlib_does_and_is_read_back(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _fresh()
    assert ("authority", "pytest_agentbench.worlds.authority.registration") in expected
    assert _named() == expected
    assert [path.name for path in cache.iterdir()] == [entry_point_cache.cache_file().name]
    _no_reading(monkeypatch)
    assert _named() == expected
    # Each entry point is whole: its group too, as importlib gives it.
    assert {ep.group for ep in InstalledReading().group_entry_points(GROUP)} == {GROUP}


def test_an_installed_removed_or_edited_distribution_is_seen(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    before = _named()
    assert before == _fresh()
    # Installed since the cache was written.
    written = _distribution(site, ["probe = probe_world.registration"])
    assert ("probe", "probe_world.registration") in _named()
    # Its entry points edited in place (the folder listing unchanged).
    written.write_text(f"[{GROUP}]\nprobe-renamed = probe_world.other\n", encoding="utf-8")
    named = _named()
    assert ("probe-renamed", "probe_world.other") in named
    assert ("probe", "probe_world.registration") not in named
    assert named == _fresh()
    # Removed.
    written.unlink()
    written.parent.joinpath("METADATA").unlink()
    written.parent.rmdir()
    assert _named() == before


def test_a_damaged_cache_is_read_past_and_replaced(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _named()
    path = entry_point_cache.cache_file()
    for damage in ("{not json", '{"format": 1}', '{"format": 99, "groups": {}}', "[]"):
        path.write_text(damage, encoding="utf-8")
        assert _named() == expected
    _no_reading(monkeypatch)
    assert _named() == expected


def test_nothing_is_written_where_bytecode_would_not_be(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert _named() == _fresh()
    assert not cache.exists()


def test_an_unwritable_cache_folder_costs_only_the_cache(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.parent.mkdir(exist_ok=True)
    cache.write_text("a file where the folder would be", encoding="utf-8")
    assert _named() == _fresh()
    assert cache.is_file()


def test_distributions_found_by_another_finder_are_not_cached(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Finder:
        @staticmethod
        def find_distributions(*args: object, **kwargs: object) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert _named() == _fresh()
    assert not cache.exists()


@pytest.mark.parametrize("kind", ["zip", "egg"])
def test_distributions_in_a_zip_or_an_egg_on_the_path_are_not_cached(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str
) -> None:
    # Neither is a distribution folder of its own that the fingerprint could stat.
    if kind == "zip":
        entry = tmp_path / "bundle.zip"
        with zipfile.ZipFile(entry, "w") as archive:
            archive.writestr("zipped_world-1.0.dist-info/METADATA", METADATA)
    else:
        entry = tmp_path / "old_world-1.0.egg"
        (entry / "EGG-INFO").mkdir(parents=True)
        (entry / "EGG-INFO" / "PKG-INFO").write_text(METADATA, encoding="utf-8")
    monkeypatch.syspath_prepend(str(entry))
    assert _named() == _fresh()
    assert not cache.exists()


def test_a_distribution_folder_of_the_working_folder_is_fingerprinted(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # "" on sys.path is the working folder, as the path finder reads it.
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend("")
    assert _named() == _fresh()
    written = _distribution(tmp_path, ["probe = probe_world.registration"])
    assert ("probe", "probe_world.registration") in _named()
    written.write_text(f"[{GROUP}]\n", encoding="utf-8")
    assert ("probe", "probe_world.registration") not in _named()
    assert _named() == _fresh()


def _registration(folder: Path, name: str, markers: str) -> ModuleType:
    package = folder / name
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "registration.py").write_text(f"MARKERS = {markers}\n", encoding="utf-8")
    return importlib.import_module(f"{name}.registration")


@pytest.fixture
def probe_modules(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield
    for name in [name for name in sys.modules if name.startswith("layout_probe_world")]:
        del sys.modules[name]


@pytest.mark.usefixtures("probe_modules")
def test_kept_layouts_hold_while_the_registration_and_its_package_are_unchanged(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path / "one"))
    module = _registration(tmp_path / "one", "layout_probe_world", "[['a.json']]")
    layouts = {"probe": {"probe-kind": [["a.json", "b/c.json"]]}}
    expected = _named()
    assert InstalledReading().kept_layouts(GROUP) is None
    InstalledReading().keep_layouts(GROUP, layouts, [module])
    assert InstalledReading().kept_layouts(GROUP) == layouts
    with monkeypatch.context() as patched:
        # The entry points kept beside them still read back: one document, both members.
        _no_reading(patched)
        assert _named() == expected

    # The registration edited: read afresh.
    assert module.__file__ is not None
    Path(module.__file__).write_text("MARKERS = [['other.json']]\n", encoding="utf-8")
    assert InstalledReading().kept_layouts(GROUP) is None
    InstalledReading().keep_layouts(GROUP, layouts, [module])
    assert InstalledReading().kept_layouts(GROUP) == layouts
    # Another copy of the package imported (PYTHONPATH to another checkout): read afresh.
    for name in [name for name in sys.modules if name.startswith("layout_probe_world")]:
        del sys.modules[name]
    monkeypatch.syspath_prepend(str(tmp_path / "two"))
    _registration(tmp_path / "two", "layout_probe_world", "[['a.json']]")
    assert InstalledReading().kept_layouts(GROUP) is None


@pytest.mark.usefixtures("probe_modules")
def test_layouts_are_not_kept_where_bytecode_would_not_be(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    module = _registration(tmp_path, "layout_probe_world", "[]")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    InstalledReading().keep_layouts(GROUP, {"probe": {"kind": []}}, [module])
    assert not cache.exists()
    assert InstalledReading().kept_layouts(GROUP) is None


def _counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the fingerprint is taken and the kept document read from here on."""
    counts = {"fingerprint": 0, "document": 0}
    fingerprint, document = entry_point_cache._fingerprint, entry_point_cache._document

    def counted_fingerprint() -> Any:
        counts["fingerprint"] += 1
        return fingerprint()

    def counted_document(*args: Any) -> Any:
        counts["document"] += 1
        return document(*args)

    monkeypatch.setattr(entry_point_cache, "_fingerprint", counted_fingerprint)
    monkeypatch.setattr(entry_point_cache, "_document", counted_document)
    return counts


@pytest.mark.usefixtures("probe_modules")
def test_one_reading_takes_the_fingerprint_and_reads_the_cache_once(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    module = _registration(tmp_path, "layout_probe_world", "[['a.json']]")
    layouts = {"probe": {"probe-kind": [["a.json"]]}}
    expected = _named()
    InstalledReading().keep_layouts(GROUP, layouts, [module])
    counts = _counted(monkeypatch)
    reading = InstalledReading()
    # As a session asks: the layout markers while collecting, then the entry points.
    assert reading.kept_layouts(GROUP) == layouts
    assert [(ep.name, ep.value) for ep in reading.group_entry_points(GROUP)] == expected
    assert reading.kept_layouts(GROUP) == layouts
    assert counts == {"fingerprint": 1, "document": 1}


def test_a_benchmark_session_reads_the_installation_once(
    demo: pytest.Pytester, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.demo_world import write_demo_suite

    write_demo_suite(demo.path)
    demo.inline_run("-p", "no:xdist").assertoutcome(passed=3, failed=1)  # keeps the cache
    counts = _counted(monkeypatch)
    demo.inline_run("-p", "no:xdist").assertoutcome(passed=3, failed=1)
    assert counts == {"fingerprint": 1, "document": 1}

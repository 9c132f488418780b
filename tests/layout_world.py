"""A demo world that also recognises a published layout, registered lazily.

The layout folder holds ``layout.json`` (``{"format": "demo-layout",
"format_version": 1, "suite": ID}``), the demo world's ``cases.jsonl`` and
``manifest.json``, and no ``suite.yaml``; its answers sit in the sibling folder
``answers/``. ``RIVAL`` claims the same folders, to make them ambiguous.
"""

from __future__ import annotations

import json
from pathlib import Path

from pytest_agentbench.sdk.canonical import artifact_set_digest, pretty_json, read_json
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.hookspecs import hookimpl
from pytest_agentbench.sdk.registry import LazyWorld
from pytest_agentbench.sdk.suite import SuiteConfig
from tests.demo_world import CASES_FILE, MANIFEST, DemoWorld, Reference

LAYOUT_FILE = "layout.json"
MARKERS = ((LAYOUT_FILE,),)


def claim(folder: Path, kind: str) -> SuiteConfig | None:
    try:
        layout = read_json(folder / LAYOUT_FILE)
    except AgentbenchError:
        return None
    if not isinstance(layout, dict) or layout.get("format") != "demo-layout":
        return None
    if layout.get("format_version") != 1 or not isinstance(layout.get("suite"), str):
        return None
    return SuiteConfig(
        id=layout["suite"], version="1", world=kind, title="published", oracle="../answers"
    )


class LayoutWorld(DemoWorld):
    kind = "layout"
    layout_markers = MARKERS

    def recognise(self, folder: Path) -> SuiteConfig | None:
        return claim(folder, self.kind)


class RivalWorld(LayoutWorld):
    kind = "rival"

    def recognise(self, folder: Path) -> SuiteConfig | None:
        return claim(folder, self.kind)


WORLD = LayoutWorld()
RIVAL = RivalWorld()


@hookimpl
def pytest_agentbench_world_kinds() -> list[LazyWorld]:
    return [LazyWorld("layout", "layout_world:WORLD", layout_markers=MARKERS)]


def write_layout_folder(
    base: Path,
    suite_id: str = "published-demo",
    *,
    questions: dict[str, str] | None = None,
    format_version: int = 1,
) -> Path:
    """``base/published`` (the recognised folder) and ``base/answers``; returns the former."""
    questions = questions or {"p1": "1+2", "p2": "3+4"}
    folder = base / "published"
    answers = base / "answers"
    folder.mkdir(parents=True)
    answers.mkdir(parents=True)
    layout = {"format": "demo-layout", "format_version": format_version, "suite": suite_id}
    (folder / LAYOUT_FILE).write_text(json.dumps(layout), encoding="utf-8")
    (folder / CASES_FILE).write_text(
        "".join(json.dumps({"id": cid, "question": q}) + "\n" for cid, q in questions.items()),
        encoding="utf-8",
    )
    files = {name: (folder / name).read_bytes() for name in (CASES_FILE, LAYOUT_FILE)}
    (folder / MANIFEST).write_text(
        pretty_json({"artifact_set_digest": artifact_set_digest(files)}), encoding="utf-8"
    )
    (answers / "answers.jsonl").write_text(
        "".join(
            json.dumps({"id": cid, "answer": Reference().answer(q), "canary": f"C-{cid}"}) + "\n"
            for cid, q in questions.items()
        ),
        encoding="utf-8",
    )
    return folder

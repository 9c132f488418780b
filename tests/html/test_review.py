"""``agentbench review``: the labelling page, served on loopback and as one file.

The browser tests drive headless Chromium: label with the keyboard, save, reload.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_agentbench.agents.budget import BudgetRefused
from pytest_agentbench.agents.cassettes import RecordedResponse
from pytest_agentbench.cli.main import main
from pytest_agentbench.cli.review import serving
from pytest_agentbench.judging.documents import JudgedItem, JudgmentsDocument, RubricEntry
from pytest_agentbench.judging.panel import Panel, Seat
from pytest_agentbench.judging.rubric import load_rubric
from pytest_agentbench.sdk.canonical import JsonValue, pretty_json
from tests.browser import Browser, find_chromium
from tests.test_judging import RUBRIC, completion

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on PATH (.ci/run installs Debian's chromium; the install failed here)",
)
SCORES = {"alpha-judge": {"c1": 5, "c2": 4}, "beta-judge": {"c1": 5, "c2": 2}}


class Fixed:
    """A seat answering a fixed score per case; gamma says 4, its call on c1 refused by budget."""

    def __init__(self, seat: Seat) -> None:
        self.model = seat.model

    def send(self, request: dict[str, JsonValue]) -> RecordedResponse:
        prompt = str(request["messages"][1]["content"])  # type: ignore[index, call-overload]
        case = "c1" if '"case":"c1"' in prompt else "c2"
        if (self.model, case) == ("gamma-judge", "c1"):
            raise BudgetRefused("budget_exceeded_calls", "no call left")
        score = SCORES.get(self.model, {}).get(case, 4)
        return completion(json.dumps({"score": score, "reason": f"{self.model} on {case}"}))


@pytest.fixture
def report(tmp_path: Path) -> Path:
    """A judged report: c2 split (4, 2, 4), c1 unanimous (5, 5, one refused) — c2 comes first."""
    rubric_path = tmp_path / "rubric.yaml"
    rubric_path.write_text(RUBRIC % "gamma-judge", encoding="utf-8")
    rubric_file = load_rubric(rubric_path)
    panel = Panel(rubric_file, Fixed)
    items = []
    for case, output in (("c1", "Three."), ("c2", "<script>alert(1)</script>")):
        content: JsonValue = {"suite": "s", "case": case, "output": output}
        judgment = panel.judge(f"s/{case}", content)
        items.append(JudgedItem(suite_id="s", case_id=case, content=content, judgment=judgment))
    document = JudgmentsDocument(
        report="run.json",
        subject_model=None,
        rubrics={
            "answer-prose": RubricEntry(
                rubric=rubric_file.rubric,
                digest=panel.digest,
                source="rubric.yaml",
                seats=tuple(seat.seat_id for seat in panel.seats),
            )
        },
        items=tuple(items),
    )
    (tmp_path / "run.judgments.json").write_text(pretty_json(document.model_dump(mode="json")))
    return tmp_path / "run.json"


def post(url: str, body: bytes, origin: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url + "labels", data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    if origin is not None:
        request.add_header("Origin", origin)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_the_server_saves_only_valid_labels_from_its_own_page(report: Path) -> None:
    labels = {
        "scheme": "agentbench-labels/1",
        "judgments": "run.judgments.json",
        "items": [
            {
                "item": "s/c1#answer-prose", "subject": "answer-prose", "kind": "rubric",
                "categories": ["1", "2", "3", "4", "5"], "predictions": {}, "human": "9",
            }
        ],
    }  # fmt: skip
    with serving(report) as url:
        assert url.startswith("http://127.0.0.1:")
        assert post(url, b"{}", origin="http://evil.example")[0] == 403
        status, text = post(url, json.dumps(labels).encode())
        assert status == 400
        assert "invalid_labels" in text
        labels["items"][0]["human"] = "2"  # type: ignore[index]
        assert post(url, json.dumps(labels).encode()) == (200, '{"labelled": 1}')
    saved = json.loads((report.parent / "run.labels.json").read_text())
    assert [(i["item"], i["human"]) for i in saved["items"]] == [
        ("s/c1#answer-prose", "2"),
        ("s/c2#answer-prose", None),
    ]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    assert CHROMIUM is not None
    instance = Browser(CHROMIUM, tmp_path_factory.mktemp("profile"))
    yield instance
    instance.close()


def press(browser: Browser, key: str) -> None:
    browser.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": key, "text": key})
    browser.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": key})


LIST = (
    "[...document.querySelectorAll('#list li')]"
    ".map(li => [li.dataset.item, li.lastChild.textContent])"
)


@needs_chromium
def test_label_with_keys_save_and_reload(browser: Browser, report: Path) -> None:
    with serving(report) as url:
        loaded = browser.open(url)
        assert loaded.exceptions == []
        assert loaded.console_errors == []
        # Disagreements first; the case's own markup is shown as text, never run.
        assert browser.evaluate(LIST) == [["s/c2#answer-prose", ""], ["s/c1#answer-prose", ""]]
        assert "<script>" in browser.evaluate("document.querySelector('#detail').textContent")
        seats = browser.evaluate(
            "[...document.querySelectorAll('.verdict')].map(p => p.textContent)"
        )
        assert seats[1].startswith("local/beta-judge: 2")
        for key in ("2", "j"):
            press(browser, key)
        seats = browser.evaluate(
            "[...document.querySelectorAll('.verdict')].map(p => p.textContent)"
        )
        assert seats[2].startswith("local/gamma-judge: no vote (refused: budget_exceeded_calls)")
        for key in ("5", "s"):
            press(browser, key)
        browser.evaluate(
            "new Promise(r => { const t = setInterval(() => { if (document.getElementById"
            "('status').textContent === 'saved') { clearInterval(t); r(); } }, 20); })",
            await_promise=True,
        )
        saved = json.loads((report.parent / "run.labels.json").read_text())
        assert {i["item"]: i["human"] for i in saved["items"]} == {
            "s/c1#answer-prose": "5",
            "s/c2#answer-prose": "2",
        }
        # Each label is bound to the digest of the content and rubric it was given on.
        assert all(i["human_digest"] == i["digest"] is not None for i in saved["items"])
        reloaded = browser.open(url)
        assert reloaded.exceptions == []
        assert browser.evaluate(LIST) == [["s/c2#answer-prose", "2"], ["s/c1#answer-prose", "5"]]
    # And the labels calibrate.
    assert main(["calibrate", str(report.parent / "run.labels.json")]) == 0


@needs_chromium
def test_the_written_page_is_self_contained_and_labels_by_key(
    browser: Browser, report: Path
) -> None:
    assert main(["review", str(report)]) == 0
    page = report.parent / "run.review.html"
    loaded = browser.open(page.as_uri())
    assert loaded.exceptions == []
    assert loaded.requests == [page.as_uri()]
    press(browser, "0")
    press(browser, "3")
    assert browser.evaluate(LIST)[0] == ["s/c2#answer-prose", "3"]

"""The screenshots of the HTML viewer kept in docs/ (docs/html-viewer-1280.png, -1920.png).

    python bench/html_screenshots.py [--out docs]

The run report is built by rule (tests/html/sample.py): a 40-case suite whose cases
each have a chat transcript in the sidecar, and a 300-case suite grouped by labels.
Each width shows the filter bar set to failed cases with "T4" searched, the grid
left, and the first failing case open on its transcript. Needs chromium on PATH.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_agentbench.report.html import write_html
from tests.browser import Browser, find_chromium
from tests.html import sample

SCENE = """(async () => {
  const status = document.getElementById('f-status');
  document.getElementById('f-outcome').value = 'failed';
  document.getElementById('f-search').value = 'T4';
  document.getElementById('f-search').dispatchEvent(new Event('input', {bubbles: true}));
  while (!status.textContent) { await new Promise((resolve) => setTimeout(resolve, 20)); }
  const panel = document.getElementById('s0-detail');
  location.hash = '#case-s0-3';
  while (panel.dataset.shown !== 'case-s0-3') {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  document.querySelector('#s0 details.group').scrollIntoView();
  window.scrollBy(0, -60);
  document.querySelector('#s0 table.cases tbody tr:not([hidden]) th a').focus();
})()"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="docs")
    args = parser.parse_args()
    executable = find_chromium()
    if executable is None:
        print("chromium is not on PATH")
        return 1
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        document = sample.report(sample.suite("toolgrammar-demo", 40), sample.suite("large", 300))
        sample.with_transcripts(document, root / "run.json")
        page = root / "run.html"
        write_html(document, page, source=root / "run.json")
        for width in (1280, 1920):
            browser = Browser(executable, root / f"profile-{width}", width=width, height=1000)
            try:
                browser.open(page.as_uri())
                browser.evaluate(SCENE, await_promise=True)
                shot = Path(args.out) / f"html-viewer-{width}.png"
                browser.screenshot(shot)
                print(f"wrote {shot}")
            finally:
                browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

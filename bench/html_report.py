"""Size and speed of the HTML run report for a large run (7,756 cases by default).

    python bench/html_report.py [--cases 7756] [--repeats 3]

The run report document is built by rule (tests/html/sample.py: three checks
per case, a tool-session receipt of one to four calls, about one case in five
failing or missing a check, labels by tier and world). Printed: the page's
size against the JSON report's, the median time to render it against the time
to write the same document as canonical JSON, and, when chromium is on PATH,
the median time headless Chromium takes from navigation to the load event
against the same for a 20-case page, and then the time from asking for the
large page's last case to its detail drawn (its compressed block inflated and
parsed first).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_agentbench.report.html import render_html
from pytest_agentbench.sdk.canonical import canonical_json
from tests.browser import Browser, find_chromium
from tests.html import sample

OPEN_LAST = """(async () => {
  const hash = 'case-s0-%d', panel = document.getElementById('s0-detail');
  const started = performance.now();
  location.hash = '#' + hash;
  while (panel.dataset.shown !== hash) { await new Promise((resolve) => setTimeout(resolve, 1)); }
  return performance.now() - started;
})()"""
"""Milliseconds from following a case's link to its detail drawn."""


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=7756)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    large = sample.report(sample.suite("large", args.cases))
    small = sample.report(sample.suite("small", 20))
    json_text = canonical_json(large)
    page = render_html(large)
    json_s = median_seconds(lambda: canonical_json(large), args.repeats)
    html_s = median_seconds(lambda: render_html(large), args.repeats)
    print(f"cases: {args.cases}")
    print(
        f"size: html {len(page.encode()) / 1e6:.2f} MB, json report "
        f"{len(json_text.encode()) / 1e6:.2f} MB, ratio {len(page) / len(json_text):.2f}"
    )
    print(
        f"render: html {html_s:.2f} s, canonical json {json_s:.2f} s, "
        f"ratio {html_s / json_s:.2f} (median of {args.repeats})"
    )
    executable = find_chromium()
    if executable is None:
        print("browser: chromium not on PATH, load time not measured")
        return 0
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "large.html").write_text(page, encoding="utf-8")
        (root / "small.html").write_text(render_html(small), encoding="utf-8")
        browser = Browser(executable, root / "profile")
        try:
            browser.open((root / "small.html").as_uri())  # warm-up
            loads: dict[str, list[float]] = {"large": [], "small": []}
            opens: list[float] = []
            for _ in range(args.repeats):
                for name in ("small", "large"):
                    load = browser.open((root / f"{name}.html").as_uri())
                    if load.console_errors or load.exceptions:
                        raise SystemExit(f"the {name} page logged errors: {load}")
                    loads[name].append(load.load_ms)
                opens.append(browser.evaluate(OPEN_LAST % (args.cases - 1), await_promise=True))
        finally:
            browser.close()
    large_ms, small_ms = statistics.median(loads["large"]), statistics.median(loads["small"])
    print(
        f"browser load (navigation to load event): {args.cases} cases {large_ms:.0f} ms, "
        f"20 cases {small_ms:.0f} ms, ratio {large_ms / small_ms:.2f} (median of {args.repeats})"
    )
    print(
        f"open the last case (first of its block): {statistics.median(opens):.0f} ms "
        f"(median of {args.repeats})"
    )
    return 0 if large_ms < 2000 else 1


if __name__ == "__main__":
    sys.exit(main())

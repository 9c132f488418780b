"""``agentbench review REPORT``: a page to label judged items, disagreements first.

It reads ``<report>.judgments.json`` (``agentbench judge``) and the labels file
beside the report, and either writes one self-contained HTML file (``--write``;
its Save button downloads the labels file) or serves the page on 127.0.0.1
only (``--serve``), where Save writes ``<report>.labels.json`` itself.

Keys: ``j``/``k`` or the arrows move between items, ``1``-``9`` give the
current item the n-th label of its scale, ``0`` clears it, ``s`` saves.
"""

from __future__ import annotations

import argparse
import html
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from pytest_agentbench.judging.documents import (
    JudgmentsDocument,
    LabelsDocument,
    judgments_path,
    labels_path,
    labels_template,
    merge_labels,
    read_judgments,
    read_labels,
)
from pytest_agentbench.sdk.canonical import JsonValue, loads_strict, pretty_json
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import write_file

LOOPBACK: Final = "127.0.0.1"
MAX_LABELS_BYTES: Final = 16 * 1024 * 1024


def review_data(report: Path) -> tuple[JudgmentsDocument, LabelsDocument]:
    """The judgments beside ``report`` and its labels (a fresh template if none yet)."""
    source = judgments_path(report)
    if not source.is_file():
        raise AgentbenchError(
            "no_judgments", "no judgments beside the report: run agentbench judge first",
            file=str(source),
        )  # fmt: skip
    document = read_judgments(source)
    labels = labels_path(report)
    earlier = read_labels(labels) if labels.is_file() else None
    return document, merge_labels(labels_template(document, source.name), earlier)


def page(document: JudgmentsDocument, labels: LabelsDocument, *, served: bool, name: str) -> str:
    """One self-contained page: data, style and script inline, no request but itself."""
    shown: dict[str, JsonValue] = {}
    for judged in document.items:
        judgment = judged.judgment
        entry = document.rubrics[judgment.rubric]
        shown[f"{judged.suite_id}/{judged.case_id}#{judgment.rubric}"] = {
            "content": judged.content,
            "question": entry.rubric.question,
            "anchors": {str(k): v for k, v in sorted(entry.rubric.anchors.items())},
            "verdicts": [v.model_dump(mode="json") for v in judgment.verdicts],
            "dropped": [d.model_dump(mode="json") for d in judgment.dropped],
        }
    data = {
        "labels": labels.model_dump(mode="json"),
        "shown": shown,
        "served": served,
        "name": name,
    }
    # ``<`` escaped so no text in the data can close the script element.
    embedded = json.dumps(data, sort_keys=True).replace("<", "\\u003c")
    return PAGE.replace("__TITLE__", html.escape(f"Review {document.report}")).replace(
        "__DATA__", embedded
    )


PAGE: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none';
 style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'">
<title>__TITLE__</title>
<style>
body{font:14px system-ui,sans-serif;margin:0;display:flex;height:100vh}
#list{width:34%;overflow:auto;border-right:1px solid #ccc;margin:0;padding:0;list-style:none}
#list li{padding:4px 8px;cursor:pointer;border-bottom:1px solid #eee}
#list li.current{background:#dbeafe}#list li.split{border-left:4px solid #d97706}
#list li .human{float:right;font-weight:bold}
#detail{flex:1;overflow:auto;padding:8px 16px}
pre{background:#f6f6f6;padding:8px;white-space:pre-wrap}
#status{position:fixed;bottom:0;right:0;background:#111;color:#fff;padding:4px 8px}
button.choice.chosen{background:#2563eb;color:#fff}
</style></head><body>
<ul id="list" role="listbox" aria-label="judged items"></ul>
<main id="detail" aria-live="polite"></main>
<div id="status">j/k move · 1-9 label · 0 clear · s save</div>
<script id="data" type="application/json">__DATA__</script>
<script>
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
const items = data.labels.items.slice().sort((a, b) =>
  (b.disagreement - a.disagreement) || (a.kind === b.kind ? 0 : a.kind === "rubric" ? -1 : 1)
  || (a.item < b.item ? -1 : a.item > b.item ? 1 : 0));
let current = 0;
let dirty = false;
const list = document.getElementById("list");
const detail = document.getElementById("detail");
const status = document.getElementById("status");
function text(tag, value, cls) {
  const node = document.createElement(tag);
  node.textContent = value;
  if (cls) node.className = cls;
  return node;
}
function drawList() {
  list.replaceChildren(...items.map((item, index) => {
    const row = text("li", item.item, (index === current ? "current " : "") +
      (item.disagreement > 0 ? "split" : ""));
    row.setAttribute("role", "option");
    row.dataset.item = item.item;
    const stale = item.human !== null && item.human_digest !== null &&
      item.human_digest !== item.digest;
    row.append(text("span", item.human === null ? "" : item.human + (stale ? " (stale)" : ""),
      "human"));
    row.addEventListener("click", () => { current = index; draw(); });
    return row;
  }));
}
function drawDetail() {
  const item = items[current];
  if (!item) { detail.replaceChildren(text("p", "Nothing to review.")); return; }
  const parts = [text("h1", item.item), text("p", item.kind + ": " + item.subject)];
  const shown = data.shown[item.item];
  if (shown) {
    parts.push(text("h2", "Rubric"), text("p", shown.question));
    const anchors = Object.entries(shown.anchors).map(([k, v]) => k + ": " + v);
    parts.push(text("pre", anchors.join("\\n")));
    parts.push(text("h2", "Seats"));
    for (const v of shown.verdicts) {
      const said = v.refused ? "no vote (refused: " + v.refused + ")"
        : v.score + (v.parsed ? "" : " (unparsable: midpoint)");
      parts.push(text("p", v.seat + ": " + said + " — " + v.reason, "verdict"));
    }
    for (const d of shown.dropped) parts.push(text("p", "dropped " + d.seat + ": " + d.reason));
    parts.push(text("h2", "Case"), text("pre", JSON.stringify(shown.content, null, 2)));
  } else {
    parts.push(text("pre", JSON.stringify(item.predictions, null, 2)));
  }
  parts.push(text("h2", "Your label"));
  item.categories.forEach((category, index) => {
    const button = text("button", (index + 1) + ": " + category,
      "choice" + (item.human === category ? " chosen" : ""));
    button.addEventListener("click", () => label(index));
    parts.push(button);
  });
  detail.replaceChildren(...parts);
}
function draw() { drawList(); drawDetail(); }
function label(index) {
  const item = items[current];
  if (!item) return;
  item.human = index === null ? null : (item.categories[index] ?? item.human);
  // The label is the person's verdict on the content shown now: bound to its digest.
  item.human_digest = item.human === null ? null : item.digest;
  dirty = true;
  draw();
}
function document_() {
  const byId = new Map(items.map((item) => [item.item, item]));
  const labels = structuredClone(data.labels);
  for (const item of labels.items) {
    item.human = byId.get(item.item).human;
    item.human_digest = byId.get(item.item).human_digest;
  }
  return labels;
}
async function save() {
  const body = JSON.stringify(document_(), null, 2) + "\\n";
  if (data.served) {
    const answer = await fetch("/labels", {method: "POST", body,
      headers: {"Content-Type": "application/json"}});
    status.textContent = answer.ok ? "saved" : "not saved: " + (await answer.text());
    if (answer.ok) dirty = false;
  } else {
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([body], {type: "application/json"}));
    link.download = data.name;
    link.click();
    status.textContent = "downloaded " + data.name;
    dirty = false;
  }
}
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const key = event.key;
  if (key === "j" || key === "ArrowDown") current = Math.min(current + 1, items.length - 1);
  else if (key === "k" || key === "ArrowUp") current = Math.max(current - 1, 0);
  else if (key >= "1" && key <= "9") { label(Number(key) - 1); return; }
  else if (key === "0") { label(null); return; }
  else if (key === "s") { save(); return; }
  else return;
  event.preventDefault();
  draw();
});
window.addEventListener("beforeunload", (event) => { if (dirty) event.preventDefault(); });
draw();
</script></body></html>
"""


def save_labels(report: Path, body: bytes) -> LabelsDocument:
    """Validate a posted labels document against the current template and write it."""
    _, template = review_data(report)
    try:
        posted = LabelsDocument.model_validate(loads_strict(body.decode("utf-8")))
    except (ValidationError, UnicodeDecodeError) as exc:
        raise AgentbenchError("invalid_labels", str(exc).splitlines()[0]) from None
    expected = {item.item: item for item in template.items}
    for item in posted.items:
        known = expected.get(item.item)
        if known is None:
            raise AgentbenchError("invalid_labels", "not a judged item", field=item.item)
        if item.human is not None and item.human not in known.categories:
            raise AgentbenchError(
                "invalid_labels", f"{item.human!r} is off the scale", field=item.item
            )
    merged = merge_labels(template, posted)
    write_file(labels_path(report), pretty_json(merged.model_dump(mode="json")))
    return merged


@contextmanager
def serving(report: Path, port: int = 0) -> Iterator[str]:
    """Serve the review page on 127.0.0.1; yields its URL; stops on exit."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/":
                self._send(404, "text/plain", b"not found")
                return
            document, labels = review_data(report)
            text = page(document, labels, served=True, name=labels_path(report).name)
            self._send(200, "text/html; charset=utf-8", text.encode("utf-8"))

        def do_POST(self) -> None:
            origin = self.headers.get("Origin")
            host = self.headers.get("Host", "")
            # Only this page may write: another site open in the browser may not.
            if self.path != "/labels" or (origin is not None and origin != f"http://{host}"):
                self._send(403, "text/plain", b"forbidden")
                return
            length = int(self.headers.get("Content-Length", "0"))
            if length > MAX_LABELS_BYTES:
                self._send(413, "text/plain", b"too large")
                return
            try:
                saved = save_labels(report, self.rfile.read(length))
            except AgentbenchError as exc:
                self._send(400, "text/plain", exc.render().encode("utf-8"))
                return
            labelled = sum(1 for item in saved.items if item.human is not None)
            self._send(200, "application/json", json.dumps({"labelled": labelled}).encode())

        def _send(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer((LOOPBACK, port), Handler)
    # Polled for shutdown every 50 ms, not serve_forever's default half-second: ending the
    # review then takes no noticeable wait.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://{LOOPBACK}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def cmd_review(args: argparse.Namespace, registry: Any) -> int:
    report = Path(args.report)
    if args.serve:
        with serving(report, args.port) as url:
            print(f"reviewing at {url} (Ctrl-C to stop)", flush=True)
            with suppress(KeyboardInterrupt):
                threading.Event().wait()
        return 0
    document, labels = review_data(report)
    output = Path(args.write) if args.write else report.with_name(report.stem + ".review.html")
    text = page(document, labels, served=False, name=labels_path(report).name)
    write_file(output, text)
    print(f"wrote {output}")
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser("review", help="label judged items by hand, disagreements first")
    parser.set_defaults(handler=cmd_review)
    parser.add_argument("report", help="a JSON run report that agentbench judge has judged")
    parser.add_argument(
        "--write", metavar="FILE", help="the HTML file (default REPORT.review.html)"
    )
    parser.add_argument("--serve", action="store_true", help="serve on 127.0.0.1 and save there")
    parser.add_argument("--port", type=int, default=0, help="with --serve (default: any free)")

"""``agentbench review REPORT``: a page to label judged items, blind by default.

It reads ``<report>.judgments.json`` (``agentbench judge``), the labels file
beside the report, and the report itself with its suites (for each case's task
and, for a classifier's item, the agent's answer), and either writes one
self-contained HTML file (``--write``; its Save button downloads the labels
file) or serves the page on 127.0.0.1 only (``--serve``), where each label is
written to ``<report>.labels.json`` as it is given.

Every item shows what a person needs to judge it: the case's task (its world's
public view), and what its judges read — for a rubric the judged document (the
world's judged view where the rubric names one), for a classifier the agent's
recorded answer and a transcript excerpt. The review is blind: the seats'
scores and reasons (a classifier's own label) are shown only once the item is
labelled, or after ``r`` (``--reveal`` starts revealed). Each label records
whether they were shown before it (``revealed_before_label``); served, the
seats are fetched from the server, which records that itself, so the page
cannot claim a blind label it did not give.

Blind, the items are listed by suite, case and rubric (classifiers after rubrics):
nothing the seats decided, so the order says nothing of where they split. Once
seats are revealed, ``d`` lists disagreements first; every label given after
that is recorded as revealed (served, the server sends the disagreements and
records it).

Keys: ``j``/``k`` or the arrows move, ``1``-``9`` (``0`` for the tenth point;
a scale of single digits by its own digits) label the current item and move
on, ``x`` clears, ``u`` undoes, ``r`` reveals, ``d`` (revealed) lists
disagreements first, ``f`` shows unlabelled items only, ``s`` saves (the
written page).
"""

from __future__ import annotations

import argparse
import html
import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel

from pytest_agentbench.judging.documents import (
    JudgmentsDocument,
    LabelItem,
    LabelsDocument,
    judgments_path,
    labels_path,
    labels_template,
    merge_labels,
    read_judgments,
    read_labels,
)
from pytest_agentbench.judging.report_judging import suite_folders
from pytest_agentbench.judging.views import load_folder_suite
from pytest_agentbench.report.json_report import read_report
from pytest_agentbench.sdk.canonical import JsonValue, loads_strict, pretty_json
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import write_file
from pytest_agentbench.sdk.layout import SUITE_FILE
from pytest_agentbench.sdk.registry import WorldRegistry, installed_registry

LOOPBACK: Final = "127.0.0.1"
MAX_LABEL_BYTES: Final = 64 * 1024
TRANSCRIPT_EXCERPT: Final = 4000
"""Characters of a case's transcript shown beside a classifier's item."""


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


def _jsonable(value: Any) -> JsonValue:
    """A world's public view as JSON (a model dumped, anything else through ``str``)."""
    if isinstance(value, BaseModel):
        dumped: JsonValue = value.model_dump(mode="json")
        return dumped
    loaded: JsonValue = json.loads(json.dumps(value, default=str, sort_keys=True))
    return loaded


class CaseViews:
    """What the report and its suites show of each case: its task, the recorded outcome.

    Read once per review. A case whose report or suite folder is not found has no
    task, and the page says why rather than showing nothing.
    """

    def __init__(self, report: Path, wanted: set[tuple[str, str]], registry: WorldRegistry):
        self.tasks: dict[tuple[str, str], JsonValue] = {}
        self.answers: dict[tuple[str, str], JsonValue] = {}
        self.missing: dict[str, str] = {}
        """Why a suite's tasks are not shown, by suite id."""
        if not report.is_file():
            self.missing[""] = f"the report {report} is not found"
            return
        run = read_report(str(report))
        folders = suite_folders(run, registry)
        for summary in run.suites:
            # Trial 1, as judged (a run of one trial has no trial number).
            cases = {
                entry.result.case_id: entry.result
                for entry in summary.cases
                if entry.result.trial in (None, 1)
            }
            for suite_id, case_id in wanted:
                result = cases.get(case_id) if suite_id == summary.id else None
                if result is None or result.recorded is None:
                    continue
                outcome = result.recorded.outcome
                transcript = outcome.transcript or ""
                self.answers[(suite_id, case_id)] = {
                    "output": outcome.output,
                    "failure": outcome.failure_reason,
                    "transcript_excerpt": transcript[:TRANSCRIPT_EXCERPT],
                    "transcript_chars": len(transcript),
                }
            self._tasks(summary.id, summary.world, folders.get(summary.id), wanted, registry)

    def _tasks(
        self,
        suite_id: str,
        kind: str,
        folder: Path | None,
        wanted: set[tuple[str, str]],
        registry: WorldRegistry,
    ) -> None:
        ids = {case for suite, case in wanted if suite == suite_id}
        if not ids:
            return
        if folder is None or not (folder / SUITE_FILE).is_file():
            self.missing[suite_id] = (
                f"suite {suite_id}'s folder is not found: review from the project folder "
                "that holds suites/<suite-id> to see its tasks"
            )
            return
        try:
            world = registry.get(kind, file=str(folder / SUITE_FILE))
            suite = load_folder_suite(world, folder)
            for case in world.cases(suite):
                if case.case_id in ids:
                    self.tasks[(suite_id, case.case_id)] = _jsonable(world.public_view(suite, case))
        except AgentbenchError as exc:
            self.missing[suite_id] = f"suite {suite_id}'s tasks could not be read: {exc.render()}"

    def task(self, suite_id: str, case_id: str) -> JsonValue:
        found = self.tasks.get((suite_id, case_id))
        if found is not None:
            return found
        why = self.missing.get(suite_id) or self.missing.get("")
        return {"not_shown": why or f"case {case_id} is not in suite {suite_id}'s folder"}


def _split(item: str) -> tuple[str, str]:
    """``suite/case#subject`` to (suite, case); suite ids hold no ``/``."""
    path = item.split("#", 1)[0]
    suite_id, _, case_id = path.partition("/")
    return suite_id, case_id


def review_views(
    document: JudgmentsDocument, report: Path, registry: WorldRegistry
) -> tuple[dict[str, JsonValue], dict[str, JsonValue]]:
    """(what a person needs to judge each item, what its raters said), by item id.

    The second is what blind review hides until the item is labelled or revealed.
    """
    wanted = {(judged.suite_id, judged.case_id) for judged in document.items}
    wanted |= {_split(classified.item) for classified in document.classifications}
    cases = CaseViews(report, wanted, registry)
    shown: dict[str, JsonValue] = {}
    seats: dict[str, JsonValue] = {}
    for judged in document.items:
        judgment = judged.judgment
        entry = document.rubrics[judgment.rubric]
        key = f"{judged.suite_id}/{judged.case_id}#{judgment.rubric}"
        content = judged.content
        shown[key] = {
            "task": cases.task(judged.suite_id, judged.case_id),
            # Exactly the document the seats read (the world's judged view, if any).
            "judged_title": "What the judges read" + (
                f" (the world's view {entry.rubric.view!r})" if entry.rubric.view else ""
            ),
            "judged": content.get("output") if isinstance(content, dict) else content,
            "question": entry.rubric.question,
            "anchors": {str(k): v for k, v in sorted(entry.rubric.anchors.items())},
        }  # fmt: skip
        seats[key] = {
            "verdicts": [v.model_dump(mode="json") for v in judgment.verdicts],
            "dropped": [d.model_dump(mode="json") for d in judgment.dropped],
            "predictions": {},
        }
    specs = {spec.name: spec for spec in document.classifiers}
    for classified in document.classifications:
        key = f"{classified.item}#{classified.classifier}"
        suite_id, case_id = _split(key)
        spec = specs[classified.classifier]
        shown[key] = {
            "task": cases.task(suite_id, case_id),
            "judged_title": "The agent's recorded answer (what the classifier labelled)",
            "judged": cases.answers.get((suite_id, case_id), {"not_shown": "no recorded output"}),
            "question": f"Which behaviour did the agent show? ({', '.join(spec.categories)})",
            "anchors": {},
        }
        seats[key] = {
            "verdicts": [],
            "dropped": [],
            "predictions": {classified.classifier: classified.label},
        }
    return shown, seats


def blind_items(labels: LabelsDocument) -> list[JsonValue]:
    """The label items without their raters' labels or where the raters split: what a
    served page may hold."""
    return [
        item.model_dump(mode="json", exclude={"predictions", "disagreement"}) | {"predictions": {}}
        for item in labels.items
    ]


def page(
    document: JudgmentsDocument,
    labels: LabelsDocument,
    *,
    served: bool,
    name: str,
    report: Path | None = None,
    registry: WorldRegistry | None = None,
    reveal: bool = False,
    views: tuple[Mapping[str, JsonValue], Mapping[str, JsonValue]] | None = None,
) -> str:
    """One self-contained page: data, style and script inline, no request but its server's.

    Served, the page holds no rater's label: it asks the server for an item's seats
    once the item is labelled or revealed. Written, it holds them (it has no server).
    """
    if views is None:
        views = review_views(
            document, report or Path(document.report), registry or installed_registry()
        )
    shown, seats = views
    data = {
        "items": blind_items(labels) if served else labels.model_dump(mode="json")["items"],
        "labels": {"scheme": labels.scheme, "judgments": labels.judgments},
        "shown": dict(shown),
        "seats": {} if served else dict(seats),
        "served": served,
        "reveal": reveal,
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
#side{width:34%;display:flex;flex-direction:column;border-right:1px solid #ccc}
#bar{padding:6px 8px;border-bottom:1px solid #ccc;background:#f8fafc}
#list{flex:1;overflow:auto;margin:0;padding:0;list-style:none}
#list li{padding:4px 8px;cursor:pointer;border-bottom:1px solid #eee}
#list li[aria-selected=true]{background:#dbeafe}
body.revealed #list li.split{border-left:4px solid #d97706}
#list li .human{float:right;font-weight:bold}#list li .stale{color:#b91c1c}
#detail{flex:1;overflow:auto;padding:8px 16px}
pre{background:#f6f6f6;padding:8px;white-space:pre-wrap;max-height:45vh;overflow:auto}
#seats{border:1px solid #ddd;padding:0 8px;margin:8px 0}#seats h2,#last h2{font-size:1em}
#status{position:fixed;bottom:0;right:0;background:#111;color:#fff;padding:4px 8px}
#blind{font-weight:bold}body.revealed #blind{color:#b91c1c}
#last{border:1px solid #ddd;background:#fffbeb;padding:4px 8px;margin:8px 0}
button.choice.chosen{background:#2563eb;color:#fff}
</style></head><body>
<div id="side">
<div id="bar"><span id="progress"></span> ·
<label><input type="checkbox" id="unlabelled"> unlabelled only (f)</label> ·
<span id="blind"></span></div>
<ul id="list" role="listbox" aria-label="judged items"></ul>
</div>
<main id="detail" aria-live="polite"></main>
<div id="status">j/k move · 1-9, 0 label · x clear · u undo · r reveal · d disagreements first
 (revealed) · f filter · s save</div>
<script id="data" type="application/json">__DATA__</script>
<script>
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
// Blind, items are listed by what the seats did not decide (suite, case, rubric before
// classifier, subject): listing disagreements first would tell the person which items the
// seats split on before any label. That order is offered (d) only once seats are revealed.
function place(item) {
  const hash = item.item.indexOf("#");
  const path = item.item.slice(0, hash);
  const slash = path.indexOf("/");
  return [path.slice(0, slash), path.slice(slash + 1), item.kind === "rubric" ? 0 : 1,
    item.item.slice(hash + 1)];
}
function compare(a, b) { return a < b ? -1 : a > b ? 1 : 0; }
const items = data.items.slice().sort((a, b) => {
  const pa = place(a), pb = place(b);
  return compare(pa[0], pb[0]) || compare(pa[1], pb[1]) || (pa[2] - pb[2])
    || compare(pa[3], pb[3]);
});
let order = items.map((item, index) => index);  // the list's order, by index in items
let splitFirst = false;
// Per item (by index in items): whether its seats were shown, and its row once drawn.
const seen = items.map(() => false);
const rows = new Array(items.length).fill(null);
const seatCache = new Map(Object.entries(data.seats));
const undo = [];
let shown = [];       // indices of the items in the list, in order
let cursor = 0;       // position in shown
let revealed = Boolean(data.reveal);
let onlyUnlabelled = false;
let dirty = false;
let pending = Promise.resolve();  // the labels posted, one after another
let last = null;      // index of the item labelled last
const list = document.getElementById("list");
const detail = document.getElementById("detail");
const status = document.getElementById("status");
const progress = document.getElementById("progress");
const filter = document.getElementById("unlabelled");
function text(tag, value, cls) {
  const node = document.createElement(tag);
  node.textContent = value;
  if (cls) node.className = cls;
  return node;
}
function stale(item) {
  return item.human !== null && (item.digest === null ||
    (item.human_digest !== null && item.human_digest !== item.digest));
}
function labelled(item) { return item.human !== null && !stale(item); }
function drawProgress() {
  const done = items.filter(labelled).length;
  const old = items.filter(stale).length;
  progress.textContent = done + " of " + items.length + " labelled" +
    (old ? " (" + old + " stale)" : "");
}
function drawBlind() {
  document.body.classList.toggle("revealed", revealed);
  document.getElementById("blind").textContent = revealed
    ? "seats revealed (r hides)" + (splitFirst ? "; disagreements first (d undoes)"
      : "; d lists disagreements first")
    : "blind: seats hidden until labelled (r reveals)";
}
function fillRow(row, index) {
  const item = items[index];
  const mark = row.lastChild;
  mark.textContent = item.human === null ? "" : item.human + (stale(item) ? " (stale)" : "");
  mark.className = "human" + (stale(item) ? " stale" : "");
  // Served blind, the page holds no disagreement to mark until it is asked for (d).
  row.classList.toggle("split", (item.disagreement || 0) > 0);
}
function makeRow(index) {
  const item = items[index];
  const row = text("li", item.item);
  row.setAttribute("role", "option");
  row.setAttribute("aria-selected", "false");
  row.tabIndex = -1;
  row.id = "item-" + index;
  row.dataset.item = item.item;
  row.append(text("span", "", "human"));
  fillRow(row, index);
  row.addEventListener("click", () => move(shown.indexOf(index)));
  return row;
}
function drawList() {
  // Drawn whole only on load and when the filter changes; a key touches single rows.
  shown = [];
  for (const index of order) if (!onlyUnlabelled || !labelled(items[index])) shown.push(index);
  for (const index of shown) if (rows[index] === null) rows[index] = makeRow(index);
  list.replaceChildren(...shown.map((index) => rows[index]));
  cursor = Math.max(0, Math.min(cursor, shown.length - 1));
  select(null, cursor);
}
function select(before, after) {
  const old = before === null ? null : rows[shown[before]];
  if (old) { old.setAttribute("aria-selected", "false"); old.tabIndex = -1; }
  const row = shown.length ? rows[shown[after]] : null;
  if (row) {
    row.setAttribute("aria-selected", "true");
    row.tabIndex = 0;
    list.setAttribute("aria-activedescendant", row.id);
    row.scrollIntoView({block: "nearest"});
    if (document.activeElement && document.activeElement.closest("#list")) {
      row.focus({preventScroll: true});
    }
  }
  drawDetail();
}
function reorder(byDisagreement) {
  // The cursor stays on its item; the list is drawn again in the new order.
  const current = shown[cursor];
  splitFirst = byDisagreement;
  order = items.map((item, index) => index);
  if (splitFirst) {
    order.sort((a, b) => ((items[b].disagreement || 0) - (items[a].disagreement || 0)) || a - b);
  }
  for (const index of order) if (rows[index]) fillRow(rows[index], index);
  drawList();
  const at = shown.indexOf(current);
  if (at >= 0) move(at);
  drawBlind();
}
async function disagreementsFirst() {
  if (splitFirst) { reorder(false); return; }
  if (!revealed) {
    status.textContent = "disagreements first shows the seats' verdicts: reveal them first (r)";
    return;
  }
  if (data.served) {
    // The server records every item as revealed: the order tells which ones split.
    const answer = await fetch("/disagreements");
    if (!answer.ok) { status.textContent = "not shown: " + (await answer.text()); return; }
    const spread = await answer.json();
    for (const item of items) item.disagreement = spread[item.item] || 0;
  }
  // Every label given from now on was given knowing where the seats split.
  seen.fill(true);
  reorder(true);
}
function move(position) {
  if (position < 0 || position >= shown.length || position === cursor) return;
  const before = cursor;
  cursor = position;
  select(before, cursor);
}
async function seatsOf(index) {
  const item = items[index];
  if (!seatCache.has(item.item)) {
    // After the labels already sent: the raters of an item just labelled blind are shown
    // at once, and asked for before its label arrived the server would record it revealed.
    await pending;
    const answer = await fetch("/seats?item=" + encodeURIComponent(item.item));
    if (!answer.ok) throw new Error(await answer.text());
    seatCache.set(item.item, await answer.json());
  }
  return seatCache.get(item.item);
}
function seatLines(seats) {
  const lines = [];
  for (const v of seats.verdicts) {
    const said = v.refused ? "no vote (refused: " + v.refused + ")"
      : v.failed ? "no vote (failed: " + v.failed + ")"
      : v.score + (v.parsed ? "" : " (unparsable: midpoint)");
    lines.push(text("p", v.seat + ": " + said + " — " + v.reason, "verdict"));
  }
  for (const d of seats.dropped) lines.push(text("p", "dropped " + d.seat + ": " + d.reason));
  for (const [rater, said] of Object.entries(seats.predictions)) {
    lines.push(text("p", rater + ": " + said, "verdict"));
  }
  return lines;
}
function showSeats(index, box, heading) {
  seen[index] = true;
  box.replaceChildren(text("h2", heading), text("p", "…"));
  seatsOf(index).then((seats) => box.replaceChildren(text("h2", heading), ...seatLines(seats)),
    (error) => box.replaceChildren(text("h2", heading), text("p", "not shown: " + error)));
}
function choiceKey(item, index) {
  const digits = item.categories.every((c) => /^[0-9]$/.test(c));
  if (digits) return item.categories[index];
  return index < 9 ? String(index + 1) : index === 9 ? "0" : "";
}
function categoryFor(item, key) {
  const digits = item.categories.every((c) => /^[0-9]$/.test(c));
  if (digits) return item.categories.indexOf(key);
  const index = key === "0" ? 9 : Number(key) - 1;
  return index < item.categories.length ? index : -1;
}
function drawDetail() {
  const index = shown[cursor];
  const item = items[index];
  const parts = [];
  if (last !== null && last !== index) {
    const box = document.createElement("section");
    box.id = "last";
    parts.push(box);
    showSeats(last, box, "You labelled " + items[last].item + " " + items[last].human +
      "; its raters said:");
  }
  if (item === undefined) {
    parts.push(text("p", "Nothing to review."));
    detail.replaceChildren(...parts);
    return;
  }
  parts.push(text("h1", item.item), text("p", item.kind + ": " + item.subject));
  const shownItem = data.shown[item.item];
  if (shownItem) {
    parts.push(text("p", shownItem.question, "question"));
    const anchors = Object.entries(shownItem.anchors).map(([k, v]) => k + ": " + v);
    if (anchors.length) parts.push(text("pre", anchors.join("\\n"), "anchors"));
  }
  const choices = document.createElement("p");
  choices.append(text("strong", "Your label: "));
  item.categories.forEach((category, at) => {
    const button = text("button", choiceKey(item, at) + ": " + category,
      "choice" + (item.human === category ? " chosen" : ""));
    button.addEventListener("click", () => label(at));
    choices.append(button);
  });
  parts.push(choices);
  if (stale(item)) parts.push(text("p", "Your earlier label " + item.human +
    " is stale: the content or rubric changed since. Label it again.", "stale"));
  const box = document.createElement("section");
  box.id = "seats";
  // A stale label was given to other content: the item is as unlabelled, and blind.
  if (revealed || labelled(item)) {
    showSeats(index, box, "Seats" + (labelled(item) ? "" : " (revealed before your label)"));
  } else {
    box.append(text("p", "Seats hidden until you label this item (r reveals them).", "hidden"));
  }
  parts.push(box);
  if (shownItem) {
    parts.push(text("h2", "Task"), text("pre", JSON.stringify(shownItem.task, null, 2), "task"));
    parts.push(text("h2", shownItem.judged_title),
      text("pre", JSON.stringify(shownItem.judged, null, 2), "judged"));
  }
  detail.replaceChildren(...parts);
}
function post(item, path) {
  // Sent one after another, in the order given: the file ends as the last key left it.
  // An undo is the server's: it puts back what it wrote (a stale label stays stale).
  const body = JSON.stringify(path === "/undo" ? {item: item.item}
    : {item: item.item, human: item.human, digest: item.digest});
  document.body.dataset.pending = Number(document.body.dataset.pending || 0) + 1;
  pending = pending.then(async () => {
    const answer = await fetch(path, {method: "POST", body,
      headers: {"Content-Type": "application/json"}});
    if (!answer.ok) { status.textContent = "not saved: " + (await answer.text()); return; }
    const saved = await answer.json();
    item.revealed_before_label = saved.revealed_before_label;
    status.textContent = "saved (" + saved.labelled + " labelled)";
  }).catch((error) => { status.textContent = "not saved: " + error; })
    .finally(() => { document.body.dataset.pending -= 1; });
}
function setLabel(index, human, digest, revealedBefore, path) {
  const item = items[index];
  item.human = human;
  item.human_digest = digest;
  item.revealed_before_label = revealedBefore;
  if (rows[index]) fillRow(rows[index], index);
  drawProgress();
  if (data.served) post(item, path); else dirty = true;
}
function label(at) {
  const index = shown[cursor];
  const item = items[index];
  if (item === undefined) return;
  const human = at === null ? null : item.categories[at];
  undo.push([index, item.human, item.human_digest, item.revealed_before_label]);
  // The label is the person's verdict on the content shown now: bound to its digest, and
  // recorded as given blind or not (the server records it itself when it serves the seats).
  setLabel(index, human, human === null ? null : item.digest,
    human === null ? null : seen[index], "/label");
  if (human === null) { drawDetail(); return; }
  last = index;
  next(index);
}
function next(index) {
  // One key per label: the cursor moves on; under the filter the labelled row leaves.
  if (onlyUnlabelled && labelled(items[index])) {
    const at = shown.indexOf(index);
    rows[index].remove();
    shown.splice(at, 1);
    cursor = Math.min(at, shown.length - 1);
    select(null, cursor);
  } else if (cursor < shown.length - 1) move(cursor + 1);
  else drawDetail();
}
function undoLast() {
  const step = undo.pop();
  if (!step) return;
  const [index, human, digest, revealedBefore] = step;
  setLabel(index, human, digest, revealedBefore, "/undo");
  if (last === index) last = null;
  if (!shown.includes(index)) { drawList(); }
  const at = shown.indexOf(index);
  if (at >= 0 && at !== cursor) move(at); else drawDetail();
}
function save() {
  if (data.served) { status.textContent = "every label is saved as it is given"; return; }
  const labels = Object.assign({}, data.labels, {items: data.items.map((item) => item)});
  const body = JSON.stringify(labels, null, 2) + "\\n";
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([body], {type: "application/json"}));
  link.download = data.name;
  link.click();
  status.textContent = "downloaded " + data.name;
  dirty = false;
}
filter.addEventListener("change", () => { onlyUnlabelled = filter.checked; drawList(); });
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const key = event.key;
  const item = items[shown[cursor]];
  if (key === "j" || key === "ArrowDown") move(cursor + 1);
  else if (key === "k" || key === "ArrowUp") move(cursor - 1);
  else if (key >= "0" && key <= "9") {
    const at = item ? categoryFor(item, key) : -1;
    if (at >= 0) label(at);
  }
  else if (key === "x" || key === "Delete") label(null);
  else if (key === "u") undoLast();
  else if (key === "r") {
    revealed = !revealed;
    // Hidden again, the list goes back to the order the seats did not decide.
    if (!revealed && splitFirst) reorder(false); else { drawBlind(); drawDetail(); }
  }
  else if (key === "d") disagreementsFirst();
  else if (key === "f") { filter.checked = !filter.checked; onlyUnlabelled = filter.checked;
    drawList(); }
  else if (key === "s") save();
  else return;
  event.preventDefault();
});
window.addEventListener("beforeunload", (event) => { if (dirty) event.preventDefault(); });
drawBlind();
drawProgress();
drawList();
</script></body></html>
"""


def _posted(body: bytes, keys: tuple[str, ...]) -> dict[str, Any]:
    """A posted JSON object with exactly ``keys``; anything else is ``invalid_labels``."""
    try:
        posted = loads_strict(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise AgentbenchError("invalid_labels", f"not JSON: {exc}") from None
    if not isinstance(posted, dict) or set(posted) != set(keys):
        raise AgentbenchError("invalid_labels", "expected {" + ", ".join(keys) + "}")
    return posted


class ReviewState:
    """What a served review holds: the judgments, the labels so far, the items revealed.

    An item is revealed once its seats were sent to the page; a label given to a
    revealed item is recorded ``revealed_before_label: true`` whatever the page says.
    """

    def __init__(self, report: Path, registry: WorldRegistry) -> None:
        self.report = report
        self.document, self.labels = review_data(report)
        self.views = review_views(self.document, report, registry)
        self.revealed: set[str] = set()
        self.history: dict[str, list[LabelItem]] = {}
        """Each item's entries before this review's labels, for ``u`` (undo)."""
        self.lock = threading.Lock()

    def seats(self, item: str) -> JsonValue:
        found = self.views[1].get(item)
        if found is None:
            raise AgentbenchError("invalid_labels", "not a judged item", field=item)
        with self.lock:
            self.revealed.add(item)
        return found

    def disagreements(self) -> dict[str, int]:
        """Every item's disagreement, for listing them disagreements first: it tells
        where the seats split, so every item counts as revealed from then on."""
        with self.lock:
            self.revealed.update(entry.item for entry in self.labels.items)
            return {entry.item: entry.disagreement for entry in self.labels.items}

    def label(self, body: bytes) -> tuple[int, bool]:
        """Give one item its label (``human`` ``null`` clears it); returns (labelled, revealed)."""
        posted = _posted(body, ("item", "human", "digest"))
        item, human, digest = posted["item"], posted["human"], posted["digest"]
        with self.lock:
            known = {entry.item: entry for entry in self.labels.items}
            current = known.get(item) if isinstance(item, str) else None
            if current is None:
                raise AgentbenchError("invalid_labels", "not a judged item", field=str(item))
            if human is not None and human not in current.categories:
                raise AgentbenchError("invalid_labels", f"{human!r} is off the scale", field=item)
            if digest != current.digest:
                raise AgentbenchError(
                    "invalid_labels",
                    "the page shows other content than was judged: reload it",
                    field=item,
                )
            revealed = item in self.revealed
            self.history.setdefault(item, []).append(current)
            self._write(
                current.model_copy(
                    update={
                        "human": human,
                        "human_digest": None if human is None else digest,
                        "revealed_before_label": None if human is None else revealed,
                    }
                )
            )
            return self._labelled(), revealed

    def undo(self, body: bytes) -> tuple[int, bool | None]:
        """Put an item back as it was before this review's last label on it (a stale
        label stays stale); returns (labelled, its ``revealed_before_label``)."""
        posted = _posted(body, ("item",))
        item = str(posted["item"])
        with self.lock:
            earlier = self.history.get(item)
            if not earlier:
                raise AgentbenchError(
                    "invalid_labels", "no label of this review to undo", field=item
                )
            restored = earlier.pop()
            self._write(restored)
            return self._labelled(), restored.revealed_before_label

    def _write(self, updated: LabelItem) -> None:
        self.labels = self.labels.model_copy(
            update={
                "items": tuple(
                    updated if entry.item == updated.item else entry for entry in self.labels.items
                )
            }
        )
        write_file(labels_path(self.report), pretty_json(self.labels.model_dump(mode="json")))

    def _labelled(self) -> int:
        return sum(1 for entry in self.labels.items if entry.counted is not None)

    def page(self, reveal: bool) -> str:
        with self.lock:
            labels = self.labels
        return page(
            self.document,
            labels,
            served=True,
            name=labels_path(self.report).name,
            reveal=reveal,
            views=self.views,
        )


def check_request(host: str | None, origin: str | None, bound: str, *, post: bool) -> None:
    """Refuse a request not addressed to this server by name (DNS rebinding: another
    site's name resolved to 127.0.0.1), and a write not from this server's own page."""
    if host != bound:
        raise AgentbenchError(
            "review_host_refused",
            f"Host {host!r} is not {bound!r}, the loopback address this review is served on",
            field="Host",
        )
    if post and origin != f"http://{bound}":
        raise AgentbenchError(
            "review_origin_refused",
            f"Origin {origin!r} is not this review's own page (http://{bound})",
            field="Origin",
        )


@contextmanager
def serving(
    report: Path,
    port: int = 0,
    *,
    reveal: bool = False,
    registry: WorldRegistry | None = None,
) -> Iterator[str]:
    """Serve the review page on 127.0.0.1; yields its URL; stops on exit."""
    state = ReviewState(report, registry or installed_registry())
    bound: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _checked(self, *, post: bool) -> bool:
            try:
                check_request(
                    self.headers.get("Host"), self.headers.get("Origin"), bound[0], post=post
                )
            except AgentbenchError as exc:
                self._send(403, "text/plain", exc.render().encode("utf-8"))
                return False
            return True

        def do_GET(self) -> None:
            if not self._checked(post=False):
                return
            url = urlsplit(self.path)
            if url.path == "/":
                body = state.page(reveal).encode("utf-8")
                self._send(200, "text/html; charset=utf-8", body)
            elif url.path == "/seats":
                item = parse_qs(url.query).get("item", [""])[0]
                try:
                    seats = state.seats(item)
                except AgentbenchError as exc:
                    self._send(404, "text/plain", exc.render().encode("utf-8"))
                    return
                self._send(200, "application/json", json.dumps(seats).encode("utf-8"))
            elif url.path == "/disagreements":
                spread = json.dumps(state.disagreements()).encode("utf-8")
                self._send(200, "application/json", spread)
            else:
                self._send(404, "text/plain", b"not found")

        def do_POST(self) -> None:
            if not self._checked(post=True):
                return
            if self.path not in ("/label", "/undo"):
                self._send(404, "text/plain", b"not found")
                return
            length = int(self.headers.get("Content-Length", "0"))
            if length > MAX_LABEL_BYTES:
                self._send(413, "text/plain", b"too large")
                return
            act = state.label if self.path == "/label" else state.undo
            try:
                labelled, revealed = act(self.rfile.read(length))
            except AgentbenchError as exc:
                self._send(400, "text/plain", exc.render().encode("utf-8"))
                return
            answer = {"labelled": labelled, "revealed_before_label": revealed}
            self._send(200, "application/json", json.dumps(answer).encode("utf-8"))

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
    bound.append(f"{LOOPBACK}:{server.server_address[1]}")
    # Polled for shutdown every 50 ms, not serve_forever's default half-second: ending the
    # review then takes no noticeable wait.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://{bound[0]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def cmd_review(args: argparse.Namespace, registry: Any) -> int:
    report = Path(args.report)
    if args.serve:
        with serving(report, args.port, reveal=args.reveal, registry=registry) as url:
            print(f"reviewing at {url} (Ctrl-C to stop)", flush=True)
            with suppress(KeyboardInterrupt):
                threading.Event().wait()
        return 0
    document, labels = review_data(report)
    output = Path(args.write) if args.write else report.with_name(report.stem + ".review.html")
    text = page(
        document,
        labels,
        served=False,
        name=labels_path(report).name,
        report=report,
        registry=registry,
        reveal=args.reveal,
    )
    write_file(output, text)
    print(f"wrote {output}")
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser("review", help="label judged items by hand, blind")
    parser.set_defaults(handler=cmd_review)
    parser.add_argument("report", help="a JSON run report that agentbench judge has judged")
    parser.add_argument(
        "--write", metavar="FILE", help="the HTML file (default REPORT.review.html)"
    )
    parser.add_argument("--serve", action="store_true", help="serve on 127.0.0.1 and save there")
    parser.add_argument("--port", type=int, default=0, help="with --serve (default: any free)")
    parser.add_argument(
        "--reveal",
        action="store_true",
        help="start with the seats' scores and reasons shown (recorded with each label)",
    )

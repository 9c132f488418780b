"""The report's inline style sheet and script: no fonts, images or code from elsewhere."""

from __future__ import annotations

CSS = """
:root{--fg:#1b1f23;--muted:#57606a;--line:#d0d7de;--bg:#fff;--pass:#1a7f37;--fail:#cf222e;
--missing:#9a6700;--none:#8c959f;--accent:#0550ae;--panel:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);
background:var(--bg)}
header.run,main{max-width:1180px;margin:0 auto;padding:12px 20px}
header.run{border-bottom:1px solid var(--line)}
h1{font-size:22px;margin:8px 0}h2{font-size:19px;margin:28px 0 8px;
border-bottom:2px solid var(--line);padding-bottom:4px}h3{font-size:16px;margin:20px 0 6px}
h4{font-size:14px;margin:12px 0 4px}
a{color:var(--accent)}a:focus,summary:focus,.case-detail:focus{outline:3px solid #fb8500;
outline-offset:1px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--panel);padding:6px;margin:2px 0}
table{border-collapse:collapse;margin:6px 0}
th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;vertical-align:top}
thead th{background:var(--panel)}td.num{text-align:right;font-variant-numeric:tabular-nums}
.figure{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.figure table{font-size:13px}
svg.plot{font-size:11px;overflow:visible}svg .tick{fill:var(--muted)}
svg .grid{stroke:#eaeef2}svg .zero{stroke:var(--fg);stroke-dasharray:4 3}
svg .row-label{fill:var(--fg)}svg .mark-value{fill:var(--accent)}
svg .mark-interval line{stroke:var(--accent);stroke-width:1.5}
svg .mark-gate{stroke-width:3}svg .gate-pass{stroke:var(--pass)}
svg .gate-fail{stroke:var(--fail);stroke-dasharray:3 2}
svg .mark-null{fill:var(--muted);font-style:italic}
svg .forest .not-significant,svg path.not-significant{fill:#fff;stroke:var(--accent);
stroke-width:1.5}
svg .mark-segment text{fill:#fff;font-weight:600}
svg .seg-passed rect{fill:var(--pass)}svg .seg-failed rect{fill:var(--fail)}
svg .seg-error rect{fill:#8250df}svg .seg-skipped rect{fill:var(--none)}
svg .seg-excluded rect{fill:#bf8700}
svg .seg-other rect{fill:var(--missing)}
.st-pass{color:var(--pass)}.st-fail{color:var(--fail);font-weight:700}
.st-missing{color:var(--missing);font-weight:700}.st-none{color:var(--none)}
table.grid td{text-align:center;padding:1px 5px}table.grid td a{text-decoration:none;
display:block;color:inherit}table.grid th a{text-decoration:none}
table.grid td.st-fail,table.grid td.agg-fail{background:#ffebe9}
table.grid td.st-missing{background:#fff8c5}
td.outcome{font-size:12px}.oc-failed,.oc-error{color:var(--fail);font-weight:600}
.verdict-pass{color:var(--pass);font-weight:600}.verdict-neutral{color:var(--muted)}.verdict-fail{color:var(--fail);font-weight:700}
section.judged .judge-uncalibrated{color:var(--muted);font-style:italic}
details.group{margin:6px 0;border:1px solid var(--line);padding:4px 8px}
details.group>summary{cursor:pointer;font-weight:600}
.case-detail{border:1px solid var(--line);background:var(--panel);padding:8px 12px;margin:10px 0}
.case-detail table{background:var(--bg)}.case-detail tr.focus{outline:3px solid #fb8500}
.legend span{margin-right:12px}.hint,.empty{color:var(--muted)}
.problems li,.partial,.detail-error{color:var(--fail)}
.scroll{overflow-x:auto;max-width:100%}
nav.toc a{margin-right:14px}
"""

SCRIPT = r"""
(function () {
  "use strict";
  // Case details travel as blocks of raw-deflated JSON in base64; a block is
  // inflated and parsed the first time one of its cases is opened, then kept.
  var blocks = {};
  function inflate(text) {
    if (typeof DecompressionStream === "undefined") {
      return Promise.reject(new Error("this browser has no DecompressionStream"));
    }
    var raw = atob(text), bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) { bytes[i] = raw.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    return new Response(stream).text();
  }
  function caseDetail(sid, index) {
    var found = null;
    document.querySelectorAll('script[id^="cases-' + sid + '-c"]').forEach(function (block) {
      var first = Number(block.dataset.first);
      if (index >= first && index < first + Number(block.dataset.count)) { found = block; }
    });
    if (!found) { return Promise.resolve(undefined); }
    var block = found, offset = index - Number(found.dataset.first);
    if (!(block.id in blocks)) { blocks[block.id] = inflate(block.textContent).then(JSON.parse); }
    return blocks[block.id].then(function (list) { return list[offset]; });
  }
  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (cls) { node.className = cls; }
    return node;
  }
  function table(headers, rows, focusRow) {
    var t = el("table"), head = el("thead"), tr = el("tr"), body = el("tbody");
    headers.forEach(function (h) { var th = el("th", h); th.scope = "col"; tr.appendChild(th); });
    head.appendChild(tr); t.appendChild(head);
    rows.forEach(function (row, i) {
      var r = el("tr");
      if (i === focusRow) { r.className = "focus"; }
      row.forEach(function (cell) {
        var td = el("td");
        var boxed = cell !== null && typeof cell === "object";
        if (boxed && "pre" in cell) {
          td.appendChild(el("pre", cell.pre));
        } else if (boxed) {
          td.appendChild(el("span", cell.label, "st-" + cell.status));
        } else {
          td.textContent = cell === null || cell === undefined ? "" : String(cell);
        }
        r.appendChild(td);
      });
      body.appendChild(r);
    });
    t.appendChild(body);
    return t;
  }
  var MEANING = {pass: "✓ pass", fail: "✗ fail", missing: "? not graded"};
  function fill(panel, c, column) {
    panel.textContent = "";
    panel.appendChild(el("h4", "Case " + c.id));
    var facts = el("dl", null, "facts");
    [["node id", c.nodeid], ["outcome", c.outcome], ["failure class", c.failure_class || "none"],
     ["failure reason", c.failure_reason || "none"], ["labels", c.labels.join(", ") || "none"],
     ["findings", c.findings.join(", ") || "none"]].forEach(function (kv) {
      facts.appendChild(el("dt", kv[0])); facts.appendChild(el("dd", kv[1]));
    });
    if (c.artifact) {
      facts.appendChild(el("dt", "episode artefact"));
      facts.appendChild(el("dd", c.artifact.file + " sha256:" + c.artifact.digest));
    }
    panel.appendChild(facts);
    if (c.failure_traceback) {
      panel.appendChild(el("h4", "What the adapter raised"));
      panel.appendChild(el("pre", c.failure_traceback, "adapter-traceback"));
    }
    var focusName = column === null ? null : c.columns[column];
    var focusRow = -1;
    var rows = c.checks.map(function (k, i) {
      if (k.name === focusName) { focusRow = i; }
      return [k.name, {status: k.status, label: MEANING[k.status] || k.status},
              {pre: k.expected}, {pre: k.actual}, k.detail];
    });
    panel.appendChild(el("h4", "Checks: expected and actual"));
    if (rows.length) {
      panel.appendChild(table(["check", "status", "expected", "actual", "detail"], rows, focusRow));
    } else { panel.appendChild(el("p", "This case reported no checks.", "empty")); }
    if (focusName !== null && focusRow < 0) {
      panel.appendChild(el("p", "Check " + focusName + " was not graded on this case.", "hint"));
    }
    if (c.output) {
      var from = c.output.adapter ? " (" + c.output.adapter + ")" : "";
      panel.appendChild(el("h4", "Adapter output" + from));
      panel.appendChild(el("pre", c.output.json, "adapter-output"));
    }
    if (c.receipt) {
      var r = c.receipt;
      panel.appendChild(el("h4", "Tool-session receipt (" + r.calls.length + " calls)"));
      var rf = el("dl", null, "facts");
      [["digest", r.digest], ["budget", r.budget], ["totals", r.totals],
       ["failure code", r.failure || "none"]].forEach(function (kv) {
        rf.appendChild(el("dt", kv[0])); rf.appendChild(el("dd", kv[1]));
      });
      panel.appendChild(rf);
      if (r.calls.length) {
        panel.appendChild(table(["#", "tool", "arguments", "result or error", "bytes", "delivered"],
          r.calls.map(function (k) {
            return [k.index, k.tool, {pre: k.arguments},
                    k.error ? {status: "fail", label: "✗ " + k.outcome} : {pre: k.outcome},
                    k.bytes, k.delivered ? "yes" : "no"];
          }), -1));
      }
      panel.appendChild(el("h4", "Final answer"));
      panel.appendChild(el("pre", r.final));
    }
  }
  function openAround(node) {
    for (var p = node; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") { p.open = true; }
    }
  }
  var latest = 0;
  function route() {
    var ticket = ++latest;  // a later navigation wins over a detail still inflating
    var hash = decodeURIComponent(location.hash.slice(1));
    var m = /^case-(s\d+)-(\d+)(?:-k(\d+))?$/.exec(hash);
    if (!m) {
      var target = hash && document.getElementById(hash);
      if (target) { openAround(target); target.scrollIntoView(); }
      return;
    }
    var panel = document.getElementById(m[1] + "-detail");
    if (!panel) { return; }
    var row = document.querySelector('a[href="#case-' + m[1] + "-" + m[2] + '"]');
    if (row) { openAround(row); }
    caseDetail(m[1], Number(m[2])).then(function (c) {
      if (ticket !== latest || !c) { return; }
      fill(panel, c, m[3] === undefined ? null : Number(m[3]));
      panel.dataset.shown = hash;
      panel.focus();
      panel.scrollIntoView();
    }, function (error) {
      if (ticket !== latest) { return; }
      panel.textContent = "";
      var why = "The detail of this case could not be read: " + error;
      panel.appendChild(el("p", why, "detail-error"));
    });
  }
  window.addEventListener("hashchange", route);
  route();
  var MOVES = {ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0]};
  document.addEventListener("keydown", function (event) {
    var move = MOVES[event.key];
    var link = event.target;
    if (!move || !link || link.tagName !== "A") { return; }
    var cell = link.parentElement, grid = link.closest("table[role=grid]");
    if (!grid || !cell) { return; }
    var row = cell.parentElement, rows = Array.prototype.slice.call(grid.tBodies[0].rows);
    var r = rows.indexOf(row), c = cell.cellIndex;
    // Step over cells without a link (the outcome column) in the same direction.
    for (;;) {
      r += move[0];
      c += move[1];
      if (r < 0 || r >= rows.length || c < 0 || c >= rows[r].cells.length) { return; }
      var next = rows[r].cells[c].querySelector("a");
      if (next) { event.preventDefault(); next.focus(); return; }
    }
  });
})();
"""

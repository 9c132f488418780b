"""The report's inline style sheet and script: no fonts, images or code from elsewhere."""

from __future__ import annotations

CSS = """
:root{--fg:#1b1f23;--muted:#57606a;--line:#d0d7de;--bg:#fff;--pass:#1a7f37;--fail:#cf222e;
--missing:#9a6700;--none:#8c959f;--accent:#0550ae;--panel:#f6f8fa;--focus:#9a3412}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);
background:var(--bg)}
header.run,main{max-width:1600px;margin:0 auto;padding:12px 20px}
header.run{border-bottom:1px solid var(--line)}
h1{font-size:22px;margin:8px 0}h2{font-size:19px;margin:28px 0 8px;
border-bottom:2px solid var(--line);padding-bottom:4px}h3{font-size:16px;margin:20px 0 6px}
h4{font-size:14px;margin:12px 0 4px}
a{color:var(--accent)}
:focus-visible,.case-detail:focus{outline:3px solid var(--focus);outline-offset:1px}
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
.case-detail,section,details.group,h2,h3{scroll-margin-top:64px}
.case-detail table{background:var(--bg)}.case-detail tr.focus{outline:3px solid var(--focus)}
.legend span{margin-right:12px}.hint,.empty{color:var(--muted)}
.problems li,.partial,.detail-error{color:var(--fail)}
.scroll{overflow-x:auto;max-width:100%}
nav.toc ul{list-style:none;margin:6px 0;padding:0;display:flex;flex-wrap:wrap;gap:4px 22px}
nav.toc .counts{font-size:12px;color:var(--muted)}
nav.toc .oc-failed,nav.toc .oc-error{color:var(--fail)}nav.toc .oc-passed{color:var(--pass)}
form.filters{position:sticky;top:0;z-index:2;background:var(--bg);
border-bottom:1px solid var(--line);max-width:1600px;margin:0 auto;padding:8px 20px;
display:flex;flex-wrap:wrap;gap:6px 10px;align-items:center}
form.filters label{color:var(--muted)}form.filters input{width:22em;max-width:100%}
form.filters select,form.filters input,form.filters button{font:inherit;padding:2px 4px}
form.filters output{font-weight:600}
table.grid th.check{vertical-align:bottom;padding:3px 1px;max-width:24px}
table.grid th.check span{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;
display:inline-block;max-height:16em;overflow:hidden;text-overflow:ellipsis;font-weight:500;
font-size:12px}
table.grid th[scope=row]{max-width:22em;overflow-wrap:anywhere;text-align:left}
table.grid td.agg span{display:block;white-space:nowrap;font-size:11px}
details.group>summary .shown{font-weight:400;color:var(--muted)}
.transcript{display:flex;flex-direction:column;gap:6px;margin:6px 0;max-width:100%}
.msg{border:1px solid var(--line);border-left:5px solid var(--none);background:var(--bg);
padding:4px 8px;max-width:100%}
.msg .who{font-size:12px;font-weight:700;color:var(--muted);text-transform:none}
.msg-user{border-left-color:var(--accent)}.msg-system{border-left-color:var(--muted)}
.msg-assistant{border-left-color:#8250df;margin-left:24px}
.msg-tool{border-left-color:var(--missing);margin-left:48px}
.msg-final{border-left-color:var(--pass)}.msg-refused{border-left-color:var(--fail)}
details.fold>summary,details.long>summary{cursor:pointer}
details.fold>summary{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.msg h5{margin:4px 0 0;font-size:12px;color:var(--muted)}
.side-by-side{table-layout:fixed;width:100%}
.side-by-side th,.side-by-side td{overflow-wrap:anywhere}
.side-by-side pre{max-height:12em;overflow:auto}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:10px}.pair>div{min-width:0}
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
    // What the agent said comes before what it left behind (output, receipt).
    if (c.transcript) {
      panel.appendChild(el("h4", "Transcript (" + c.transcript.length + " events)"));
      panel.appendChild(conversation(c.transcript));
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
    if (c.compared) { panel.appendChild(compared(c)); }
  }
  // A transcript drawn as a conversation: what the model was sent and said, the tool
  // calls folded, long texts collapsed behind their first line.
  var LONG = 400;
  function shownText(t) {
    if (t === null || t === undefined) { return ""; }
    if (typeof t !== "object") { return String(t); }
    var more = t.chars ? " … (" + t.chars + " characters in all, sha256 " + t.sha256 + ")" : "";
    return String(t.text) + more;
  }
  function textBlock(text) {
    if (text.length <= LONG) { return el("pre", text); }
    var d = el("details", null, "long");
    d.appendChild(el("summary", text.slice(0, 160).replace(/\s+/g, " ") + " … (" +
      text.length + " characters: show all)"));
    d.appendChild(el("pre", text));
    return d;
  }
  function folded(summary, parts, cls) {
    var d = el("details", null, "fold" + (cls ? " " + cls : ""));
    d.appendChild(el("summary", summary));
    parts.forEach(function (p) { d.appendChild(p); });
    return d;
  }
  function bubble(cls, who) {
    var b = el("div", null, "msg " + cls);
    b.appendChild(el("div", who, "who"));
    return b;
  }
  function askedTool(call) {
    if (call.body) { return folded("tool call (unreadable)", [textBlock(shownText(call.body))]); }
    return folded("asks for tool " + call.name + " (" + call.id + ")",
      [el("h5", "arguments"), textBlock(shownText(call.arguments))], "asked");
  }
  var READ = {accepted: "accepted as the final answer", refused: "refused",
              not_read: "not read (a tool handler failed first)"};
  function conversation(events) {
    var box = el("div", null, "transcript");
    events.forEach(function (e) {
      var b;
      if (e.event === "model_request") {
        (e.messages || []).forEach(function (m) {
          if (m.body) {
            box.appendChild(folded("message", [textBlock(shownText(m.body))], "msg"));
            return;
          }
          var role = String(m.role || "message");
          if (role === "tool") {
            box.appendChild(folded("tool result sent to the model" +
              (m.tool_call_id ? " (" + m.tool_call_id + ")" : ""),
              [textBlock(shownText(m.content))], "msg msg-tool"));
            return;
          }
          var who = {system: "system prompt", user: "user",
                     assistant: "assistant (earlier turn)"}[role] || role;
          b = bubble("msg-" + role, who);
          if (m.content) { b.appendChild(textBlock(shownText(m.content))); }
          (m.tool_calls || []).forEach(function (call) { b.appendChild(askedTool(call)); });
          box.appendChild(b);
        });
      } else if (e.event === "model_response") {
        var who = "model";
        if (e.finish_reason) { who += ", stopped: " + e.finish_reason; }
        if (e.usage) { who += ", " + e.usage.input + " tokens in, " + e.usage.output + " out"; }
        b = bubble("msg-assistant", who);
        if (e.error) { b.appendChild(el("p", "no answer: " + e.error, "detail-error")); }
        if (e.body) { b.appendChild(textBlock(shownText(e.body))); }
        if (e.text) { b.appendChild(textBlock(shownText(e.text))); }
        (e.tool_calls || []).forEach(function (call) { b.appendChild(askedTool(call)); });
        if (e.faults && e.faults.length) {
          b.appendChild(el("p", "after retried failures: " + e.faults.join(", "), "hint"));
        }
        box.appendChild(b);
      } else if (e.event === "tool_call") {
        var refused = e.refusal ? " ✗ refused: " + e.refusal.code
                                : " → result, " + e.bytes + " bytes";
        var parts = [el("h5", "arguments"), textBlock(shownText(e.arguments))];
        if (e.result) {
          parts.push(el("h5", "result"));
          parts.push(textBlock(shownText(e.result)));
        }
        if (e.refusal) {
          parts.push(el("p", e.refusal.code + ": " + (e.refusal.message || ""), "detail-error"));
        }
        box.appendChild(folded("tool " + e.name + " #" + e.index + refused, parts,
          "msg msg-tool" + (e.refusal ? " msg-refused" : "")));
      } else if (e.event === "final") {
        b = bubble(e.parsed === "accepted" ? "msg-final" : "msg-final msg-refused",
          "final answer as returned: " + (READ[e.parsed] || e.parsed));
        // The answer is what a failure is about: shown whole (bounded when embedded).
        b.appendChild(el("pre", shownText(e.answer), "final-answer"));
        if (e.reason) { b.appendChild(el("p", "why: " + e.reason, "detail-error")); }
        box.appendChild(b);
      } else if (e.event === "no_final") {
        b = bubble("msg-final msg-refused", "no final answer (" + e.failure_class + ")");
        b.appendChild(el("p", e.reason, "detail-error"));
        box.appendChild(b);
      } else if (e.event === "model_refused") {
        box.appendChild(el("p", "✗ model call refused before it was sent: " + e.code,
          "detail-error"));
      } else if (e.event === "truncated" || e.event === "page_cut") {
        var limit = e.event === "truncated" ? "the transcript's" : "the page's";
        box.appendChild(el("p", e.dropped + " more events not shown (past " + limit + " limit)",
          "hint"));
      }
    });
    return box;
  }
  function verdict(side) {
    var div = el("div");
    var mark = {passed: "✓ ", failed: "✗ ", error: "! "}[side.outcome] || "";
    var why = side.failure_class ? " (" + side.failure_class + ")" : "";
    div.appendChild(el("p", mark + side.outcome + why, "oc-" + side.outcome));
    if (side.failed_checks.length) {
      div.appendChild(el("p", "failed: " + side.failed_checks.join(", ")));
    }
    div.appendChild(el("pre", side.answer || "(no answer)", "answer"));
    return div;
  }
  function compared(c) {
    var box = el("div", null, "compared");
    box.appendChild(el("h4", "Baseline and this run"));
    if (!c.compared.baseline) {
      box.appendChild(el("p", "This case is not in the baseline.", "hint"));
      return box;
    }
    var pair = el("div", null, "pair");
    var before = verdict(c.compared.baseline);
    var after = verdict({outcome: c.outcome, failure_class: c.failure_class,
                         failed_checks: c.compared.failed_checks, answer: c.compared.answer});
    before.insertBefore(el("h5", "baseline"), before.firstChild);
    after.insertBefore(el("h5", "this run"), after.firstChild);
    pair.appendChild(before); pair.appendChild(after);
    box.appendChild(pair);
    return box;
  }
  function openAround(node) {
    for (var p = node; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") { p.open = true; }
    }
  }
  var latest = 0, lastCase = null;
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
    var row = document.querySelector('table.cases a[href="#case-' + m[1] + "-" + m[2] + '"]');
    if (row) { openAround(row); lastCase = row; }
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
  // Filters and search read each suite's compact index (outcome, failure class, labels,
  // lower-cased id, node id, prompt and answer), inflated once; the case details stay
  // compressed until a case is opened.
  var form = document.getElementById("filters");
  if (!form) { return; }
  var search = document.getElementById("f-search"), status = document.getElementById("f-status");
  var indexes = {}, rowMaps = {}, applied = 0, done = 0, timer = null;
  function suiteIds() {
    return Array.prototype.map.call(document.querySelectorAll('script[id^="index-"]'),
      function (block) { return block.id.slice(6); });
  }
  function loadIndex(sid) {
    if (!(sid in indexes)) {
      indexes[sid] = inflate(document.getElementById("index-" + sid).textContent).then(JSON.parse);
    }
    return indexes[sid];
  }
  function rowsOf(sid) {
    if (!rowMaps[sid]) {
      var map = {};
      document.querySelectorAll("#" + sid + " table.cases tbody tr").forEach(function (tr) {
        var m = /-(\d+)$/.exec(tr.querySelector("th a").getAttribute("href"));
        if (m) { map[m[1]] = tr; }
      });
      rowMaps[sid] = map;
    }
    return rowMaps[sid];
  }
  function value(id) { return document.getElementById(id).value; }
  function apply() {
    var ticket = ++applied;
    var want = {outcome: value("f-outcome"), cls: value("f-class"), label: value("f-label"),
                words: search.value.trim().toLowerCase().split(/\s+/).filter(Boolean)};
    var on = Boolean(want.outcome || want.cls || want.label || want.words.length);
    var sids = suiteIds();
    Promise.all(sids.map(loadIndex)).then(function (lists) {
      if (ticket !== applied) { return; }
      var shown = 0, total = 0;
      sids.forEach(function (sid, n) {
        var map = rowsOf(sid);
        lists[n].forEach(function (e, i) {
          var ok = (!want.outcome || e[0] === want.outcome) && (!want.cls || e[1] === want.cls) &&
            (!want.label || e[2].indexOf(want.label) >= 0) &&
            want.words.every(function (w) { return e[3].indexOf(w) >= 0; });
          if (map[i]) { map[i].hidden = !ok; }
          if (ok) { shown++; }
        });
        total += lists[n].length;
        document.querySelectorAll("#" + sid + " details.group").forEach(function (d) {
          var visible = d.querySelectorAll("table.cases tbody tr:not([hidden])").length;
          d.hidden = on && visible === 0;
          d.querySelector(".shown").textContent = on ? " (" + visible + " match)" : "";
          if (on && visible && !d.dataset.was) {
            d.dataset.was = d.open ? "open" : "closed";
            d.open = true;
          }
          if (!on && d.dataset.was) { d.open = d.dataset.was === "open"; delete d.dataset.was; }
        });
      });
      status.textContent = on ? shown + " of " + total + " cases match" : "";
      status.dataset.done = String(++done);
      // What this pass applied, so that a script driving the page knows it is current.
      status.dataset.query = JSON.stringify([want.outcome, want.cls, want.label, want.words]);
    }, function (error) {
      status.textContent = "The filter could not read the case index: " + error;
    });
  }
  form.addEventListener("change", apply);
  form.addEventListener("submit", function (event) { event.preventDefault(); apply(); });
  form.addEventListener("reset", function () { setTimeout(apply, 0); });
  search.addEventListener("input", function () {
    // Typing is debounced: one pass over the index once the keys pause.
    clearTimeout(timer);
    timer = setTimeout(apply, 150);
  });
  function caseLinks() {
    return Array.prototype.filter.call(
      document.querySelectorAll("table.cases tbody tr:not([hidden]) th a"), function (a) {
        var d = a.closest("details");
        return !d || (d.open && !d.hidden);
      });
  }
  function step(by) {
    var links = caseLinks();
    if (!links.length) { return; }
    var active = document.activeElement;
    var row = active && active.closest ? active.closest("tr") : null;
    var at = row ? links.indexOf(row.querySelector("th a")) : -1;
    if (at < 0 && lastCase) { at = links.indexOf(lastCase); }
    var next = at < 0 ? (by > 0 ? 0 : links.length - 1)
                      : Math.min(links.length - 1, Math.max(0, at + by));
    links[next].focus();
    links[next].scrollIntoView({block: "nearest"});
  }
  document.addEventListener("keydown", function (event) {
    var t = event.target, tag = t && t.tagName;
    var typing = tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA";
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    if (event.key === "Escape" && t === search) { search.value = ""; apply(); return; }
    if (typing) { return; }
    if (event.key === "/") { event.preventDefault(); search.focus(); search.select(); }
    else if (event.key === "j" || event.key === "k") {
      event.preventDefault();
      step(event.key === "j" ? 1 : -1);
    }
  });
})();
"""

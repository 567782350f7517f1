"""The report page's static parts: CSS, the sample browser's script (paging, filters), the HTML frame."""

N_BINS = 10

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#777}
.chart{margin:6px 12px 6px 0;background:#fafafa;border:1px solid #eee}.ctitle{font-size:12px;font-weight:600}
.lbl{font-size:11px;fill:#333}.bar{fill:#6a8fc7}.whisker{stroke:#222;stroke-width:1.5}.axis{stroke:#999}
.frame{fill:none;stroke:#ccc}.diag{stroke:#bbb;stroke-dasharray:4 3}.curve{fill:none;stroke:#c7623a;stroke-width:2}.dot{fill:#c7623a}
.task-charts,.cal{display:inline-block;vertical-align:top}
#controls{margin:8px 0}#controls select{max-width:340px}#search{width:320px;padding:4px}.numbox{width:70px}#pager{margin:6px 0}.nowrap{white-space:nowrap}
.grid{stroke:#e4e4e4}.tick{font-size:10px;fill:#555}.cname{font-size:12px;font-weight:600;max-width:270px;overflow-wrap:anywhere}
.status{font-weight:600}.status.correct{color:#1b7a36}.status.incorrect{color:#b3261e}.status.unparsed{color:#a15c00}
.answer{font-size:13px;margin:4px 0}.answer .k{color:#555}.answer .prediction,.answer .target{font-family:ui-monospace,monospace;white-space:pre-wrap}
.sample.correct{border-left:4px solid #1b7a36}.sample.incorrect{border-left:4px solid #b3261e}.sample.unparsed{border-left:4px solid #a15c00}
.sample{border:1px solid #e3e3e3;border-radius:4px;margin:8px 0;padding:8px}
.sample pre{white-space:pre-wrap;background:#f6f6f6;padding:6px;margin:4px 0;max-height:240px;overflow:auto}
.choice{display:flex;gap:8px;align-items:center}.pbar{height:8px;background:#6a8fc7;display:inline-block}
.gold{font-weight:700;color:#1b7a36}.pred{text-decoration:underline}.tag{font-size:12px;color:#555}
.with-images{display:flex;gap:10px;align-items:flex-start}.sample-main{flex:1;min-width:0}
.thumb{display:block;max-width:96px;max-height:96px;border:1px solid #ddd;margin-bottom:4px}
"""

JS = r"""
(function () {
  "use strict";
  var samples = JSON.parse(document.getElementById("samples-data").textContent);
  function $(id) { return document.getElementById(id); }
  var search = document.getElementById("search"), taskSel = $("task-filter"), statusSel = $("status-filter"), metricSel = $("metric-filter");
  var minBox = $("metric-min"), maxBox = $("metric-max"), list = $("sample-list"), count = $("match-count");
  var pageInfo = $("page-info"), sizeSel = $("page-size");
  var page = 0, hits = [];
  function text(tag, cls, content) {
    var el = document.createElement(tag); if (cls) el.className = cls; el.textContent = content; return el;
  }
  function num(v) {  // metric values: integers as they are, other numbers to 4 decimals
    if (typeof v !== "number") return v === null || v === undefined ? "\u2014" : String(v);
    return Number.isInteger(v) ? String(v) : v.toFixed(4);
  }
  function haystack(s) {
    return [s.id, s.task, s.prompt, s.target_text, s.prediction_text, (s.choices || []).join(" "), s.generation || ""]
      .join(" ").toLowerCase();
  }
  samples.forEach(function (s) { s._text = haystack(s); });
  function card(s) {
    var div = document.createElement("div"); div.className = "sample " + s.status; div.setAttribute("data-id", s.id);
    div.setAttribute("data-status", s.status);
    var head = text("div", "tag", s.task + " \u00b7 " + s.id + " \u00b7 ");
    head.appendChild(text("span", "status " + s.status, s.status)); div.appendChild(head);
    div.appendChild(text("pre", "prompt", s.prompt));
    var golds = Array.isArray(s.target) ? s.target : [s.target];
    if (s.choices) {
      s.choices.forEach(function (c, i) {
        var row = document.createElement("div"); row.className = "choice";
        var p = s.probs ? s.probs[i] : null;
        var bar = document.createElement("span"); bar.className = "pbar"; bar.style.width = Math.round((p || 0) * 200) + "px";
        row.appendChild(bar);
        row.appendChild(text("span", "prob", p === null ? "\u2014" : p.toFixed(4)));
        row.appendChild(text("span", (golds.indexOf(i) >= 0 ? "gold " : "") + (s.prediction === i ? "pred" : ""), c));
        div.appendChild(row);
      });
      if (s.generation !== undefined) div.appendChild(text("pre", "generation", s.generation));
      if (s.formulation) div.appendChild(text("div", "tag formulation", s.formulation));
    } else if (s.generation !== undefined) {
      div.appendChild(text("pre", "generation", s.generation));
      (s.epochs || []).forEach(function (g, e) { if (e > 0) div.appendChild(text("pre", "generation epoch", "epoch " + (e + 1) + ": " + g)); });
    }
    var answer = text("div", "answer", "");
    answer.appendChild(text("span", "k", "prediction: ")); answer.appendChild(text("span", "prediction", s.prediction_text));
    answer.appendChild(text("span", "k", "  target: ")); answer.appendChild(text("span", "target", s.target_text));
    div.appendChild(answer);
    var m = Object.keys(s.metrics).map(function (k) { return k + " = " + num(s.metrics[k]); }).join("   ");
    div.appendChild(text("div", "tag metrics", m));
    if (s.images && s.images.length) withThumbnails(div, s);
    return div;
  }
  function withThumbnails(div, s) {
    // the sample's images (embedded data URIs) beside its prompt and answer
    var row = document.createElement("div"); row.className = "with-images";
    var pics = document.createElement("div"); pics.className = "thumbs";
    s.images.forEach(function (src, k) {
      if (src.indexOf("data:image/") !== 0) return;
      var img = document.createElement("img"); img.className = "thumb"; img.src = src;
      img.alt = "image " + (k + 1) + " of " + s.id; pics.appendChild(img);
    });
    var main = document.createElement("div"); main.className = "sample-main";
    while (div.childNodes.length > 1) main.appendChild(div.childNodes[1]);
    row.appendChild(pics); row.appendChild(main); div.appendChild(row);
  }
  function filter() {
    var q = search.value.trim().toLowerCase(), t = taskSel.value, st = statusSel.value, metric = metricSel.value;
    var lo = minBox.value === "" ? -Infinity : parseFloat(minBox.value);
    var hi = maxBox.value === "" ? Infinity : parseFloat(maxBox.value);
    var words = q ? q.split(/\s+/) : [];
    hits = samples.filter(function (s) {
      if (t && s.task !== t) return false;
      if (st && s.status !== st) return false;
      if (metric) {
        var v = s.metrics[metric];
        if (typeof v !== "number" || v < lo || v > hi) return false;
      }
      return words.every(function (w) { return s._text.indexOf(w) >= 0; });
    });
    page = 0; draw();
  }
  function draw() {
    var size = parseInt(sizeSel.value, 10), pages = Math.max(1, Math.ceil(hits.length / size));
    page = Math.min(Math.max(page, 0), pages - 1);
    list.textContent = "";
    var frag = document.createDocumentFragment();
    hits.slice(page * size, (page + 1) * size).forEach(function (s) { frag.appendChild(card(s)); });
    list.appendChild(frag);
    count.textContent = hits.length + " of " + samples.length + " samples match";
    count.setAttribute("data-matches", String(hits.length));
    pageInfo.textContent = "page " + (page + 1) + " of " + pages;
    pageInfo.setAttribute("data-page", String(page + 1)); pageInfo.setAttribute("data-pages", String(pages));
    $("first").disabled = $("prev").disabled = page === 0;
    $("next").disabled = $("last").disabled = page >= pages - 1;
  }
  [search, minBox, maxBox].forEach(function (el) { el.addEventListener("input", filter); });
  [taskSel, statusSel, metricSel].forEach(function (el) { el.addEventListener("change", filter); });
  sizeSel.addEventListener("change", draw);
  $("first").addEventListener("click", function () { page = 0; draw(); });
  $("prev").addEventListener("click", function () { page -= 1; draw(); });
  $("next").addEventListener("click", function () { page += 1; draw(); });
  $("last").addEventListener("click", function () { page = 1e9; draw(); });
  filter();
})();
"""

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{css}</style></head>
<body>
<h1>{title}</h1>
<p>{meta}</p><p class="muted">command: <code>{command}</code></p>
<h2>Summary</h2>{summary}
<h2>Groups, competencies and languages</h2>{groups}
<h2>Per-task charts</h2>{charts}
<h2>Calibration (multiple choice)</h2>
<p class="muted">Top-choice probability against accuracy in {bins} equal bins; the dashed line is perfect calibration.</p>{calibration}
<h2>Samples</h2>
<div id="controls"><input id="search" type="search" placeholder="search prompt, choices, answers, ids…">
<select id="task-filter"><option value="">all tasks</option>{task_options}</select>
<select id="status-filter"><option value="">any outcome</option><option value="correct">correct</option><option value="incorrect">incorrect</option><option value="unparsed">unparsed</option><option value="unscored">unscored</option></select>
<span class="nowrap"><select id="metric-filter"><option value="">metric value…</option>{metric_options}</select>
from <input id="metric-min" type="number" step="any" class="numbox"> to <input id="metric-max" type="number" step="any" class="numbox"></span>
<div id="pager"><button id="first">« first</button><button id="prev">‹ prev</button> <span id="page-info"></span>
<button id="next">next ›</button><button id="last">last »</button>
<select id="page-size"><option>25</option><option selected>50</option><option>100</option><option>250</option></select> per page ·
<span id="match-count"></span></div></div>
<div id="sample-list"></div>
<script id="samples-data" type="application/json">{samples}</script>
<script>{js}</script>
</body></html>
""".replace("{bins}", str(N_BINS))

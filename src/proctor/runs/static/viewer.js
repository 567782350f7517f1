// proctor's viewer: the runs index, one run (summary and a sortable, filterable sample browser) and runs side
// by side on the samples they share. Routes live in the URL's fragment, so every view and sample has a link:
//   #            the runs            #run=KEY            a run            #run=KEY&task=T&id=I   one sample
//   #compare=KEY&compare=KEY2&task=T   runs side by side
// Every text from a run is put in the page with textContent (never parsed as HTML); the run summaries are
// HTML the server rendered with Jinja2's autoescaping.
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("viewer-data").textContent);
  var RUNS = DATA.runs;
  var byKey = {};
  RUNS.forEach(function (r, i) { r.index = i; byKey[r.key] = r; });
  var loaded = {};  // run key -> {summary, samples, error}
  function $(id) { return document.getElementById(id); }
  function text(tag, cls, content) {
    var el = document.createElement(tag); if (cls) el.className = cls; el.textContent = content == null ? "" : String(content); return el;
  }
  function num(v) {  // metric values: integers as they are, other numbers to 4 decimals
    if (typeof v !== "number") return v === null || v === undefined ? "\u2014" : String(v);
    return Number.isInteger(v) ? String(v) : v.toFixed(4);
  }
  function link(params) {
    var q = new URLSearchParams();
    params.forEach(function (p) { q.append(p[0], p[1]); });
    return "#" + q.toString();
  }
  function sampleLink(key, s) { return link([["run", key], ["task", s.task], ["id", s.id]]); }

  // ---------------------------------------------------------------- data: embedded, or from the server
  function load(key, done) {
    if (loaded[key]) return done(loaded[key]);
    var run = byKey[key];
    if (DATA.mode === "static") {
      var i = run.index, errorNode = $("error-" + i);
      loaded[key] = {summary: $("summary-" + i), samples: JSON.parse($("samples-" + i).textContent),
                     error: errorNode ? errorNode.content.textContent : null};
      return done(loaded[key]);
    }
    fetch("api/run?key=" + encodeURIComponent(key)).then(function (r) { return r.json(); }).then(function (payload) {
      loaded[key] = payload; done(payload);
    }).catch(function (e) { loaded[key] = {summary: "", samples: [], error: String(e)}; done(loaded[key]); });
  }
  function loadAll(keys, done) {
    var left = keys.length;
    keys.forEach(function (k) { load(k, function () { if (--left === 0) done(); }); });
  }

  // ---------------------------------------------------------------- routing
  function show(view) {
    ["index-view", "run-view", "compare-view"].forEach(function (id) { $(id).hidden = id !== view; });
  }
  function route() {
    var q = new URLSearchParams(location.hash.slice(1));
    var compare = q.getAll("compare").filter(function (k) { return byKey[k]; });
    if (compare.length >= 2) return showCompare(compare, q.get("task"));
    var key = q.get("run") || (location.hash.length <= 1 ? DATA.start : "");
    if (key && byKey[key]) return showRun(key, q.get("task"), q.get("id"));
    showIndex();
  }
  window.addEventListener("hashchange", route);

  // ---------------------------------------------------------------- runs index
  var runSort = {col: "created", dir: -1}, selected = {};
  function runValue(r, col) {
    if (col === "tasks") return r.tasks.length;
    var v = r[col]; return v === null || v === undefined ? "" : v;
  }
  function drawIndex() {
    var words = $("run-search").value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    var rows = RUNS.filter(function (r) {
      var hay = [r.key, r.model, r.status, r.tasks.join(" ")].join(" ").toLowerCase();
      return words.every(function (w) { return hay.indexOf(w) >= 0; });
    });
    rows.sort(function (a, b) {
      var x = runValue(a, runSort.col), y = runValue(b, runSort.col);
      return (x < y ? -1 : x > y ? 1 : a.index - b.index) * runSort.dir;
    });
    var body = $("runs").tBodies[0], frag = document.createDocumentFragment();
    rows.forEach(function (r) {
      var tr = document.createElement("tr"); tr.setAttribute("data-run", r.key);
      var box = document.createElement("input"); box.type = "checkbox"; box.checked = !!selected[r.key]; box.disabled = !!r.error;
      box.addEventListener("change", function () { selected[r.key] = box.checked; updateCompareButton(); });
      var cell = document.createElement("td"); cell.appendChild(box); tr.appendChild(cell);
      var name = document.createElement("td"), a = text("a", "run-link", r.key);
      a.href = link([["run", r.key]]); name.appendChild(a); tr.appendChild(name);
      tr.appendChild(text("td", "model", r.model));
      var tasks = text("td", "tasks", r.tasks.length + (r.tasks.length ? ": " + r.tasks.slice(0, 4).join(", ") + (r.tasks.length > 4 ? ", \u2026" : "") : ""));
      tasks.title = r.tasks.join(", "); tr.appendChild(tasks);
      tr.appendChild(text("td", "created", r.created || "\u2014"));
      var st = text("td", "status", r.status); if (r.error) st.title = r.error; tr.appendChild(st);
      tr.appendChild(text("td", "num samples", r.n_samples));
      var km = document.createElement("td"); km.className = "key-metrics";
      if (r.error) km.appendChild(text("span", "error", r.error));
      r.key_metrics.slice(0, 6).forEach(function (m) {
        var span = text("span", "km", (m.group ? "group " : "") + m.name + " " + m.metric + " ");
        span.appendChild(text("span", "v", num(m.value))); km.appendChild(span);
      });
      if (r.key_metrics.length > 6) km.appendChild(text("span", "muted", "+" + (r.key_metrics.length - 6) + " more"));
      tr.appendChild(km);
      frag.appendChild(tr);
    });
    body.textContent = ""; body.appendChild(frag);
    $("run-count").textContent = rows.length + " of " + RUNS.length + " runs";
    $("run-count").setAttribute("data-shown", String(rows.length));
    Array.prototype.forEach.call($("runs").tHead.querySelectorAll("th[data-sort]"), function (th) {
      th.className = th.getAttribute("data-sort") === runSort.col ? (runSort.dir > 0 ? "sorted-asc" : "sorted-desc") : "";
    });
  }
  function updateCompareButton() {
    var keys = Object.keys(selected).filter(function (k) { return selected[k]; });
    $("compare-button").disabled = keys.length < 2;
  }
  Array.prototype.forEach.call($("runs").tHead.querySelectorAll("th[data-sort]"), function (th) {
    th.addEventListener("click", function () {
      var col = th.getAttribute("data-sort");
      runSort = {col: col, dir: runSort.col === col ? -runSort.dir : 1}; drawIndex();
    });
  });
  $("run-search").addEventListener("input", drawIndex);
  $("compare-button").addEventListener("click", function () {
    var keys = RUNS.map(function (r) { return r.key; }).filter(function (k) { return selected[k]; });
    location.hash = link(keys.map(function (k) { return ["compare", k]; }));
  });
  function showIndex() {
    show("index-view"); $("crumb").textContent = ""; drawIndex();
  }

  // ---------------------------------------------------------------- one run: summary and samples
  var current = null, samples = [], hits = [], page = 0, focus = null;
  var search = $("search"), taskSel = $("task-filter"), statusSel = $("status-filter"), metricSel = $("metric-filter");
  var minBox = $("metric-min"), maxBox = $("metric-max"), confMin = $("conf-min"), confMax = $("conf-max"), sortSel = $("sort");
  var list = $("sample-list"), count = $("match-count"), pageInfo = $("page-info"), sizeSel = $("page-size");
  function haystack(s) {
    return [s.id, s.task, s.prompt, s.target_text, s.prediction_text, (s.choices || []).join(" "), s.generation || ""]
      .join(" ").toLowerCase();
  }
  function options(select, values, first) {
    select.textContent = ""; select.appendChild(text("option", "", first)); select.options[0].value = "";
    values.forEach(function (v) { select.appendChild(text("option", "", v)); });
  }
  function showRun(key, task, id) {
    show("run-view");
    $("crumb").textContent = "\u203a run " + key;
    focus = id !== null && id !== undefined && task !== null ? {task: task, id: id} : null;
    if (current === key) return applyFocus();
    $("run-view").removeAttribute("data-loaded");  // set again once the run's samples are drawn
    load(key, function (payload) {
      current = key;
      var box = $("run-summary"); box.textContent = "";
      if (payload.summary && payload.summary.content) box.appendChild(payload.summary.content.cloneNode(true));
      else if (payload.summary) box.innerHTML = payload.summary;  // rendered and escaped by the server's templates
      $("run-error").hidden = !payload.error; $("run-error").textContent = payload.error || "";
      samples = payload.samples;
      var tasks = [], seenTask = {}, metrics = {};
      samples.forEach(function (s) {
        if (!seenTask[s.task]) { seenTask[s.task] = true; tasks.push(s.task); }
        Object.keys(s.metrics).forEach(function (m) { metrics[m] = true; });
        s._text = null;
      });
      options(taskSel, tasks, "all tasks"); options(metricSel, Object.keys(metrics).sort(), "metric value\u2026");
      [search, minBox, maxBox, confMin, confMax].forEach(function (el) { el.value = ""; });
      statusSel.value = ""; sortSel.value = "";
      applyFocus();
      $("run-view").setAttribute("data-loaded", key);
    });
  }
  function applyFocus() {
    if (focus) {
      search.value = ""; statusSel.value = ""; metricSel.value = ""; [minBox, maxBox, confMin, confMax].forEach(function (el) { el.value = ""; });
      taskSel.value = focus.task; sortSel.value = "";
    }
    filter();
  }
  function bounds(lowBox, highBox) {
    return [lowBox.value === "" ? -Infinity : parseFloat(lowBox.value), highBox.value === "" ? Infinity : parseFloat(highBox.value)];
  }
  function filter() {
    var words = search.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    var t = taskSel.value, st = statusSel.value, metric = metricSel.value;
    var mb = bounds(minBox, maxBox), cb = bounds(confMin, confMax);
    var confFilter = confMin.value !== "" || confMax.value !== "";
    hits = samples.filter(function (s) {
      if (t && s.task !== t) return false;
      if (st && s.status !== st) return false;
      if (metric) {
        var v = s.metrics[metric];
        if (typeof v !== "number" || v < mb[0] || v > mb[1]) return false;
      }
      if (confFilter && (typeof s.confidence !== "number" || s.confidence < cb[0] || s.confidence > cb[1])) return false;
      if (!words.length) return true;
      if (s._text === null) s._text = haystack(s);
      return words.every(function (w) { return s._text.indexOf(w) >= 0; });
    });
    sortHits();
    page = 0;
    if (focus) {
      var at = hits.findIndex(function (s) { return s.task === focus.task && s.id === focus.id; });
      if (at >= 0) page = Math.floor(at / parseInt(sizeSel.value, 10));
    }
    draw();
  }
  function sortHits() {
    var how = sortSel.value, metric = metricSel.value;
    function conf(s) { return typeof s.confidence === "number" ? s.confidence : -1; }
    function metricValue(s) { var v = s.metrics[metric]; return typeof v === "number" ? v : null; }
    var order = new Map(samples.map(function (s, i) { return [s, i]; }));
    var key = {
      "confident-wrong": function (a, b) { return ((b.status === "incorrect") - (a.status === "incorrect")) || conf(b) - conf(a); },
      "confidence-desc": function (a, b) { return conf(b) - conf(a); },
      "confidence-asc": function (a, b) { return conf(a) - conf(b); },
      "metric-desc": function (a, b) { return cmpMetric(metricValue(b), metricValue(a), true); },
      "metric-asc": function (a, b) { return cmpMetric(metricValue(a), metricValue(b), false); },
      "id": function (a, b) { return a.task < b.task ? -1 : a.task > b.task ? 1 : a.id.localeCompare(b.id, undefined, {numeric: true}); }
    }[how];
    if (!key) return;
    hits.sort(function (a, b) { return key(a, b) || order.get(a) - order.get(b); });
  }
  function cmpMetric(x, y, desc) {  // samples without the metric go last either way
    if (x === null && y === null) return 0;
    if (x === null) return desc ? -1 : 1;
    if (y === null) return desc ? 1 : -1;
    return x - y;
  }
  function card(s) {
    var div = document.createElement("div"); div.className = "sample " + s.status; div.setAttribute("data-id", s.id);
    div.setAttribute("data-task", s.task); div.setAttribute("data-status", s.status);
    if (typeof s.confidence === "number") div.setAttribute("data-confidence", String(s.confidence));
    if (focus && focus.task === s.task && focus.id === s.id) div.className += " target-sample";
    var head = text("div", "tag", s.task + " \u00b7 " + s.id + " \u00b7 ");
    head.appendChild(text("span", "status " + s.status, s.status));
    if (typeof s.confidence === "number") head.appendChild(text("span", "confidence", " \u00b7 confidence " + s.confidence.toFixed(4)));
    var a = text("a", "permalink", "link"); a.href = sampleLink(current, s); head.appendChild(a);
    div.appendChild(head);
    div.appendChild(text("pre", "prompt", s.prompt));
    if (s.choices) {
      s.choices.forEach(function (c, i) {
        var row = document.createElement("div"); row.className = "choice";
        var p = s.probs ? s.probs[i] : null;
        var bar = document.createElement("span"); bar.className = "pbar"; bar.style.width = Math.round((p || 0) * 200) + "px";
        row.appendChild(bar);
        row.appendChild(text("span", "prob", typeof p === "number" ? p.toFixed(4) : "\u2014"));
        row.appendChild(text("span", (s.golds.indexOf(i) >= 0 ? "gold " : "") + (s.prediction === i ? "pred" : ""), c));
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
    (s.notes || []).forEach(function (n) { div.appendChild(text("div", "tag note", n)); });
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
  function draw() {
    var size = parseInt(sizeSel.value, 10), pages = Math.max(1, Math.ceil(hits.length / size));
    page = Math.min(Math.max(page, 0), pages - 1);
    list.textContent = "";
    var frag = document.createDocumentFragment(), target = null;
    hits.slice(page * size, (page + 1) * size).forEach(function (s) {
      var c = card(s); frag.appendChild(c);
      if (focus && focus.task === s.task && focus.id === s.id) target = c;
    });
    list.appendChild(frag);
    count.textContent = hits.length + " of " + samples.length + " samples match";
    count.setAttribute("data-matches", String(hits.length));
    pageInfo.textContent = "page " + (page + 1) + " of " + pages;
    pageInfo.setAttribute("data-page", String(page + 1)); pageInfo.setAttribute("data-pages", String(pages));
    $("first").disabled = $("prev").disabled = page === 0;
    $("next").disabled = $("last").disabled = page >= pages - 1;
    if (target) { target.scrollIntoView(); focus = null; }
  }
  function refilter() { focus = null; filter(); }
  [search, minBox, maxBox, confMin, confMax].forEach(function (el) { el.addEventListener("input", refilter); });
  [taskSel, statusSel, metricSel, sortSel].forEach(function (el) { el.addEventListener("change", refilter); });
  sizeSel.addEventListener("change", draw);
  $("first").addEventListener("click", function () { page = 0; draw(); });
  $("prev").addEventListener("click", function () { page -= 1; draw(); });
  $("next").addEventListener("click", function () { page += 1; draw(); });
  $("last").addEventListener("click", function () { page = 1e9; draw(); });

  // ---------------------------------------------------------------- runs side by side
  var cmp = {keys: [], rows: [], shown: [], page: 0};
  function showCompare(keys, task) {
    show("compare-view");
    $("crumb").textContent = "\u203a compare " + keys.join(" \u00b7 ");
    $("compare-summary").textContent = "loading\u2026";
    $("compare-view").removeAttribute("data-loaded");
    loadAll(keys, function () {
      $("compare-view").setAttribute("data-loaded", "1");
      var common = null;
      keys.forEach(function (k) {
        var mine = {}; loaded[k].samples.forEach(function (s) { mine[s.task] = true; });
        common = common === null ? mine : Object.keys(common).reduce(function (o, t) { if (mine[t]) o[t] = true; return o; }, {});
      });
      var tasks = Object.keys(common || {});
      var sel = $("compare-task"); sel.textContent = "";
      tasks.forEach(function (t) { sel.appendChild(text("option", "", t)); });
      if (!tasks.length) {
        $("compare-summary").textContent = "These runs share no task."; $("compare-table").tHead.textContent = "";
        $("compare-table").tBodies[0].textContent = ""; $("compare-means").tBodies[0].textContent = ""; return;
      }
      sel.value = tasks.indexOf(task) >= 0 ? task : tasks[0];
      cmp.keys = keys; buildCompare();
    });
  }
  function buildCompare() {
    var task = $("compare-task").value, keys = cmp.keys;
    var maps = keys.map(function (k) {
      var m = new Map(); loaded[k].samples.forEach(function (s) { if (s.task === task) m.set(s.id, s); }); return m;
    });
    var rows = [];
    maps[0].forEach(function (s, id) {
      var row = maps.map(function (m) { return m.get(id); });
      if (row.some(function (x) { return x === undefined; })) return;
      var differs = row.some(function (x) { return x.status !== row[0].status || x.prediction_text !== row[0].prediction_text; });
      rows.push({id: id, samples: row, disagree: differs, text: null});
    });
    rows.sort(function (a, b) { return b.disagree - a.disagree; });  // stable: file order within each
    cmp.rows = rows;
    drawMeans(task, keys, rows, maps);
    filterCompare();
  }
  function drawMeans(task, keys, rows, maps) {
    var metrics = [];
    rows.forEach(function (r) { r.samples.forEach(function (s) { Object.keys(s.metrics).forEach(function (m) { if (metrics.indexOf(m) < 0) metrics.push(m); }); }); });
    var head = $("compare-means").tHead, body = $("compare-means").tBodies[0];
    head.textContent = ""; body.textContent = "";
    var tr = document.createElement("tr");
    ["run", "model", "samples in run", "shared"].concat(metrics.map(function (m) { return m + " (shared)"; })).forEach(function (h) { tr.appendChild(text("th", "", h)); });
    head.appendChild(tr);
    keys.forEach(function (k, j) {
      var row = document.createElement("tr"); row.setAttribute("data-run", k);
      row.appendChild(text("td", "", k)); row.appendChild(text("td", "", byKey[k].model));
      row.appendChild(text("td", "num", maps[j].size)); row.appendChild(text("td", "num", rows.length));
      metrics.forEach(function (m) {
        var vals = rows.map(function (r) { return r.samples[j].metrics[m]; }).filter(function (v) { return typeof v === "number"; });
        var mean = vals.length ? vals.reduce(function (a, b) { return a + b; }, 0) / vals.length : null;
        var cell = text("td", "num mean", mean === null ? "\u2014" : mean.toFixed(4));
        cell.setAttribute("data-metric", m); if (mean !== null) cell.setAttribute("data-value", String(mean));
        row.appendChild(cell);
      });
      body.appendChild(row);
    });
    var disagree = rows.filter(function (r) { return r.disagree; }).length;
    $("compare-summary").textContent = task + ": " + rows.length + " shared samples, " + disagree + " where the runs disagree (shown first)";
    $("compare-summary").setAttribute("data-shared", String(rows.length));
    $("compare-summary").setAttribute("data-disagree", String(disagree));
  }
  function filterCompare() {
    var only = $("compare-disagree").checked;
    var words = $("compare-search").value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    cmp.shown = cmp.rows.filter(function (r) {
      if (only && !r.disagree) return false;
      if (!words.length) return true;
      if (r.text === null) r.text = [r.id].concat(r.samples.map(haystack)).join(" ").toLowerCase();
      return words.every(function (w) { return r.text.indexOf(w) >= 0; });
    });
    cmp.page = 0; drawCompare();
  }
  function drawCompare() {
    var size = 50, pages = Math.max(1, Math.ceil(cmp.shown.length / size));
    cmp.page = Math.min(Math.max(cmp.page, 0), pages - 1);
    var head = $("compare-table").tHead, body = $("compare-table").tBodies[0];
    head.textContent = ""; body.textContent = "";
    var tr = document.createElement("tr");
    tr.appendChild(text("th", "", "sample")); tr.appendChild(text("th", "", "prompt"));
    cmp.keys.forEach(function (k) { tr.appendChild(text("th", "", k + " (" + byKey[k].model + ")")); });
    head.appendChild(tr);
    var frag = document.createDocumentFragment();
    cmp.shown.slice(cmp.page * size, (cmp.page + 1) * size).forEach(function (r) {
      var row = document.createElement("tr"); row.className = r.disagree ? "disagree" : "agree"; row.setAttribute("data-id", r.id);
      var first = r.samples[0], idCell = document.createElement("td"), a = text("a", "", r.id);
      a.href = sampleLink(cmp.keys[0], first); idCell.appendChild(a); row.appendChild(idCell);
      row.appendChild(text("td", "prompt-cell", first.prompt.length > 400 ? first.prompt.slice(0, 400) + "\u2026" : first.prompt));
      r.samples.forEach(function (s, j) {
        var cell = document.createElement("td"); cell.className = "side"; cell.setAttribute("data-status", s.status);
        var st = text("a", "status " + s.status, s.status); st.href = sampleLink(cmp.keys[j], s); cell.appendChild(st);
        if (typeof s.confidence === "number") cell.appendChild(text("span", "tag", " " + s.confidence.toFixed(4)));
        cell.appendChild(document.createElement("br"));
        cell.appendChild(text("span", "prediction", s.prediction_text));
        row.appendChild(cell);
      });
      frag.appendChild(row);
    });
    body.appendChild(frag);
    $("compare-page").textContent = "page " + (cmp.page + 1) + " of " + pages + " \u00b7 " + cmp.shown.length + " rows";
    $("compare-page").setAttribute("data-rows", String(cmp.shown.length));
    $("compare-prev").disabled = cmp.page === 0; $("compare-next").disabled = cmp.page >= pages - 1;
  }
  $("compare-task").addEventListener("change", function () {
    location.hash = link(cmp.keys.map(function (k) { return ["compare", k]; }).concat([["task", $("compare-task").value]]));
  });
  $("compare-disagree").addEventListener("change", filterCompare);
  $("compare-search").addEventListener("input", filterCompare);
  $("compare-prev").addEventListener("click", function () { cmp.page -= 1; drawCompare(); });
  $("compare-next").addEventListener("click", function () { cmp.page += 1; drawCompare(); });

  route();
})();

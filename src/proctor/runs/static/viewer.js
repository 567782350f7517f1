// proctor's viewer: the runs index, one run (summary and a sortable, filterable sample browser) and runs side
// by side on the samples they share. Routes live in the URL's fragment, so every view and sample has a link:
//   #runs        the runs (also an empty fragment, except in a one-run report)
//   #run=KEY     a run               #run=KEY&task=T&id=I   one sample
//   #compare=KEY&compare=KEY2&task=T   runs side by side (a banner names every setting that differs)
// Every text from a run is put in the page with textContent (never parsed as HTML); the run summaries are
// HTML the server rendered with Jinja2's autoescaping.
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("viewer-data").textContent);
  var RUNS = DATA.runs;
  var byKey = {};
  RUNS.forEach(function (r, i) { r.index = i; byKey[r.key] = r; });
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
  // A run's samples arrive as samples.jsonl's own lines and are turned into cards' fields here; its summary
  // (tables, charts, calibration) is HTML rendered by proctor's templates.
  var samplesOf = {}, summaryOf = {};
  function loadSamples(key, done) {
    if (samplesOf[key]) return done(samplesOf[key]);
    function ready(textOrError) {
      samplesOf[key] = typeof textOrError === "string" ? views(textOrError) : {samples: [], error: String(textOrError)};
      done(samplesOf[key]);
    }
    if (DATA.mode === "static") return ready($("samples-" + byKey[key].index).textContent);
    fetch("api/samples?key=" + encodeURIComponent(key)).then(function (r) {
      return r.ok ? r.text() : r.text().then(function (why) { throw new Error(why || "the server answered " + r.status); });
    }).then(ready, ready);
  }
  function loadSummary(key, done) {
    if (summaryOf[key]) return done(summaryOf[key]);
    if (DATA.mode === "static") {
      var i = byKey[key].index, errorNode = $("error-" + i);
      summaryOf[key] = {summary: $("summary-" + i), error: errorNode ? errorNode.content.textContent : null};
      return done(summaryOf[key]);
    }
    fetch("api/run?key=" + encodeURIComponent(key)).then(answerJson).then(function (payload) {
      summaryOf[key] = payload; done(payload);
    }).catch(function (e) { summaryOf[key] = {summary: "", error: String(e)}; done(summaryOf[key]); });
  }
  function answerJson(r) {  // a refusal (a file the server does not serve) is text: its words are the error
    return r.ok ? r.json() : r.text().then(function (why) { throw new Error(why || "the server answered " + r.status); });
  }
  function loadAll(keys, done) {
    var left = keys.length;
    keys.forEach(function (k) { loadSamples(k, function () { if (--left === 0) done(); }); });
  }

  // ---------------------------------------------------------------- one record -> what its card shows
  // Every dialect writes the same fields (docs/results.md, samples.jsonl): for a question with choices
  // `choices`, `target` (gold index or indices), `prediction` (index), `distribution` (per-choice probabilities,
  // absent when the choice was read from a generation); for a generation `generation`, `extracted`, `parsed`,
  // `target` (references).
  function views(textData) {
    var records = [], error = null, lines = textData.split("\n");
    for (var n = 0; n < lines.length; n++) {
      if (!lines[n].trim()) continue;
      try { records.push(JSON.parse(lines[n])); } catch (e) {
        error = "samples.jsonl:" + (n + 1) + ": not a JSON line (an interrupted write? re-run to rebuild it); the samples before it are shown";
        break;
      }
    }
    records = records.filter(function (r) { return r && typeof r === "object" && !Array.isArray(r); });
    var primary = primaryMetrics(records);
    return {samples: records.map(function (r) { return view(r, primary[String(r.task)] || ""); }), error: error};
  }
  function isCount(metric) {
    var name = String(metric).split(",")[0].toLowerCase();
    return /count$/.test(name) || /^(n_|num_)/.test(name);
  }
  function isIndex(v, n) { return typeof v === "number" && Number.isInteger(v) && v >= 0 && v < n; }
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  function primaryMetrics(records) {
    // per task, the first metric whose every per-sample value is 0 or 1 and that is not a count (null_count is 1
    // for an empty answer; core/metric_names.py): it decides correct / incorrect
    var order = {}, flags = {};
    records.forEach(function (r) {
      var t = String(r.task), m = r.metrics && typeof r.metrics === "object" ? r.metrics : {};
      if (!order[t]) { order[t] = []; flags[t] = {}; }
      Object.keys(m).forEach(function (name) {
        if (!(name in flags[t])) { flags[t][name] = !isCount(name); order[t].push(name); }
        if (m[name] !== null && m[name] !== 0 && m[name] !== 1) flags[t][name] = false;
      });
    });
    var out = {};
    Object.keys(order).forEach(function (t) { out[t] = order[t].filter(function (m) { return flags[t][m]; })[0] || ""; });
    return out;
  }
  function outcome(r, primary) {
    if (r.parsed === false || (r.mc_format === "generate" && (r.extracted === null || r.extracted === undefined))) return "unparsed";
    var v = primary && r.metrics ? r.metrics[primary] : undefined;
    if (v === null || v === undefined) v = typeof r.correct === "boolean" ? Number(r.correct) : null;
    return v === null ? "unscored" : v === 1 ? "correct" : "incorrect";
  }
  function contentText(content) {
    if (!Array.isArray(content)) return String(content);
    return content.map(function (p) {
      if (p && typeof p === "object") return p.type === "image" || p.type === "image_url" ? "[image] " : String(p.text || "");
      return String(p);
    }).join("");
  }
  function promptText(r) {
    var p = (r.mc_format === "generate" && r.prompt_sent) || r.rendered_prompt || r.prompt;
    if (Array.isArray(p)) return p.map(function (m) { return m && typeof m === "object" ? "[" + m.role + "] " + contentText(m.content) : String(m); }).join("\n");
    return p === null || p === undefined ? "" : String(p);
  }
  function choiceText(choices, i) { return isIndex(i, choices.length) ? i + ": " + choices[i] : i === null || i === undefined ? "\u2014" : String(i); }
  function view(r, primary) {
    var metrics = r.metrics && typeof r.metrics === "object" && !Array.isArray(r.metrics) ? r.metrics : {};
    var v = {task: String(r.task), id: String(r.id), prompt: promptText(r), metrics: metrics, status: outcome(r, primary), confidence: null,
      cluster: r.cluster === undefined ? null : r.cluster};
    var images = (r.images || []).map(function (i) { return i && String(i.thumbnail || ""); }).filter(function (t) { return t.indexOf("data:image/") === 0; });
    if (images.length) v.images = images;
    var target = r.target;
    if (Array.isArray(r.choices)) {
      var choices = r.choices.map(String), lettered = r.mc_format === "generate";
      var golds = (Array.isArray(target) ? target : [target]).filter(function (g) { return isIndex(g, choices.length); });
      var probs = !lettered && Array.isArray(r.distribution) && r.distribution.length === choices.length ? r.distribution : null;
      v.choices = choices; v.probs = probs; v.golds = golds; v.prediction = isIndex(r.prediction, choices.length) ? r.prediction : null;
      v.prediction_text = r.prediction !== null && r.prediction !== undefined ? choiceText(choices, r.prediction) : r.parsed === false ? "(no answer found)" : "\u2014";
      v.target_text = golds.length ? golds.map(function (g) { return choiceText(choices, g); }).join(" | ") : target === null || target === undefined ? "\u2014" : String(target);
      if (probs) { var top = Math.max.apply(null, probs.filter(isNum)); if (isFinite(top)) v.confidence = top; }
      if ("generation" in r) v.generation = String(r.generation);  // the reply a letter or label was read from
      if (lettered) v.formulation = "lettered generation \u00b7 letter read: " + (r.extracted || "none (unparsed)");
      else if (!probs && "generation" in r) v.formulation = "label read from the generation: " + r.extracted;
    } else if ("generation" in r) {
      v.generation = String(r.generation);
      v.prediction_text = r.parsed === false ? "(no answer found)" : r.extracted === null || r.extracted === undefined ? "\u2014" : String(r.extracted);
      v.target_text = Array.isArray(target) ? target.map(String).join(" | ") : String(target);
      if (Array.isArray(r.epochs)) v.epochs = r.epochs.map(function (e) { return String(e && e.generation); });
    } else {
      var shown = ["logprob", "n_tokens"].filter(function (k) { return k in r; });
      v.prediction_text = shown.map(function (k) { return k + "=" + (isNum(r[k]) && !Number.isInteger(r[k]) ? r[k].toFixed(4) : String(r[k])); }).join(", ") || "\u2014";
      v.target_text = target === null || target === undefined ? "\u2014" : String(target);
    }
    if (isNum(r.gold_logprob)) {  // SEA-HELM's log-prob strategy scores the gold label only
      v.notes = ["gold label log-prob " + r.gold_logprob.toFixed(4) + " (probability " + Math.exp(r.gold_logprob).toFixed(4) + ")"];
    }
    return v;
  }

  // ---------------------------------------------------------------- routing
  function show(view) {
    ["index-view", "run-view", "compare-view"].forEach(function (id) { $(id).hidden = id !== view; });
  }
  function route() {
    var q = new URLSearchParams(location.hash.slice(1));
    if (q.has("runs")) return showIndex();
    var asked = q.getAll("compare").filter(function (k) { return byKey[k]; });
    var compare = asked.filter(function (k, i) { return asked.indexOf(k) === i; });
    if (asked.length >= 2 && compare.length < 2) return showSelfCompare(compare[0]);
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
      if (r.predict_only) km.appendChild(text("span", "muted predict-only", "predict-only: answers kept, not scored"));
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
    current = key;
    var pane = $("run-view"), left = 2, errors = {};
    pane.removeAttribute("data-loaded"); pane.removeAttribute("data-samples");
    $("run-summary").textContent = ""; samples = []; hits = []; list.textContent = "";
    function showErrors() {
      var text = [errors.summary, errors.samples].filter(Boolean).join(" \u00b7 ");
      $("run-error").hidden = !text; $("run-error").textContent = text;
    }
    function settled() { if (--left === 0 && current === key) pane.setAttribute("data-loaded", key); }
    loadSummary(key, function (payload) {  // tables and charts: may arrive after the samples
      if (current !== key) return;
      var box = $("run-summary");
      if (payload.summary && payload.summary.content) box.appendChild(payload.summary.content.cloneNode(true));
      else if (payload.summary) box.innerHTML = payload.summary;  // rendered and escaped by proctor's templates
      errors.summary = payload.error; showErrors();
      var pending = box.querySelector("#calibration-section[data-pending]");
      if (!pending) return settled();
      fetch("api/calibration?key=" + encodeURIComponent(key)).then(answerJson).then(function (cal) {
        if (current !== key) return;
        if (cal.error) { errors.summary = cal.error; showErrors(); }
        var holder = document.createElement("div"); holder.innerHTML = cal.summary || "";  // proctor's templates, escaped
        pending.replaceWith.apply(pending, Array.prototype.slice.call(holder.childNodes));
        settled();
      }).catch(function (e) { errors.summary = String(e); showErrors(); settled(); });
    });
    loadSamples(key, function (payload) {
      if (current !== key) return;
      errors.samples = payload.error; showErrors();
      samples = payload.samples;
      var tasks = [], seenTask = {}, metrics = {};
      samples.forEach(function (s, i) {
        if (!seenTask[s.task]) { seenTask[s.task] = true; tasks.push(s.task); }
        Object.keys(s.metrics).forEach(function (m) { metrics[m] = true; });
        s._text = null; s._i = i;
      });
      options(taskSel, tasks, "all tasks"); options(metricSel, Object.keys(metrics).sort(), "metric value\u2026");
      [search, minBox, maxBox, confMin, confMax].forEach(function (el) { el.value = ""; });
      statusSel.value = ""; sortSel.value = "";
      applyFocus();
      pane.setAttribute("data-samples", key); settled();
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
    var key = {
      "confident-wrong": function (a, b) { return ((b.status === "incorrect") - (a.status === "incorrect")) || conf(b) - conf(a); },
      "confidence-desc": function (a, b) { return conf(b) - conf(a); },
      "confidence-asc": function (a, b) { return conf(a) - conf(b); },
      "metric-desc": function (a, b) { return cmpMetric(metricValue(b), metricValue(a), true); },
      "metric-asc": function (a, b) { return cmpMetric(metricValue(a), metricValue(b), false); },
      "id": function (a, b) { return a.task < b.task ? -1 : a.task > b.task ? 1 : a.id.localeCompare(b.id, undefined, {numeric: true}); }
    }[how];
    if (!key) return;
    hits.sort(function (a, b) { return key(a, b) || a._i - b._i; });
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
  function clearCompare() {
    ["compare-table", "compare-means", "compare-paired"].forEach(function (id) { $(id).tHead.textContent = ""; $(id).tBodies[0].textContent = ""; });
    $("compare-task").textContent = ""; $("compare-settings").hidden = true; $("compare-settings").textContent = "";
  }
  function showSelfCompare(key) {  // the same run twice: every difference would be zero, as if two runs agreed
    show("compare-view"); clearCompare();
    $("crumb").textContent = "\u203a compare " + key + " \u00b7 " + key;
    var why = $("compare-summary");
    why.textContent = "Not compared: " + key + " is the same run twice; comparing a run with itself shows no difference. Tick two different runs.";
    why.className = "error"; why.setAttribute("data-refused", "same-run");
    $("compare-view").setAttribute("data-loaded", "1");
  }

  // Each task's settings as results.json records them (runs/task_settings.py: values, and those an earlier
  // version did not record); a setting differs when any run's value differs from the first run's.
  function canon(v) {  // JSON with sorted keys: two objects with the same entries are the same setting
    if (v === null || typeof v !== "object") return JSON.stringify(v === undefined ? null : v);
    if (Array.isArray(v)) return "[" + v.map(canon).join(",") + "]";
    return "{" + Object.keys(v).sort().map(function (k) { return JSON.stringify(k) + ":" + canon(v[k]); }).join(",") + "}";
  }
  function greedy(g) { return !!g && typeof g === "object" && g.temperature === 0 && g.do_sample !== true; }
  function withoutSeed(g) { var out = {}; Object.keys(g).forEach(function (k) { if (k !== "seed") out[k] = g[k]; }); return out; }
  function settingsDiffer(keys, tasks) {
    var differ = [], unknown = [], info = [];
    tasks.forEach(function (t) {
      var all = keys.map(function (k) { return (byKey[k].settings || {})[t]; });
      if (all.some(function (s) { return !s; })) return;
      var found = [], explains = DATA.content_settings || [], explained = false;
      (DATA.setting_names || []).forEach(function (name) {
        var missing = keys.filter(function (k, j) { return all[j].unknown.indexOf(name) >= 0; });
        if (missing.length) { unknown.push({task: t, setting: name, runs: missing}); return; }
        var first = canon(all[0].values[name]);
        if (!all.some(function (s) { return canon(s.values[name]) !== first; })) return;
        if (explains.indexOf(name) >= 0) explained = true;
        // as runs/task_settings.py: under greedy decoding in every run no seed is read, so a seed alone differs in nothing
        if (name === "generation" && all.every(function (s) { return greedy(s.values[name]); })) {
          var firstRead = canon(withoutSeed(all[0].values[name]));
          if (!all.some(function (s) { return canon(withoutSeed(s.values[name])) !== firstRead; })) return;
        }
        found.push({task: t, setting: name, values: all.map(function (s) { return s.values[name]; })});
      });
      // as runs/task_settings.py: the content hash is named only where a setting that changes prompts or samples
      // explains it (DATA.content_settings); a server's address or a dtype never does
      // as runs/task_settings.py: with the same content and as many samples in every run, a limit kept the same
      // rows and differs in nothing
      var contents = all.map(function (s) { return s.values.task_content; });
      var sameRows = all.every(function (s) { return s.rows !== null && s.rows !== undefined && s.rows === all[0].rows; });
      if (contents[0] && sameRows && contents.every(function (c) { return c === contents[0]; })) {
        var rowsOnly = DATA.rows_only_settings || [];
        found = found.filter(function (d) { return rowsOnly.indexOf(d.setting) < 0; });
      }
      if (explained) found = found.filter(function (d) { return d.setting !== "task_content"; });
      differ = differ.concat(found);
      // backend options that change no request and no answer (base_url, prices, pace): information only
      var names = {};
      all.forEach(function (s) { Object.keys(s.info || {}).forEach(function (n) { names[n] = 1; }); });
      Object.keys(names).sort().forEach(function (n) {
        var first = canon((all[0].info || {})[n]);
        if (all.some(function (s) { return canon((s.info || {})[n]) !== first; })) {
          info.push({task: t, setting: "model_info." + n, values: all.map(function (s) { return (s.info || {})[n]; })});
        }
      });
    });
    return {differ: differ, unknown: unknown, info: info};
  }
  function shownValue(v) {
    var t = v === null || v === undefined ? "none" : canon(v);
    return t.length > 80 ? t.slice(0, 79) + "\u2026" : t;
  }
  function drawSettings(keys, tasks) {
    var found = settingsDiffer(keys, tasks), box = $("compare-settings");
    box.textContent = "";
    box.setAttribute("data-differ", String(found.differ.length));
    box.setAttribute("data-unknown", String(found.unknown.length));
    box.hidden = !found.differ.length && !found.unknown.length;
    if (found.differ.length) {
      box.appendChild(text("strong", "", "Not comparable as they stand: " + found.differ.length + " setting(s) differ, so the differences below may come from them as much as from the models."));
      box.appendChild(text("div", "", "Settings that differ:"));
      var list = document.createElement("ul");
      found.differ.forEach(function (d) {
        var li = text("li", "", d.task + ": " + d.setting + ": " + keys.map(function (k, j) { return k + " " + shownValue(d.values[j]); }).join(" \u00b7 "));
        li.setAttribute("data-task", d.task); li.setAttribute("data-setting", d.setting);
        list.appendChild(li);
      });
      box.appendChild(list);
    }
    if (found.info.length) {
      box.hidden = false;
      var told = text("div", "muted", "Differ, but change no request and no answer (information): " + found.info.map(function (d) {
        return d.task + ": " + d.setting + ": " + keys.map(function (k, j) { return k + " " + shownValue(d.values[j]); }).join(" \u00b7 ");
      }).join("; "));
      told.setAttribute("data-info", String(found.info.length)); box.appendChild(told);
    }
    keys.forEach(function (k) {
      var missing = found.unknown.filter(function (u) { return u.runs.indexOf(k) >= 0; });
      if (!missing.length) return;
      var names = missing.map(function (u) { return u.setting; }).filter(function (n, i, a) { return a.indexOf(n) === i; });
      var p = text("div", "muted", "Not recorded in " + k + " (written by an earlier proctor), so not compared: " + names.join(", "));
      p.setAttribute("data-run", k); box.appendChild(p);
    });
  }
  function showCompare(keys, task) {
    show("compare-view");
    $("compare-summary").className = ""; $("compare-summary").removeAttribute("data-refused");
    $("compare-settings").hidden = true;
    $("crumb").textContent = "\u203a compare " + keys.join(" \u00b7 ");
    $("compare-summary").textContent = "loading\u2026";
    $("compare-view").removeAttribute("data-loaded");
    loadAll(keys, function () {
      $("compare-view").setAttribute("data-loaded", "1");
      var common = null;
      keys.forEach(function (k) {
        var mine = {}; samplesOf[k].samples.forEach(function (s) { mine[s.task] = true; });
        common = common === null ? mine : Object.keys(common).reduce(function (o, t) { if (mine[t]) o[t] = true; return o; }, {});
      });
      var tasks = Object.keys(common || {});
      var sel = $("compare-task"); sel.textContent = "";
      tasks.forEach(function (t) { sel.appendChild(text("option", "", t)); });
      if (!tasks.length) { clearCompare(); $("compare-summary").textContent = "These runs share no task."; return; }
      drawSettings(keys, tasks);
      sel.value = tasks.indexOf(task) >= 0 ? task : tasks[0];
      cmp.keys = keys; buildCompare();
    });
  }
  function buildCompare() {
    var task = $("compare-task").value, keys = cmp.keys;
    var maps = keys.map(function (k) {
      var m = new Map(); samplesOf[k].samples.forEach(function (s) { if (s.task === task) m.set(s.id, s); }); return m;
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
    drawPaired(keys, rows);
    filterCompare();
  }
  // ---------------------------------------------------------------- the paired difference (runs/compare.py's)
  // Each run against the first, per metric, over the shared samples where both have a number: the mean of the
  // per-sample differences B - A, its standard error std(ddof=1)/sqrt(n) -- cluster-robust (CR1) where every pair
  // names its cluster --, the normal 95% interval and two-sided p, and the minimum detectable effect at 80% power
  // and alpha 0.05 for this n ((z_0.975 + z_0.8) * se): what `proctor compare` reports (scoring/power.py).
  var Z_HALF = 1.959963984540054, Z_MDE = Z_HALF + 0.8416212335729143;
  function normalTail(z) {  // P(Z > z) for z >= 0: erfc(z / sqrt 2) / 2 (Numerical Recipes' erfcc, |error| < 1.2e-7)
    var x = z / Math.SQRT2, t = 1 / (1 + 0.5 * x);
    var r = t * Math.exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
      t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
    return r / 2;
  }
  function pairedDifference(a, b, clusters) {
    var n = a.length, d = a.map(function (x, i) { return b[i] - x; });
    var mean = d.reduce(function (s, x) { return s + x; }, 0) / n, se = null, groups = null;
    if (clusters) {
      var sums = new Map();
      d.forEach(function (x, i) { sums.set(clusters[i], (sums.get(clusters[i]) || 0) + x - mean); });
      groups = sums.size;
      if (groups >= 2) {
        var total = 0; sums.forEach(function (v) { total += v * v; });
        se = Math.sqrt(groups / (groups - 1) * total) / n;
      }
    } else if (n > 1) {
      var ss = d.reduce(function (s, x) { return s + (x - mean) * (x - mean); }, 0);
      se = Math.sqrt(ss / (n - 1)) / Math.sqrt(n);
    }
    var p = se === null ? null : se === 0 ? (mean === 0 ? 1 : 0) : 2 * normalTail(Math.abs(mean) / se);
    return {diff: mean, se: se, p: p, mde: se === null ? null : Z_MDE * se, n: n, clusters: groups};
  }
  function drawPaired(keys, rows) {
    var head = $("compare-paired").tHead, body = $("compare-paired").tBodies[0];
    head.textContent = ""; body.textContent = "";
    var metrics = [];
    rows.forEach(function (r) { r.samples.forEach(function (s) { Object.keys(s.metrics).forEach(function (m) { if (metrics.indexOf(m) < 0) metrics.push(m); }); }); });
    var tr = document.createElement("tr");
    ["B − A", "metric", "difference", "std. error", "95% interval", "p", "detectable (80% power)", "pairs"].forEach(function (h) { tr.appendChild(text("th", "", h)); });
    head.appendChild(tr);
    function fixed(v) { return v === null ? "—" : v.toFixed(4); }
    keys.slice(1).forEach(function (k, j) {
      metrics.forEach(function (m) {
        var a = [], b = [], clusters = [];
        rows.forEach(function (r) {
          var x = r.samples[0].metrics[m], y = r.samples[j + 1].metrics[m];
          if (!isNum(x) && typeof x !== "boolean") return;
          if (!isNum(y) && typeof y !== "boolean") return;
          a.push(Number(x)); b.push(Number(y));
          var c = r.samples[0].cluster !== null ? r.samples[0].cluster : r.samples[j + 1].cluster;
          clusters.push(c === null ? null : JSON.stringify(c));
        });
        if (!a.length) return;
        var found = pairedDifference(a, b, clusters.every(function (c) { return c !== null; }) ? clusters : null);
        var row = document.createElement("tr"); row.setAttribute("data-run", k); row.setAttribute("data-metric", m);
        [k + " − " + keys[0], m, fixed(found.diff), fixed(found.se),
         found.se === null ? "—" : "[" + fixed(found.diff - Z_HALF * found.se) + ", " + fixed(found.diff + Z_HALF * found.se) + "]",
         found.p === null ? "—" : found.p < 1e-4 ? found.p.toExponential(1) : found.p.toFixed(4),
         fixed(found.mde), found.n + (found.clusters === null ? "" : " in " + found.clusters + " clusters")
        ].forEach(function (cell, i) { row.appendChild(text("td", i >= 2 ? "num" : "", cell)); });
        ["diff", "se", "p", "mde"].forEach(function (f) { if (found[f] !== null) row.setAttribute("data-" + f, String(found[f])); });
        body.appendChild(row);
      });
    });
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

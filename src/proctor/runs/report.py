"""``report.html``: one self-contained page (inline CSS, JS and SVG; no network) for a run folder.

Sections: summary table with standard errors, group roll-ups, per-task charts (each metric with
a 95% interval; breakdowns where the task has them), a calibration plot for every
multiple-choice task, and a searchable browser over every sample.
"""

from __future__ import annotations

import html
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from proctor.runs.export import iter_samples, load_results

REPORT_FILE = "report.html"
N_BINS = 10


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def fmt(value: Any) -> str:
    """How the report prints a metric: 4 decimals, '—' for none, 'nan' for NaN."""
    if value is None:
        return "—"
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, (int, float)):
        return f"{value:.4f}"
    return _esc(value)


def _num_attr(value: Any) -> str:
    return "" if value is None else _esc(json.dumps(value))


def _metric_rows(name: str, entry: dict, kind: str, extra: str = "") -> list[str]:
    rows = []
    first = True
    for metric, m in entry["metrics"].items():
        rows.append(
            f'<tr data-row="{_esc(kind)}:{_esc(name)}:{_esc(metric)}">'
            f'<td>{_esc(name) if first else ""}</td>{extra if first else "<td></td>" * extra.count("<td")}'
            f'<td>{_esc(metric)}</td>'
            f'<td class="num value" data-value="{_num_attr(m.get("value"))}">{fmt(m.get("value"))}</td>'
            f'<td class="num stderr" data-value="{_num_attr(m.get("stderr"))}">{fmt(m.get("stderr"))}</td></tr>'
        )
        first = False
    return rows


def summary_table(results: dict) -> str:
    rows = []
    for name, task in results.get("tasks", {}).items():
        extra = f'<td>{_esc(task.get("kind", ""))}</td><td class="num">{task.get("n_samples", "")}</td>'
        rows += _metric_rows(name, task, "task", extra)
    head = "<tr><th>task</th><th>kind</th><th>n</th><th>metric</th><th>value</th><th>± stderr</th></tr>"
    return f'<table id="summary"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def groups_table(results: dict) -> str:
    groups = results.get("groups") or {}
    if not groups:
        return "<p class='muted'>No task declares a group, competency or language.</p>"
    rows = []
    for name, group in groups.items():
        extra = f'<td>{_esc(", ".join(group.get("tasks", [])))}</td><td class="num">{group.get("n_samples", "")}</td>'
        rows += _metric_rows(name, group, "group", extra)
    head = "<tr><th>group</th><th>tasks</th><th>n</th><th>metric</th><th>value (macro)</th><th>± stderr</th></tr>"
    return f'<table id="groups"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def bar_chart(items: list[tuple[str, float | None, float | None]], title: str) -> str:
    """Horizontal bars with 95% whiskers; the axis spans the data (and zero)."""
    values = [(label, v, s) for label, v, s in items if isinstance(v, (int, float)) and math.isfinite(v)]
    if not values:
        return ""
    lows = [v - 1.96 * (s or 0) for _, v, s in values] + [0.0]
    highs = [v + 1.96 * (s or 0) for _, v, s in values] + [0.0]
    lo, hi = min(lows), max(highs)
    if hi - lo < 1e-12:
        hi = lo + 1
    width, left, bar_h = 460, 150, 18
    height = 28 + bar_h * len(values) + 6 * len(values)

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (width - left - 60)

    parts = [f'<svg class="chart" width="{width}" height="{height}" role="img" aria-label="{_esc(title)}">',
             f'<text x="4" y="14" class="ctitle">{_esc(title)}</text>',
             f'<line x1="{x(0):.1f}" y1="20" x2="{x(0):.1f}" y2="{height - 2}" class="axis"/>']
    for i, (label, v, s) in enumerate(values):
        y = 24 + i * (bar_h + 6)
        x0, x1 = sorted((x(0), x(v)))
        parts.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end" class="lbl">{_esc(label[:24])}</text>')
        parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{bar_h}" class="bar"><title>{_esc(label)}: {fmt(v)} ± {fmt(s)}</title></rect>')
        if s:
            a, b = x(v - 1.96 * s), x(v + 1.96 * s)
            parts.append(f'<line x1="{a:.1f}" y1="{y + bar_h / 2}" x2="{b:.1f}" y2="{y + bar_h / 2}" class="whisker"/>')
        parts.append(f'<text x="{max(x1, x(v + 1.96 * (s or 0))) + 4:.1f}" y="{y + 13}" class="lbl">{fmt(v)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def task_charts(results: dict) -> str:
    blocks = []
    for name, task in results.get("tasks", {}).items():
        charts = [bar_chart([(m, e.get("value"), e.get("stderr")) for m, e in task["metrics"].items()], f"{name}: metrics (95% interval)")]
        for key, parts in (task.get("breakdown") or {}).items():
            for metric in list(task["metrics"])[:2]:
                charts.append(bar_chart([(k, p["metrics"][metric]["value"], p["metrics"][metric]["stderr"]) for k, p in parts.items()], f"{name}: {metric} by {key}"))
        blocks.append(f'<div class="task-charts" data-task="{_esc(name)}">{"".join(charts)}</div>')
    return "".join(blocks)


def calibration(records: list[dict]) -> dict | None:
    """Confidence (top probability) against accuracy in equal-width bins, and the ECE."""
    points = []
    for r in records:
        dist, target = r.get("distribution"), r.get("target")
        if not dist or target is None or r.get("mc_format") == "generate":  # a lettered reply has no probabilities
            continue
        golds = set(target) if isinstance(target, list) else {target}
        top = max(range(len(dist)), key=lambda i: dist[i])
        points.append((dist[top], 1.0 if top in golds else 0.0))
    if not points:
        return None
    bins: list[list[tuple[float, float]]] = [[] for _ in range(N_BINS)]
    for conf, correct in points:
        bins[min(int(conf * N_BINS), N_BINS - 1)].append((conf, correct))
    table = []
    ece = 0.0
    for i, members in enumerate(bins):
        if not members:
            continue
        conf = sum(c for c, _ in members) / len(members)
        acc = sum(a for _, a in members) / len(members)
        ece += len(members) / len(points) * abs(conf - acc)
        table.append({"bin": [i / N_BINS, (i + 1) / N_BINS], "n": len(members), "confidence": conf, "accuracy": acc})
    return {"bins": table, "ece": ece, "n": len(points)}


def calibration_svg(name: str, cal: dict) -> str:
    size, pad = 240, 30
    inner = size - 2 * pad

    def px(v: float) -> float:
        return pad + v * inner

    def py(v: float) -> float:
        return size - pad - v * inner

    parts = [f'<svg class="chart calibration" width="{size}" height="{size + 10}" role="img" aria-label="calibration {_esc(name)}">',
             f'<text x="4" y="14" class="ctitle">{_esc(name)} · ECE {cal["ece"]:.4f} · n={cal["n"]}</text>',
             f'<rect x="{pad}" y="{pad}" width="{inner}" height="{inner}" class="frame"/>',
             f'<line x1="{px(0)}" y1="{py(0)}" x2="{px(1)}" y2="{py(1)}" class="diag"/>',
             f'<text x="{size / 2}" y="{size - 4}" text-anchor="middle" class="lbl">confidence</text>',
             f'<text x="10" y="{size / 2}" transform="rotate(-90 10 {size / 2})" text-anchor="middle" class="lbl">accuracy</text>']
    points = " ".join(f"{px(b['confidence']):.1f},{py(b['accuracy']):.1f}" for b in cal["bins"])
    parts.append(f'<polyline points="{points}" class="curve"/>')
    for b in cal["bins"]:
        r = 2 + min(6, math.sqrt(b["n"]))
        parts.append(f'<circle cx="{px(b["confidence"]):.1f}" cy="{py(b["accuracy"]):.1f}" r="{r:.1f}" class="dot">'
                     f'<title>confidence {b["confidence"]:.3f}, accuracy {b["accuracy"]:.3f}, n={b["n"]}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def _sample_view(r: dict) -> dict:
    prompt = r.get("rendered_prompt") or r.get("prompt")
    if isinstance(prompt, list):
        prompt = "\n".join(f"[{m.get('role')}] {m.get('content')}" for m in prompt)
    view = {"task": r.get("task"), "id": str(r.get("id")), "prompt": prompt or "", "target": r.get("target"), "metrics": r.get("metrics") or {}}
    if r.get("mc_format") == "generate":  # lettered generation: the prompt sent and the raw reply, no probabilities
        view["prompt"] = r.get("prompt_sent") or view["prompt"]
        view["choices"] = r.get("choices") or []
        view["probs"] = None
        view["prediction"] = r.get("prediction")
        view["generation"] = r.get("generation")
        view["formulation"] = f"lettered generation · letter read: {r.get('extracted') or 'none (unparsed)'}"
    elif r.get("choices") is not None:
        view["choices"] = r["choices"]
        view["probs"] = r.get("distribution")
        view["prediction"] = r.get("prediction")
    elif "generation" in r:
        view["generation"] = r.get("generation")
        view["prediction"] = r.get("extracted")
    else:
        view["prediction"] = {k: r.get(k) for k in ("logprob", "n_tokens") if k in r}
    return view


def _script_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def formulation_notes(results: dict) -> str:
    """How each multiple-choice task was scored, and every warning the run recorded."""
    lines = []
    for name, task in results.get("tasks", {}).items():
        if task.get("mc_format") == "generate":
            unparsed = task.get("unparsed") or {}
            lines.append(f'<li class="formulation" data-task="{_esc(name)}">{_esc(name)}: lettered generation (a letter read from '
                         f'the reply; no probabilities, no calibration) · unparsed {unparsed.get("count", "?")} of '
                         f'{unparsed.get("n", "?")} ({100 * unparsed.get("rate", 0):.1f}%)</li>')
        elif task.get("mc_format") == "loglikelihood":
            lines.append(f'<li class="formulation" data-task="{_esc(name)}">{_esc(name)}: log-likelihood of each choice</li>')
    for warning in results.get("warnings", []):
        lines.append(f'<li class="warning">warning: {_esc(warning)}</li>')
    return f'<ul class="formulations">{"".join(lines)}</ul>' if lines else ""


def render_report(run_dir: Path) -> str:
    run_dir = Path(run_dir)
    results = load_results(run_dir)
    records = list(iter_samples(run_dir))
    by_task: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_task[r.get("task")].append(r)
    cal_blocks = []
    for name, task in results.get("tasks", {}).items():
        if task.get("kind") == "multiple_choice":
            cal = calibration(by_task.get(name, []))
            if cal:
                cal_blocks.append(f'<div class="cal" data-task="{_esc(name)}">{calibration_svg(name, cal)}</div>')
    model = results.get("model", {})
    samples = _finite([_sample_view(r) for r in records])
    meta = (f'model <b>{_esc(model.get("model", "?"))}</b> · status <b>{_esc(results.get("status"))}</b> · '
            f'created {_esc(results.get("created"))} · proctor {_esc(results.get("proctor_version"))}')
    meta += formulation_notes(results)
    command = " ".join(results.get("command") or [])
    task_names = "".join(f"<option>{_esc(n)}</option>" for n in results.get("tasks", {}))
    return _PAGE.format(
        title=_esc(f"proctor report · {model.get('model', '?')}"),
        css=_CSS,
        meta=meta,
        command=_esc(command) if command else "—",
        summary=summary_table(results),
        groups=groups_table(results),
        charts=task_charts(results) or "<p class='muted'>No metrics.</p>",
        calibration="".join(cal_blocks) or "<p class='muted'>No multiple-choice task in this run.</p>",
        task_options=task_names,
        samples=_script_json(samples),
        js=_JS,
    )


def write_report(run_dir: Path, path: Path | None = None) -> Path:
    target = path or Path(run_dir) / REPORT_FILE
    text = render_report(Path(run_dir))
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)
    return target


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#777}
.chart{margin:6px 12px 6px 0;background:#fafafa;border:1px solid #eee}.ctitle{font-size:12px;font-weight:600}
.lbl{font-size:11px;fill:#333}.bar{fill:#6a8fc7}.whisker{stroke:#222;stroke-width:1.5}.axis{stroke:#999}
.frame{fill:none;stroke:#ccc}.diag{stroke:#bbb;stroke-dasharray:4 3}.curve{fill:none;stroke:#c7623a;stroke-width:2}.dot{fill:#c7623a}
.task-charts,.cal{display:inline-block;vertical-align:top}
#controls{margin:8px 0}#controls input{width:320px;padding:4px}
.sample{border:1px solid #e3e3e3;border-radius:4px;margin:8px 0;padding:8px}
.sample pre{white-space:pre-wrap;background:#f6f6f6;padding:6px;margin:4px 0;max-height:240px;overflow:auto}
.choice{display:flex;gap:8px;align-items:center}.pbar{height:8px;background:#6a8fc7;display:inline-block}
.gold{font-weight:700;color:#1b7a36}.pred{text-decoration:underline}.tag{font-size:12px;color:#555}
"""

_JS = r"""
(function () {
  "use strict";
  var samples = JSON.parse(document.getElementById("samples-data").textContent);
  var search = document.getElementById("search"), taskSel = document.getElementById("task-filter");
  var list = document.getElementById("sample-list"), count = document.getElementById("match-count");
  var LIMIT = 100;
  function text(tag, cls, content) {
    var el = document.createElement(tag); if (cls) el.className = cls; el.textContent = content; return el;
  }
  function haystack(s) {
    return [s.id, s.task, s.prompt, JSON.stringify(s.target), JSON.stringify(s.prediction),
            (s.choices || []).join(" "), s.generation || ""].join(" ").toLowerCase();
  }
  samples.forEach(function (s) { s._text = haystack(s); });
  function card(s) {
    var div = document.createElement("div"); div.className = "sample"; div.setAttribute("data-id", s.id);
    div.appendChild(text("div", "tag", s.task + " · " + s.id));
    div.appendChild(text("pre", "prompt", s.prompt));
    var golds = Array.isArray(s.target) ? s.target : [s.target];
    if (s.choices) {
      s.choices.forEach(function (c, i) {
        var row = document.createElement("div"); row.className = "choice";
        var p = s.probs ? s.probs[i] : null;
        var bar = document.createElement("span"); bar.className = "pbar"; bar.style.width = Math.round((p || 0) * 200) + "px";
        row.appendChild(bar);
        row.appendChild(text("span", "prob", p === null ? "—" : p.toFixed(4)));
        var label = text("span", (golds.indexOf(i) >= 0 ? "gold " : "") + (s.prediction === i ? "pred" : ""), c);
        row.appendChild(label); div.appendChild(row);
      });
      if (s.generation !== undefined) div.appendChild(text("pre", "generation", s.generation));
      if (s.formulation) div.appendChild(text("div", "tag", s.formulation));
      div.appendChild(text("div", "tag", "prediction: " + s.prediction + " · target: " + JSON.stringify(s.target)));
    } else {
      if (s.generation !== undefined) div.appendChild(text("pre", "generation", s.generation));
      div.appendChild(text("div", "tag", "prediction: " + JSON.stringify(s.prediction) + " · target: " + JSON.stringify(s.target)));
    }
    var m = Object.keys(s.metrics).map(function (k) { return k + "=" + s.metrics[k]; }).join("  ");
    div.appendChild(text("div", "tag metrics", m));
    return div;
  }
  function render() {
    var q = search.value.trim().toLowerCase(), t = taskSel.value;
    var words = q ? q.split(/\s+/) : [];
    var hits = samples.filter(function (s) {
      if (t && s.task !== t) return false;
      return words.every(function (w) { return s._text.indexOf(w) >= 0; });
    });
    list.textContent = "";
    hits.slice(0, LIMIT).forEach(function (s) { list.appendChild(card(s)); });
    count.textContent = hits.length + " of " + samples.length + " samples match" + (hits.length > LIMIT ? " (first " + LIMIT + " shown)" : "");
    count.setAttribute("data-matches", String(hits.length));
  }
  search.addEventListener("input", render);
  taskSel.addEventListener("change", render);
  render();
})();
"""

_PAGE = """<!DOCTYPE html>
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
<select id="task-filter"><option value="">all tasks</option>{task_options}</select> <span id="match-count"></span></div>
<div id="sample-list"></div>
<script id="samples-data" type="application/json">{samples}</script>
<script>{js}</script>
</body></html>
""".replace("{bins}", str(N_BINS))

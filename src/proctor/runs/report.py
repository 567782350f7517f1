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

from proctor.runs.run_exports import iter_samples, load_results
from proctor.runs.report_assets import CSS as _CSS, JS as _JS, PAGE as _PAGE

REPORT_FILE = "report.html"
N_BINS = 10  # calibration bins (report_assets.PAGE says so too)


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
    for entry in results.get("skipped", []):
        rows.append(f'<tr class="skipped"><td>{_esc(entry.get("task") or entry.get("file"))}</td><td colspan="5">not run '
                    f'({_esc(entry.get("stage") or "skipped")}): {_esc(entry.get("error"))}</td></tr>')
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


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (1, 2, 2.5 or 5 times a power of ten apart)."""
    span = hi - lo if hi > lo else 1.0
    raw = span / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    ticks = [round(first, 10)]
    while ticks[-1] < hi - step * 1e-9:  # the last tick reaches hi
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _tick_label(value: float) -> str:
    return f"{value:.4g}"


def bar_chart(items: list[tuple[str, float | None, float | None]], title: str) -> str:
    """Horizontal bars with 95% whiskers and a labelled value axis; labels are never cut."""
    values = [(label, v, s) for label, v, s in items if isinstance(v, (int, float)) and math.isfinite(v)]
    if not values:
        return ""
    lows = [v - 1.96 * (s or 0) for _, v, s in values] + [0.0]
    highs = [v + 1.96 * (s or 0) for _, v, s in values] + [0.0]
    ticks = nice_ticks(min(lows), max(highs))
    lo, hi = ticks[0], ticks[-1]
    if hi - lo < 1e-12:
        hi = lo + 1
    bar_h = 18
    left = 16 + 6.5 * max(len(str(label)) for label, _, _ in values)  # room for the longest label
    plot = 300
    width = int(max(left + plot + 70, 7 * len(title) + 12))
    top = 24
    bottom = top + (bar_h + 6) * len(values)
    height = bottom + 22

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * plot

    parts = [f'<svg class="chart bars" width="{width}" height="{height}" role="img" aria-label="{_esc(title)}">',
             f'<text x="4" y="14" class="ctitle">{_esc(title)}</text>']
    for t in ticks:  # the value axis: grid line and label per tick
        parts.append(f'<line x1="{x(t):.1f}" y1="{top - 4}" x2="{x(t):.1f}" y2="{bottom}" class="grid"/>')
        parts.append(f'<text x="{x(t):.1f}" y="{bottom + 14}" text-anchor="middle" class="tick">{_tick_label(t)}</text>')
    parts.append(f'<line x1="{x(0):.1f}" y1="{top - 4}" x2="{x(0):.1f}" y2="{bottom}" class="axis"/>')
    parts.append(f'<line x1="{left:.1f}" y1="{bottom}" x2="{left + plot:.1f}" y2="{bottom}" class="axis"/>')
    for i, (label, v, s) in enumerate(values):
        y = top + i * (bar_h + 6)
        x0, x1 = sorted((x(0), x(v)))
        parts.append(f'<text x="{left - 6:.1f}" y="{y + 13}" text-anchor="end" class="lbl">{_esc(label)}</text>')
        parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{bar_h}" class="bar"><title>{_esc(label)}: {fmt(v)} ± {fmt(s)}</title></rect>')
        if s:
            a, b = x(v - 1.96 * s), x(v + 1.96 * s)
            parts.append(f'<line x1="{a:.1f}" y1="{y + bar_h / 2}" x2="{b:.1f}" y2="{y + bar_h / 2}" class="whisker"/>')
        parts.append(f'<text x="{max(x1, x(v + 1.96 * (s or 0))) + 4:.1f}" y="{y + 13}" class="lbl val">{fmt(v)}</text>')
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
    size, pad = 260, 40
    inner = size - 2 * pad

    def px(v: float) -> float:
        return pad + v * inner

    def py(v: float) -> float:
        return size - pad - v * inner

    parts = [f'<svg class="chart calibration" width="{size + 10}" height="{size + 14}" role="img" aria-label="calibration {_esc(name)}">',
             f'<text x="4" y="14" class="ctitle">ECE {cal["ece"]:.4f} · n={cal["n"]}</text>',
             f'<rect x="{pad}" y="{pad}" width="{inner}" height="{inner}" class="frame"/>',
             f'<line x1="{px(0)}" y1="{py(0)}" x2="{px(1)}" y2="{py(1)}" class="diag"/>',
             f'<text x="{size / 2}" y="{size + 6}" text-anchor="middle" class="lbl">confidence</text>',
             f'<text x="10" y="{size / 2}" transform="rotate(-90 10 {size / 2})" text-anchor="middle" class="lbl">accuracy</text>']
    for t in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0):  # axis values on both axes
        parts.append(f'<text x="{px(t):.1f}" y="{py(0) + 14:.1f}" text-anchor="middle" class="tick">{t:.1f}</text>')
        parts.append(f'<text x="{px(0) - 4:.1f}" y="{py(t) + 4:.1f}" text-anchor="end" class="tick">{t:.1f}</text>')
        parts.append(f'<line x1="{px(t):.1f}" y1="{py(0):.1f}" x2="{px(t):.1f}" y2="{py(0) + 3:.1f}" class="axis"/>')
        parts.append(f'<line x1="{px(0) - 3:.1f}" y1="{py(t):.1f}" x2="{px(0):.1f}" y2="{py(t):.1f}" class="axis"/>')
    points = " ".join(f"{px(b['confidence']):.1f},{py(b['accuracy']):.1f}" for b in cal["bins"])
    parts.append(f'<polyline points="{points}" class="curve"/>')
    for b in cal["bins"]:
        r = 2 + min(6, math.sqrt(b["n"]))
        parts.append(f'<circle cx="{px(b["confidence"]):.1f}" cy="{py(b["accuracy"]):.1f}" r="{r:.1f}" class="dot">'
                     f'<title>confidence {b["confidence"]:.3f}, accuracy {b["accuracy"]:.3f}, n={b["n"]}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def _content_text(content: Any) -> str:
    """A message's content as text; image content parts show as ``[image]``."""
    if isinstance(content, list):
        return "".join("[image] " if isinstance(p, dict) and p.get("type") in ("image", "image_url") else
                       str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def _choice_text(choices: list, index: Any) -> str:
    if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(choices):
        return f"{index}: {choices[index]}"
    return "—" if index is None else str(index)


def primary_metrics(records: list[dict]) -> dict[str, str]:
    """Per task, the first metric whose every per-sample value is 0 or 1: it decides correct / incorrect."""
    seen: dict[str, dict[str, bool]] = defaultdict(dict)
    order: dict[str, list[str]] = defaultdict(list)
    for r in records:
        for name, value in (r.get("metrics") or {}).items():
            if name not in seen[r.get("task")]:
                seen[r.get("task")][name] = True
                order[r.get("task")].append(name)
            if value is not None and value not in (0, 1):
                seen[r.get("task")][name] = False
    return {task: next((m for m in order[task] if flags[m]), "") for task, flags in seen.items()}


def status(r: dict, primary: str) -> str:
    """correct / incorrect by the task's 0/1 metric; unparsed when no answer could be read from a generation."""
    if r.get("parsed") is False or (r.get("mc_format") == "generate" and r.get("extracted") is None):
        return "unparsed"  # no answer read from a generation (lettered multiple choice: no letter)
    value = (r.get("metrics") or {}).get(primary) if primary else None
    if value is None:
        return "unscored"
    return "correct" if value == 1 else "incorrect"


def _sample_view(r: dict, primary: str = "") -> dict:
    prompt = r.get("rendered_prompt") or r.get("prompt")
    if isinstance(prompt, list):
        prompt = "\n".join(f"[{m.get('role')}] {_content_text(m.get('content'))}" for m in prompt)
    view = {"task": r.get("task"), "id": str(r.get("id")), "prompt": prompt or "", "target": r.get("target"),
            "metrics": r.get("metrics") or {}, "status": status(r, primary)}
    thumbnails = [i.get("thumbnail") for i in r.get("images") or () if str(i.get("thumbnail", "")).startswith("data:image/")]
    if thumbnails:  # small data URIs made when the images were read (the report stays self-contained)
        view["images"] = thumbnails
    target = r.get("target")
    golds = target if isinstance(target, list) else [target]
    if r.get("mc_format") == "generate":  # lettered generation: the prompt sent and the raw reply, no probabilities
        choices = list(r.get("choices") or [])
        view["prompt"] = r.get("prompt_sent") or view["prompt"]
        view["choices"] = choices
        view["probs"] = None
        view["prediction"] = r.get("prediction")
        view["prediction_text"] = _choice_text(choices, r.get("prediction"))
        view["target_text"] = " | ".join(_choice_text(choices, g) for g in golds)
        view["generation"] = r.get("generation")
        view["formulation"] = f"lettered generation · letter read: {r.get('extracted') or 'none (unparsed)'}"
    elif r.get("choices") is not None:
        choices = list(r["choices"])
        view["choices"] = choices
        view["probs"] = r.get("distribution")
        view["prediction"] = r.get("prediction")
        view["prediction_text"] = _choice_text(choices, r.get("prediction"))
        view["target_text"] = " | ".join(_choice_text(choices, g) for g in golds)
        if "generation" in r:  # lettered multiple choice: the reply the letter was read from
            view["generation"] = r.get("generation")
    elif "generation" in r:
        view["generation"] = r.get("generation")
        view["prediction"] = r.get("extracted")
        view["prediction_text"] = "(no answer found)" if r.get("parsed") is False else str(r.get("extracted"))
        view["target_text"] = " | ".join(map(str, target)) if isinstance(target, list) else str(target)
        if r.get("epochs"):
            view["epochs"] = [e.get("generation") for e in r["epochs"]]
    else:
        view["prediction"] = {k: r.get(k) for k in ("logprob", "n_tokens") if k in r}
        view["prediction_text"] = ", ".join(f"{k}={fmt(v) if isinstance(v, float) else v}" for k, v in view["prediction"].items())
        view["target_text"] = "—" if target is None else str(target)
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
    stages = {"load": "could not load", "prepare": "could not prepare", "run": "failed while running"}
    for entry in results.get("skipped", []):  # what did not run is part of the report
        name = f"task {entry['task']} ({entry.get('file')})" if entry.get("task") else entry.get("file")
        lines.append(f'<li class="warning skipped">not run: {_esc(name)} {stages.get(entry.get("stage"), "was skipped")}: '
                     f'{_esc(entry.get("error"))}</li>')
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
                cal_blocks.append(f'<div class="cal" data-task="{_esc(name)}"><div class="cname">{_esc(name)}</div>{calibration_svg(name, cal)}</div>')
    model = results.get("model", {})
    primary = primary_metrics(records)
    samples = _finite([_sample_view(r, primary.get(r.get("task"), "")) for r in records])
    metric_names = sorted({m for r in records for m in (r.get("metrics") or {})})
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
        metric_options="".join(f"<option>{_esc(m)}</option>" for m in metric_names),
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

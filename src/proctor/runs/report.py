"""``report.html``: one self-contained page (inline CSS, JS and SVG; no network) for a run folder.

The page is the viewer's (runs/viewer.py) with one run in it: summary table with standard errors,
group roll-ups, per-task charts (each metric with a 95% interval; breakdowns where the task has
them), a calibration plot for every task scored by per-choice probabilities, and a sortable,
searchable browser over every sample. Markup is in ``runs/templates`` (Jinja2, autoescaped); this
module computes what the templates draw. The samples go into the page as samples.jsonl's own lines;
``runs/static/viewer.js`` turns each record into what a card shows (every dialect writes the same
fields for choices and for generations: docs/results.md), in the browser, where a run of 100,000
samples is read in about a second.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.core.errors import ProctorError
from proctor.runs.results import write_output
from proctor.runs.run_exports import iter_samples, load_results, samples_text

if TYPE_CHECKING:
    import jinja2

N_BINS = 10  # calibration bins

REPORT_FILE = "report.html"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("proctor.runs", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = fmt
    env.filters["num_attr"] = lambda v: "" if v is None else json.dumps(v)
    return env


def static_text(name: str) -> str:
    """A file shipped in ``runs/static`` (the page's script and style sheet)."""
    from importlib.resources import files

    return files("proctor.runs").joinpath("static").joinpath(name).read_text(encoding="utf-8")


def calibration(records: list[dict[str, Any]]) -> dict[str, Any] | None:
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


def script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` that could end it."""
    return script_text(json.dumps(value, ensure_ascii=False, allow_nan=False, default=str))


def script_text(json_text: str) -> str:
    """JSON text (or JSON lines) made safe inside ``<script>``: outside strings JSON has no ``<``, ``>`` or
    ``&``, so their escapes change no value."""
    return json_text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def finite(value: Any) -> Any:
    """NaN and infinities as None (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def fmt(value: Any) -> str:
    """How the report prints a metric: 4 decimals, '—' for none, 'nan' for NaN."""
    if value is None:
        return "—"
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, (int, float)):
        return f"{value:.4f}"
    return str(value)


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


def bar_chart(items: list[tuple[str, float | None, float | None]], title: str) -> dict[str, Any] | None:
    """Geometry of horizontal bars with 95% whiskers on a labelled value axis; labels are never cut."""
    values = [(str(label), v, s) for label, v, s in items if isinstance(v, (int, float)) and math.isfinite(v)]
    if not values:
        return None
    lows = [v - 1.96 * (s or 0) for _, v, s in values] + [0.0]
    highs = [v + 1.96 * (s or 0) for _, v, s in values] + [0.0]
    ticks = nice_ticks(min(lows), max(highs))
    lo, hi = ticks[0], ticks[-1]
    if hi - lo < 1e-12:
        hi = lo + 1
    bar_h, top, plot = 18, 24, 300
    left = 16 + 6.5 * max(len(label) for label, _, _ in values)  # room for the longest label
    bottom = top + (bar_h + 6) * len(values)

    def x(v: float) -> float:
        return round(left + (v - lo) / (hi - lo) * plot, 1)

    bars = []
    for i, (label, v, s) in enumerate(values):
        y = top + i * (bar_h + 6)
        x0, x1 = sorted((x(0), x(v)))
        bars.append(
            {
                "label": label,
                "y": y,
                "x0": x0,
                "width": max(round(x1 - x0, 1), 1),
                "value": v,
                "stderr": s,
                "whisker": (x(v - 1.96 * s), x(v + 1.96 * s)) if s else None,
                "value_x": max(x1, x(v + 1.96 * (s or 0))) + 4,
            }
        )
    return {
        "title": title,
        "width": int(max(left + plot + 70, 7 * len(title) + 12)),
        "height": bottom + 22,
        "left": left,
        "plot": plot,
        "top": top,
        "bottom": bottom,
        "bar_h": bar_h,
        "zero": x(0),
        "ticks": [{"x": x(t), "label": f"{t:.4g}"} for t in ticks],
        "bars": bars,
    }


def calibration_chart(cal: dict[str, Any], size: int = 260, pad: int = 40) -> dict[str, Any]:
    inner = size - 2 * pad

    def px(v: float) -> float:
        return round(pad + v * inner, 1)

    def py(v: float) -> float:
        return round(size - pad - v * inner, 1)

    return {
        "size": size,
        "pad": pad,
        "inner": inner,
        "ece": cal["ece"],
        "n": cal["n"],
        "ticks": [{"label": f"{t:.1f}", "x": px(t), "y": py(t)} for t in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)],
        "x0": px(0),
        "y0": py(0),
        "x1": px(1),
        "y1": py(1),
        "points": [
            {"x": px(b["confidence"]), "y": py(b["accuracy"]), "r": round(2 + min(6, math.sqrt(b["n"])), 1), **b}
            for b in cal["bins"]
        ],
    }


def _metric_rows(name: str, entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"metric": metric, "value": m.get("value"), "stderr": m.get("stderr")} for metric, m in entry["metrics"].items()
    ]


def calibrations(results: dict[str, Any], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per task whose samples have choices (whatever the dialect or kind): its calibration plot, or why there is
    none."""
    by_task: dict[str | None, list[dict[str, Any]]] = defaultdict(list)  # a record without a task goes under None
    for r in records:
        by_task[r.get("task")].append(r)
    out = []
    for name, task in (results.get("tasks") or {}).items():
        mine = by_task.get(name, [])
        if not any(r.get("choices") is not None for r in mine):
            continue
        cal = calibration(mine)
        if cal:
            out.append({"task": name, "chart": calibration_chart(cal), "note": ""})
        else:
            why = (
                "lettered generation: a letter is no probability"
                if task.get("mc_format") == "generate"
                else "no sample has a gold answer to calibrate against"
                if any(r.get("distribution") for r in mine)
                else "choices read from a generation: no per-choice probabilities"
            )
            out.append({"task": name, "chart": None, "note": why})
    return out


def summary_context(results: dict[str, Any], records: list[dict[str, Any]] | None) -> dict[str, Any]:
    """What the run's summary fragment shows: tables, charts, scoring notes, and calibration (read from the
    records; without them the page asks for that section on its own)."""
    tasks, charts = [], []
    for name, task in (results.get("tasks") or {}).items():
        tasks.append(
            {
                "name": name,
                "kind": task.get("kind", ""),
                "n": task.get("n_samples", ""),
                "rows": _metric_rows(name, task),
            }
        )
        drawn = [
            bar_chart(
                [(m, e.get("value"), e.get("stderr")) for m, e in task["metrics"].items()],
                f"{name}: metrics (95% interval)",
            )
        ]
        for key, parts in (task.get("breakdown") or {}).items():
            for metric in list(task["metrics"])[:2]:
                drawn.append(
                    bar_chart(
                        [
                            (k, p["metrics"].get(metric, {}).get("value"), p["metrics"].get(metric, {}).get("stderr"))
                            for k, p in parts.items()
                        ],
                        f"{name}: {metric} by {key}",
                    )
                )
        charts.append({"task": name, "charts": [c for c in drawn if c]})
    groups = [
        {
            "name": name,
            "tasks": ", ".join(g.get("tasks", [])),
            "n": g.get("n_samples", ""),
            "rows": _metric_rows(name, g),
        }
        for name, g in (results.get("groups") or {}).items()
    ]
    formulations = []
    for name, task in (results.get("tasks") or {}).items():
        if task.get("mc_format") == "generate":
            u = task.get("unparsed") or {}
            formulations.append(
                {
                    "task": name,
                    "text": f"{name}: lettered generation (a letter read from the reply; no probabilities, "
                    f"no calibration) · unparsed {u.get('count', '?')} of "
                    f"{u.get('n', '?')} ({100 * u.get('rate', 0):.1f}%)",
                }
            )
        elif task.get("mc_format") == "loglikelihood":
            formulations.append({"task": name, "text": f"{name}: log-likelihood of each choice"})
    model = results.get("model") or {}
    return {
        "model": model.get("model", "?"),
        "status": results.get("status"),
        "created": results.get("created"),
        "version": results.get("proctor_version"),
        "command": " ".join(results.get("command") or []) or "—",
        "formulations": formulations,
        "warnings": results.get("warnings") or [],
        "skipped": skipped(results),
        "tasks": tasks,
        "groups": groups,
        "charts": charts,
        "calibrations": None if records is None else calibrations(results, records),
        "bins": N_BINS,
    }


SKIP_STAGES = {"load": "could not load", "prepare": "could not prepare", "run": "failed while running"}


def skipped(results: dict[str, Any]) -> list[dict[str, Any]]:
    """What did not run (a folder's task that failed to load, prepare or run): part of the report, never dropped."""
    out = []
    for entry in results.get("skipped") or []:
        if not isinstance(entry, dict):
            continue
        name = f"task {entry['task']} ({entry.get('file')})" if entry.get("task") else str(entry.get("file"))
        stage = entry.get("stage")
        says = "was skipped" if stage is None else SKIP_STAGES.get(stage, "was skipped")
        out.append(
            {
                "name": entry.get("task") or entry.get("file"),
                "stage": stage or "skipped",
                "text": f"not run: {name} {says}: {entry.get('error')}",
            }
        )
    return out


def render_summary(results: dict[str, Any], records: list[dict[str, Any]] | None) -> str:
    return environment().get_template("summary.html.j2").render(**summary_context(results, records))


def render_calibration(results: dict[str, Any], records: list[dict[str, Any]]) -> str:
    return (
        environment()
        .get_template("calibration.html.j2")
        .render(calibrations=calibrations(results, records), bins=N_BINS)
    )


def render_page(title: str, data: str, embedded: list[dict[str, Any]]) -> str:
    """The viewer's page: runs index, run, comparison; ``embedded`` carries each run's summary and samples
    (a static page), or is empty when a server answers for them."""
    return (
        environment()
        .get_template("page.html.j2")
        .render(title=title, css=static_text("viewer.css"), js=static_text("viewer.js"), data=data, embedded=embedded)
    )


def _key_metrics(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs table's headline numbers: each group's, then each task's, first metric."""
    out = []
    for kind in ("groups", "tasks"):
        for name, entry in (results.get(kind) or {}).items():
            metrics = entry.get("metrics") or {}
            metric = next(
                (m for m, e in metrics.items() if isinstance(e, dict) and isinstance(e.get("value"), (int, float))),
                None,
            )
            if metric is not None:
                out.append(
                    {"name": name, "metric": metric, "value": metrics[metric]["value"], "group": kind == "groups"}
                )
    return out


def run_entry(run_dir: Path, key: str) -> dict[str, Any]:
    """One row of the runs table; an unreadable folder gives a row that says why."""
    entry: dict[str, Any] = {
        "key": key,
        "model": "?",
        "created": None,
        "status": "?",
        "tasks": [],
        "n_samples": 0,
        "key_metrics": [],
        "error": None,
    }
    try:
        results = load_results(run_dir)
        if not isinstance(results, dict) or not isinstance(results.get("tasks", {}), dict):
            raise ProctorError(f"{run_dir}/results.json is not a proctor results file")
    except ProctorError as exc:
        entry.update(status="unreadable", error=str(exc))
        return entry
    given_model = results.get("model")
    model = given_model if isinstance(given_model, dict) else {}
    tasks = results.get("tasks") or {}
    entry.update(
        model=str(model.get("model") or model.get("path") or "?"),
        created=results.get("created"),
        status=str(results.get("status") or "?"),
        tasks=list(tasks),
        n_samples=sum(
            t.get("n_samples", 0) for t in tasks.values() if isinstance(t, dict) and isinstance(t.get("n_samples"), int)
        ),
    )
    try:
        entry["key_metrics"] = finite(_key_metrics(results))
    except (AttributeError, TypeError):  # a hand-edited file: the row still shows what it can
        entry["key_metrics"] = []
    return entry


def _layout_error(run_dir: Path, exc: Exception) -> str:
    return f"{run_dir}/results.json does not have proctor's layout ({type(exc).__name__}: {exc})"


def readable_records(run_dir: Path, strict: bool = False) -> list[dict[str, Any]]:
    """The run's records up to a torn line, if any (the page names that line: it reads the lines itself);
    ``strict``: a line that is not a record is an error naming it (``proctor report``)."""
    records: list[dict[str, Any]] = []
    try:
        for record in iter_samples(run_dir):
            if isinstance(record, dict):
                records.append(record)
    except ProctorError:
        if strict:
            raise
    return records


def run_summary(run_dir: Path, with_samples: bool = True, strict: bool = False) -> tuple[str, str | None]:
    """A run's summary fragment, or why there is none (a results.json not in proctor's layout). Without
    ``with_samples`` it is made from results.json alone (at once, whatever the run's size) and its
    calibration section is left for ``run_calibration``."""
    results = load_results(run_dir)
    try:
        return render_summary(results, readable_records(run_dir, strict) if with_samples else None), None
    except (AttributeError, TypeError, KeyError) as exc:  # a results.json that is JSON but not proctor's layout
        return "", _layout_error(run_dir, exc)


def run_calibration(run_dir: Path) -> str:
    """The calibration section of a run's summary (reads every sample)."""
    results = load_results(run_dir)
    try:
        return render_calibration(results, readable_records(run_dir))
    except (AttributeError, TypeError, KeyError) as exc:
        raise ProctorError(_layout_error(run_dir, exc)) from None


def static_page(runs: list[tuple[dict[str, Any], Path]], title: str, start: str = "", strict: bool = False) -> str:
    """One file holding every run given (their summaries and samples embedded): no server, no network."""
    embedded = []
    for entry, run_dir in runs:
        if entry.get("error"):
            embedded.append({"summary": "", "samples": "", "error": entry["error"]})
            continue
        summary, error = run_summary(run_dir, strict=strict)
        embedded.append({"summary": summary, "samples": script_text(samples_text(run_dir)), "error": error})
    data = {"mode": "static", "runs": [entry for entry, _ in runs], "start": start}
    return render_page(title, script_json(data), embedded)


def render_report(run_dir: Path) -> str:
    run_dir = Path(run_dir)
    load_results(run_dir)  # a folder without results.json is refused here, with its reason
    entry = run_entry(run_dir, run_dir.resolve().name)
    # one run asked for by name: a damaged samples.jsonl is an error naming its line, not a page without those samples
    return static_page([(entry, run_dir)], title=f"proctor report · {entry['model']}", start=entry["key"], strict=True)


def write_report(run_dir: Path, path: Path | None = None) -> Path:
    target = path or Path(run_dir) / REPORT_FILE
    return write_output(target, render_report(Path(run_dir)))

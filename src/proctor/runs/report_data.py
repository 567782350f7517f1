"""What the report and the viewer show, computed from a run's results.json and samples: the summary's tables,
charts, scoring notes and what did not run; calibration (confidence against accuracy); a row of the runs table.
``runs/report.py`` renders it."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping, TypedDict

from proctor.core.errors import ProctorError
from proctor.runs.documents import ResultsDocument, SampleLine
from proctor.runs.report_charts import Calibration, CalibrationBin, bar_chart, calibration_chart
from proctor.runs.run_exports import load_results
from proctor.runs.task_settings import run_settings

N_BINS = 10  # calibration bins


class _RunRowOptional(TypedDict, total=False):
    predict_only: bool  # --predict-only: answers kept, no metric (absent: a row whose results were not read)


class RunRow(_RunRowOptional):
    """One row of the runs table (the viewer's ``runs``): a run folder's headline facts, or why it has none."""

    key: str  # the folder relative to the one served (the run's name in links)
    model: str
    created: str | None
    status: str
    tasks: list[str]
    n_samples: int
    key_metrics: object  # [{name, metric, value, group}], NaN and infinities as null
    settings: object  # task -> its settings (runs/task_settings.py), NaN and infinities as null
    error: str | None  # why the row has nothing else


def calibration(records: list[SampleLine]) -> Calibration | None:
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
    table: list[CalibrationBin] = []
    ece = 0.0
    for i, members in enumerate(bins):
        if not members:
            continue
        conf = sum(c for c, _ in members) / len(members)
        acc = sum(a for _, a in members) / len(members)
        ece += len(members) / len(points) * abs(conf - acc)
        table.append({"bin": [i / N_BINS, (i + 1) / N_BINS], "n": len(members), "confidence": conf, "accuracy": acc})
    return {"bins": table, "ece": ece, "n": len(points)}


def finite(value: object) -> object:
    """NaN and infinities as None (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def _metric_rows(name: str, entry: Mapping[str, Any]) -> list[dict[str, object]]:
    return [
        {
            "metric": metric,
            "value": m.get("value"),
            "stderr": m.get("stderr"),
            "stderr_clustered": m.get("stderr_clustered"),
            "n_clusters": m.get("n_clusters"),
        }
        for metric, m in entry["metrics"].items()
    ]


def epoch_rows(results: ResultsDocument) -> list[dict[str, object]]:
    """Per task and metric run with ``--epochs``: the within- and between-question variance and the standard
    errors of the mean over questions, with the epochs and as one epoch would give it."""
    return [
        {"task": name, "metric": metric, **found}
        for name, task in (results.get("tasks") or {}).items()
        for metric, found in ((task.get("epochs") or {}).get("variance") or {}).items()
    ]


def _n(metric: Mapping[str, object], owner: Mapping[str, object]) -> int | None:
    """The samples behind a metric's value: those it scored, else its task's or breakdown part's."""
    n = metric.get("n_scored", owner.get("n_samples"))
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def calibrations(results: ResultsDocument, records: list[SampleLine]) -> list[dict[str, object]]:
    """Per task whose samples have choices (whatever the dialect or kind): its calibration plot, or why there is
    none."""
    by_task: dict[str | None, list[SampleLine]] = defaultdict(list)  # a record without a task goes under None
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


def summary_context(results: ResultsDocument, records: list[SampleLine] | None) -> dict[str, object]:
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
                [(m, e.get("value"), e.get("stderr"), _n(e, task)) for m, e in task["metrics"].items()],
                f"{name}: metrics (95% interval)",
            )
        ]
        for key, parts in (task.get("breakdown") or {}).items():
            for metric in list(task["metrics"])[:2]:
                drawn.append(
                    bar_chart(
                        [
                            (
                                k,
                                p["metrics"].get(metric, {}).get("value"),
                                p["metrics"].get(metric, {}).get("stderr"),
                                _n(p["metrics"].get(metric, {}), p),
                            )
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
        "epoch_variance": epoch_rows(results),
        "charts": charts,
        "calibrations": None if records is None else calibrations(results, records),
        "bins": N_BINS,
    }


SKIP_STAGES = {"load": "could not load", "prepare": "could not prepare", "run": "failed while running"}


def skipped(results: ResultsDocument) -> list[dict[str, object]]:
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


def _key_metrics(results: ResultsDocument) -> list[dict[str, object]]:
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


def run_entry(run_dir: Path, key: str) -> RunRow:
    """One row of the runs table; an unreadable folder gives a row that says why."""
    entry: RunRow = {
        "key": key,
        "model": "?",
        "created": None,
        "status": "?",
        "tasks": [],
        "n_samples": 0,
        "key_metrics": [],
        "predict_only": False,  # --predict-only: answers kept, no metric (the key metrics cell says so)
        "settings": {},  # task -> its settings (runs/task_settings.py): the side-by-side page names what differs
        "error": None,
    }
    try:
        results = load_results(run_dir)
        if not isinstance(results, dict) or not isinstance(results.get("tasks", {}), dict):
            raise ProctorError(f"{run_dir}/results.json is not a proctor results file")
    except ProctorError as exc:
        entry.update({"status": "unreadable", "error": str(exc)})
        return entry
    given_model = results.get("model")
    model = given_model if isinstance(given_model, dict) else {}
    tasks = results.get("tasks") or {}
    entry.update(
        {
            "model": str(model.get("model") or model.get("path") or "?"),
            "created": results.get("created"),
            "status": str(results.get("status") or "?"),
            "predict_only": results.get("predict_only") is True,
            "tasks": list(tasks),
            "n_samples": sum(
                t.get("n_samples", 0)
                for t in tasks.values()
                if isinstance(t, dict) and isinstance(t.get("n_samples"), int)
            ),
        }
    )
    entry["settings"] = finite(run_settings(results))
    try:
        entry["key_metrics"] = finite(_key_metrics(results))
    except (AttributeError, TypeError):  # a hand-edited file: the row still shows what it can
        entry["key_metrics"] = []
    return entry

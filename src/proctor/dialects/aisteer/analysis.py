"""Benchmark results as a tidy table, summaries over trials, and trade-off / Pareto plots.

The table has one row per (pipeline, config, trial, metric): ``metric`` is ``Metric.value`` (for
example ``MCQAAccuracy.trial_mean``); only numbers are kept. Plots need matplotlib
(``pip install 'proctor[steer]'``) and are written as PNG files.
"""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, TypedDict

from proctor.core.errors import require
from proctor.dialects.aisteer.metrics import mean, sample_std
from proctor.dialects.aisteer.records import ProfileEntry


class ResultRow(TypedDict):
    """One row of the tidy table (``results.csv``): one number of one metric in one trial."""

    pipeline: str
    config_id: str
    params: str  # the configuration's params as sorted JSON
    trial: int
    metric: str  # ``Metric.value``, e.g. ``MCQAAccuracy.trial_mean``
    value: float


class SummaryRow(TypedDict):
    """One row of ``summary.csv``: a metric over the trials of one configuration."""

    pipeline: str
    config_id: str
    params: str
    metric: str
    n_trials: int
    mean: float | None
    std: float | None


def _numbers(prefix: str, value: object) -> Iterable[tuple[str, float]]:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        if not (isinstance(value, float) and math.isnan(value)):
            yield prefix, float(value)
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _numbers(f"{prefix}.{key}", inner)


def results_table(profiles: Mapping[str, Sequence[ProfileEntry]]) -> list[ResultRow]:
    """Tidy rows: pipeline, config_id, params (JSON), trial, metric, value."""
    rows: list[ResultRow] = []
    for pipeline, entries in profiles.items():
        for entry in entries:
            params = json.dumps(entry.get("params") or {}, sort_keys=True, default=str)
            for metric_name, values in (entry.get("evaluations") or {}).items():
                for metric, value in _numbers(metric_name, values):
                    rows.append(
                        {
                            "pipeline": pipeline,
                            "config_id": entry["config_id"],
                            "params": params,
                            "trial": entry["trial_id"],
                            "metric": metric,
                            "value": value,
                        }
                    )
    return rows


def summarize(rows: Sequence[ResultRow]) -> list[SummaryRow]:
    """Mean and sample std over trials, per (pipeline, config, metric)."""
    groups: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    params: dict[tuple[str, str, str], str] = {}
    for row in rows:
        key = (row["pipeline"], row["config_id"], row["metric"])
        groups[key].append(row["value"])
        params[key] = row["params"]
    return [
        {
            "pipeline": p,
            "config_id": c,
            "params": params[(p, c, m)],
            "metric": m,
            "n_trials": len(v),
            "mean": mean(v),
            "std": sample_std(v),
        }
        for (p, c, m), v in groups.items()
    ]


def write_csv(rows: Sequence[Mapping[str, object]], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = list(rows[0]) if rows else ["pipeline", "config_id", "params", "trial", "metric", "value"]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def to_dataframe(rows: Sequence[Mapping[str, object]]):
    pandas = require("pandas", "steer", "Benchmark tables as DataFrames")
    return pandas.DataFrame(list(rows))


def config_points(rows: Sequence[ResultRow], x: str, y: str) -> list[dict[str, Any]]:
    """One point per configuration with both metrics (means over trials)."""
    summary = {(r["pipeline"], r["config_id"], r["metric"]): r for r in summarize(rows)}
    points = []
    for (pipeline, config, metric), entry in summary.items():
        if metric != x or (pipeline, config, y) not in summary:
            continue
        points.append(
            {
                "pipeline": pipeline,
                "config_id": config,
                "params": entry["params"],
                "x": entry["mean"],
                "y": summary[(pipeline, config, y)]["mean"],
            }
        )
    return points


def pareto_front(
    points: Sequence[Mapping[str, Any]], maximize: tuple[bool, bool] = (True, True)
) -> list[Mapping[str, Any]]:
    """Points no other point beats on both axes (ties kept), sorted by x."""
    sx = 1 if maximize[0] else -1
    sy = 1 if maximize[1] else -1

    def dominated(p: Mapping[str, Any]) -> bool:
        return any(
            sx * q["x"] >= sx * p["x"] and sy * q["y"] >= sy * p["y"] and (q["x"] != p["x"] or q["y"] != p["y"])
            for q in points
        )

    return sorted((p for p in points if not dominated(p)), key=lambda p: p["x"])


def _pyplot():
    matplotlib = require("matplotlib", "steer", "Benchmark plots")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_tradeoff(
    rows: Sequence[ResultRow], x: str, y: str, path: str | Path, maximize: tuple[bool, bool] = (True, True)
) -> Path:
    """Scatter of configurations on two metrics, coloured by pipeline, with the Pareto frontier."""
    plt = _pyplot()
    points = config_points(rows, x, y)
    if not points:
        raise ValueError(f"no configuration has both metrics '{x}' and '{y}'")
    figure, axes = plt.subplots(figsize=(6, 4.5))
    for pipeline in dict.fromkeys(p["pipeline"] for p in points):
        mine = [p for p in points if p["pipeline"] == pipeline]
        axes.scatter([p["x"] for p in mine], [p["y"] for p in mine], label=pipeline, s=40)
    front = pareto_front(points, maximize)
    axes.plot([p["x"] for p in front], [p["y"] for p in front], "k--", linewidth=1, label="Pareto frontier")
    axes.set_xlabel(x)
    axes.set_ylabel(y)
    axes.legend(fontsize=8)
    axes.grid(alpha=0.3)
    return _save(plt, figure, path)


def _save(plt, figure, path: str | Path) -> Path:
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def plot_sensitivity(rows: Sequence[ResultRow], pipeline: str, parameter: str, metric: str, path: str | Path) -> Path:
    """Metric (mean ± std over trials) against one swept parameter (``spec.kwarg``) of a pipeline."""
    plt = _pyplot()
    spec, _, key = parameter.partition(".")
    points = []
    for entry in summarize(rows):
        if entry["pipeline"] != pipeline or entry["metric"] != metric:
            continue
        value = json.loads(entry["params"]).get(spec, {}).get(key)
        if isinstance(value, (int, float)):
            points.append((value, entry["mean"], entry["std"] or 0.0))
    if not points:
        raise ValueError(f"pipeline '{pipeline}' has no numeric parameter '{parameter}' with metric '{metric}'")
    points.sort()
    figure, axes = plt.subplots(figsize=(6, 4.5))
    axes.errorbar([p[0] for p in points], [p[1] for p in points], yerr=[p[2] for p in points], marker="o", capsize=3)
    axes.set_xlabel(parameter)
    axes.set_ylabel(metric)
    axes.set_title(pipeline)
    axes.grid(alpha=0.3)
    return _save(plt, figure, path)

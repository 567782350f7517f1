"""Aggregation: per-sample metric values -> task metrics (with standard errors) -> groups."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Sequence

from proctor.scoring.metrics import MetricDef


def aggregate_metrics(metrics: Sequence[MetricDef], values: dict[str, list[Any]]) -> dict[str, dict]:
    out = {}
    for metric in metrics:
        value, stderr = metric.aggregate(values[metric.name])
        out[metric.name] = {"value": value, "stderr": stderr}
    return out


def breakdown(metrics: Sequence[MetricDef], values: dict[str, list[Any]], keys: Sequence[Any]) -> dict[str, dict]:
    """Metrics per distinct key (e.g. per data file), keys in first-seen order."""
    positions: dict[Any, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        positions[key].append(i)
    out = {}
    for key, indices in positions.items():
        subset = {name: [vals[i] for i in indices] for name, vals in values.items()}
        out[str(key)] = {"n_samples": len(indices), "metrics": aggregate_metrics(metrics, subset)}
    return out


def aggregate_groups(task_results: dict[str, dict], memberships: dict[str, list[str]]) -> dict[str, dict]:
    """Each group: macro mean over member tasks (equal weight) and micro mean (weighted by samples)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for task, names in memberships.items():
        for group in names:
            groups[group].append(task)
    out = {}
    for group, tasks in groups.items():
        shared = set.intersection(*(set(task_results[t]["metrics"]) for t in tasks))
        metrics = {}
        for name in sorted(shared):
            entries = [task_results[t]["metrics"][name] for t in tasks]
            counts = [task_results[t]["n_samples"] for t in tasks]
            values = [e["value"] for e in entries]
            stderrs = [e["stderr"] for e in entries]
            macro = sum(values) / len(values)
            micro = sum(v * n for v, n in zip(values, counts)) / max(sum(counts), 1)
            macro_se = math.sqrt(sum(s * s for s in stderrs)) / len(stderrs) if all(s is not None for s in stderrs) else None
            metrics[name] = {"value": macro, "stderr": macro_se, "micro": micro}
        out[group] = {"tasks": tasks, "n_samples": sum(task_results[t]["n_samples"] for t in tasks), "metrics": metrics}
    return out

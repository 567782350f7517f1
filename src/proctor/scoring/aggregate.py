"""Aggregation: per-sample metric values -> task metrics (with standard errors) -> groups."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Mapping, Sequence

from proctor.scoring.metric_checks import aggregated
from proctor.scoring.metrics import MetricDef
from proctor.scoring.stats import cluster_stderr, pooled_sample_stderr, pooled_stderr

# results.json's entries as the file holds them (the run builds them as runs.results_schema models; scoring,
# a layer below, reads and makes the plain JSON): a metric's {"value", "stderr", ...}; a task's or a
# breakdown part's {"n_samples", "metrics", ...}
MetricEntry = dict[str, Any]
TaskEntry = dict[str, Any]


def aggregate_metrics(
    metrics: Sequence[MetricDef], values: dict[str, list[Any]], clusters: Sequence[object] | None = None
) -> dict[str, MetricEntry]:
    """Per metric: value and stderr over the samples it scored (None means 'unscored', counted apart). With
    ``clusters`` (each sample's cluster), a mean metric also gets its cluster-robust (CR1) standard error."""
    out = {}
    for metric in metrics:
        all_values = values[metric.name]
        present = [v for v in all_values if v is not None]
        value, stderr = aggregated(metric, metric.aggregate(present))  # checked: a plug-in's may be anything
        entry: MetricEntry = {"value": value, "stderr": stderr}
        if len(present) < len(all_values):
            entry["n_scored"] = len(present)
            entry["n_unscored"] = len(all_values) - len(present)
        if clusters is not None and _is_mean(value, present):
            scored = [c for v, c in zip(all_values, clusters) if v is not None]
            entry["stderr_clustered"], entry["n_clusters"] = cluster_stderr([float(v) for v in present], scored)
        out[metric.name] = entry
    return out


def _is_mean(value: object, present: Sequence[Any]) -> bool:
    """A metric whose aggregate is the plain mean of numeric per-sample values (the only kind CR1 applies to)."""
    if not present or not all(isinstance(v, (int, float)) for v in present) or not isinstance(value, (int, float)):
        return False
    return math.isclose(float(value), sum(float(v) for v in present) / len(present), rel_tol=1e-9, abs_tol=1e-12)


def breakdown_stats(parts: dict[str, TaskEntry]) -> dict[str, dict[str, float | int]]:
    """Across the parts of a breakdown (e.g. one per data file): max, median and the average weighted by
    each part's number of samples, per metric (GLM-130B's per-group report)."""
    names: list[str] = []
    for part in parts.values():
        names += [n for n in part["metrics"] if n not in names]
    out = {}
    for name in names:
        pairs = [
            (part["metrics"][name]["value"], part["n_samples"])
            for part in parts.values()
            if name in part["metrics"]
            and part["metrics"][name]["value"] is not None
            and not (isinstance(part["metrics"][name]["value"], float) and math.isnan(part["metrics"][name]["value"]))
        ]
        if not pairs:
            continue
        values = sorted(v for v, _ in pairs)
        middle = len(values) // 2
        median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
        weight = sum(n for _, n in pairs)
        out[name] = {
            "max": max(values),
            "median": median,
            "average": sum(v * n for v, n in pairs) / weight if weight else float("nan"),
            "n_parts": len(pairs),
        }
    return out


def breakdown(
    metrics: Sequence[MetricDef],
    values: dict[str, list[Any]],
    keys: Sequence[object],
    clusters: Sequence[object] | None = None,
) -> dict[str, TaskEntry]:
    """Metrics per distinct key (e.g. per data file), keys in first-seen order; each part's standard errors
    (clustered too, with ``clusters``) over its own samples."""
    positions: dict[object, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        positions[key].append(i)
    out = {}
    for key, indices in positions.items():
        subset = {name: [vals[i] for i in indices] for name, vals in values.items()}
        part_clusters = [clusters[i] for i in indices] if clusters is not None else None
        out[str(key)] = {"n_samples": len(indices), "metrics": aggregate_metrics(metrics, subset, part_clusters)}
    return out


def breakdowns(
    metrics: Sequence[MetricDef],
    values: dict[str, list[Any]],
    fields: Sequence[str],
    rows: Sequence[Mapping[str, object]],
    cluster: str | None = None,
) -> TaskEntry:
    """A task's ``breakdown`` (per field, per value of it in the samples' ``rows``: metrics) and its
    ``breakdown_stats`` (per field: max, median and weighted average over the values)."""
    clusters = [row.get(cluster) for row in rows] if cluster is not None else None
    parts = {field: breakdown(metrics, values, [row.get(field) for row in rows], clusters) for field in fields}
    return {
        "breakdown": parts,
        "breakdown_stats": {field: breakdown_stats(by_value) for field, by_value in parts.items()},
    }


def aggregate_groups(
    task_results: dict[str, TaskEntry], memberships: dict[str, list[str]]
) -> dict[str, dict[str, Any]]:
    """Each group: macro mean over member tasks (equal weight) and micro mean (weighted by samples),
    each with its standard error."""
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
            macro_se = pooled_stderr(stderrs)
            micro_se = pooled_sample_stderr(stderrs, counts)
            metrics[name] = {"value": macro, "stderr": macro_se, "micro": micro, "micro_stderr": micro_se}
            clustered = [e.get("stderr_clustered") for e in entries]
            if all(isinstance(se, (int, float)) for se in clustered):  # every member names its clusters
                metrics[name].update(_clustered_group(clustered, counts, [e.get("n_clusters") for e in entries]))
        out[group] = {"tasks": tasks, "n_samples": sum(task_results[t]["n_samples"] for t in tasks), "metrics": metrics}
    return out


def _clustered_group(stderrs: list[float], counts: list[int], clusters: list[int | None]) -> MetricEntry:
    """A group's cluster-robust standard errors where every member task reports one. The tasks are independent
    and each one's clusters lie within it, so the variance of the macro mean is ``sum(se_i^2) / k^2`` and that of
    the micro (sample-weighted) mean ``sum((n_i * se_i)^2) / N^2``, with each task's CR1 ``se_i``."""
    total = sum(counts)
    micro = math.sqrt(sum((n * se) ** 2 for se, n in zip(stderrs, counts))) / total if total else None
    return {
        "stderr_clustered": pooled_stderr(stderrs),
        "micro_stderr_clustered": micro,
        "n_clusters": sum(c for c in clusters if isinstance(c, int)),
    }

"""Aggregation: per-sample metric values -> task metrics (with standard errors) -> groups."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any, Mapping, Sequence

from proctor.core.task import GroupAggregate
from proctor.scoring.metric_checks import aggregated
from proctor.scoring.metrics import MetricDef, total
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
    task_results: dict[str, TaskEntry],
    memberships: dict[str, list[str]],
    definitions: Mapping[str, Sequence[tuple[MetricDef, Mapping[str, Any]]]] | None = None,
    rules: Mapping[str, Sequence[GroupAggregate]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Each group: macro mean over member tasks (equal weight) and micro mean (weighted by samples),
    each with its standard error.

    ``rules``: group -> how it averages each metric, for the groups whose definition says so (lm-eval's
    ``aggregate_metric_list``): such a group has those metrics only, its ``value`` the mean lm-eval reports
    (``_ruled_metrics``).

    ``definitions``: task -> its metrics with their keyword arguments, for the tasks proctor scores itself. A group
    all of whose members are there is proctor's own and averages only what can be averaged (``_own_metric``); a
    group with a member not there (an lm-eval task) keeps lm-eval's arithmetic exactly: every shared metric's
    equal-weight and size-weighted means, each member weighted by its samples."""
    groups: dict[str, list[str]] = defaultdict(list)
    for task, names in memberships.items():
        for group in names:
            groups[group].append(task)
    out = {}
    for group, tasks in groups.items():
        if rules and group in rules:
            out[group] = {
                "tasks": tasks,
                "n_samples": sum(task_results[t]["n_samples"] for t in tasks),
                "metrics": _ruled_metrics([task_results[t] for t in tasks], rules[group]),
            }
            continue
        shared = set.intersection(*(set(task_results[t]["metrics"]) for t in tasks))
        own = definitions is not None and all(t in definitions for t in tasks)
        metrics: dict[str, MetricEntry] = {}
        left_out: dict[str, str] = {}
        for name in sorted(shared):
            entries = [task_results[t]["metrics"][name] for t in tasks]
            counts = [task_results[t]["n_samples"] for t in tasks]
            if own:
                assert definitions is not None
                reason = _differing_definitions(name, tasks, definitions)
                if reason:
                    left_out[name] = reason
                    continue
                # a member's unscored rows are in no mean: its weight is the rows it scored
                counts = [e.get("n_scored", n) for e, n in zip(entries, counts)]
                special = _own_metric(_definition(name, tasks[0], definitions), entries)
                if special is not None:
                    metrics[name] = special
                    continue
            metrics[name] = _means([e["value"] for e in entries], [e["stderr"] for e in entries], counts)
            clustered = [e.get("stderr_clustered") for e in entries]
            if all(isinstance(se, (int, float)) for se in clustered):  # every member names its clusters
                metrics[name].update(_clustered_group(clustered, counts, [e.get("n_clusters") for e in entries]))
        out[group] = {"tasks": tasks, "n_samples": sum(task_results[t]["n_samples"] for t in tasks), "metrics": metrics}
        if left_out:
            out[group]["left_out"] = left_out
    return out


def _means(values: Sequence[float], stderrs: Sequence[float | None], counts: Sequence[int]) -> MetricEntry:
    """A group's means of its members' ``values``: the equal-weight mean (``value``) with sqrt(sum stderr^2) / k,
    and the mean weighted by each member's ``counts`` (``micro``) with the pooled sample stderr."""
    return {
        "value": sum(values) / len(values),
        "stderr": pooled_stderr(stderrs),
        "micro": sum(v * n for v, n in zip(values, counts)) / max(sum(counts), 1),
        "micro_stderr": pooled_sample_stderr(stderrs, counts),
    }


def _ruled_metrics(members: Sequence[TaskEntry], rules: Sequence[GroupAggregate]) -> dict[str, MetricEntry]:
    """A group's metrics as lm-eval 0.4.13 computes them (api/group.Group.aggregate): per entry of its
    aggregate_metric_list, per filter (the entry's, else every one a member reports the metric under), the mean over
    the members that have ``metric,filter`` (each weighing its samples when ``weight_by_size``, else 1), with
    ``pooled_sample_stderr`` or the equal-weight stderr to match; no stderr when a member has none. The micro and
    macro means stay beside it. A metric the list does not name is not the group's: lm-eval reports none for it."""
    out: dict[str, MetricEntry] = {}
    for rule in rules:
        filters = rule.filters
        if filters is None:
            prefix = f"{rule.metric},"
            filters = tuple(sorted({k[len(prefix) :] for m in members for k in m["metrics"] if k.startswith(prefix)}))
        for filter_name in filters:
            key = f"{rule.metric},{filter_name}"
            having = [m for m in members if key in m["metrics"]]
            if not having:
                continue
            entries = [m["metrics"][key] for m in having]
            values, stderrs = [e["value"] for e in entries], [e["stderr"] for e in entries]
            counts = [m["n_samples"] for m in having]
            missing = any(v is None for v in values)  # NaN or infinite in a member (null in results.json): no mean
            means = _means([math.nan] * len(values) if missing else values, stderrs, counts)
            if missing:
                means["value"] = means["micro"] = None
            if rule.weight_by_size:
                means["value"], means["stderr"] = means["micro"], means["micro_stderr"]
            out[key] = {**means, "weight_by_size": rule.weight_by_size}
    return out


def _definition(
    name: str, task: str, definitions: Mapping[str, Sequence[tuple[MetricDef, Mapping[str, Any]]]]
) -> tuple[MetricDef, Mapping[str, Any]] | None:
    return next(((m, kw) for m, kw in definitions[task] if m.name == name), None)


def _differing_definitions(
    name: str, tasks: Sequence[str], definitions: Mapping[str, Sequence[tuple[MetricDef, Mapping[str, Any]]]]
) -> str | None:
    """Members that compute a metric of one name with other arguments (``scale: 1`` and ``scale: 100``) or another
    function give numbers in other units or of another quantity: their mean is no metric."""
    found = {t: _definition(name, t, definitions) for t in tasks}
    if any(d is None for d in found.values()):
        return None  # a metric a dialect's own scoring gives (not in the task's list): nothing to compare
    shown = {t: json.dumps(dict(d[1]), sort_keys=True, default=repr) for t, d in found.items() if d is not None}
    functions = {t: d[0].compute for t, d in found.items() if d is not None}
    if len(set(shown.values())) > 1:
        what = "; ".join(f"{t}: {v}" for t, v in shown.items())
        return (
            f"its members compute metric '{name}' with other arguments ({what}), so their values are not one "
            "quantity and are not averaged (give the members one definition, or the metric another name)"
        )
    if len(set(map(id, functions.values()))) > 1:
        return (
            f"its members compute metric '{name}' with other functions, so their values are not one quantity and "
            "are not averaged"
        )
    return None


def _own_metric(
    definition: tuple[MetricDef, Mapping[str, Any]] | None, entries: Sequence[MetricEntry]
) -> MetricEntry | None:
    """What a proctor group does with a metric that is no mean of its samples: a count (``total``, e.g. null_count)
    is summed over the members; a pooled ratio (a perplexity, bits per byte: one exponential or ratio of summed
    log-likelihoods) keeps its equal-weight mean of the members' values, but no size-weighted one: the pooled
    value is the ratio of the members' pooled sums, which their values alone do not give. None: a mean, averaged
    as usual."""
    if definition is None:
        return None
    aggregate = definition[0].aggregate
    if aggregate is total:
        value = sum(e["value"] for e in entries)
        return {"value": value, "stderr": None, "micro": None, "micro_stderr": None, "note": COUNT_NOTE}
    if getattr(aggregate, "pooled_ratio", False):
        values = [e["value"] for e in entries]
        return {
            "value": sum(values) / len(values),
            "stderr": None,
            "micro": None,
            "micro_stderr": None,
            "note": RATIO_NOTE,
        }
    return None


COUNT_NOTE = "a count: the group's value is its members' total (no mean, no micro)"
RATIO_NOTE = (
    "a pooled ratio: the value is the equal-weight mean of the members' values; no micro, since a size-weighted mean "
    "of ratios is not the pooled ratio (exp of the pooled mean log-likelihood), which the members' values do not give"
)


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

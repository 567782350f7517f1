"""Compare runs task by task on the samples they share.

For every task and metric present in both runs, both means are taken over the shared samples only
(never a run's whole-run mean, which may cover other samples), and their difference (B - A) gets a
paired bootstrap confidence interval and, beside it, the CLT view (``paired``): the standard error of the
per-sample differences (clustered when the task names a cluster field), its normal interval and p-value, and
the minimum detectable effect at 80% power and alpha 0.05 for the shared n; metrics whose per-sample values are all 0/1
(accuracy-like) also get McNemar's exact test on the discordant pairs. A difference is flagged
significant at ``alpha`` by McNemar's p-value for 0/1 metrics, and otherwise by the bootstrap
interval excluding zero.

Numbers are comparable only when the runs asked the same way: every setting of a shared task that differs
(few-shot, chat template, system prompt, limit, generation, backend, dtype, model arguments: runs/task_settings.py)
is listed with both values, and what an earlier version's run did not record is named. A run compared with
itself (the same folder under two paths) is refused.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, TypedDict

import numpy as np

from proctor.core.errors import ProctorError
from proctor.runs.documents import ResultsDocument, SampleLine
from proctor.runs.run_exports import iter_samples, load_results
from proctor.runs.task_settings import information_differences, run_settings, settings_differences
from proctor.runs.unscored import check_scored
from proctor.scoring.aggregate import TaskEntry
from proctor.scoring.power import degenerate_spread, paired_difference
from proctor.scoring.stats import bootstrap, percentile_interval

# a sample's metric values, what it asked (``_asked``), and its cluster (None: the task names no cluster field)
Sample = tuple[dict[str, object], str, object]

# one run compared with the baseline (``compare_pair``; an item of comparison_vs_*.json's "comparisons"): a, b,
# model_a, model_b, tasks (per task its counts and per metric both means, B - A, its interval and test),
# tasks_only_in_a / _b, settings_differ, settings_unknown
PairComparison = dict[str, Any]


class Comparison(TypedDict):
    """What ``proctor compare`` writes (comparison_vs_*.json): every run compared with the first."""

    baseline: str
    alpha: float
    bootstrap: dict[str, object]  # resamples, seed, interval
    comparisons: list[PairComparison]


def per_sample(run_dir: Path) -> dict[str | None, dict[str, Sample]]:
    """task (None: a record without one) -> sample key -> ``Sample``. Repeated ids get an occurrence suffix."""
    out: dict[str | None, dict[str, Sample]] = defaultdict(dict)
    seen: dict[tuple[str | None, str], int] = defaultdict(int)
    for record in iter_samples(run_dir):
        task, sid = record.get("task"), str(record.get("id"))
        n = seen[(task, sid)]
        seen[(task, sid)] += 1
        out[task][sid if n == 0 else f"{sid}#{n}"] = (
            record.get("metrics") or {},
            _asked(record),
            record.get("cluster"),
        )
    return out


def _asked(record: SampleLine) -> str:
    """What makes two runs' samples under one id the same sample: the choices (as a set: --mc-shuffle reorders
    them) with the gold ones' texts, else the reference answers. Prompts may differ (that is often the point)."""
    choices, target = record.get("choices"), record.get("target")
    if isinstance(choices, list):
        golds = target if isinstance(target, list) else [target]
        named = [
            choices[g] if isinstance(g, int) and not isinstance(g, bool) and 0 <= g < len(choices) else g for g in golds
        ]
        return json.dumps({"choices": sorted(map(str, choices)), "gold": sorted(map(str, named))}, ensure_ascii=False)
    return json.dumps({"target": target}, ensure_ascii=False, sort_keys=True, default=str)


def _check_same_samples(task: str, shared: list[str], a: dict[str, Sample], b: dict[str, Sample], run_b: Path) -> None:
    """Pairs are only the same sample asked twice: runs that scored other data under the same ids are refused."""
    for sid in shared:
        if a[sid][1] != b[sid][1]:
            raise ProctorError(
                f"{Path(run_b) / 'samples.jsonl'}: task '{task}', sample id '{sid}': choices or target {b[sid][1]} "
                f"differ from the baseline's {a[sid][1]}: the runs scored other data under the same ids, so their "
                "samples cannot be paired"
            )


def finite_number(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def mcnemar_exact(a: np.ndarray, b: np.ndarray) -> tuple[int, int, float]:
    """Discordant counts (A right/B wrong, A wrong/B right) and the exact two-sided p-value."""
    only_a = int(np.sum((a == 1) & (b == 0)))
    only_b = int(np.sum((a == 0) & (b == 1)))
    n = only_a + only_b
    if n == 0:
        return only_a, only_b, 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return only_a, only_b, min(1.0, 2 * tail / 2**n)


def paired_bootstrap(
    diff: np.ndarray, *, n_boot: int = 2000, alpha: float = 0.05, seed: int = 0
) -> tuple[float, float]:
    """Percentile interval of the mean paired difference (resampling samples with replacement)."""
    n = diff.size
    if n == 0:
        return float("nan"), float("nan")
    chunk = max(1, min(n_boot, 2_000_000 // max(n, 1)))  # resamples per draw: at most ~2M indices in memory
    means = bootstrap(lambda idx: diff[idx].mean(axis=1), n_items=n, n_choices=n, n_boot=n_boot, seed=seed, chunk=chunk)
    return percentile_interval(means, alpha)


def _paired(a: np.ndarray, b: np.ndarray, clusters: list[object], alpha: float) -> dict[str, object]:
    """The CLT view of B - A beside the bootstrap's: the standard error of the per-sample differences (clustered
    when every pair names its cluster), the normal interval and p-value, and the minimum detectable effect at 80%
    power and alpha 0.05 for this n (scoring/power.py)."""
    clustered = bool(clusters) and all(c is not None for c in clusters)
    found = paired_difference(list(a), list(b), clusters if clustered else None, alpha)
    entry: dict[str, object] = {
        "diff": found.diff,
        "stderr": found.stderr,
        "ci": list(found.interval) if found.interval is not None else None,
        "p_value": found.p_value,
        "test": found.test,
        "n": found.n,
        "mde": found.mde,
    }
    if found.n_clusters is not None:
        entry["n_clusters"] = found.n_clusters
        entry["stderr_unclustered"] = paired_difference(list(a), list(b), None, alpha).stderr
    return entry


def _tasks(results: ResultsDocument, run_dir: Path) -> dict[str, TaskEntry]:
    """results.json's tasks, checked for what a comparison reads (a corrupt file names its field)."""
    where = Path(run_dir) / "results.json"
    tasks = results.get("tasks") if isinstance(results, dict) else None
    if not isinstance(tasks, dict):
        raise ProctorError(f"{where}: field 'tasks' is missing or not a mapping; not a proctor run folder?")
    for name, task in tasks.items():
        if not isinstance(task, dict) or not isinstance(task.get("metrics"), dict):
            raise ProctorError(f"{where}: field 'tasks.{name}.metrics' is missing or not a mapping")
        if not isinstance(task.get("n_samples"), int):
            raise ProctorError(f"{where}: field 'tasks.{name}.n_samples' is missing or not a count")
    return tasks


def _check_comparable(
    run_a: Path,
    run_b: Path,
    tasks_a: Mapping[str, TaskEntry],
    tasks_b: Mapping[str, TaskEntry],
    compared: Mapping[str, Mapping[str, object]],
) -> None:
    """Runs with no task, or no metric of a shared task, in common have nothing to compare: an error, not a table
    with no rows that says "0 significant difference(s)"."""

    def listed(names: Iterable[str]) -> str:
        return ", ".join(sorted(names)) or "none"

    if not compared:
        raise ProctorError(
            f"{run_a} and {run_b} share no task, so there is nothing to compare "
            f"({run_a}: {listed(tasks_a)}; {run_b}: {listed(tasks_b)})"
        )
    if not any(entry["metrics"] for entry in compared.values()):
        shown = "; ".join(
            f"task '{t}': {listed(tasks_a[t]['metrics'])} in {run_a}, {listed(tasks_b[t]['metrics'])} in {run_b}"
            for t in compared
        )
        raise ProctorError(
            f"{run_a} and {run_b} share no metric of their shared tasks, so there is nothing to compare ({shown})"
        )


def compare_pair(run_a: Path, run_b: Path, *, alpha: float = 0.05, n_boot: int = 2000, seed: int = 0) -> PairComparison:
    results_a, results_b = load_results(run_a), load_results(run_b)
    _check_not_a_copy(run_a, run_b, results_a, results_b)
    for run, results in ((run_a, results_a), (run_b, results_b)):
        check_scored(run, results, "compare")
    tasks_a, tasks_b = _tasks(results_a, run_a), _tasks(results_b, run_b)
    samples_a, samples_b = per_sample(run_a), per_sample(run_b)
    tasks: dict[str, dict[str, object]] = {}
    for task in tasks_a:
        if task not in tasks_b:
            continue
        ta, tb = tasks_a[task], tasks_b[task]
        shared_ids = [i for i in samples_a.get(task, {}) if i in samples_b.get(task, {})]
        _check_same_samples(task, shared_ids, samples_a[task], samples_b[task], run_b)
        metrics = {}
        for metric in ta["metrics"]:
            if metric not in tb["metrics"]:
                continue
            pairs = [
                (x, y, samples_a[task][i][2] if samples_a[task][i][2] is not None else samples_b[task][i][2])
                for i in shared_ids
                if (x := finite_number(samples_a[task][i][0].get(metric))) is not None
                and (y := finite_number(samples_b[task][i][0].get(metric))) is not None
            ]
            # "a" / "b": the means over the shared samples (the ones the difference is over);
            # "run_a" / "run_b": each run's own value over all its samples, for reference
            entry: dict[str, object] = {
                "a": None,
                "b": None,
                "run_a": (ta["metrics"][metric] or {}).get("value"),
                "run_b": (tb["metrics"][metric] or {}).get("value"),
                "higher_is_better": (ta.get("higher_is_better") or {}).get(metric, True),
                "n_shared": len(pairs),
            }
            if pairs:
                a = np.array([p[0] for p in pairs])
                b = np.array([p[1] for p in pairs])
                diff = b - a
                low, high = paired_bootstrap(diff, n_boot=n_boot, alpha=alpha, seed=seed)
                entry.update(a=float(a.mean()), b=float(b.mean()), diff=float(diff.mean()), ci=[low, high])
                paired = entry["paired"] = _paired(a, b, [p[2] for p in pairs], alpha)
                clusters = paired.get("n_clusters")
                caveats = degenerate_spread(list(diff), clusters if isinstance(clusters, int) else None)
                if caveats:  # the numbers stay (they are what the formulas give); what they cannot mean is said
                    entry["warnings"] = caveats
                binary = bool(np.all(np.isin(a, (0.0, 1.0))) and np.all(np.isin(b, (0.0, 1.0))))
                if binary:
                    n_a_only, n_b_only, p = mcnemar_exact(a, b)
                    entry["mcnemar"] = {"a_only": n_a_only, "b_only": n_b_only, "p_value": p}
                    entry["significant"] = p < alpha
                    entry["test"] = "mcnemar"
                else:
                    entry["significant"] = bool(low > 0 or high < 0)
                    entry["test"] = "bootstrap"
            else:
                entry.update(diff=None, ci=None, significant=False, test=None)
            metrics[metric] = entry
        tasks[task] = {"n_a": ta["n_samples"], "n_b": tb["n_samples"], "n_shared": len(shared_ids), "metrics": metrics}
        formulations = (ta.get("mc_format"), tb.get("mc_format"))
        if formulations[0] or formulations[1]:
            tasks[task]["mc_format"] = {"a": formulations[0], "b": formulations[1]}
            if formulations[0] != formulations[1]:  # lettered replies vs log-likelihoods: not the same measurement
                tasks[task]["formulation_differs"] = True
    _check_comparable(run_a, run_b, tasks_a, tasks_b, tasks)
    read_a, read_b = run_settings(results_a), run_settings(results_b)
    differ, unknown = settings_differences(read_a, read_b, list(tasks))
    only_a = sorted(set(tasks_a) - set(tasks_b))
    only_b = sorted(set(tasks_b) - set(tasks_a))
    warnings = [
        f"{task} / {metric}: {caveat}"
        for task, entry in tasks.items()
        for metric, m in entry["metrics"].items()  # type: ignore[attr-defined]
        for caveat in m.get("warnings") or []
    ]
    return {
        "a": str(run_a),
        "b": str(run_b),
        "model_a": (results_a.get("model") or {}).get("model"),
        "model_b": (results_b.get("model") or {}).get("model"),
        "tasks": tasks,
        "tasks_only_in_a": only_a,
        "tasks_only_in_b": only_b,
        "settings_differ": differ,  # each setting of a shared task whose values differ: task, setting, a, b
        "settings_unknown": unknown,  # each one a run of an earlier version did not record: task, setting, unknown_in
        # backend options that differ yet cannot change a number (base_url, prices, pace): information only
        "settings_info": information_differences(read_a, read_b, list(tasks)),
        # differences whose interval, test or MDE cannot be read as one (one sample, no spread, one cluster)
        "warnings": warnings,
    }


def default_output(runs: Sequence[Path]) -> Path:
    """Where a comparison goes without ``-o``: into the baseline's run folder, named after the others
    (comparing with another run does not overwrite this one)."""
    others = [re.sub(r"[^A-Za-z0-9._-]+", "-", Path(r).resolve().name) for r in runs[1:]]
    name = others[0] + (f"_and_{len(others) - 1}_more" if len(others) > 1 else "")
    return Path(runs[0]) / f"comparison_vs_{name}.json"


def _check_distinct(runs: Sequence[Path]) -> None:
    """The same folder twice (``out`` and ``./out/``, a symlink to it) would compare a run with itself: every
    difference zero, as if two runs had agreed. Folders are told apart by device and inode, after links."""
    seen: dict[tuple[int, int], Path] = {}
    for run in runs:
        try:
            found = os.stat(run)
        except OSError:
            continue  # load_results names a folder that is not there
        identity = (found.st_dev, found.st_ino)
        if identity in seen:
            first = seen[identity]
            named = (
                f"{run} is named twice"
                if str(first) == str(run)
                else f"{first} and {run} are the same run folder ({Path(run).resolve()})"
            )
            raise ProctorError(f"{named}: comparing a run with itself shows no difference; give two different runs")
        seen[identity] = Path(run)


def _check_not_a_copy(run_a: Path, run_b: Path, results_a: ResultsDocument, results_b: ResultsDocument) -> None:
    """A copy of a run folder (``cp -r out out2``) is the run itself under another name: the same ``run_id`` (a
    random id each run folder is given when it starts) and the same samples. A rerun of the same command has
    another id; a copy resumed with other tasks holds other samples, and compares."""
    run_id = results_a.get("run_id")
    if (
        run_id
        and run_id == results_b.get("run_id")
        and results_a.get("samples_digest") == results_b.get("samples_digest")
    ):
        raise ProctorError(
            f"{run_b} is a copy of {run_a}: the same run (run id {run_id}, the same samples); comparing a run with "
            "itself shows no difference; give two different runs"
        )


def compare_runs(runs: Sequence[Path], *, alpha: float = 0.05, n_boot: int = 2000, seed: int = 0) -> Comparison:
    """The first run is the baseline; every other run is compared with it."""
    if len(runs) < 2:
        raise ProctorError("compare needs at least two run folders")
    _check_distinct(runs)
    base = Path(runs[0])
    return {
        "baseline": str(base),
        "alpha": alpha,
        "bootstrap": {"resamples": n_boot, "seed": seed, "interval": f"{100 * (1 - alpha):g}% percentile"},
        "comparisons": [compare_pair(base, Path(other), alpha=alpha, n_boot=n_boot, seed=seed) for other in runs[1:]],
    }

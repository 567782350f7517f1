"""A SEA-HELM task's corpus metrics over its seeded runs (``n_runs``): the metric class's results flattened
(nested values as numeric leaves, kept whole as ``detail``), averaged over runs with SEA-HELM's own standard
errors where its metric reports them, and the primary metric bootstrapped as SEA-HELM's leaderboard does
(per question, the result of a uniformly drawn run).

Kept apart from ``task.py`` (the handler that produces the runs) because it is statistics over finished
runs: it reads their metric results, scores and predictions, never the model or the dataloader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import numpy as np

from proctor.scoring.stats import bootstrap, bootstrap_stderr

if TYPE_CHECKING:
    from proctor.dialects.seahelm.judges import JudgeRunner

N_BOOTSTRAP = 30
BOOTSTRAP_SEED = 94370244


def _jsonable(value: object) -> object:
    """Nested metric output as plain JSON values (tuples -> lists, numpy scalars -> numbers)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _numeric_leaves(prefix: str, value: object) -> dict[str, float]:
    out: dict[str, float] = {}
    items: Iterable[tuple[object, object]]  # (key or index, value)
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            out[prefix] = float(value)
        return out
    for key, inner in items:
        out.update(_numeric_leaves(f"{prefix}.{key}", inner))
    return out


def summarise(runs: list[dict], rows: list[dict], key: str | None, judge_runner: JudgeRunner | None = None) -> dict:
    """The task's corpus metrics over its seeded runs: each metric's mean over runs (nested results as their
    numeric leaves, the structure kept as ``detail``), SEA-HELM's own standard error where its metric reports
    one, the primary metric (``key``) bootstrapped per question across runs, and the judge's request counts."""
    out: dict[str, dict] = {}
    flat: dict[str, object] = {}
    for name, value in list(runs[0]["metrics"].items()):
        if isinstance(value, (dict, list, tuple)):
            # nested results (win rate per category, SEA-HELM's ``subcategories`` with (correct, total)
            # counts or per-phenomenon dicts): every numeric leaf as "name.key[.key...]", and the whole
            # structure kept as the entry's ``detail`` (first run)
            flat.update(_numeric_leaves(name, value))
            for run in runs:
                run["metrics"].update(_numeric_leaves(name, run["metrics"].get(name)))
            out[name] = {"value": None, "stderr": None, "detail": _jsonable(value)}
        else:
            flat[name] = _jsonable(value)
    for name, value in flat.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values = [
                float(r["metrics"][name]) for r in runs if isinstance(r["metrics"].get(name), (int, float, np.number))
            ]
            entry = {"value": float(np.mean(values)), "stderr": None}
            # SEA-HELM's own standard error of this value, where its metric reports one (LogProbMetric's
            # clt_se_<x> for average_<x>); SEA-HELM computes none for a single run of the other metrics
            se_name = "clt_se_" + name[len("average_") :] if name.startswith("average_") else None
            errors = [
                float(r["metrics"][se_name])
                for r in runs
                if isinstance(r["metrics"].get(se_name), (int, float, np.number))
            ]
            if errors:
                entry["stderr"] = float(np.mean(errors))
            out[name] = entry
        elif value is None:
            out[name] = {"value": None, "stderr": None}
        elif isinstance(value, str) and name.endswith("error"):  # e.g. metricx_error: kept, with no value
            out[name] = {"value": None, "stderr": None, "error": value}
    if len(runs) > 1 and key in out:
        boots = bootstrap_runs(runs, rows, key)
        out[key]["bootstrap"] = boots
        out[key]["value"] = float(np.mean(boots))
        out[key]["stderr"] = bootstrap_stderr(boots)
        out[key]["n_runs"] = len(runs)
    if key in out:
        out[key]["primary"] = True
    if judge_runner is not None:
        out["judge_requests"] = {"value": float(judge_runner.stats["requests"]), "stderr": None}
        out["judge_errors"] = {"value": float(judge_runner.stats["errors"]), "stderr": None}
    return out


def bootstrap_runs(runs: list[dict], rows: list[dict], key: str) -> list[float]:
    """SEA-HELM's leaderboard bootstrap: per question, the result of a uniformly drawn run."""
    from proctor.dialects.seahelm.metrics import balanced_accuracy, normalize_score

    n, r = len(rows), len(runs)
    labels = [str(x.get("label")) for x in rows]
    mc = runs[0]["predictions"] is not None and len(set(labels)) < n
    k = len(set(labels))

    def score(picks: np.ndarray) -> list[float]:  # one resample: picks[0][i] = the run question i is taken from
        pick = picks[0]
        if mc:
            correct = [labels[i] if runs[pick[i]]["scores"][i] else f"\x00wrong{labels[i]}" for i in range(n)]
            return [100 * normalize_score(balanced_accuracy(labels, correct), 1 / k, 1)]
        values = [runs[pick[i]]["scores"][i] for i in range(n)]
        values = [v for v in values if v is not None]
        mean = float(np.mean(values)) if values else 0.0
        return [100 * mean if mean <= 1 else mean]

    # the resampling unit is the run, per question (not the questions, as in a paired bootstrap)
    return bootstrap(score, n_items=n, n_choices=r, n_boot=N_BOOTSTRAP, seed=BOOTSTRAP_SEED, chunk=1).tolist()

"""``proctor power``: how many samples a comparison needs to detect a difference of ``d``, from pilot runs.

From one pilot run each metric's per-sample standard deviation ``s`` gives the standard deviation of a paired
difference as ``sqrt(2) * s``: two models with that spread whose errors are uncorrelated (Miller 2024, section 5:
models that err on the same questions need fewer; a pilot of both models measures it). From two pilot runs (the
baseline and the candidate) it is measured: the standard deviation of the per-sample differences on the samples
they share. With clusters the count is multiplied by the design effect measured in the pilot, the squared ratio of
the clustered to the plain standard error (at least 1). Samples needed: ``ceil(design effect * ((z_a + z_b) * sd /
d)^2)`` (scoring/power.py).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TypedDict

import numpy as np

from proctor.core.errors import ProctorError
from proctor.runs.compare import finite_number, per_sample
from proctor.runs.run_exports import load_results
from proctor.runs.unscored import check_scored
from proctor.scoring.power import FEW_CLUSTERS, minimum_detectable_effect, samples_needed
from proctor.scoring.stats import cluster_stderr


class PowerAnalysis(TypedDict):
    """What ``proctor power`` shows and writes (``--output``)."""

    pilot: str
    other: str | None
    effect: float
    alpha: float
    power: float
    # task -> metric -> n, sd_difference, design_effect, n_clusters (clustered tasks), samples_needed, mde_at_n
    tasks: dict[str, dict[str, dict[str, float]]]
    # "task / metric: why": a sample size or MDE the pilot cannot estimate (no spread, clusters, an effect the
    # metric's values cannot reach); the number stays, as the formula gives it
    warnings: list[str]


def power_analysis(
    pilot: Path, effect: float, *, other: Path | None = None, alpha: float = 0.05, power: float = 0.8
) -> PowerAnalysis:
    """Per task, per numeric per-sample metric: the pilot's n, the standard deviation of a paired difference, the
    design effect (clustered tasks), the samples needed to detect ``effect`` and the pilot n's minimum detectable
    effect."""
    if not effect > 0:
        raise ProctorError(f"--effect {effect}: the difference to detect is a positive number (e.g. 0.02)")
    for run in (pilot, other):
        if run is not None:
            # a folder that is not a run, or a damaged results.json, is named first; then a run with no metric
            check_scored(run, load_results(run), "measure")
    samples_a = per_sample(pilot)
    samples_b = per_sample(other) if other is not None else None
    tasks: dict[str, dict[str, dict[str, float]]] = {}
    warnings: list[str] = []
    for task, by_id in samples_a.items():
        if task is None:
            continue
        ids = list(by_id) if samples_b is None else [i for i in by_id if i in samples_b.get(task, {})]
        names = list(dict.fromkeys(name for i in ids for name in by_id[i][0]))
        metrics: dict[str, dict[str, float]] = {}
        for name in names:
            rows = []
            for i in ids:
                x = finite_number(by_id[i][0].get(name))
                y = finite_number(samples_b[task][i][0].get(name)) if samples_b is not None else 0.0
                if x is not None and y is not None:
                    rows.append((x, y, by_id[i][2]))
            if len(rows) < 2:
                if rows:  # one sample: no spread at all (a metric with no numeric per-sample value is no row here)
                    warnings.append(f"{task} / {name}: 1 sample in the pilot(s): no spread to estimate, left out")
                continue
            values = (
                np.array([y - x for x, y, _ in rows]) if samples_b is not None else np.array([x for x, _, _ in rows])
            )
            sd = float(values.std(ddof=1))
            if samples_b is None:
                sd *= math.sqrt(2)  # a difference of two independent scores with this spread
            entry: dict[str, float] = {"n": len(rows), "sd_difference": sd, "design_effect": 1.0}
            caveats = _range_caveats(rows, effect, two=samples_b is not None)
            if sd == 0:
                caveats.append(_no_spread(len(rows), two=samples_b is not None))
            clusters = [c for _, _, c in rows]
            if all(c is not None for c in clusters) and sd > 0:
                clustered, groups = cluster_stderr(list(values), clusters)
                plain = float(values.std(ddof=1)) / math.sqrt(len(rows))
                entry["n_clusters"] = groups
                if clustered is not None:
                    measured = (clustered / plain) ** 2
                    entry["design_effect"] = max(1.0, measured)
                    caveats += _cluster_caveats(groups, measured)
                else:
                    caveats += _cluster_caveats(groups, None)
            needed = samples_needed(sd, effect, alpha, power)
            entry["samples_needed"] = math.ceil(needed * entry["design_effect"])
            entry["mde_at_n"] = minimum_detectable_effect(
                sd * math.sqrt(entry["design_effect"] / len(rows)), alpha, power
            )
            metrics[name] = entry
            warnings += [f"{task} / {name}: {caveat}" for caveat in caveats]
        if metrics:
            tasks[task] = metrics
    if not tasks:
        raise ProctorError(f"{pilot}: no task has two samples or more with a numeric metric, so there is no variance")
    return {
        "pilot": str(pilot),
        "other": str(other) if other is not None else None,
        "effect": effect,
        "alpha": alpha,
        "power": power,
        "tasks": tasks,
        "warnings": warnings,
    }


def _no_spread(n: int, *, two: bool) -> str:
    what = "paired differences between the two pilots" if two else "pilot's per-sample values"
    return (
        f"the {what} do not vary over the {n} samples (sd 0): a pilot with no spread cannot estimate one, so "
        "'samples needed' 0 and the MDE 0 are no sample size (run a larger or more varied pilot)"
    )


def _range_caveats(rows: list[tuple[float, float, object]], effect: float, *, two: bool) -> list[str]:
    """An effect no two scores can differ by: every value the pilot(s) hold lies in [0, 1] (an accuracy, a rate)
    and the effect is larger than 1."""
    values = [x for x, _, _ in rows] + ([y for _, y, _ in rows] if two else [])
    if effect > 1 and all(0.0 <= v <= 1.0 for v in values):
        return [
            f"a difference of {effect:g} is beyond the metric's range: every per-sample value lies in [0, 1], so two "
            "models' scores differ by 1 at most; the sample size for it means nothing (give --effect in the "
            "metric's units, e.g. 0.02)"
        ]
    return []


def _cluster_caveats(groups: int, measured: float | None) -> list[str]:
    """What the pilot's clusters cannot tell: with one cluster no design effect, with a few an unreliable one (one
    below 1, taken as 1, then says the clustering was not measured, not that it does nothing). Over enough clusters a
    design effect below 1 is ordinary sampling noise, taken as 1 as documented."""
    if measured is None:
        return [
            "the pilot's samples lie in one cluster: the design effect cannot be measured (it needs two clusters "
            "or more) and is taken as 1, so 'samples needed' ignores the clustering"
        ]
    if groups >= FEW_CLUSTERS:
        return []
    clamped = f" (the {measured:.4g} measured is below 1 and taken as 1)" if measured < 1 else ""
    return [
        f"the design effect rests on {groups} clusters, far too few to estimate it{clamped}: 'samples needed' is not "
        "reliable and may ignore the clustering (a pilot over more clusters measures it)"
    ]

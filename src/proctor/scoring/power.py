"""Paired differences and power: the standard error of a difference between two models on the same samples,
its normal (CLT) interval and test, the minimum detectable effect, and the samples needed to detect an effect.

The formulas are Miller (2024), "Adding Error Bars to Evals" (arXiv:2411.00640), sections 2-5: a paired
difference's standard error is the standard error of the mean of the per-sample differences (clustered when
the task has clusters); with ``z_a = Phi^-1(1 - alpha / 2)`` and ``z_b = Phi^-1(power)``, the minimum detectable
effect is ``(z_a + z_b) * se`` and the samples needed for an effect ``d`` are ``ceil(((z_a + z_b) * sd / d)^2)``,
``sd`` being the standard deviation of one sample's difference (times the design effect with clusters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

import numpy as np

from proctor.scoring.stats import cluster_stderr, mean_stderr

ALPHA = 0.05
POWER = 0.8
# below this many clusters a cluster-robust standard error is far too small (the audit's stats.few-clusters)
FEW_CLUSTERS = 5


def z_value(alpha: float = ALPHA, power: float = POWER) -> float:
    """``Phi^-1(1 - alpha / 2) + Phi^-1(power)``: 2.8016 for alpha 0.05 and power 0.8."""
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)


def minimum_detectable_effect(stderr: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest true difference a two-sided test at ``alpha`` detects with probability ``power``."""
    return z_value(alpha, power) * stderr


def samples_needed(sd: float, effect: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Samples a paired comparison needs to detect ``effect`` with ``power``: ``ceil(((z_a + z_b) * sd / effect)^2)``,
    ``sd`` the standard deviation of one sample's difference (at least 1; 0 with no spread at all)."""
    if effect <= 0:
        raise ValueError("the effect to detect is a positive difference")
    if sd == 0:
        return 0
    return max(1, math.ceil((z_value(alpha, power) * sd / effect) ** 2))


@dataclass(frozen=True)
class PairedDifference:
    """B - A over paired samples: the mean difference, its standard error, the normal interval and p-value."""

    diff: float
    stderr: float | None
    interval: tuple[float, float] | None
    p_value: float | None
    test: str  # "paired z (CLT)" or "paired z (CLT, clustered)"
    n: int
    n_clusters: int | None
    mde: float | None  # at ALPHA and POWER, for this n


def paired_difference(
    a: Sequence[float], b: Sequence[float], clusters: Sequence[object] | None = None, alpha: float = ALPHA
) -> PairedDifference:
    """The paired difference's standard error from the per-sample differences ``b_i - a_i``: ``std(ddof=1) /
    sqrt(n)``, or their CR1 standard error when ``clusters`` is given; interval ``diff +- z * se`` and the two-sided
    p-value of ``diff / se`` under the normal distribution."""
    diffs = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    mean, stderr = mean_stderr(list(diffs))
    n_clusters = None
    test = "paired z (CLT)"
    if clusters is not None:
        stderr, n_clusters = cluster_stderr(list(diffs), clusters)
        test = "paired z (CLT, clustered)"
    if stderr is None:
        return PairedDifference(mean, None, None, None, test, int(diffs.size), n_clusters, None)
    z = NormalDist().inv_cdf(1 - alpha / 2)
    if stderr == 0:
        p_value = 1.0 if mean == 0 else 0.0
    else:
        p_value = 2 * (1 - NormalDist().cdf(abs(mean) / stderr))
    return PairedDifference(
        mean,
        stderr,
        (mean - z * stderr, mean + z * stderr),
        p_value,
        test,
        int(diffs.size),
        n_clusters,
        minimum_detectable_effect(stderr, alpha),
    )


def degenerate_spread(diffs: Sequence[float], n_clusters: int | None = None) -> list[str]:
    """Why an interval, test or MDE over these per-sample differences cannot be read as one: one sample, no spread
    (every difference the same: a zero standard error is no certainty, only too few or too alike samples), one
    cluster, or too few clusters. Empty for differences that vary over enough samples (and clusters)."""
    values = np.asarray(diffs, dtype=float)
    if values.size == 1:
        return [
            "1 shared sample: one difference has no spread, so the interval is that one value and the paired "
            "standard error, its interval, p-value and MDE are undefined; no test can tell the runs apart on it"
        ]
    out = []
    if values.size > 1 and float(values.max() - values.min()) == 0.0:
        out.append(
            f"every one of the {values.size} shared samples differs by the same {float(values[0]):g} (B - A): "
            "the differences have no spread, so the standard error 0, the zero-width intervals and the MDE 0 "
            "measure no uncertainty and cannot be read as an interval or a detectable effect (too few samples, "
            "or runs that agree or disagree everywhere)"
        )
    if n_clusters is not None and n_clusters < 2:
        out.append(
            "the shared samples lie in one cluster: the clustered standard error is undefined (it needs two "
            "clusters or more), so there is no CLT standard error, interval, p-value or MDE (the plain one is "
            "'stderr_unclustered')"
        )
    elif n_clusters is not None and n_clusters < FEW_CLUSTERS:
        out.append(
            f"the clustered standard error rests on {n_clusters} clusters, far too few for the estimator (it comes "
            "out too small): the CLT interval, p-value and MDE are not reliable"
        )
    return out

"""Statistics every dialect shares: means with standard errors, pooled standard errors, seeded bootstraps.

Dialects reproduce other tools' numbers, so each function states its formula exactly (ddof, the order
of operations, what few values give); callers pick the one their tool computes.
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Callable, Sequence, TypeGuard

import numpy as np


def mean_stderr(values: Sequence[float]) -> tuple[float, float | None]:
    """proctor's per-task aggregate: the mean and its standard error ``std(ddof=1) / sqrt(n)``
    (numpy); (nan, None) for no values, stderr None for one."""
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return float("nan"), None
    stderr = float(array.std(ddof=1) / math.sqrt(array.size)) if array.size > 1 else None
    return float(array.mean()), stderr


def sample_variance(values: Sequence[float], *, exact: bool = False) -> float:
    """``sum((x - mean)^2) / (n - 1)`` for two values or more. Plain float sums in order, or with
    ``exact`` Python's ``statistics.variance`` (exact rational arithmetic, SEA-HELM's choice)."""
    if len(values) < 2:
        raise ValueError("the sample variance needs at least two values")
    if exact:
        return statistics.variance(values)
    m = sum(values) / len(values)
    return sum((v - m) ** 2 for v in values) / (len(values) - 1)


def stderr_from_variance(variance: float, n: int) -> float:
    """The standard error of a mean of ``n`` values with that variance: ``sqrt(variance / n)``."""
    return math.sqrt(variance / n)


def pooled_stderr(stderrs: Sequence[float | None]) -> float | None:
    """The standard error of an equal-weight mean of k independent estimates: ``sqrt(sum(se^2)) / k``;
    None when there is none or any is unknown."""
    known = [s for s in stderrs if _number(s)]
    if not stderrs or len(known) != len(stderrs):
        return None
    return math.sqrt(sum(s * s for s in known)) / len(stderrs)


def _number(value: object) -> TypeGuard[float]:  # an int or a float, not a bool
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def pooled_sample_stderr(stderrs: Sequence[float | None], counts: Sequence[int]) -> float | None:
    """The stderr of the sample-weighted mean from the members' stderrs and sizes: the pooled sample
    variance ``sum((n-1) * se^2 * n) / (N - k)`` over ``N`` (lm-eval's ``pooled_sample_stderr``, for
    ``weight_by_size`` groups); None when any is unknown or ``N <= k``."""
    known = [s for s in stderrs if _number(s)]
    if not stderrs or len(known) != len(stderrs):
        return None
    total = sum(counts)
    if total - len(counts) <= 0:
        return None
    variance = sum((n - 1) * s * s * n for s, n in zip(known, counts)) / (total - len(counts))
    return math.sqrt(variance / total)


def bootstrap(
    statistic: Callable[[np.ndarray], np.ndarray | Sequence[float]],
    *,
    n_items: int,
    n_choices: int,
    n_boot: int,
    seed: int,
    chunk: int = 1,
) -> np.ndarray:
    """A seeded bootstrap: ``n_boot`` resamples, each ``n_items`` indices drawn uniformly with replacement
    from ``range(n_choices)`` (the samples themselves, or e.g. the seeded runs to take each item from),
    ``chunk`` resamples per draw of ``numpy.random.default_rng(seed)``. ``statistic`` maps an index block
    of shape (resamples, n_items) to one value per resample. The chunking is part of the random stream:
    the same seed and chunk give the same values."""
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    for start in range(0, n_boot, chunk):
        count = min(chunk, n_boot - start)
        out[start : start + count] = statistic(rng.integers(0, n_choices, size=(count, n_items)))
    return out


def bootstrap_stderr(values: Sequence[float]) -> float:
    """The standard error from bootstrap values: ``sqrt(var(ddof=0) / B)`` (SEA-HELM's leaderboard)."""
    return float(math.sqrt(np.var(np.asarray(values, dtype=float)) / len(values)))


def percentile_interval(values: np.ndarray, alpha: float) -> tuple[float, float]:
    """The ``1 - alpha`` percentile interval (numpy's linear quantiles)."""
    low, high = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def cluster_key(value: object) -> tuple[str, object]:
    """A cluster id as its row wrote it: 1, 1.0 and true are three ids (Python's equality would merge them, while
    the data, and the audit counting them, tell them apart); a list or a mapping by its JSON text."""
    try:
        hash(value)
    except TypeError:
        return type(value).__name__, json.dumps(value, sort_keys=True, default=str)
    return type(value).__name__, value


def cluster_stderr(values: Sequence[float], clusters: Sequence[object]) -> tuple[float | None, int]:
    """The cluster-robust (CR1) standard error of the mean and the number of clusters G: with residuals
    ``e_i = x_i - mean`` summed per cluster, ``sqrt(G / (G - 1) * sum_g (sum_{i in g} e_i)^2) / n`` (Miller 2024,
    eq. 4, and Inspect's ``stderr(cluster=...)``; statsmodels' cluster-robust OLS of the values on a constant gives
    the same, its ``(N - 1) / (N - K)`` factor being 1 for K = 1). With one sample per cluster it is the plain
    ``std(ddof=1) / sqrt(n)``. None for fewer than two clusters (nothing to estimate the spread from)."""
    if len(values) != len(clusters):
        raise ValueError("one cluster per value")
    array = np.asarray(values, dtype=float)
    sums: dict[object, float] = {}
    mean = float(array.mean()) if array.size else float("nan")
    for value, cluster in zip(array, clusters):
        key = cluster_key(cluster)
        sums[key] = sums.get(key, 0.0) + float(value) - mean
    groups = len(sums)
    if groups < 2:
        return None, groups
    total = sum(s * s for s in sums.values())
    return math.sqrt(groups / (groups - 1) * total) / array.size, groups


def wilson_interval(p: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``p`` of ``n`` 0/1 values (Wilson 1927): centre
    ``(p + z^2 / 2n) / (1 + z^2 / n)``, half-width ``z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)``. It stays
    in [0, 1] and keeps a width at p = 0 or 1, where ``p +- z * se`` collapses or leaves the range."""
    if n < 1:
        raise ValueError("a proportion of no values has no interval")
    scale = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / scale
    half = z / scale * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def is_proportion(value: float, stderr: float | None, n: int) -> bool:
    """Whether a mean with this standard error (``std(ddof=1) / sqrt(n)``) is a proportion of 0/1 values: only
    they reach ``stderr = sqrt(p (1 - p) / (n - 1))``, the largest spread values in [0, 1] with mean p can have.
    One value in {0, 1} (no stderr) counts too."""
    if not 0 <= value <= 1 or n < 1:
        return False
    if stderr is None:
        return n == 1 and value in (0, 1)
    if n < 2:
        return False
    return math.isclose(stderr, math.sqrt(value * (1 - value) / (n - 1)), rel_tol=1e-6, abs_tol=1e-12)


def epoch_variance(columns: Sequence[Sequence[float]]) -> dict[str, float | int] | None:
    """How much ``k`` epochs (repeats of each question) reduce the variance of the mean (Miller 2024, section 3,
    "resampling"), from each question's ``k`` values (questions with fewer than two are left out):

    - ``within``: the mean over questions of the variance of a question's values across epochs (ddof 1);
    - ``between``: the variance of the questions' true means, ``var(question means, ddof 1) - within / k``
      (at least 0);
    - ``stderr``: the standard error of the mean over questions, ``sqrt(var(question means, ddof 1) / n)``;
    - ``stderr_one_epoch``: what one epoch would give, ``sqrt((between + within) / n)``.

    None with fewer than two questions."""
    usable = [list(map(float, c)) for c in columns if len(c) >= 2]
    if len(usable) < 2:
        return None
    k = min(len(c) for c in usable)
    usable = [c[:k] for c in usable]  # one k for all: a question missing an epoch's value counts with its first k
    n = len(usable)
    within = sum(sample_variance(c) for c in usable) / n
    means = [sum(c) / k for c in usable]
    of_means = sample_variance(means)
    between = max(0.0, of_means - within / k)
    return {
        "n_questions": n,
        "k": k,
        "within": within,
        "between": between,
        "stderr": math.sqrt(of_means / n),
        "stderr_one_epoch": math.sqrt((between + within) / n),
    }

"""scoring/stats.py: every standard error and bootstrap proctor reports, against the formula written out."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from proctor.scoring import stats

pytestmark = pytest.mark.fast

VALUES = [0.25, 1.0, 0.0, 0.75, 0.5, 1.0, 0.125]


def _by_hand_variance(xs):  # sum((x - mean)^2) / (n - 1)
    mean = sum(xs) / len(xs)
    return sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)


def test_mean_stderr_is_sample_std_over_root_n():
    mean, stderr = stats.mean_stderr(VALUES)
    assert mean == pytest.approx(sum(VALUES) / len(VALUES))
    assert stderr == pytest.approx(math.sqrt(_by_hand_variance(VALUES)) / math.sqrt(len(VALUES)))
    assert stats.mean_stderr([0.5]) == (0.5, None)
    m, s = stats.mean_stderr([])
    assert math.isnan(m) and s is None


def test_sample_variance_divides_by_n_minus_one_in_both_arithmetics():
    assert stats.sample_variance(VALUES) == _by_hand_variance(VALUES)
    xs = [Fraction(x) for x in VALUES]
    exact = sum((x - sum(xs) / len(xs)) ** 2 for x in xs) / (len(xs) - 1)
    assert stats.sample_variance(VALUES, exact=True) == float(exact)
    with pytest.raises(ValueError):
        stats.sample_variance([1.0])


def test_stderr_from_variance():
    assert stats.stderr_from_variance(0.36, 4) == math.sqrt(0.36 / 4)


def test_pooled_stderr_of_an_equal_weight_mean():
    # var(mean of k independent estimates) = sum(se_i^2) / k^2
    assert stats.pooled_stderr([0.3, 0.4]) == pytest.approx(math.sqrt(0.09 + 0.16) / 2)
    assert stats.pooled_stderr([0.3, None]) is None and stats.pooled_stderr([]) is None


def test_bootstrap_stderr_uses_the_population_variance_of_the_bootstrap_values():
    boots = [70.0, 72.5, 69.0, 71.0]
    mean = sum(boots) / 4
    assert stats.bootstrap_stderr(boots) == pytest.approx(math.sqrt(sum((b - mean) ** 2 for b in boots) / 4 / 4))


def test_bootstrap_draws_indices_with_replacement_from_a_seeded_generator():
    diff = np.array([1.0, 0.0, -1.0, 1.0, 1.0, 0.0])
    means = stats.bootstrap(lambda idx: diff[idx].mean(axis=1), n_items=6, n_choices=6, n_boot=50, seed=7, chunk=20)
    rng = np.random.default_rng(7)  # the same stream, drawn by hand in the same chunks
    blocks = [rng.integers(0, 6, size=(count, 6)) for count in (20, 20, 10)]
    assert means.tolist() == [float(diff[row].mean()) for block in blocks for row in block]
    again = stats.bootstrap(lambda idx: diff[idx].mean(axis=1), n_items=6, n_choices=6, n_boot=50, seed=7, chunk=20)
    assert np.array_equal(means, again)


def test_bootstrap_with_one_resample_per_draw_matches_one_draw_per_resample():
    # SEA-HELM's leaderboard bootstrap: for each resample, per question a run drawn by integers(0, runs, size=n)
    rng = np.random.default_rng(94370244)
    expected = [float(rng.integers(0, 3, size=5).sum()) for _ in range(30)]
    got = stats.bootstrap(lambda idx: idx.sum(axis=1), n_items=5, n_choices=3, n_boot=30, seed=94370244, chunk=1)
    assert got.tolist() == expected


def test_percentile_interval():
    values = np.arange(101, dtype=float)
    assert stats.percentile_interval(values, 0.1) == (5.0, 95.0)


def test_every_dialect_helper_computes_its_documented_formula():
    from proctor.dialects.aisteer.metrics import sample_std
    from proctor.dialects.lmeval.specs import _numeric
    from proctor.dialects.seahelm.metrics import calculate_stderr

    n = len(VALUES)
    assert sample_std(VALUES) == pytest.approx(math.sqrt(_by_hand_variance(VALUES)))
    assert sample_std([2.0]) == 0.0 and sample_std([]) is None
    # lm-eval's mean_stderr: sample_stddev / sqrt(n)
    assert _numeric(VALUES) == pytest.approx((sum(VALUES) / n, math.sqrt(_by_hand_variance(VALUES)) / math.sqrt(n)))
    # SEA-HELM's SeaHelmMetric.calculate_stderr: sqrt(statistics.variance / n), 0 for one value
    assert calculate_stderr(VALUES + [None]) == pytest.approx(math.sqrt(_by_hand_variance(VALUES) / n))
    assert calculate_stderr([1.0]) == 0.0

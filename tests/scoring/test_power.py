"""scoring/power.py: paired differences, minimum detectable effect and samples needed, against the closed forms
written out and a simulation of the test they plan for."""

from __future__ import annotations

import math

import numpy as np
import pytest

from proctor.scoring.power import minimum_detectable_effect, paired_difference, samples_needed, z_value
from proctor.scoring.stats import cluster_stderr

pytestmark = pytest.mark.fast

Z_975, Z_80 = 1.959963984540054, 0.8416212335729143


def test_closed_forms():
    assert z_value() == pytest.approx(Z_975 + Z_80)
    assert minimum_detectable_effect(0.01) == pytest.approx(0.01 * (Z_975 + Z_80))
    # sd of one difference 0.5, effect 0.03 (three points of accuracy) -> ceil((2.8016 * 0.5 / 0.03)^2)
    assert samples_needed(0.5, 0.03) == math.ceil(((Z_975 + Z_80) * 0.5 / 0.03) ** 2) == 2181
    assert samples_needed(0.0, 0.03) == 0
    with pytest.raises(ValueError):
        samples_needed(0.5, 0.0)


def test_paired_difference_written_out():
    a = [1, 0, 1, 1, 0, 1, 0, 0]
    b = [1, 1, 1, 0, 1, 1, 1, 0]
    d = np.array(b, dtype=float) - np.array(a, dtype=float)
    found = paired_difference(a, b)
    se = float(np.std(d, ddof=1) / math.sqrt(len(d)))
    assert (found.diff, found.stderr, found.n) == (pytest.approx(d.mean()), pytest.approx(se), 8)
    assert found.interval == (pytest.approx(d.mean() - Z_975 * se), pytest.approx(d.mean() + Z_975 * se))
    assert found.p_value == pytest.approx(math.erfc(abs(d.mean()) / se / math.sqrt(2)))
    assert found.mde == pytest.approx((Z_975 + Z_80) * se)
    clustered = paired_difference(a, b, ["p", "p", "q", "q", "r", "r", "s", "s"])
    assert clustered.stderr == pytest.approx(cluster_stderr(list(d), ["p", "p", "q", "q", "r", "r", "s", "s"])[0])
    assert clustered.n_clusters == 4 and clustered.test == "paired z (CLT, clustered)"
    assert paired_difference([1], [0]).stderr is None


def test_a_true_effect_of_one_mde_is_detected_80_percent_of_the_time():
    """Simulated paired evals: per question a shared difficulty and each model's noise; the true effect set to
    the MDE the formula gives for n. The two-sided test at 0.05 must reject in ~80% of 4000 repeats."""
    rng = np.random.default_rng(7)
    n, repeats, sd_noise = 400, 4000, 1.0
    sd_diff = math.sqrt(2) * sd_noise  # the question's difficulty cancels in the difference
    effect = minimum_detectable_effect(sd_diff / math.sqrt(n))
    assert samples_needed(sd_diff, effect) == n  # the two formulas agree with each other
    difficulty = rng.normal(size=(repeats, n))
    a = difficulty + rng.normal(scale=sd_noise, size=(repeats, n))
    b = difficulty + effect + rng.normal(scale=sd_noise, size=(repeats, n))
    rejected = [paired_difference(a[r], b[r]).p_value < 0.05 for r in range(repeats)]
    assert np.mean(rejected) == pytest.approx(0.8, abs=0.025)
    # and with no effect, 5% false positives
    null = [paired_difference(a[r], a[r] + rng.normal(scale=0.1, size=n)).p_value < 0.05 for r in range(500)]
    assert np.mean(null) == pytest.approx(0.05, abs=0.03)


def test_clustered_se_covers_the_clustered_truth_in_simulation():
    """Questions in clusters of 5 sharing a cluster effect: the CR1 standard error of the mean matches the spread
    of the mean over repeats, where the plain one is far too small."""
    rng = np.random.default_rng(11)
    groups, size, repeats = 60, 5, 1500
    clusters = np.repeat(np.arange(groups), size)
    means, cr1, plain = [], [], []
    for _ in range(repeats):
        x = np.repeat(rng.normal(size=groups), size) + rng.normal(scale=0.5, size=groups * size)
        means.append(x.mean())
        cr1.append(cluster_stderr(list(x), list(clusters))[0])
        plain.append(np.std(x, ddof=1) / math.sqrt(x.size))
    truth = float(np.std(means, ddof=1))
    assert np.mean(cr1) == pytest.approx(truth, rel=0.06)
    assert np.mean(plain) < 0.6 * truth

"""Standard errors as lm-eval 0.4.13 computes them, on synthetic per-sample values (no model): the
resample indices, each bootstrapped aggregation against lm-eval's own ``bootstrap_stderr``, the closed
forms, "N/A" cases, and a group's pooled standard error against lm-eval's ``pooled_sample_stderr``."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("lm_eval")

from lm_eval.api import metrics as M  # noqa: E402

from proctor.dialects.lmeval.stderr import resamples, task_stderr  # noqa: E402
from proctor.scoring.aggregate import aggregate_groups  # noqa: E402


@pytest.fixture(autouse=True)
def _one_process(monkeypatch):
    monkeypatch.setenv(
        "DISABLE_MULTIPROC", "1"
    )  # lm-eval's bootstrap in this process (the same resamples as its pool's)


@pytest.mark.fast
@pytest.mark.parametrize("n", [1, 2, 7, 1001])
def test_resamples_are_pythons_choices(n):
    rng = random.Random(3)
    expected = [rng.choices(range(n), k=n) for _ in range(40)]
    assert [row for block in resamples(3, n, 40) for row in block.tolist()] == expected


def test_bootstrapped_and_closed_forms_equal_lm_evals():
    rng = random.Random(5)
    loglikelihoods = [-rng.random() * 20 for _ in range(57)]
    pairs = [(rng.randint(0, 1), rng.randint(0, 1)) for _ in range(30)]
    texts = [(f"the answer is {rng.randint(0, 9)}", f"answer {rng.randint(0, 9)} it is") for _ in range(12)]
    cases = [
        (M.perplexity, "perplexity", loglikelihoods, 2500),
        (M.median, "x", loglikelihoods, 1200),
        (M.f1_score, "f1", pairs, 60),
        (M.matthews_corrcoef, "mcc", pairs, 60),
        (M.bleu, "bleu", texts, 500),
    ]
    for aggregation, name, items, iters in cases:
        capped = min(iters, 100) if name == "bleu" else iters  # lm-eval caps bleu / chrf / ter at 100
        expected = M.bootstrap_stderr(aggregation, items, iters=capped)
        assert task_stderr(aggregation, name, items, iters) == pytest.approx(expected, rel=1e-12), name
    accuracies = [float(rng.random() < 0.4) for _ in range(50)]
    assert task_stderr(M.mean, "acc", accuracies, 100000) == pytest.approx(M.mean_stderr(accuracies), rel=1e-15)
    assert task_stderr(M.mean, "acc", accuracies, 0) is None  # bootstrap_iters=0: every stderr "N/A", as lm-eval
    assert task_stderr(M.mean, "acc", accuracies[:1], 100) is None
    assert task_stderr(M.weighted_perplexity, "word_perplexity", [(-3.0, 2), (-5.0, 3)], 100) is None


def test_group_micro_stderr_is_lm_evals_pooled_stderr():
    tasks = {
        "a": {"n_samples": 12, "metrics": {"acc,none": {"value": 0.5, "stderr": 0.15}}},
        "b": {"n_samples": 40, "metrics": {"acc,none": {"value": 0.3, "stderr": 0.07}}},
        "c": {"n_samples": 7, "metrics": {"acc,none": {"value": 0.9, "stderr": 0.11}}},
    }
    group = aggregate_groups(tasks, {name: ["g"] for name in tasks})["g"]["metrics"]["acc,none"]
    stderrs, sizes = [0.15, 0.07, 0.11], [12, 40, 7]
    assert group["micro"] == pytest.approx(M.aggregate_subtask_metrics([0.5, 0.3, 0.9], sizes, weight_by_size=True))
    assert group["micro_stderr"] == pytest.approx(M.pooled_sample_stderr(stderrs, sizes), rel=1e-12)
    assert group["value"] == pytest.approx(M.aggregate_subtask_metrics([0.5, 0.3, 0.9], sizes, weight_by_size=False))
    assert group["stderr"] == pytest.approx(M.unweighted_mean_stderr(stderrs), rel=1e-12)

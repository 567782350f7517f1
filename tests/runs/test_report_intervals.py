"""The report's intervals fit the metric: proportions get Wilson's interval (inside [0, 1]) and a [0, 1] axis;
other means value +- 1.96 stderr; every bar carries its n."""

from __future__ import annotations

import math

import pytest

from proctor.runs.report_charts import bar_chart
from proctor.runs.report_data import summary_context
from proctor.scoring.stats import is_proportion, mean_stderr, wilson_interval

proportion_confint = pytest.importorskip("statsmodels.stats.proportion").proportion_confint


@pytest.mark.parametrize("k,n", [(1, 2), (0, 5), (5, 5), (37, 120)])
def test_wilson_matches_statsmodels(k, n):
    assert wilson_interval(k / n, n) == pytest.approx(proportion_confint(k, n, alpha=0.05, method="wilson"), abs=1e-12)


def test_a_proportion_is_told_from_its_stderr():
    assert is_proportion(*mean_stderr([1, 0, 1, 1]), 4)
    assert not is_proportion(*mean_stderr([1, 0.5, 1, 1]), 4)  # in [0, 1], but not 0/1 values
    assert is_proportion(1.0, None, 1) and not is_proportion(0.5, None, 1)


def test_a_part_of_two_questions_draws_inside_0_1():
    # an MMLU subject with n=2 and one right: the normal whisker would run from -0.48 to 1.48
    value, stderr = mean_stderr([1.0, 0.0])
    chart = bar_chart([("tiny subject", value, stderr, 2), ("big subject", 0.7, math.sqrt(0.21 / 99), 100)], "acc")
    assert chart is not None
    ticks = [float(t["label"]) for t in chart["ticks"]]
    assert ticks[0] == 0.0 and ticks[-1] == 1.0
    tiny = chart["bars"][0]
    assert tiny["interval"] == pytest.approx(proportion_confint(1, 2, method="wilson"))
    assert tiny["interval_kind"] == "Wilson" and tiny["n"] == 2
    left, right = chart["left"], chart["left"] + chart["plot"]
    for bar in chart["bars"]:
        assert left <= bar["whisker"][0] <= bar["whisker"][1] <= right


def test_other_means_keep_the_normal_interval():
    chart = bar_chart([("score", 2.5, 0.5, 10)], "f")
    assert chart is not None
    bar = chart["bars"][0]
    assert bar["interval_kind"] == "normal"
    assert bar["interval"] == pytest.approx((2.5 - 1.959963984540054 * 0.5, 2.5 + 1.959963984540054 * 0.5))


def test_breakdown_bars_carry_n_and_stderr_in_the_report_context():
    acc = {"value": 0.5, "stderr": 0.5}
    results = {
        "tasks": {
            "mmlu": {
                "kind": "multiple_choice",
                "n_samples": 3,
                "metrics": {"acc": {"value": 2 / 3, "stderr": math.sqrt((2 / 9) / 2)}},
                "breakdown": {
                    "subject": {
                        "a": {"n_samples": 2, "metrics": {"acc": acc}},
                        "b": {"n_samples": 1, "metrics": {"acc": {"value": 1.0, "stderr": None}}},
                    }
                },
            }
        }
    }
    charts = summary_context(results, [])["charts"][0]["charts"]
    by_subject = charts[1]["bars"]
    assert [(b["label"], b["n"], b["stderr"]) for b in by_subject] == [("a", 2, 0.5), ("b", 1, None)]
    assert by_subject[1]["interval"] == pytest.approx(proportion_confint(1, 1, method="wilson"))


def test_the_summary_shows_the_clustered_stderr_and_the_epochs_variance():
    from proctor.runs.report import render_summary

    variance = {
        "n_questions": 10,
        "k": 3,
        "within": 0.125,
        "between": 0.0625,
        "stderr": 0.0875,
        "stderr_one_epoch": 0.137,
    }
    results = {
        "model": {"model": "m"},
        "tasks": {
            "t": {
                "kind": "generate",
                "n_samples": 10,
                "metrics": {"em": {"value": 0.5, "stderr": 0.1667, "stderr_clustered": 0.2345, "n_clusters": 4}},
                "epochs": {"n": 3, "reducer": "mean", "scores": {}, "pass_at_k": {}, "variance": {"em": variance}},
            }
        },
    }
    html = " ".join(render_summary(results, []).split())
    assert "(clustered 0.2345, G=4)" in html
    assert 'data-row="epochs:t:em"' in html
    for number in ("0.1250", "0.0625", "0.0875", "0.1370"):
        assert number in html

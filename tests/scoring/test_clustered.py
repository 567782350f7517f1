"""CR1 cluster-robust standard errors (scoring/stats.cluster_stderr) and the aggregate that reports them, against
statsmodels' cluster-robust OLS of the scores on a constant, on real questions that share passages (BoolQ)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from proctor.scoring.aggregate import aggregate_metrics, breakdowns
from proctor.scoring.metrics import get_metric
from proctor.scoring.stats import cluster_stderr, mean_stderr
from tests.support.passages import boolq_rows

pytestmark = pytest.mark.fast

sm = pytest.importorskip("statsmodels.api")


def _statsmodels_cr1(values, clusters) -> float:
    codes = {c: i for i, c in enumerate(dict.fromkeys(clusters))}
    fit = sm.OLS(np.asarray(values, dtype=float), np.ones((len(values), 1))).fit(
        cov_type="cluster", cov_kwds={"groups": np.array([codes[c] for c in clusters])}
    )
    return float(fit.bse[0])


def test_cr1_matches_statsmodels_on_boolq_passages():
    rows = boolq_rows(n_shared=60, n_alone=20)
    values = [float(r["gold"]) for r in rows]  # the real answers (1: "yes") as a 0/1 score
    clusters = [r["passage"] for r in rows]
    assert len(set(clusters)) < len(rows)  # several questions do share passages
    se, groups = cluster_stderr(values, clusters)
    assert groups == len(set(clusters))
    assert se == pytest.approx(_statsmodels_cr1(values, clusters), rel=1e-12)
    assert se != pytest.approx(mean_stderr(values)[1], rel=1e-3)  # the clusters do change the number


def test_cr1_written_out_and_its_limits():
    values, clusters = [1.0, 0.0, 1.0, 1.0, 0.0], ["a", "a", "b", "c", "c"]
    mean = 0.6
    sums = [(1 - mean) + (0 - mean), 1 - mean, (1 - mean) + (0 - mean)]
    assert cluster_stderr(values, clusters) == (pytest.approx(math.sqrt(3 / 2 * sum(s * s for s in sums)) / 5), 3)
    # one sample per cluster: the plain std(ddof=1) / sqrt(n)
    assert cluster_stderr(values, list(range(5)))[0] == pytest.approx(mean_stderr(values)[1])
    assert cluster_stderr(values, ["x"] * 5) == (None, 1)  # one cluster: nothing to estimate the spread from
    with pytest.raises(ValueError):
        cluster_stderr(values, ["a"])


def test_aggregate_reports_clustered_beside_plain_and_per_breakdown_part():
    rows = boolq_rows(n_shared=30, n_alone=10)
    acc = get_metric("acc", "multiple_choice")
    values = {"acc": [float(r["gold"]) for r in rows]}
    clusters = [r["passage"] for r in rows]
    entry = aggregate_metrics([acc], values, clusters)["acc"]
    assert entry["stderr"] == pytest.approx(mean_stderr(values["acc"])[1])  # the plain one is unchanged
    assert entry["stderr_clustered"] == pytest.approx(_statsmodels_cr1(values["acc"], clusters), rel=1e-12)
    assert entry["n_clusters"] == len(set(clusters))
    assert "stderr_clustered" not in aggregate_metrics([acc], values)["acc"]  # no cluster field: as before
    fields = [{**r, "alone": str(i >= 30)} for i, r in enumerate(rows)]
    parts = breakdowns([acc], values, ["alone"], fields, "passage")["breakdown"]["alone"]
    shared = parts["False"]["metrics"]["acc"]
    assert parts["False"]["n_samples"] == 30
    assert shared["stderr_clustered"] == pytest.approx(_statsmodels_cr1(values["acc"][:30], clusters[:30]), rel=1e-12)


def test_unscored_samples_leave_their_clusters_out():
    acc = get_metric("acc", "multiple_choice")
    entry = aggregate_metrics([acc], {"acc": [1.0, None, 0.0, 1.0, 0.0]}, ["a", "a", "b", "c", "c"])["acc"]
    assert entry["n_clusters"] == 3
    assert entry["stderr_clustered"] == pytest.approx(cluster_stderr([1.0, 0.0, 1.0, 0.0], ["a", "b", "c", "c"])[0])


def test_a_group_of_clustered_tasks_reports_its_clustered_standard_errors():
    """Two tasks of BoolQ questions sharing passages, in one group: the macro and micro means' cluster-robust
    standard errors are the tasks' (statsmodels' CR1 each) combined as independent strata: sqrt(sum se^2) / k and
    sqrt(sum (n se)^2) / N. A group with a member that names no clusters has none."""
    from proctor.scoring.aggregate import aggregate_groups

    acc = get_metric("acc", "multiple_choice")
    rows = boolq_rows(n_shared=60, n_alone=20)
    parts = {"first": rows[:50], "second": rows[50:]}
    entries = {}
    for task, part in parts.items():
        values = {"acc": [float(r["gold"]) for r in part]}
        entries[task] = {
            "metrics": aggregate_metrics([acc], values, [r["passage"] for r in part]),
            "n_samples": len(part),
        }
    entries["plain"] = {"metrics": aggregate_metrics([acc], {"acc": [1.0, 0.0, 1.0]}), "n_samples": 3}
    groups = aggregate_groups(entries, {"first": ["both"], "second": ["both"], "plain": ["mixed"]})
    both = groups["both"]["metrics"]["acc"]
    ses = {t: _statsmodels_cr1([float(r["gold"]) for r in p], [r["passage"] for r in p]) for t, p in parts.items()}
    counts = {t: len(p) for t, p in parts.items()}
    assert both["stderr_clustered"] == pytest.approx(math.sqrt(sum(s * s for s in ses.values())) / 2, rel=1e-12)
    micro = math.sqrt(sum((counts[t] * ses[t]) ** 2 for t in parts)) / sum(counts.values())
    assert both["micro_stderr_clustered"] == pytest.approx(micro, rel=1e-12)
    assert both["n_clusters"] == sum(len({r["passage"] for r in p}) for p in parts.values())
    assert both["stderr_clustered"] != pytest.approx(both["stderr"], rel=1e-3)  # the passages do change it
    mixed = aggregate_groups(entries, {"first": ["mixed"], "plain": ["mixed"]})["mixed"]["metrics"]["acc"]
    assert "stderr_clustered" not in mixed and mixed["stderr"] is not None


def test_cluster_ids_are_told_apart_as_the_rows_write_them():
    """1, 1.0 and true are three ids in the data (and in the audit's count): Python's equality would merge them
    (red team 12, 045). A list id is read by its JSON text instead of failing to hash."""
    values = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    _, groups = cluster_stderr(values, [1, 1.0, True, 2, 2, 2])
    assert groups == 4
    _, groups = cluster_stderr(values, [[1, 2], [1, 2], [3], [3], {"a": 1}, {"a": 1}])
    assert groups == 3

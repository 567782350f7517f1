"""Publishable numbers, end to end in fresh processes: a task with a ``cluster`` field reports the CR1 standard
error; ``proctor compare`` the paired difference's standard error and minimum detectable effect; ``proctor power``
the samples needed. Every number against its closed form, written out here, on BoolQ questions sharing passages."""

from __future__ import annotations

import json
import math
from collections import defaultdict

import numpy as np
import pytest

from tests.support.cli_runs import jsonl, proctor, results, samples, write
from tests.support.passages import boolq_rows

Z_80 = 1.959963984540054 + 0.8416212335729143  # Phi^-1(0.975) + Phi^-1(0.8)

TASK = """\
name: boolq
kind: multiple_choice
data: {{path: data.jsonl, id: id}}
prompt: "{prompt}"
choices: "{{{{ choices }}}}"
target: "{{{{ gold }}}}"
metrics: [acc, gold_probability]
cluster: passage
"""


def _cr1(values, clusters) -> float:  # sqrt(G / (G - 1) * sum_g (sum_i (x_i - mean))^2) / n
    mean = sum(values) / len(values)
    sums: dict = defaultdict(float)
    for x, c in zip(values, clusters):
        sums[c] += x - mean
    g = len(sums)
    return math.sqrt(g / (g - 1) * sum(s * s for s in sums.values())) / len(values)


@pytest.fixture(scope="module")
def two_runs(tiny_model_dir, tmp_path_factory):
    """The same 40 BoolQ questions (24 sharing passages) asked with two prompts: runs A and B."""
    root = tmp_path_factory.mktemp("stats")
    rows = boolq_rows(n_shared=28, n_alone=12)
    runs = []
    for side, prompt in (("a", "{{ query }}\\nAnswer:"), ("b", "Question: {{ question }}?\\nAnswer:")):
        folder = root / side
        jsonl(folder / "data.jsonl", rows)
        write(folder / "task.yaml", TASK.format(prompt=prompt))
        out = root / f"run_{side}"
        done = proctor("run", str(folder / "task.yaml"), "--model", str(tiny_model_dir), "-o", str(out), cwd=root)
        runs.append((out, done.stdout))
    return root, rows, runs


def test_run_with_a_cluster_field_reports_cr1_beside_the_plain_stderr(two_runs):
    _, rows, [(run, stdout), _] = two_runs
    passage = {r["id"]: r["passage"] for r in rows}
    records = samples(run)
    acc = [float(s["metrics"]["acc"]) for s in records]
    clusters = [passage[s["id"]] for s in records]
    assert [s["cluster"] for s in records] == clusters
    entry = results(run)["tasks"]["boolq"]["metrics"]["acc"]
    assert entry["stderr"] == pytest.approx(np.std(acc, ddof=1) / math.sqrt(len(acc)))
    assert entry["stderr_clustered"] == pytest.approx(_cr1(acc, clusters), rel=1e-9)
    assert entry["n_clusters"] == len(set(clusters)) < len(rows)
    assert entry["stderr_clustered"] != pytest.approx(entry["stderr"], rel=1e-3)  # the passages do count
    assert f"clustered {entry['stderr_clustered']:.4f}, G={entry['n_clusters']}" in stdout


def test_compare_reports_the_paired_se_and_mde_of_the_closed_form(two_runs):
    root, rows, [(run_a, _), (run_b, _)] = two_runs
    out = root / "comparison.json"
    done = proctor("compare", str(run_a), str(run_b), "-o", str(out), cwd=root)
    entry = json.loads(out.read_text())["comparisons"][0]["tasks"]["boolq"]["metrics"]["gold_probability"]
    a = {s["id"]: float(s["metrics"]["gold_probability"]) for s in samples(run_a)}
    b = {s["id"]: float(s["metrics"]["gold_probability"]) for s in samples(run_b)}
    passage = {r["id"]: r["passage"] for r in rows}
    diffs = [b[i] - a[i] for i in a]
    assert any(diffs)  # the two prompts do change the gold choice's probability
    paired = entry["paired"]
    assert paired["diff"] == pytest.approx(sum(diffs) / len(diffs))
    assert paired["stderr_unclustered"] == pytest.approx(np.std(diffs, ddof=1) / math.sqrt(len(diffs)))
    assert paired["stderr"] == pytest.approx(_cr1(diffs, [passage[i] for i in a]), rel=1e-9)
    assert paired["test"] == "paired z (CLT, clustered)" and paired["n"] == 40
    assert paired["mde"] == pytest.approx(Z_80 * paired["stderr"], rel=1e-9)
    low, high = paired["ci"]
    assert (high - low) / 2 == pytest.approx(1.959963984540054 * paired["stderr"], rel=1e-9)
    assert f"{paired['mde']:.4f}" in done.stdout and "MDE" in done.stdout


def test_power_answers_how_many_samples_from_the_pilots_variance(two_runs):
    root, rows, [(run_a, _), (run_b, _)] = two_runs
    out = root / "power.json"
    done = proctor("power", str(run_a), "--effect", "0.1", "-o", str(out), cwd=root)
    found = json.loads(out.read_text())["tasks"]["boolq"]["acc"]
    acc = [float(s["metrics"]["acc"]) for s in samples(run_a)]
    sd = math.sqrt(2) * float(np.std(acc, ddof=1))  # two uncorrelated scores with the pilot's spread
    passage = {r["id"]: r["passage"] for r in rows}
    clustered = _cr1(acc, [passage[s["id"]] for s in samples(run_a)])
    deff = max(1.0, (clustered / (np.std(acc, ddof=1) / math.sqrt(len(acc)))) ** 2)
    assert found["sd_difference"] == pytest.approx(sd)
    assert found["design_effect"] == pytest.approx(deff)
    assert found["samples_needed"] == math.ceil(math.ceil((Z_80 * sd / 0.1) ** 2) * deff) > 0
    assert found["mde_at_n"] == pytest.approx(Z_80 * sd * math.sqrt(deff / len(acc)))
    assert str(found["samples_needed"]) in done.stdout
    # two pilots: the spread of the measured paired differences
    both = json.loads(
        proctor("power", str(run_a), str(run_b), "--effect", "0.1", "-o", str(root / "p2.json"), cwd=root)
        and (root / "p2.json").read_text()
    )["tasks"]["boolq"]["gold_probability"]
    b = {s["id"]: float(s["metrics"]["gold_probability"]) for s in samples(run_b)}
    diffs = [b[s["id"]] - float(s["metrics"]["gold_probability"]) for s in samples(run_a)]
    assert any(diffs)
    assert both["sd_difference"] == pytest.approx(float(np.std(diffs, ddof=1)))

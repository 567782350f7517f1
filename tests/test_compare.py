"""proctor compare: paired tests on shared samples."""

from __future__ import annotations

import json

import numpy as np
from fakes import FakeModel, write_tasks
from typer.testing import CliRunner

from proctor import evaluate
from proctor.cli import app
from proctor.runs.compare import compare_runs, mcnemar_exact, paired_bootstrap


def test_mcnemar_exact_matches_the_binomial_tail():
    a = np.array([1] * 1 + [0] * 9 + [1] * 5)
    b = np.array([0] * 1 + [1] * 9 + [1] * 5)
    only_a, only_b, p = mcnemar_exact(a, b)
    assert (only_a, only_b) == (1, 9)
    assert p == 2 * (1 + 10) / 1024
    assert mcnemar_exact(a, a)[2] == 1.0


def test_bootstrap_interval_brackets_the_mean_and_is_seeded():
    diff = np.random.default_rng(1).normal(0.3, 1.0, 200)
    low, high = paired_bootstrap(diff, n_boot=500, seed=3)
    assert low < diff.mean() < high
    assert (low, high) == paired_bootstrap(diff, n_boot=500, seed=3)


def _runs(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=40, n_gen=6, star_gold=True)
    base = evaluate([tasks], FakeModel(), output_dir=tmp_path / "base").run_dir
    rerun = evaluate([tasks], FakeModel(), output_dir=tmp_path / "rerun").run_dir
    better = evaluate([tasks], FakeModel(prefer_gold=4.0), output_dir=tmp_path / "better").run_dir
    return base, rerun, better


def test_compare_flags_a_planted_difference_and_not_an_identical_rerun(tmp_path):
    base, rerun, better = _runs(tmp_path)
    found = compare_runs([base, rerun, better], alpha=0.05, n_boot=500)
    same, planted = found["comparisons"]
    assert not any(m["significant"] for t in same["tasks"].values() for m in t["metrics"].values())
    acc = planted["tasks"]["mc_alpha"]["metrics"]["acc"]
    assert acc["test"] == "mcnemar" and acc["significant"] and acc["diff"] > 0.3
    assert acc["mcnemar"]["p_value"] < 0.001 and acc["ci"][0] > 0
    brier = planted["tasks"]["mc_alpha"]["metrics"]["brier_score"]
    assert brier["test"] == "bootstrap" and brier["significant"] and brier["diff"] < 0
    # Generation is untouched by the planted skill: the same answers, nothing flagged.
    assert not any(m["significant"] for m in planted["tasks"]["gen_gamma"]["metrics"].values())


def test_compare_cli_prints_and_writes_json(tmp_path):
    base, rerun, better = _runs(tmp_path)
    out = tmp_path / "cmp.json"
    result = CliRunner().invoke(app, ["compare", str(base), str(better), "--alpha", "0.01", "--resamples", "300", "-o", str(out)])
    assert result.exit_code == 0, result.output
    flagged = sum(m["significant"] for t in json.loads(out.read_text())["comparisons"][0]["tasks"].values() for m in t["metrics"].values())
    assert flagged > 0 and f"{flagged} significant difference(s) at alpha=0.01" in result.output
    data = json.loads(out.read_text())
    assert data["alpha"] == 0.01 and data["comparisons"][0]["tasks"]["mc_beta"]["metrics"]["acc"]["significant"]
